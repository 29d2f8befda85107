/**
 * Email address syntax: "an address a real mailbox can have". Linear in the input (capped at
 * {@link EMAIL_MAX_INPUT}); {@link parseEmailAddress} never throws. The accepted language, what is refused though
 * RFC-valid, and the normalized form: docs/decisions.md, "Email checks" → "address syntax" and "normalized address".
 */
import { domainToASCII, domainToUnicode } from 'node:url'

/** Inputs longer than this (UTF-16 code units, before trimming) are rejected as `too_long` unread. */
export const EMAIL_MAX_INPUT = 1024
/** Longest address in UTF-8 octets (RFC 5321 path limit 256 minus the angle brackets; RFC 3696 errata 1690). */
export const EMAIL_MAX_LENGTH = 254
/** Longest local part in UTF-8 octets (RFC 5321 §4.5.3.1.1). */
export const EMAIL_LOCAL_MAX_LENGTH = 64
/** Longest domain in octets of its A-label (punycode) form, as DNS presents it. */
export const EMAIL_DOMAIN_MAX_LENGTH = 253
/** Longest DNS label in octets (RFC 1035 §2.3.4). */
export const EMAIL_LABEL_MAX_LENGTH = 63

/**
 * Top-level names reserved for special use: RFC 2606 (`test`, `example`, `invalid`, `localhost`),
 * RFC 6761, RFC 6762 (`local`), RFC 7686 (`onion`), RFC 9476 (`alt`), the `arpa` infrastructure TLD
 * (including `home.arpa`, RFC 8375) and ICANN's private-use `internal` (2024).
 */
export const SPECIAL_USE_TLDS: ReadonlySet<string> = new Set([
  'localhost',
  'test',
  'invalid',
  'example',
  'local',
  'arpa',
  'onion',
  'alt',
  'internal',
])

/** Second-level names reserved by RFC 2606 §3 (they publish a null MX); subdomains included. */
export const SPECIAL_USE_DOMAINS: ReadonlySet<string> = new Set(['example.com', 'example.net', 'example.org'])

/**
 * Every reason an address is rejected, as a closed list (stable machine codes; the human sentences of
 * {@link describeEmailSyntaxError} may change). Listed in the order the checks run.
 */
export const EMAIL_SYNTAX_ERRORS = [
  'not_a_string',
  'empty',
  'too_long',
  'display_name',
  'quoted_local',
  'comment',
  'fullwidth_at',
  'whitespace',
  'invisible_char',
  'missing_at',
  'multiple_at',
  'local_empty',
  'domain_empty',
  'domain_literal',
  'local_too_long',
  'dot_position',
  'invalid_local_char',
  'invalid_domain',
  'special_use_domain',
  'dotless_domain',
  'numeric_tld',
  'label_too_long',
  'domain_too_long',
  'hyphen_label',
  'invalid_tld',
] as const

/** Why an address was rejected (see {@link EMAIL_SYNTAX_ERRORS} and {@link describeEmailSyntaxError}). */
export type EmailSyntaxError = (typeof EMAIL_SYNTAX_ERRORS)[number]

/** Result of {@link parseEmailAddress}. On failure the parts are a best-effort split, for display only. */
export type ParsedEmail =
  | {
      ok: true
      /** NFC local part (case kept) + '@' + lower-case Unicode domain */
      normalized: string
      /** NFC local part, case preserved */
      localPart: string
      /** lower-case Unicode form of the domain (`bücher.de`) */
      domain: string
      /** A-label (punycode) form of the domain, for DNS and SMTP (`xn--bcher-kva.de`) */
      asciiDomain: string
    }
  | {
      ok: false
      reason: EmailSyntaxError
      /** the trimmed input (at most {@link EMAIL_MAX_INPUT} characters) with the part after the last '@' lower-cased */
      normalized: string
      /** text before the last '@' (the whole input when there is none) */
      localPart: string
      /** text after the last '@', lower-cased ('' when there is none) */
      domain: string
    }

/** Options of {@link parseEmailAddress}. */
export interface ParseEmailOptions {
  /**
   * Accept special-use domains (`.test`, `.localhost`, `example.com` …). Default false. Meant for tests
   * that point a live check at a loopback DNS server serving such a zone.
   */
  allowSpecialUseDomains?: boolean
}

const MESSAGES: Record<EmailSyntaxError, string> = {
  not_a_string: 'The email address must be a string.',
  empty: 'The email address is empty.',
  too_long: `The email address is too long (at most ${EMAIL_MAX_LENGTH} bytes).`,
  display_name: 'The email address contains a display name or angle brackets ("Name <a@b.com>"); give the bare address.',
  quoted_local: 'Quoted text before the @-sign ("…"@domain) is not accepted.',
  comment: 'Comments in parentheses are not accepted in an email address.',
  fullwidth_at: 'The email address uses a full-width or small @-sign (＠/﹫) instead of "@".',
  whitespace: 'The email address contains whitespace.',
  invisible_char: 'The email address contains invisible or control characters (zero-width, bidi, soft hyphen, …).',
  missing_at: 'The email address has no @-sign.',
  multiple_at: 'The email address has more than one @-sign.',
  local_empty: 'There is nothing before the @-sign.',
  domain_empty: 'There is nothing after the @-sign.',
  domain_literal: 'A bracketed IP address after the @-sign ([1.2.3.4]) is not accepted.',
  local_too_long: `The part before the @-sign is too long (at most ${EMAIL_LOCAL_MAX_LENGTH} bytes).`,
  dot_position: 'The email address has a period at the start or end of a part, or two periods in a row.',
  invalid_local_char: 'The part before the @-sign contains a character that is not allowed there.',
  invalid_domain: 'The part after the @-sign is not a valid domain name.',
  special_use_domain: 'The domain is a special-use or reserved name (such as .test, .localhost, .onion or example.com) that cannot receive email.',
  dotless_domain: 'The part after the @-sign must be a domain with a period (such as example.org).',
  numeric_tld: 'The domain ends in a number; it is not a domain name.',
  label_too_long: `A part of the domain between periods is too long (at most ${EMAIL_LABEL_MAX_LENGTH} bytes).`,
  domain_too_long: `The part after the @-sign is too long (at most ${EMAIL_DOMAIN_MAX_LENGTH} bytes after IDNA encoding).`,
  hyphen_label: 'A part of the domain starts or ends with a hyphen, or has two hyphens in the third and fourth positions without being Punycode.',
  invalid_tld: 'The last part of the domain is not a valid top-level domain.',
}

/**
 * A human sentence for a syntax reason code, suitable for an API's `verdict.reason`.
 *
 * @example
 * describeEmailSyntaxError('dotless_domain') // 'The part after the @-sign must be a domain with a period …'
 */
export function describeEmailSyntaxError(reason: EmailSyntaxError): string {
  return Object.hasOwn(MESSAGES, reason) ? MESSAGES[reason] : 'The email address is not valid.'
}

// One character class each; `test` on them is linear in the input length.
const WHITESPACE_RE = /\p{White_Space}/u
// Controls, format characters (zero-width, bidi, soft hyphen, BOM, tags), private use, lone surrogates,
// code points unassigned in the runtime's Unicode version (process.versions.unicode), line/paragraph
// separators, plus default-ignorable or blank-looking letters/marks (combining grapheme joiner, Hangul
// fillers, Khmer inherent vowels, Mongolian FVS, braille blank).
// Variation selectors (U+FE00–FE0F) stay allowed: emoji in UTF-8 local parts use them.
const INVISIBLE_RE =
  /[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Cn}\p{Zl}\p{Zp}\u034F\u115F\u1160\u17B4\u17B5\u180B-\u180D\u180F\u2800\u3164\uFFA0]/u
const STARTS_WITH_MARK_RE = /^\p{M}/u
const TLD_UNICODE_RE = /^[\p{L}\p{M}]+$/u
// U+3002 IDEOGRAPHIC FULL STOP, U+FF0E FULLWIDTH FULL STOP, U+FF61 HALFWIDTH IDEOGRAPHIC FULL STOP
// are label separators in IDNA (RFC 3490 §3.1 / UTS #46).
const IDN_DOTS_RE = /[\u3002\uFF0E\uFF61]/g

/** RFC 5322 atext specials (besides letters and digits). */
const ATEXT_SPECIALS = "!#$%&'*+-/=?^_`{|}~"
const ATEXT = new Uint8Array(128)
for (let c = 0x30; c <= 0x39; c++) ATEXT[c] = 1
for (let c = 0x41; c <= 0x5a; c++) ATEXT[c] = 1
for (let c = 0x61; c <= 0x7a; c++) ATEXT[c] = 1
for (const ch of ATEXT_SPECIALS) ATEXT[ch.charCodeAt(0)] = 1

/**
 * Parse and validate one email address ("an address a real mailbox can have"). Never throws; any input
 * (including non-strings) gives a result. It does not look anything up: no DNS, no lists.
 *
 * @example
 * parseEmailAddress('  Jörg.Smith+tag@BÜCHER.de ')
 * // { ok: true, normalized: 'Jörg.Smith+tag@bücher.de', localPart: 'Jörg.Smith+tag',
 * //   domain: 'bücher.de', asciiDomain: 'xn--bcher-kva.de' }
 * parseEmailAddress('Jane <jane@x.org>') // { ok: false, reason: 'display_name', … }
 * parseEmailAddress('me@localhost')      // { ok: false, reason: 'special_use_domain', … }
 */
export function parseEmailAddress(input: unknown, options: ParseEmailOptions = {}): ParsedEmail {
  if (typeof input !== 'string') return failure('not_a_string', '')
  if (input.length > EMAIL_MAX_INPUT) return failure('too_long', input.slice(0, EMAIL_MAX_INPUT).trim())
  const s = input.trim()
  if (s.length === 0) return failure('empty', '')
  // A UTF-16 code unit is at least one UTF-8 octet, so this bounds the octet length from below.
  if (s.length > EMAIL_MAX_LENGTH) return failure('too_long', s)

  let ascii = true
  let hasAngle = false
  let hasParen = false
  let hasFullwidthAt = false
  let asciiSpace = false
  let asciiControl = false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x80) {
      ascii = false
      if (c === 0xff20 || c === 0xfe6b) hasFullwidthAt = true
    } else if (c === 0x3c || c === 0x3e) hasAngle = true
    else if (c === 0x28 || c === 0x29) hasParen = true
    else if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) asciiSpace = true
    else if (c < 0x20 || c === 0x7f) asciiControl = true
  }

  if (hasAngle && s.charCodeAt(s.length - 1) === 0x3e /* > */ && s.indexOf('<') !== -1) return failure('display_name', s)
  if (s.charCodeAt(0) === 0x22 /* " */) return failure('quoted_local', s)
  if (hasParen) return failure('comment', s)
  if (hasFullwidthAt) return failure('fullwidth_at', s)
  if (asciiSpace || (!ascii && WHITESPACE_RE.test(s))) return failure('whitespace', s)
  if (asciiControl || (!ascii && INVISIBLE_RE.test(s))) return failure('invisible_char', s)

  const at = s.lastIndexOf('@')
  if (at === -1) return failure('missing_at', s)
  if (s.indexOf('@') !== at) return failure('multiple_at', s)
  const rawLocal = s.slice(0, at)
  const rawDomain = s.slice(at + 1)
  if (rawLocal.length === 0) return failure('local_empty', s)
  if (rawDomain.length === 0) return failure('domain_empty', s)
  if (rawDomain.charCodeAt(0) === 0x5b /* [ */) return failure('domain_literal', s)

  // ---- local part ----
  const localAscii = isAscii(rawLocal)
  const local = localAscii ? rawLocal : rawLocal.normalize('NFC')
  const localOctets = localAscii ? local.length : utf8Length(local)
  if (localOctets > EMAIL_LOCAL_MAX_LENGTH) return failure('local_too_long', s)
  if (local.charCodeAt(0) === 0x2e || local.charCodeAt(local.length - 1) === 0x2e || local.includes('..')) {
    return failure('dot_position', s)
  }
  for (let i = 0; i < local.length; i++) {
    const c = local.charCodeAt(i)
    if (c < 0x80 && c !== 0x2e && ATEXT[c] !== 1) return failure('invalid_local_char', s)
  }
  if (!localAscii && STARTS_WITH_MARK_RE.test(local)) return failure('invalid_local_char', s)

  // ---- domain ----
  const dom = domainFacts(rawDomain, options.allowSpecialUseDomains === true)
  if (typeof dom === 'string') return failure(dom, s)
  const { asciiDomain, unicodeDomain, domainOctets } = dom
  if (localOctets + 1 + asciiDomain.length > EMAIL_MAX_LENGTH || localOctets + 1 + domainOctets > EMAIL_MAX_LENGTH) {
    return failure('too_long', s)
  }

  return {
    ok: true,
    normalized: `${local}@${unicodeDomain}`,
    localPart: local,
    domain: unicodeDomain,
    asciiDomain,
  }
}

/** What the domain part of an address comes to: its forms and UTF-8 length, or why it is unusable. */
type DomainFacts = { asciiDomain: string; unicodeDomain: string; domainOctets: number } | EmailSyntaxError

// Sign-up traffic repeats a few domains: their analysis (IDNA, label and TLD checks) is kept, per raw domain part
// and option, in two small maps emptied when full. A domain's facts depend on nothing else.
const DOMAIN_MEMO_MAX = 2048
const domainMemo = [new Map<string, DomainFacts>(), new Map<string, DomainFacts>()] as const

function domainFacts(rawDomain: string, allowSpecialUse: boolean): DomainFacts {
  const memo = domainMemo[allowSpecialUse ? 1 : 0]
  let facts = memo.get(rawDomain)
  if (facts === undefined) {
    if (memo.size >= DOMAIN_MEMO_MAX) memo.clear()
    facts = analyzeDomain(rawDomain, allowSpecialUse)
    memo.set(rawDomain, facts)
  }
  return facts
}

/** The checks of the domain part, in the order {@link parseEmailAddress} reports them. */
function analyzeDomain(rawDomain: string, allowSpecialUse: boolean): DomainFacts {
  const domainIsAscii = isAscii(rawDomain)
  const mapped = domainIsAscii ? rawDomain : rawDomain.replace(IDN_DOTS_RE, '.')
  for (let i = 0; i < mapped.length; i++) {
    const c = mapped.charCodeAt(i)
    if (c < 0x80 && !isLdhOrDot(c)) return 'invalid_domain'
  }
  const rawLabels = mapped.split('.')
  for (const label of rawLabels) if (label.length === 0) return 'dot_position'
  const rawTld = (rawLabels[rawLabels.length - 1] ?? '').toLowerCase()
  if (rawLabels.length === 1) {
    if (!allowSpecialUse && SPECIAL_USE_TLDS.has(rawTld)) return 'special_use_domain'
    return 'dotless_domain'
  }
  // Checked before IDNA: the WHATWG host parser would turn "1.2.3.4" or "x.0x7f" into an IPv4 address.
  if (isAllDigits(rawTld)) return 'numeric_tld'

  let asciiDomain: string
  let unicodeDomain: string
  if (domainIsAscii) {
    asciiDomain = mapped.toLowerCase()
    if (asciiDomain.startsWith('xn--') || asciiDomain.includes('.xn--')) {
      unicodeDomain = domainToUnicode(asciiDomain)
      // invalid punycode gives '' (or a string that does not map back to the same A-labels)
      if (unicodeDomain === '' || domainToASCII(unicodeDomain) !== asciiDomain) return 'invalid_domain'
    } else {
      unicodeDomain = asciiDomain
    }
  } else {
    asciiDomain = domainToASCII(mapped)
    if (asciiDomain === '') return 'invalid_domain'
    unicodeDomain = domainToUnicode(asciiDomain)
    if (unicodeDomain === '') return 'invalid_domain'
  }

  const labels = asciiDomain.split('.')
  const unicodeLabels = unicodeDomain.split('.')
  if (labels.length !== unicodeLabels.length) return 'invalid_domain'
  if (labels.length === 1) return 'dotless_domain'
  for (const label of labels) {
    if (label.length === 0) return 'dot_position'
    for (let i = 0; i < label.length; i++) {
      if (!isLdh(label.charCodeAt(i))) return 'invalid_domain'
    }
  }
  for (const label of labels) if (label.length > EMAIL_LABEL_MAX_LENGTH) return 'label_too_long'
  if (asciiDomain.length > EMAIL_DOMAIN_MAX_LENGTH) return 'domain_too_long'
  for (let i = 0; i < labels.length; i++) {
    if (isBadHyphenLabel(labels[i] ?? '') || isHyphenEdged(unicodeLabels[i] ?? '')) return 'hyphen_label'
  }
  if (!allowSpecialUse && isSpecialUse(asciiDomain, labels)) return 'special_use_domain'
  const tld = labels[labels.length - 1] ?? ''
  if (isAllDigits(tld)) return 'numeric_tld'
  if (!isValidTld(tld, unicodeLabels[unicodeLabels.length - 1] ?? '')) return 'invalid_tld'

  return { asciiDomain, unicodeDomain, domainOctets: domainIsAscii ? unicodeDomain.length : utf8Length(unicodeDomain) }
}

/**
 * Number of octets of `s` in UTF-8 (a lone surrogate counts 3, as WTF-8 would encode it).
 *
 * @example utf8Length('ä@b') // 4
 */
export function utf8Length(s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4
        i++
      } else n += 3
    } else n += 3
  }
  return n
}

function failure(reason: EmailSyntaxError, s: string): ParsedEmail {
  const at = s.lastIndexOf('@')
  if (at === -1) return { ok: false, reason, normalized: s, localPart: s, domain: '' }
  const localPart = s.slice(0, at)
  const domain = s.slice(at + 1).toLowerCase()
  return { ok: false, reason, normalized: `${localPart}@${domain}`, localPart, domain }
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false
  return true
}

function isAllDigits(s: string): boolean {
  if (s.length === 0) return false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x30 || c > 0x39) return false
  }
  return true
}

/** letters, digits, hyphen (either case) */
function isLdh(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || (c >= 0x41 && c <= 0x5a)
}

function isLdhOrDot(c: number): boolean {
  return c === 0x2e || isLdh(c)
}

function isHyphenEdged(label: string): boolean {
  return label.charCodeAt(0) === 0x2d || label.charCodeAt(label.length - 1) === 0x2d
}

/** hyphen at either end, or "??--" (reserved for ACE prefixes, RFC 5891 §4.2.3.1) other than "xn--" */
function isBadHyphenLabel(label: string): boolean {
  if (isHyphenEdged(label)) return true
  return label.length >= 4 && label.charCodeAt(2) === 0x2d && label.charCodeAt(3) === 0x2d && !label.startsWith('xn--')
}

function isSpecialUse(asciiDomain: string, labels: string[]): boolean {
  const tld = labels[labels.length - 1] ?? ''
  if (SPECIAL_USE_TLDS.has(tld)) return true
  const sld = labels.length >= 2 ? `${labels[labels.length - 2]}.${tld}` : asciiDomain
  return SPECIAL_USE_DOMAINS.has(sld)
}

/** ASCII TLDs are letters only (2–63); an IDN TLD's Unicode form is letters and marks only. */
function isValidTld(asciiTld: string, unicodeTld: string): boolean {
  if (asciiTld.startsWith('xn--')) return TLD_UNICODE_RE.test(unicodeTld)
  if (asciiTld.length < 2) return false
  for (let i = 0; i < asciiTld.length; i++) {
    const c = asciiTld.charCodeAt(i)
    if (c < 0x61 || c > 0x7a) return false
  }
  return true
}

/**
 * SPF (RFC 7208) for the email-authentication grade: record selection, a full term parser, and a static walk of the
 * record tree counting DNS-querying terms and void lookups as §4.6.4 does. Why static, and how the concurrent walk
 * keeps the count exact: docs/decisions.md, "Email checks" → "SPF lookup count".
 */

import { isDnsFailure, type DnsAnswer, type DnsSource } from '../../sources/dns-types.js'

/** RFC 7208 §4.6.4: at most 10 DNS-querying terms (include, a, mx, ptr, exists, redirect) per evaluation. */
export const SPF_LOOKUP_LIMIT = 10
/** RFC 7208 §4.6.4: at most 2 void lookups (NXDOMAIN or no records) — the RFC's suggested default. */
export const SPF_VOID_LOOKUP_LIMIT = 2
/** RFC 7208 §4.6.4: an `mx` mechanism whose name has more than 10 MX records is a permerror. */
export const SPF_MX_LIMIT = 10
/** Records longer than this are not parsed (length cap before any parsing; real records are < 1 KB). */
export const SPF_MAX_RECORD_LENGTH = 4096

/** SPF qualifier characters. */
export type SpfQualifier = '+' | '-' | '~' | '?'
/** The result an `all` (or the default) gives: `+all` pass, `-all` fail, `~all` softfail, `?all` neutral. */
export type SpfPolicy = 'pass' | 'fail' | 'softfail' | 'neutral'
/** The eight mechanisms of RFC 7208 §5. */
export type SpfMechanismName = 'all' | 'include' | 'a' | 'mx' | 'ptr' | 'ip4' | 'ip6' | 'exists'

/** One parsed mechanism (RFC 7208 §5). */
export interface SpfMechanism {
  kind: 'mechanism'
  qualifier: SpfQualifier
  name: SpfMechanismName
  /** domain-spec (include/exists always, a/mx/ptr when given); null when absent */
  domain: string | null
  /** network of ip4/ip6; null otherwise */
  network: string | null
  /** IPv4 prefix length (ip4, a, mx); null when absent */
  cidr4: number | null
  /** IPv6 prefix length (ip6, a, mx); null when absent */
  cidr6: number | null
  /** true when `domain` contains a macro (it cannot be resolved without a message) */
  hasMacro: boolean
  raw: string
}

/** One parsed modifier (RFC 7208 §6): redirect, exp or an unknown (ignored) modifier. */
export interface SpfModifier {
  kind: 'modifier'
  name: string
  value: string
  hasMacro: boolean
  raw: string
}

/** One term of a record. */
export type SpfTerm = SpfMechanism | SpfModifier

/** A syntactically valid SPF record. */
export interface ParsedSpfRecord {
  terms: SpfTerm[]
  /** the first `all` mechanism, which ends evaluation; null when there is none */
  all: SpfMechanism | null
  /** target of `redirect=`; null when absent */
  redirect: string | null
  /** target of `exp=`; null when absent */
  exp: string | null
  /** non-fatal observations (ptr use, terms after all, redirect ignored, obsolete modifiers) */
  warnings: string[]
}

/** Outcome of {@link parseSpfRecord}: the record or the first syntax error. */
export type ParseSpfResult = { ok: true; record: ParsedSpfRecord } | { ok: false; error: string }

/** Machine codes of SPF problems. Every code except `dns_error` makes the record a permerror. */
export type SpfProblemCode =
  | 'multiple_records'
  | 'syntax'
  | 'too_many_lookups'
  | 'too_many_void_lookups'
  | 'too_many_mx'
  | 'include_loop'
  | 'redirect_loop'
  | 'include_no_record'
  | 'redirect_no_record'
  | 'dns_error'

/** One problem found while walking the record tree. */
export interface SpfProblem {
  code: SpfProblemCode
  /** the domain whose record (or lookup) has the problem */
  domain: string
  message: string
}

/**
 * Overall status, in RFC 7208 vocabulary: `ok` = a single valid record within the limits, `none` = no SPF record
 * (or the domain is not a valid SPF domain), `permerror` = the record is broken for receivers, `temperror` = a DNS
 * failure left the answer unknown.
 */
export type SpfStatus = 'ok' | 'none' | 'permerror' | 'temperror'

/** Result of {@link checkSpf}. */
export interface SpfCheckResult {
  domain: string
  status: SpfStatus
  /** at least one `v=spf1` record exists at the domain (also true when there are several) */
  found: boolean
  /** exactly one `v=spf1` record exists and it is syntactically valid (its include tree may still be broken) */
  recordValid: boolean
  /** the record in force: the single `v=spf1` record, or the first of several; null when none was found */
  record: string | null
  /** every `v=spf1` record found at the domain (more than one ⇒ permerror) */
  records: string[]
  /**
   * The result for a sender not matched by any mechanism: from the top record's `all`, else from the `redirect=`
   * target's record, else `neutral` (RFC 7208 §4.7). Null when it cannot be told (no/several records, syntax error,
   * a redirect whose target is unknown, missing or broken).
   */
  policy: SpfPolicy | null
  /** where `policy` comes from */
  policySource: 'all' | 'redirect' | 'default' | null
  /** DNS-querying terms counted (RFC 7208 §4.6.4), nested includes added up; `limit + 1` means "over the limit" */
  dnsLookups: number
  /** void lookups counted (NXDOMAIN or no records for a term's target) */
  voidLookups: number
  tooManyLookups: boolean
  tooManyVoidLookups: boolean
  /** an included record (with a `+` include) ends in `+all`, so every sender passes */
  passAllViaInclude: boolean
  /** everything that makes the record a permerror, plus `dns_error` entries for lookups that failed */
  problems: SpfProblem[]
  warnings: string[]
  /** domains whose records were fetched for include/redirect, in the order they were reached */
  visited: string[]
  /** DNS questions this check asked (before the DNS source's own cache/de-duplication) */
  queries: number
}

/** Options of {@link checkSpf}. */
export interface SpfCheckOptions {
  /** DNS-querying term limit (default {@link SPF_LOOKUP_LIMIT}) */
  lookupLimit?: number
  /** void lookup limit (default {@link SPF_VOID_LOOKUP_LIMIT}) */
  voidLookupLimit?: number
  /** an already-fetched TXT answer for the domain (saves a query when the caller fetched it) */
  txt?: Promise<DnsAnswer<string>>
}

const QUALIFIER_POLICY: Readonly<Record<SpfQualifier, SpfPolicy>> = {
  '+': 'pass',
  '-': 'fail',
  '~': 'softfail',
  '?': 'neutral',
}

const MECHANISMS: ReadonlySet<string> = new Set(['all', 'include', 'a', 'mx', 'ptr', 'ip4', 'ip6', 'exists'])
const MACRO_LETTERS: ReadonlySet<string> = new Set(['s', 'l', 'o', 'd', 'i', 'p', 'h', 'v'])
const EXP_MACRO_LETTERS: ReadonlySet<string> = new Set(['c', 'r', 't'])
const MACRO_DELIMITERS: ReadonlySet<string> = new Set(['.', '-', '+', ',', '/', '_', '='])

/**
 * True when a TXT string is an SPF record: it begins with `v=spf1` (case-insensitive) followed by a space or the end
 * (RFC 7208 §4.5). `v=spf10` and `v=spf1mx` are not SPF records.
 *
 * @example isSpfRecord('v=spf1 -all') // true
 * @example isSpfRecord('v=spf1mx')    // false
 */
export function isSpfRecord(txt: string): boolean {
  if (txt.length < 6 || txt.slice(0, 6).toLowerCase() !== 'v=spf1') return false
  return txt.length === 6 || txt[6] === ' '
}

/**
 * Selects the SPF record among a name's TXT records (RFC 7208 §4.5): none, exactly one, or several (permerror).
 * Does not parse the record.
 */
export function selectSpfRecord(txts: readonly string[]): { count: number; records: string[] } {
  const records = txts.filter(isSpfRecord)
  return { count: records.length, records }
}

/**
 * Checks a domain name used as the SPF domain (RFC 7208 §4.3): non-empty labels of at most 63 octets, at most 253
 * octets, at least two labels. A name failing this has no SPF record (result `none`).
 */
export function isValidSpfDomain(domain: string): boolean {
  const name = domain.endsWith('.') ? domain.slice(0, -1) : domain
  if (name.length === 0 || name.length > 253) return false
  const labels = name.split('.')
  if (labels.length < 2) return false
  return labels.every((l) => l.length > 0 && l.length <= 63)
}

/** Returns an error message for a bad macro-string (RFC 7208 §7.1), or null. `exp` allows the c/r/t letters. */
function checkMacroString(s: string, exp: boolean): { error: string | null; hasMacro: boolean } {
  let hasMacro = false
  let i = 0
  while (i < s.length) {
    const code = s.charCodeAt(i)
    if (code < 0x21 || code > 0x7e) return { error: `invalid character in "${s}"`, hasMacro }
    if (s[i] !== '%') {
      i++
      continue
    }
    const next = s[i + 1]
    if (next === '%' || next === '_' || next === '-') {
      hasMacro = true // escapes expand to other characters: the name cannot be queried as written
      i += 2
      continue
    }
    if (next !== '{') return { error: `invalid macro "%${next ?? ''}" in "${s}"`, hasMacro }
    const close = s.indexOf('}', i + 2)
    if (close < 0) return { error: `unterminated macro in "${s}"`, hasMacro }
    const body = s.slice(i + 2, close)
    const letter = (body[0] ?? '').toLowerCase()
    if (!MACRO_LETTERS.has(letter) && !(exp && EXP_MACRO_LETTERS.has(letter))) {
      return { error: `invalid macro letter "${body[0] ?? ''}" in "${s}"`, hasMacro }
    }
    let j = 1
    while (j < body.length && body.charCodeAt(j) >= 0x30 && body.charCodeAt(j) <= 0x39) j++
    if (j > 1 && Number(body.slice(1, j)) === 0) return { error: `macro transformer 0 in "${s}"`, hasMacro }
    if (body[j] === 'r' || body[j] === 'R') j++
    while (j < body.length && MACRO_DELIMITERS.has(body[j] as string)) j++
    if (j !== body.length) return { error: `invalid macro "%{${body}}" in "${s}"`, hasMacro }
    hasMacro = true
    i = close + 1
  }
  return { error: null, hasMacro }
}

function isAlnum(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
}

function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
}

/** toplabel = ( *alphanum ALPHA *alphanum ) / ( 1*alphanum "-" *( alphanum / "-" ) alphanum ) (RFC 7208 §7.1) */
function isTopLabel(label: string): boolean {
  if (label.length === 0) return false
  let hasAlpha = false
  let hasDash = false
  for (let i = 0; i < label.length; i++) {
    const c = label.charCodeAt(i)
    if (c === 0x2d) hasDash = true
    else if (!isAlnum(c)) return false
    else if (isAlpha(c)) hasAlpha = true
  }
  if (!hasDash) return hasAlpha
  return isAlnum(label.charCodeAt(0)) && isAlnum(label.charCodeAt(label.length - 1))
}

/**
 * Validates a domain-spec (RFC 7208 §7.1, plus the label rules of §4.3 for names without macros): returns an
 * error message or null, and whether the domain-spec (RFC 7208 section 7.1) contains a macro.
 */
function checkDomainSpec(spec: string): { error: string | null; hasMacro: boolean } {
  if (spec.length === 0) return { error: 'empty domain-spec', hasMacro: false }
  const macro = checkMacroString(spec, false)
  if (macro.error) return macro
  // domain-end = ( "." toplabel [ "." ] ) / macro-expand
  if (macro.hasMacro && spec.endsWith('}')) {
    const open = spec.lastIndexOf('%{')
    if (open >= 0 && (open === 0 || spec[open - 1] !== '%')) return { error: null, hasMacro: true }
  }
  const name = spec.endsWith('.') ? spec.slice(0, -1) : spec
  const dot = name.lastIndexOf('.')
  if (dot < 0) return { error: `"${spec}" is not a fully qualified domain name`, hasMacro: macro.hasMacro }
  if (!isTopLabel(name.slice(dot + 1))) return { error: `"${spec}" has an invalid top label`, hasMacro: macro.hasMacro }
  if (!macro.hasMacro) {
    if (name.length > 253) return { error: `"${spec}" is longer than 253 characters`, hasMacro: false }
    for (const label of name.split('.')) {
      if (label.length === 0) return { error: `"${spec}" has an empty label`, hasMacro: false }
      if (label.length > 63) return { error: `"${spec}" has a label longer than 63 characters`, hasMacro: false }
    }
  }
  return { error: null, hasMacro: macro.hasMacro }
}

/** Parses a CIDR length "/N": no leading zeros, at most `max`. Returns null for a bad value. */
function parseCidr(text: string, max: number): number | null {
  if (text.length === 0 || text.length > 3) return null
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x30 || c > 0x39) return null
  }
  if (text.length > 1 && text[0] === '0') return null
  const n = Number(text)
  return n <= max ? n : null
}

/** dec-octet (RFC 7208 §5.6 / RFC 3986): 0-255 without leading zeros. */
function isDecOctet(s: string): boolean {
  if (s.length === 0 || s.length > 3) return false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x30 || c > 0x39) return false
  }
  if (s.length > 1 && s[0] === '0') return false
  return Number(s) <= 255
}

/** True for a dotted-quad IPv4 address in the strict RFC 7208 form. */
export function isSpfIp4(s: string): boolean {
  const parts = s.split('.')
  return parts.length === 4 && parts.every(isDecOctet)
}

/** True for a textual IPv6 address (RFC 4291 §2.2, incl. `::` and an embedded IPv4 tail). No zone ids. */
export function isSpfIp6(s: string): boolean {
  if (s.length < 2 || s.length > 45) return false
  const halves = s.split('::')
  if (halves.length > 2) return false
  const groups = (h: string): string[] => (h === '' ? [] : h.split(':'))
  const head = groups(halves[0] as string)
  const tail = halves.length === 2 ? groups(halves[1] as string) : []
  const all = [...head, ...tail]
  let count = 0
  for (let i = 0; i < all.length; i++) {
    const g = all[i] as string
    const last = i === all.length - 1
    if (last && g.includes('.')) {
      if (!isSpfIp4(g)) return false
      count += 2
      continue
    }
    if (g.length < 1 || g.length > 4) return false
    for (let k = 0; k < g.length; k++) {
      const c = g.charCodeAt(k)
      const hex = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
      if (!hex) return false
    }
    count += 1
  }
  return halves.length === 2 ? count < 8 : count === 8
}

function isDigits(s: string): boolean {
  if (s.length === 0) return false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x30 || c > 0x39) return false
  }
  return true
}

/**
 * Splits the argument of `a`/`mx` into its domain-spec and the trailing dual-cidr-length ("/24", "//64", "/24//64").
 * The domain-spec may itself contain "/" and ":" (RFC 7208 §7.1 macro-literal), so only a trailing, all-digit
 * suffix is taken as a prefix length.
 */
function peelDualCidr(arg: string): { error: string } | { spec: string; cidr4: number | null; cidr6: number | null } {
  let spec = arg
  let cidr4: number | null = null
  let cidr6: number | null = null
  const v6 = spec.lastIndexOf('//')
  if (v6 >= 0 && isDigits(spec.slice(v6 + 2))) {
    cidr6 = parseCidr(spec.slice(v6 + 2), 128)
    if (cidr6 === null) return { error: `invalid IPv6 prefix length in "${arg}"` }
    spec = spec.slice(0, v6)
  }
  const v4 = spec.lastIndexOf('/')
  if (v4 >= 0 && isDigits(spec.slice(v4 + 1))) {
    cidr4 = parseCidr(spec.slice(v4 + 1), 32)
    if (cidr4 === null) return { error: `invalid IPv4 prefix length in "${arg}"` }
    spec = spec.slice(0, v4)
  }
  return { spec, cidr4, cidr6 }
}

function parseMechanism(term: string): { error: string } | { mechanism: SpfMechanism } {
  let qualifier: SpfQualifier = '+'
  let body = term
  const first = term[0]
  if (first === '+' || first === '-' || first === '~' || first === '?') {
    qualifier = first
    body = term.slice(1)
  }
  let nameEnd = 0
  while (nameEnd < body.length && isAlnum(body.charCodeAt(nameEnd))) nameEnd++
  const name = body.slice(0, nameEnd).toLowerCase()
  const rest = body.slice(nameEnd)
  if (!MECHANISMS.has(name)) return { error: `unknown mechanism "${term}"` }
  const base = {
    kind: 'mechanism' as const,
    qualifier,
    name: name as SpfMechanismName,
    domain: null as string | null,
    network: null as string | null,
    cidr4: null as number | null,
    cidr6: null as number | null,
    hasMacro: false,
    raw: term,
  }
  switch (name) {
    case 'all':
      if (rest !== '') return { error: `"all" takes no argument: "${term}"` }
      return { mechanism: base }
    case 'include':
    case 'exists': {
      if (rest[0] !== ':') return { error: `"${name}" needs a domain: "${term}"` }
      const spec = rest.slice(1)
      const check = checkDomainSpec(spec)
      if (check.error) return { error: `${name}: ${check.error}` }
      return { mechanism: { ...base, domain: spec, hasMacro: check.hasMacro } }
    }
    case 'ptr': {
      if (rest === '') return { mechanism: base }
      if (rest[0] !== ':') return { error: `invalid ptr mechanism "${term}"` }
      const spec = rest.slice(1)
      const check = checkDomainSpec(spec)
      if (check.error) return { error: `ptr: ${check.error}` }
      return { mechanism: { ...base, domain: spec, hasMacro: check.hasMacro } }
    }
    case 'a':
    case 'mx': {
      if (rest !== '' && rest[0] !== ':' && rest[0] !== '/') return { error: `invalid ${name} mechanism "${term}"` }
      const peeled = peelDualCidr(rest[0] === ':' ? rest.slice(1) : rest)
      if ('error' in peeled) return { error: `${name}: ${peeled.error}` }
      let domain: string | null = null
      let hasMacro = false
      if (rest[0] === ':') {
        const check = checkDomainSpec(peeled.spec)
        if (check.error) return { error: `${name}: ${check.error}` }
        domain = peeled.spec
        hasMacro = check.hasMacro
      } else if (peeled.spec !== '') return { error: `${name}: invalid CIDR length "${rest}"` }
      return { mechanism: { ...base, domain, hasMacro, cidr4: peeled.cidr4, cidr6: peeled.cidr6 } }
    }
    case 'ip4': {
      if (rest[0] !== ':') return { error: `"ip4" needs an address: "${term}"` }
      const arg = rest.slice(1)
      const slash = arg.indexOf('/')
      const net = slash < 0 ? arg : arg.slice(0, slash)
      if (!isSpfIp4(net)) return { error: `invalid IPv4 network "${arg}"` }
      let cidr4: number | null = null
      if (slash >= 0) {
        cidr4 = parseCidr(arg.slice(slash + 1), 32)
        if (cidr4 === null) return { error: `invalid IPv4 prefix length "${arg}"` }
      }
      return { mechanism: { ...base, network: net, cidr4 } }
    }
    case 'ip6': {
      if (rest[0] !== ':') return { error: `"ip6" needs an address: "${term}"` }
      const arg = rest.slice(1)
      const slash = arg.indexOf('/')
      const net = slash < 0 ? arg : arg.slice(0, slash)
      if (!isSpfIp6(net)) return { error: `invalid IPv6 network "${arg}"` }
      let cidr6: number | null = null
      if (slash >= 0) {
        cidr6 = parseCidr(arg.slice(slash + 1), 128)
        if (cidr6 === null) return { error: `invalid IPv6 prefix length "${arg}"` }
      }
      return { mechanism: { ...base, network: net, cidr6 } }
    }
    default:
      return { error: `unknown mechanism "${term}"` }
  }
}

/** Length of a modifier name at the start of `term` (name = ALPHA *( ALPHA / DIGIT / "-" / "_" / "." )), or 0. */
function modifierNameLength(term: string): number {
  if (term.length === 0 || !isAlpha(term.charCodeAt(0))) return 0
  let i = 1
  while (i < term.length) {
    const c = term.charCodeAt(i)
    if (isAlnum(c) || c === 0x2d || c === 0x5f || c === 0x2e) i++
    else break
  }
  return i
}

/**
 * Parses one SPF record (the text after selecting it with {@link isSpfRecord}) into terms, per the ABNF of
 * RFC 7208 §4.6.1/§5/§6/§7.1. Any syntax error anywhere makes the record a permerror (RFC 7208 §4.6), so the
 * first error is returned instead of a partial record. Unknown modifiers are allowed and ignored; `redirect` and
 * `exp` may each appear once. Does not look anything up.
 *
 * @example parseSpfRecord('v=spf1 include:_spf.example.com ~all') // { ok: true, record: { all: {qualifier:'~'…}, … } }
 * @example parseSpfRecord('v=spf1 ip4:1.2.3.4/33 -all')            // { ok: false, error: 'invalid IPv4 prefix length …' }
 */
export function parseSpfRecord(text: string): ParseSpfResult {
  if (text.length > SPF_MAX_RECORD_LENGTH) return { ok: false, error: `record longer than ${SPF_MAX_RECORD_LENGTH} characters` }
  if (!isSpfRecord(text)) return { ok: false, error: 'not an SPF record (must begin with "v=spf1")' }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c > 0x7e) return { ok: false, error: `invalid character (code ${c}) at position ${i}` }
  }
  const terms: SpfTerm[] = []
  const warnings: string[] = []
  let all: SpfMechanism | null = null
  let redirect: string | null = null
  let exp: string | null = null
  for (const term of text.slice(6).split(' ')) {
    if (term === '') continue
    const nameLen = modifierNameLength(term)
    if (nameLen > 0 && term[nameLen] === '=') {
      const name = term.slice(0, nameLen).toLowerCase()
      const value = term.slice(nameLen + 1)
      if (name === 'redirect' || name === 'exp') {
        if ((name === 'redirect' && redirect !== null) || (name === 'exp' && exp !== null)) {
          return { ok: false, error: `"${name}" modifier appears more than once` }
        }
        const check = checkDomainSpec(value)
        if (check.error) return { ok: false, error: `${name}: ${check.error}` }
        if (name === 'redirect') redirect = value
        else exp = value
        terms.push({ kind: 'modifier', name, value, hasMacro: check.hasMacro, raw: term })
      } else {
        const check = checkMacroString(value, false)
        if (check.error) return { ok: false, error: `modifier ${name}: ${check.error}` }
        if (name === 'default') warnings.push('the "default" modifier is obsolete (RFC 4408 drafts) and ignored')
        terms.push({ kind: 'modifier', name, value, hasMacro: check.hasMacro, raw: term })
      }
      continue
    }
    const parsed = parseMechanism(term)
    if ('error' in parsed) return { ok: false, error: parsed.error }
    if (parsed.mechanism.name === 'all' && all === null) all = parsed.mechanism
    if (parsed.mechanism.name === 'ptr') warnings.push('the ptr mechanism should not be used (RFC 7208 §5.5)')
    terms.push(parsed.mechanism)
  }
  if (all !== null) {
    const idx = terms.indexOf(all)
    if (terms.slice(idx + 1).some((t) => t.kind === 'mechanism')) warnings.push('mechanisms after "all" are never evaluated')
    if (redirect !== null) warnings.push('"redirect" is ignored because the record has an "all" mechanism (RFC 7208 §6.1)')
  }
  return { ok: true, record: { terms, all, redirect, exp, warnings } }
}

function normalizeName(name: string): string {
  const lower = name.toLowerCase()
  return lower.endsWith('.') ? lower.slice(0, -1) : lower
}

/** Mutable state shared by the whole walk of one SPF check. */
interface WalkState {
  dns: DnsSource
  lookupLimit: number
  voidLimit: number
  lookups: number
  voids: number
  tooManyLookups: boolean
  tooManyVoids: boolean
  passAllViaInclude: boolean
  problems: SpfProblem[]
  warnings: string[]
  visited: string[]
  queries: number
}

/** Counts one DNS-querying term. Returns false when the term must not be resolved (the limit is reached). */
function claimLookup(state: WalkState): boolean {
  if (state.tooManyLookups) return false
  state.lookups++
  if (state.lookups > state.lookupLimit) {
    state.tooManyLookups = true
    return false
  }
  return !state.tooManyVoids
}

function countVoid(state: WalkState, domain: string): void {
  state.voids++
  if (state.voids > state.voidLimit && !state.tooManyVoids) {
    state.tooManyVoids = true
    state.problems.push({
      code: 'too_many_void_lookups',
      domain,
      message: `more than ${state.voidLimit} void DNS lookups (RFC 7208 §4.6.4)`,
    })
  }
}

function txt(state: WalkState, name: string): Promise<DnsAnswer<string>> {
  state.queries++
  return state.dns.resolveTxt(name)
}

/** Fetches and parses the SPF record of an include/redirect target. Returns null when there is none usable. */
async function fetchChildRecord(
  state: WalkState,
  target: string,
  via: 'include' | 'redirect',
  parent: string,
): Promise<ParsedSpfRecord | null> {
  const answer = await txt(state, target)
  state.visited.push(target)
  if (isDnsFailure(answer.status)) {
    state.problems.push({ code: 'dns_error', domain: target, message: `TXT lookup of ${target} failed (${answer.status})` })
    return null
  }
  const code = via === 'include' ? 'include_no_record' : 'redirect_no_record'
  if (answer.status !== 'ok') {
    countVoid(state, target)
    state.problems.push({ code, domain: parent, message: `${via} target ${target} has no SPF record (${answer.status})` })
    return null
  }
  const selected = selectSpfRecord(answer.records)
  if (selected.count === 0) {
    state.problems.push({ code, domain: parent, message: `${via} target ${target} has no SPF record` })
    return null
  }
  if (selected.count > 1) {
    state.problems.push({ code: 'multiple_records', domain: target, message: `${target} has ${selected.count} SPF records` })
    return null
  }
  const parsed = parseSpfRecord(selected.records[0] as string)
  if (!parsed.ok) {
    state.problems.push({ code: 'syntax', domain: target, message: `${target}: ${parsed.error}` })
    return null
  }
  for (const w of parsed.record.warnings) state.warnings.push(`${target}: ${w}`)
  return parsed.record
}

/** Resolves the target of an `a`/`mx`/`exists` term to count a void lookup (and the MX limit). */
async function resolveTarget(state: WalkState, m: SpfMechanism, domain: string): Promise<void> {
  const target = normalizeName(m.domain ?? domain)
  if (m.name === 'a') {
    state.queries += 2
    const [v4, v6] = await Promise.all([state.dns.resolve4(target), state.dns.resolve6(target)])
    if (isDnsFailure(v4.status) || isDnsFailure(v6.status)) {
      if (v4.status !== 'ok' && v6.status !== 'ok') {
        state.problems.push({ code: 'dns_error', domain: target, message: `address lookup of ${target} failed` })
      }
      return
    }
    if (v4.status !== 'ok' && v6.status !== 'ok') countVoid(state, target)
    return
  }
  if (m.name === 'mx') {
    state.queries++
    const mx = await state.dns.resolveMx(target)
    if (isDnsFailure(mx.status)) {
      state.problems.push({ code: 'dns_error', domain: target, message: `MX lookup of ${target} failed (${mx.status})` })
      return
    }
    if (mx.status !== 'ok') {
      countVoid(state, target)
      return
    }
    if (mx.records.length > SPF_MX_LIMIT) {
      state.problems.push({
        code: 'too_many_mx',
        domain: target,
        message: `${target} has ${mx.records.length} MX records; an mx mechanism allows at most ${SPF_MX_LIMIT} (RFC 7208 §4.6.4)`,
      })
    }
    return
  }
  // exists
  state.queries++
  const a = await state.dns.resolve4(target)
  if (isDnsFailure(a.status)) {
    state.problems.push({ code: 'dns_error', domain: target, message: `A lookup of ${target} failed (${a.status})` })
    return
  }
  if (a.status !== 'ok') countVoid(state, target)
}

/**
 * Walks one record: every DNS-querying term is counted (in term order, synchronously) and resolved concurrently.
 * Returns the record's policy: its `all`, else its redirect target's policy, else neutral.
 */
async function walkRecord(
  state: WalkState,
  domain: string,
  record: ParsedSpfRecord,
  chain: readonly string[],
): Promise<{ policy: SpfPolicy | null; source: SpfCheckResult['policySource'] }> {
  const tasks: Array<Promise<unknown>> = []
  for (const term of record.terms) {
    if (term.kind !== 'mechanism') continue
    const m = term
    if (m.name === 'all' || m.name === 'ip4' || m.name === 'ip6') continue
    if (!claimLookup(state)) continue
    if (m.name === 'ptr' || m.hasMacro) continue // needs the client IP / the message to resolve
    if (m.name === 'include') {
      const target = normalizeName(m.domain as string)
      if (chain.includes(target)) {
        state.problems.push({
          code: 'include_loop',
          domain,
          message: `include loop: ${[...chain, target].join(' → ')}`,
        })
        continue
      }
      tasks.push(
        fetchChildRecord(state, target, 'include', domain).then(async (child) => {
          if (!child) return
          const result = await walkRecord(state, target, child, [...chain, target])
          if (m.qualifier === '+' && result.policy === 'pass' && result.source === 'all') {
            state.passAllViaInclude = true
            state.warnings.push(`include:${target} ends in "+all": every sender passes`)
          }
        }),
      )
      continue
    }
    tasks.push(resolveTarget(state, m, domain))
  }
  let redirectTask: Promise<{ policy: SpfPolicy | null; source: SpfCheckResult['policySource'] }> | null = null
  const redirect = record.terms.find((t): t is SpfModifier => t.kind === 'modifier' && t.name === 'redirect')
  if (record.all === null && redirect && claimLookup(state)) {
    const target = normalizeName(redirect.value)
    if (redirect.hasMacro) {
      redirectTask = Promise.resolve({ policy: null, source: 'redirect' })
    } else if (chain.includes(target)) {
      state.problems.push({ code: 'redirect_loop', domain, message: `redirect loop: ${[...chain, target].join(' → ')}` })
      redirectTask = Promise.resolve({ policy: null, source: 'redirect' })
    } else {
      redirectTask = fetchChildRecord(state, target, 'redirect', domain).then(async (child) => {
        if (!child) return { policy: null, source: 'redirect' as const }
        const result = await walkRecord(state, target, child, [...chain, target])
        return { policy: result.policy, source: 'redirect' as const }
      })
    }
  }
  const [redirected] = await Promise.all([redirectTask, ...tasks])
  if (record.all !== null) return { policy: QUALIFIER_POLICY[record.all.qualifier], source: 'all' }
  if (redirect) return redirected ?? { policy: null, source: 'redirect' }
  return { policy: 'neutral', source: 'default' }
}

/**
 * Checks the SPF record of `domain`: selects the single `v=spf1` TXT record, parses it, and walks its include and
 * redirect tree counting DNS-querying terms and void lookups (RFC 7208 §4.6.4), stopping at the limits.
 *
 * Never throws and never rejects: DNS failures give `temperror` (unknown), broken records `permerror`. A permerror
 * found anywhere in the tree wins over a DNS failure elsewhere (the record is broken whatever the missing answer).
 *
 * @example
 * const spf = await checkSpf(dns, 'example.com')
 * // { status: 'ok', record: 'v=spf1 include:_spf.google.com -all', policy: 'fail', dnsLookups: 4, … }
 */
export async function checkSpf(dns: DnsSource, domain: string, options: SpfCheckOptions = {}): Promise<SpfCheckResult> {
  const name = normalizeName(domain)
  const state: WalkState = {
    dns,
    lookupLimit: options.lookupLimit ?? SPF_LOOKUP_LIMIT,
    voidLimit: options.voidLookupLimit ?? SPF_VOID_LOOKUP_LIMIT,
    lookups: 0,
    voids: 0,
    tooManyLookups: false,
    tooManyVoids: false,
    passAllViaInclude: false,
    problems: [],
    warnings: [],
    visited: [],
    queries: 0,
  }
  const base: SpfCheckResult = {
    domain: name,
    status: 'none',
    found: false,
    recordValid: false,
    record: null,
    records: [],
    policy: null,
    policySource: null,
    dnsLookups: 0,
    voidLookups: 0,
    tooManyLookups: false,
    tooManyVoidLookups: false,
    passAllViaInclude: false,
    problems: state.problems,
    warnings: state.warnings,
    visited: state.visited,
    queries: 0,
  }
  if (!isValidSpfDomain(name)) {
    state.warnings.push(`"${domain}" is not a valid SPF domain (RFC 7208 §4.3)`)
    return base
  }
  let answer: DnsAnswer<string>
  if (options.txt) answer = await options.txt
  else answer = await txt(state, name)
  if (isDnsFailure(answer.status)) {
    state.problems.push({ code: 'dns_error', domain: name, message: `TXT lookup of ${name} failed (${answer.status})` })
    return { ...base, status: 'temperror', queries: state.queries }
  }
  const selected = selectSpfRecord(answer.status === 'ok' ? answer.records : [])
  if (selected.count === 0) return { ...base, queries: state.queries }
  const record = selected.records[0] as string
  if (selected.count > 1) {
    state.problems.push({
      code: 'multiple_records',
      domain: name,
      message: `${name} has ${selected.count} SPF records; RFC 7208 §4.5 makes that a permerror`,
    })
    return { ...base, status: 'permerror', found: true, record, records: selected.records, queries: state.queries }
  }
  const parsed = parseSpfRecord(record)
  if (!parsed.ok) {
    state.problems.push({ code: 'syntax', domain: name, message: parsed.error })
    return { ...base, status: 'permerror', found: true, record, records: selected.records, queries: state.queries }
  }
  state.warnings.push(...parsed.record.warnings)
  const top = await walkRecord(state, name, parsed.record, [name])
  if (state.tooManyLookups) {
    state.problems.push({
      code: 'too_many_lookups',
      domain: name,
      message: `more than ${state.lookupLimit} DNS-querying terms (RFC 7208 §4.6.4)`,
    })
  }
  const permanent = state.problems.some((p) => p.code !== 'dns_error')
  const temporary = state.problems.some((p) => p.code === 'dns_error')
  return {
    ...base,
    status: permanent ? 'permerror' : temporary ? 'temperror' : 'ok',
    found: true,
    recordValid: true,
    record,
    records: selected.records,
    policy: top.policy,
    policySource: top.source,
    dnsLookups: state.lookups,
    voidLookups: state.voids,
    tooManyLookups: state.tooManyLookups,
    tooManyVoidLookups: state.tooManyVoids,
    passAllViaInclude: state.passAllViaInclude,
    queries: state.queries,
  }
}

/**
 * The canonical form of an email address: the one string every spelling of a mailbox maps to, for comparing (lists) and
 * counting (velocity) addresses. Lower case, the domain in ASCII, and at consumer providers without what they ignore
 * (`jane.doe+news@gmail.com` → `janedoe@gmail.com`). Which providers ignore dots or tags: docs/decisions.md, "Lists and
 * velocity" → "canonical email address".
 */
import { domainToASCII } from 'node:url'
import { parseEmailAddress } from './syntax.js'
import { PROVIDERS } from './provider.js'

interface Rule {
  dots: boolean
  tags: boolean
  domain?: string
}

const RULES = new Map<string, Rule>()
for (const d of ['gmail.com', 'googlemail.com']) RULES.set(d, { dots: true, tags: true, domain: 'gmail.com' })
for (const id of ['microsoft', 'icloud', 'proton', 'fastmail', 'yandex']) {
  for (const d of PROVIDERS.find((p) => p.id === id)?.domains ?? []) RULES.set(d, { dots: false, tags: true })
}

/** The canonical form of a local part at an ASCII domain (both as parsed), see the module comment. */
export function canonicalEmailOf(localPart: string, asciiDomain: string): string {
  // the lists and velocity of one answer ask for the same address in turn: the last answer is kept
  if (localPart === memo.local && asciiDomain === memo.domain) return memo.canonical
  const canonical = canonicalOf(localPart, asciiDomain)
  memo.local = localPart
  memo.domain = asciiDomain
  memo.canonical = canonical
  return canonical
}

const memo = { local: '', domain: '', canonical: '@' }
const asciiMemo: { input: string; ascii: string | null } = { input: '', ascii: null }

function canonicalOf(localPart: string, asciiDomain: string): string {
  const domain = asciiDomain.toLowerCase()
  let local = localPart.toLowerCase()
  const rule = RULES.get(domain)
  if (!rule) return `${local}@${domain}`
  if (rule.tags) {
    const plus = local.indexOf('+')
    if (plus > 0) local = local.slice(0, plus)
  }
  if (rule.dots && local.includes('.')) local = local.split('.').join('')
  return `${local}@${rule.domain ?? domain}`
}

/**
 * The canonical form of an address, or null when it is not an address a mailbox can have (special-use domains such
 * as example.com are accepted, as test mode answers for them).
 *
 * @example
 * canonicalEmail('Jane.Doe+news@GoogleMail.com') // 'janedoe@gmail.com'
 * canonicalEmail('Jane.Doe+news@acme.io')        // 'jane.doe+news@acme.io'
 */
export function canonicalEmail(address: unknown): string | null {
  const parsed = parseEmailAddress(address, { allowSpecialUseDomains: true })
  return parsed.ok ? canonicalEmailOf(parsed.localPart, parsed.asciiDomain) : null
}

/**
 * The lower-case ASCII form of a domain name (trimmed, one trailing dot dropped, IDN converted), or null when it is
 * not a host name: 1 to 127 labels of letters, digits and hyphens (1–63 characters each, no hyphen at either end),
 * 253 characters at most.
 *
 * @example asciiDomain('Bücher.DE.') // 'xn--bcher-kva.de'
 */
export function asciiDomain(input: unknown): string | null {
  if (typeof input !== 'string' || input.length === 0 || input.length > 1024) return null
  // an answer's domain is asked for by its list matching and its velocity in turn: the last answer is kept
  if (input === asciiMemo.input) return asciiMemo.ascii
  const ascii = asciiOf(input)
  asciiMemo.input = input
  asciiMemo.ascii = ascii
  return ascii
}

function asciiOf(input: string): string | null {
  let d = input.trim().toLowerCase()
  if (d.endsWith('.')) d = d.slice(0, -1)
  if (d === '') return null
  let ascii = true
  for (let i = 0; i < d.length; i++) if (d.charCodeAt(i) >= 0x80) ascii = false
  if (!ascii) d = domainToASCII(d)
  if (d === '' || d.length > 253) return null
  let labelStart = 0
  for (let i = 0; i <= d.length; i++) {
    const c = i < d.length ? d.charCodeAt(i) : 0x2e
    if (c === 0x2e) {
      const len = i - labelStart
      if (len < 1 || len > 63 || d.charCodeAt(labelStart) === 0x2d || d.charCodeAt(i - 1) === 0x2d) return null
      labelStart = i + 1
    } else if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d)) return null
  }
  return d
}

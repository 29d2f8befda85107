/**
 * Domain and local-part lists of the email check: disposable domains (the `disposable-email-domains` package, minus
 * data/email/disposable-allow.txt), free mailbox providers and role local parts (data/email/), each loaded once into a
 * `Set` on first use. Sources, licenses and dates: data/email/SOURCES.md; `npx tsx scripts/refresh-email-lists.ts`
 * rebuilds them. Odd input answers false; a missing data file throws on first use with the path searched.
 */
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { domainToASCII, fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))
const MAX_DOMAIN_INPUT = 320
const MAX_LOCAL_INPUT = 256

/**
 * Absolute path of `data/email/<name>`, found by walking up from this module (works from `src/` under
 * tsx/vitest and from the bundled `dist/`). Throws when the file is not there.
 *
 * @example resolveEmailDataFile('free-providers.txt') // '/…/riskcheck/data/email/free-providers.txt'
 */
export function resolveEmailDataFile(name: string): string {
  let dir = HERE
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'data', 'email', name)
    if (existsSync(candidate)) return candidate
    const up = dirname(dir)
    if (up === dir) break
    dir = up
  }
  throw new Error(`riskcheck: data file data/email/${name} not found above ${HERE}`)
}

/**
 * The entries of a one-entry-per-line list in data/email/ (lines trimmed and lower-cased; blank lines and
 * `#` comments skipped), in file order.
 *
 * @example readEmailDataList('typo-targets.txt')[0] // 'gmail.com'
 */
export function readEmailDataList(name: string): string[] {
  return readDomainLines(readFileSync(resolveEmailDataFile(name), 'utf8'))
}

interface DisposableData {
  exact: Set<string>
  wildcard: Set<string>
  /** a bit filter over both sets (see {@link mayContain}) */
  filter: Uint32Array
}

/** Bits of the disposable-domain filter (2^21 = 256 KB for ~120,000 names: about 1 % false positives). */
const FILTER_BITS = 1 << 21

/** Two bit positions of a name (FNV-1a 32-bit, and the same hash remixed). */
function filterHashes(name: string): [number, number] {
  let h = 0x811c9dc5
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  const h2 = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) ^ (h >>> 12)
  return [(h >>> 0) & (FILTER_BITS - 1), (h2 >>> 0) & (FILTER_BITS - 1)]
}

function addToFilter(filter: Uint32Array, name: string): void {
  const [a, b] = filterHashes(name)
  filter[a >>> 5]! |= 1 << (a & 31)
  filter[b >>> 5]! |= 1 << (b & 31)
}

/**
 * False when `name` is surely on neither disposable list. Most domains are not listed, and a hash plus two bit reads
 * in a 256 KB table cost far less than two lookups in a set of 120,000 names.
 */
function mayContain(filter: Uint32Array, name: string): boolean {
  const [a, b] = filterHashes(name)
  return (filter[a >>> 5]! & (1 << (a & 31))) !== 0 && (filter[b >>> 5]! & (1 << (b & 31))) !== 0
}

/** The disposable lists with their bit filter. */
function withFilter(exact: Set<string>, wildcard: Set<string>): DisposableData {
  const filter = new Uint32Array(FILTER_BITS / 32)
  for (const d of exact) addToFilter(filter, d)
  for (const d of wildcard) addToFilter(filter, d)
  return { exact, wildcard, filter }
}

let disposable: DisposableData | undefined
let free: Set<string> | undefined
let roles: Set<string> | undefined

/**
 * A domain list as a Set of lower-case ASCII (punycode) domains. The entries are almost all in that form already:
 * the Set is built straight from the array (fast), then the few entries that need it are fixed (Unicode → punycode,
 * case, stray spaces).
 */
function toDomainSet(list: readonly string[], allow: readonly string[]): Set<string> {
  const set = new Set<string>(list)
  for (const entry of list) {
    if (isCanonicalAscii(entry)) continue
    set.delete(entry)
    const d = String(entry).trim().toLowerCase()
    const ascii = d === '' || isAscii(d) ? d : domainToASCII(d)
    if (ascii !== '') set.add(ascii)
  }
  for (const d of allow) set.delete(d)
  return set
}

function loadDisposable(): DisposableData {
  if (disposable) return disposable
  const require = createRequire(import.meta.url)
  const read = (file: string): string[] =>
    JSON.parse(readFileSync(require.resolve(`disposable-email-domains/${file}`), 'utf8')) as string[]
  const allow = readEmailDataList('disposable-allow.txt')
  disposable = withFilter(toDomainSet(read('index.json'), allow), toDomainSet(read('wildcard.json'), allow))
  return disposable
}

function loadFree(): Set<string> {
  free ??= new Set(readEmailDataList('free-providers.txt'))
  return free
}

/** The disposable and free-provider lists of one data set. */
export interface EmailLists {
  /** {@link isDisposableDomain} against this set's disposable list */
  isDisposable(domain: string): boolean
  /** {@link isFreeProviderDomain} against this set's free-provider list */
  isFreeProvider(domain: string): boolean
  /** true once a list was loaded (a lookup used it) */
  loaded(): boolean
  /** loads both lists now when `yes` (before the set is used); throws when a file cannot be read */
  preload(yes: boolean): void
}

/** Files of a data set's email lists; null = the bundled list. */
export interface EmailListFiles {
  /** compiled disposable list: JSON `{ exact: string[], wildcard: string[] }`, already cleaned of allowed entries */
  disposable: string | null
  /** free-provider list, one domain per line (`#` comments) */
  free: string | null
}

/**
 * The email lists of a data set (see src/data/): each list loads on first use and is kept by this object; a
 * missing or unreadable file throws on that first use (the check then answers false, as for any list failure).
 *
 * @example
 * const lists = createEmailLists({ disposable: '/var/lib/riskcheck/sets/…/email/disposable.json', free: null })
 * lists.isDisposable('mailinator.com') // true
 */
export function createEmailLists(files: EmailListFiles): EmailLists {
  let d: DisposableData | undefined
  let f: Set<string> | undefined
  const disposableData = (): DisposableData => {
    if (files.disposable === null) return loadDisposable()
    if (!d) {
      const json = JSON.parse(readFileSync(files.disposable, 'utf8')) as { exact?: unknown; wildcard?: unknown }
      const arr = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])
      d = withFilter(toDomainSet(arr(json.exact), []), toDomainSet(arr(json.wildcard), []))
    }
    return d
  }
  const freeSet = (): Set<string> => {
    if (files.free === null) return loadFree()
    f ??= new Set(readDomainLines(readFileSync(files.free, 'utf8')))
    return f
  }
  let used = false
  return {
    isDisposable: (domain) => {
      used = true
      return matchDisposable(disposableData(), domain)
    },
    isFreeProvider: (domain) => {
      used = true
      const n = normalizeDomain(domain)
      return n !== '' && freeSet().has(n)
    },
    loaded: () => used,
    preload(yes) {
      if (!yes) return
      disposableData()
      freeSet()
      used = true
    },
  }
}

/** The entries of a one-entry-per-line list (trimmed, lower-cased; blank lines and `#` comments skipped). */
function readDomainLines(text: string): string[] {
  const out: string[] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim().toLowerCase()
    if (line !== '' && !line.startsWith('#')) out.push(line)
  }
  return out
}

function loadRoles(): Set<string> {
  roles ??= new Set(readEmailDataList('role-local-parts.txt'))
  return roles
}

/**
 * Lower-case ASCII (punycode) form of a domain for list lookups: trimmed, trailing dot removed, IDN
 * converted. Returns '' for anything that is not a plausible domain string.
 */
function normalizeDomain(domain: unknown): string {
  if (typeof domain !== 'string' || domain.length === 0 || domain.length > MAX_DOMAIN_INPUT) return ''
  let d = domain.trim().toLowerCase()
  if (d.endsWith('.')) d = d.slice(0, -1)
  if (d === '') return ''
  if (!isAscii(d)) d = domainToASCII(d)
  return d
}

/**
 * True when the domain, or any parent domain of it with at least two labels, is on the disposable list
 * (`disposable-email-domains` exact + wildcard entries): `a.b.mailinator.com` matches `mailinator.com`.
 * Accepts Unicode or punycode, any case, with or without a trailing dot. It does not resolve anything:
 * a disposable service on an unlisted domain is not detected.
 *
 * @example
 * isDisposableDomain('mailinator.com')        // true
 * isDisposableDomain('x.y.mailinator.com')    // true
 * isDisposableDomain('gmail.com')             // false
 */
export function isDisposableDomain(domain: string): boolean {
  return matchDisposable(loadDisposable(), domain)
}

function matchDisposable({ exact, wildcard, filter }: DisposableData, domain: string): boolean {
  const d = normalizeDomain(domain)
  if (d === '') return false
  let candidate = d
  // Walk up while the candidate still has a dot (a bare TLD is never listed).
  for (;;) {
    if (mayContain(filter, candidate) && (exact.has(candidate) || wildcard.has(candidate))) return true
    const dot = candidate.indexOf('.')
    if (dot === -1) return false
    candidate = candidate.slice(dot + 1)
    if (candidate.indexOf('.') === -1) return false
  }
}

/**
 * True when the domain is a free / consumer mailbox provider (gmail.com, yahoo.co.uk, gmx.de, qq.com …),
 * by exact match against data/email/free-providers.txt. Subdomains do not match (they are not mailbox
 * domains of the provider). It says nothing about a company domain hosted at such a provider (see
 * `detectProvider` for that).
 *
 * @example
 * isFreeProviderDomain('GMail.com') // true
 * isFreeProviderDomain('acme.com')  // false
 */
export function isFreeProviderDomain(domain: string): boolean {
  const d = normalizeDomain(domain)
  return d !== '' && loadFree().has(d)
}

const NOREPLY_PREFIXES = ['noreply', 'donotreply', 'mailerdaemon']

/**
 * Qualifier tokens that may accompany a role word without making the address personal
 * (`support-team`, `sales.emea`, `info.de`, `billing2`).
 */
const ROLE_QUALIFIERS = new Set([
  'team', 'dept', 'department', 'desk', 'group', 'office', 'global', 'intl', 'international', 'hq', 'local',
  'us', 'usa', 'uk', 'eu', 'emea', 'apac', 'latam', 'na', 'de', 'fr', 'es', 'it', 'nl', 'ch', 'at', 'au',
  'ca', 'in', 'jp', 'br', 'mx', 'pl', 'se', 'no', 'dk', 'fi', 'be', 'ie', 'nz', 'za', 'sg', 'hk', 'cn',
])

/**
 * True when a local part names a role rather than a person: RFC 2142 names (postmaster, abuse, info, …)
 * plus common role names (admin, billing, noreply, support, sales …). Case-insensitive; a `+tag` is
 * ignored; `.`, `-` and `_` separators are ignored (`no-reply` = `noreply`, `customer_service` =
 * `customerservice`); trailing digits are ignored (`sales2`); a name made only of role words and
 * qualifiers counts (`support-team`, `sales.emea`); anything starting with noreply / donotreply /
 * mailer-daemon counts. A personal name that merely contains a role word (`john.sales`) does not.
 *
 * @example
 * isRoleLocalPart('Support+ticket') // true
 * isRoleLocalPart('no-reply')       // true
 * isRoleLocalPart('jane.doe')       // false
 */
export function isRoleLocalPart(localPart: string): boolean {
  if (typeof localPart !== 'string' || localPart.length === 0 || localPart.length > MAX_LOCAL_INPUT) return false
  let lp = localPart.trim().toLowerCase()
  const plus = lp.indexOf('+')
  if (plus > 0) lp = lp.slice(0, plus)
  if (lp === '') return false
  const set = loadRoles()
  if (set.has(lp)) return true

  const squashed = removeSeparators(lp)
  if (squashed === '') return false
  if (set.has(squashed)) return true
  const undigited = stripTrailingDigits(squashed)
  if (undigited !== '' && undigited !== squashed && set.has(undigited)) return true
  for (const prefix of NOREPLY_PREFIXES) if (squashed.startsWith(prefix)) return true

  const tokens = splitSeparators(lp)
  if (tokens.length < 2) return false
  let roleTokens = 0
  for (const token of tokens) {
    if (set.has(token) || set.has(stripTrailingDigits(token))) roleTokens++
    else if (!ROLE_QUALIFIERS.has(token) && !isAllDigits(token)) return false
  }
  return roleTokens > 0
}

/** Entry counts of the loaded lists (loads them); used by the size-pinning test and diagnostics. */
export function getEmailListSizes(): {
  disposableExact: number
  disposableWildcard: number
  freeProviders: number
  roleLocalParts: number
} {
  const d = loadDisposable()
  return {
    disposableExact: d.exact.size,
    disposableWildcard: d.wildcard.size,
    freeProviders: loadFree().size,
    roleLocalParts: loadRoles().size,
  }
}

function isSeparator(c: number): boolean {
  return c === 0x2e || c === 0x2d || c === 0x5f // . - _
}

function removeSeparators(s: string): string {
  let i = 0
  while (i < s.length && !isSeparator(s.charCodeAt(i))) i++
  if (i === s.length) return s // nothing to remove (the usual case): no copy
  let out = s.slice(0, i)
  for (; i < s.length; i++) if (!isSeparator(s.charCodeAt(i))) out += s[i]
  return out
}

function splitSeparators(s: string): string[] {
  const out: string[] = []
  let start = 0
  for (let i = 0; i <= s.length; i++) {
    if (i === s.length || isSeparator(s.charCodeAt(i))) {
      if (i > start) out.push(s.slice(start, i))
      start = i + 1
    }
  }
  return out
}

function stripTrailingDigits(s: string): string {
  let end = s.length
  while (end > 0) {
    const c = s.charCodeAt(end - 1)
    if (c < 0x30 || c > 0x39) break
    end--
  }
  return s.slice(0, end)
}

function isAllDigits(s: string): boolean {
  return s.length > 0 && stripTrailingDigits(s) === ''
}

/** lower-case ASCII without spaces: already in lookup form */
function isCanonicalAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x80 || c <= 0x20 || (c >= 0x41 && c <= 0x5a)) return false
  }
  return s.length > 0
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false
  return true
}

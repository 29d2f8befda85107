/**
 * DMARC (RFC 7489) for the email-authentication grade: policy discovery at `_dmarc.<host>` with the fallback to
 * `_dmarc.<organizational domain>` (§6.6.3), and a tag parser that validates every RFC 7489 tag.
 *
 * Not done: the RFC 9989 (DMARCbis) DNS tree walk, external report-destination authorization
 * (`<dom>._report._dmarc.<dest>`), alignment checks (they need a message).
 */

import { isDnsFailure, type DnsSource } from '../../sources/dns-types.js'

/** A DMARC policy value. */
export type DmarcPolicy = 'none' | 'quarantine' | 'reject'
/** An alignment mode: relaxed or strict. */
export type DmarcAlignment = 'r' | 's'

/** Longest TXT record parsed as a tag list (length cap before parsing). */
export const MAX_TAG_LIST_LENGTH = 4096

const POLICIES: ReadonlySet<string> = new Set(['none', 'quarantine', 'reject'])
const KNOWN_TAGS: ReadonlySet<string> = new Set(['v', 'p', 'sp', 'rua', 'ruf', 'pct', 'adkim', 'aspf', 'fo', 'rf', 'ri', 'np', 'psd', 't'])

/** A parsed tag=value list (RFC 6376 §3.2, used by DMARC, DKIM and BIMI records). */
export interface TagList {
  /** tags by lower-case name, values trimmed; the first occurrence wins */
  tags: Map<string, string>
  /** tag names in record order */
  order: string[]
  /** syntax problems (empty name, missing "=", duplicate tags) */
  errors: string[]
}

function isTagNameChar(c: number, first: boolean): boolean {
  const alpha = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
  if (first) return alpha
  return alpha || (c >= 0x30 && c <= 0x39) || c === 0x5f
}

/**
 * Parses a `tag=value; tag=value` list (RFC 6376 §3.2): whitespace around names, "=" and values is ignored, an
 * empty trailing segment is allowed, duplicate tags are an error. Never throws.
 *
 * @example parseTagList('v=DMARC1; p=reject; rua=mailto:d@example.com').tags.get('p') // 'reject'
 */
export function parseTagList(text: string): TagList {
  const tags = new Map<string, string>()
  const order: string[] = []
  const errors: string[] = []
  if (text.length > MAX_TAG_LIST_LENGTH) {
    errors.push(`record longer than ${MAX_TAG_LIST_LENGTH} characters`)
    return { tags, order, errors }
  }
  for (const segment of text.split(';')) {
    const part = segment.trim()
    if (part === '') continue
    const eq = part.indexOf('=')
    if (eq < 0) {
      errors.push(`"${part}" is not a tag=value pair`)
      continue
    }
    const name = part.slice(0, eq).trim()
    let valid = name.length > 0
    for (let i = 0; valid && i < name.length; i++) valid = isTagNameChar(name.charCodeAt(i), i === 0)
    if (!valid) {
      errors.push(`invalid tag name "${name}"`)
      continue
    }
    const key = name.toLowerCase()
    if (tags.has(key)) {
      errors.push(`duplicate tag "${key}"`)
      continue
    }
    tags.set(key, part.slice(eq + 1).trim())
    order.push(key)
  }
  return { tags, order, errors }
}

/**
 * True when a TXT string is a DMARC record: it starts with the version tag `v=DMARC1` (case-insensitive, as
 * receivers such as mailauth accept it), followed by ";" or the end (RFC 7489 §6.6.3 step 4).
 */
export function isDmarcRecord(txt: string): boolean {
  const s = txt.trimStart()
  if (s.length < 8 || s.slice(0, 8).toLowerCase() !== 'v=dmarc1') return false
  const rest = s.slice(8).trimStart()
  return rest === '' || rest[0] === ';'
}

/** A parsed DMARC record. */
export interface ParsedDmarcRecord {
  /** p after RFC 7489 §6.6.3: the published policy, `none` when p/sp is invalid but rua is usable, else null */
  policy: DmarcPolicy | null
  /** sp as published (null when absent: subdomains then get `policy`) */
  subdomainPolicy: DmarcPolicy | null
  /** rua as published (comma-separated URIs) */
  rua: string | null
  /** the syntactically valid rua URIs */
  ruaUris: string[]
  ruf: string | null
  /** pct, default 100 */
  pct: number
  adkim: DmarcAlignment
  aspf: DmarcAlignment
  /** false when receivers apply no DMARC processing (invalid p/sp without a usable rua, RFC 7489 §6.6.3) */
  valid: boolean
  /** problems that change how receivers treat the record */
  errors: string[]
  /** problems receivers ignore (bad optional values, unknown tags) */
  warnings: string[]
}

function isReportUri(uri: string): boolean {
  // RFC 7489 §6.2: a URI, optionally followed by "!" size; mailto: and https: are what receivers send to
  const bang = uri.indexOf('!')
  const u = (bang >= 0 ? uri.slice(0, bang) : uri).trim()
  const lower = u.toLowerCase()
  if (lower.startsWith('mailto:')) {
    const addr = u.slice(7)
    const at = addr.lastIndexOf('@')
    return at > 0 && at < addr.length - 1 && !addr.includes(' ') && addr.slice(at + 1).includes('.')
  }
  if (lower.startsWith('https://') || lower.startsWith('http://')) return u.length > lower.indexOf('//') + 2 && !u.includes(' ')
  return false
}

function parsePolicy(v: string | undefined): DmarcPolicy | null | undefined {
  if (v === undefined) return undefined
  const lower = v.toLowerCase()
  return POLICIES.has(lower) ? (lower as DmarcPolicy) : null
}

/**
 * Parses and validates one DMARC record (RFC 7489 §6.3). An invalid or missing `p`, or an invalid `sp`, follows
 * §6.6.3: with at least one valid `rua` URI the record acts as `p=none`, otherwise receivers ignore it
 * (`valid: false`). Bad optional values (pct, adkim, aspf, fo, rf, ri) are warnings and fall back to defaults.
 *
 * @example parseDmarcRecord('v=DMARC1; p=reject; pct=50').pct // 50
 * @example parseDmarcRecord('v=DMARC1; p=bob').valid          // false
 */
export function parseDmarcRecord(text: string): ParsedDmarcRecord {
  const list = parseTagList(text)
  const errors: string[] = [...list.errors]
  const warnings: string[] = []
  const t = list.tags
  if (list.order[0] !== 'v' || (t.get('v') ?? '').toUpperCase() !== 'DMARC1') errors.push('the record must start with v=DMARC1')
  if (list.order[1] !== undefined && list.order[1] !== 'p') warnings.push('the p tag should immediately follow v')
  for (const name of list.order) if (!KNOWN_TAGS.has(name)) warnings.push(`unknown tag "${name}" ignored`)

  const rua = t.get('rua') ?? null
  const ruaUris = rua === null ? [] : rua.split(',').map((u) => u.trim()).filter((u) => u !== '' && isReportUri(u))
  if (rua !== null && ruaUris.length === 0) warnings.push(`rua has no valid report URI: "${rua}"`)
  const ruf = t.get('ruf') ?? null
  if (ruf !== null && !ruf.split(',').some((u) => isReportUri(u.trim()))) warnings.push(`ruf has no valid report URI: "${ruf}"`)

  let policy = parsePolicy(t.get('p'))
  const sp = parsePolicy(t.get('sp'))
  let valid = errors.length === 0
  let actsAsNone = false
  if (policy === undefined) errors.push('the p tag is missing')
  else if (policy === null) errors.push(`invalid p value "${t.get('p') ?? ''}"`)
  if (sp === null) errors.push(`invalid sp value "${t.get('sp') ?? ''}"`)
  if (policy === undefined || policy === null || sp === null) {
    // RFC 7489 §6.6.3: with a usable rua, act as if p=none; otherwise apply no DMARC processing
    if (valid && ruaUris.length > 0) {
      policy = 'none'
      actsAsNone = true
      warnings.push('p/sp invalid: receivers treat the record as p=none because rua is usable (RFC 7489 §6.6.3)')
    } else {
      policy = null
      valid = false
    }
  }

  let pct = 100
  const pctText = t.get('pct')
  if (pctText !== undefined) {
    const n = /^[0-9]{1,3}$/.test(pctText) ? Number(pctText) : NaN
    if (Number.isInteger(n) && n >= 0 && n <= 100) pct = n
    else warnings.push(`invalid pct value "${pctText}" (0-100); 100 is used`)
  }
  const alignment = (name: 'adkim' | 'aspf'): DmarcAlignment => {
    const v = t.get(name)
    if (v === undefined) return 'r'
    const lower = v.toLowerCase()
    if (lower === 'r' || lower === 's') return lower
    warnings.push(`invalid ${name} value "${v}" (r or s); r is used`)
    return 'r'
  }
  const adkim = alignment('adkim')
  const aspf = alignment('aspf')
  const fo = t.get('fo')
  if (fo !== undefined && !fo.split(':').every((x) => ['0', '1', 'd', 's'].includes(x.trim().toLowerCase()))) {
    warnings.push(`invalid fo value "${fo}"`)
  }
  const rf = t.get('rf')
  if (rf !== undefined && rf.toLowerCase() !== 'afrf') warnings.push(`invalid rf value "${rf}"`)
  const ri = t.get('ri')
  if (ri !== undefined && !/^[0-9]{1,10}$/.test(ri)) warnings.push(`invalid ri value "${ri}"`)

  return {
    policy: valid ? (policy ?? null) : null,
    subdomainPolicy: valid && !actsAsNone && sp !== undefined && sp !== null ? sp : null,
    rua,
    ruaUris,
    ruf,
    pct,
    adkim,
    aspf,
    valid,
    errors,
    warnings,
  }
}

/**
 * `ok` = one valid record applies, `none` = no DMARC record at the host or its organizational domain, `invalid` =
 * several records or a record receivers ignore, `temperror` = DNS failed so it cannot be told.
 */
export type DmarcStatus = 'ok' | 'none' | 'invalid' | 'temperror'

/** Result of {@link checkDmarc}. */
export interface DmarcCheckResult {
  /** the host the policy was asked for */
  domain: string
  status: DmarcStatus
  /** a `v=DMARC1` record exists at the place discovery ended (also true for invalid/several records) */
  found: boolean
  /** the name the record was found at (`_dmarc.<host>` or `_dmarc.<org domain>`); null when none */
  location: string | null
  /** true when the record came from the organizational domain (fallback) */
  inherited: boolean
  /** the record (the first one when there are several); null when none */
  record: string | null
  records: string[]
  /** p of the record (after RFC 7489 §6.6.3); null when absent or ignored */
  policy: DmarcPolicy | null
  /** sp of the record as published; null when absent */
  subdomainPolicy: DmarcPolicy | null
  /** the policy that applies to mail from the host: sp (else p) when inherited, p otherwise */
  effectivePolicy: DmarcPolicy | null
  rua: string | null
  /** rua names at least one syntactically valid report URI */
  ruaValid: boolean
  /** pct (default 100) when a record applies; null otherwise */
  pct: number | null
  adkim: DmarcAlignment | null
  aspf: DmarcAlignment | null
  errors: string[]
  warnings: string[]
  /** DNS questions asked */
  queries: number
}

/**
 * Discovers and parses the DMARC policy of `host` (RFC 7489 §6.6.3): `_dmarc.<host>`, and when that has no DMARC
 * record, `_dmarc.<orgDomain>`. Both questions are sent at once (the second only matters when the first finds
 * nothing). Several records at the deciding name make the result `invalid` (no policy, no fallback).
 * Never rejects; DNS failures give `temperror`.
 *
 * @example
 * await checkDmarc(dns, 'eu.corp.com', 'corp.com')
 * // { status: 'ok', inherited: true, location: '_dmarc.corp.com', policy: 'reject', effectivePolicy: 'reject', … }
 */
export async function checkDmarc(dns: DnsSource, host: string, orgDomain: string | null): Promise<DmarcCheckResult> {
  const useOrg = orgDomain !== null && orgDomain !== host
  const hostName = `_dmarc.${host}`
  const orgName = useOrg ? `_dmarc.${orgDomain}` : null
  const [hostAnswer, orgAnswer] = await Promise.all([
    dns.resolveTxt(hostName),
    orgName === null ? Promise.resolve(null) : dns.resolveTxt(orgName),
  ])
  const base: DmarcCheckResult = {
    domain: host,
    status: 'none',
    found: false,
    location: null,
    inherited: false,
    record: null,
    records: [],
    policy: null,
    subdomainPolicy: null,
    effectivePolicy: null,
    rua: null,
    ruaValid: false,
    pct: null,
    adkim: null,
    aspf: null,
    errors: [],
    warnings: [],
    queries: orgName === null ? 1 : 2,
  }
  if (isDnsFailure(hostAnswer.status)) {
    return { ...base, status: 'temperror', errors: [`TXT lookup of ${hostName} failed (${hostAnswer.status})`] }
  }
  let records = (hostAnswer.status === 'ok' ? hostAnswer.records : []).filter(isDmarcRecord)
  let location = hostName
  let inherited = false
  if (records.length === 0 && orgAnswer !== null && orgName !== null) {
    if (isDnsFailure(orgAnswer.status)) {
      return { ...base, status: 'temperror', errors: [`TXT lookup of ${orgName} failed (${orgAnswer.status})`] }
    }
    records = (orgAnswer.status === 'ok' ? orgAnswer.records : []).filter(isDmarcRecord)
    location = orgName
    inherited = true
  }
  if (records.length === 0) return base
  const record = records[0] as string
  if (records.length > 1) {
    return {
      ...base,
      status: 'invalid',
      found: true,
      location,
      inherited,
      record,
      records,
      errors: [`${location} has ${records.length} DMARC records; receivers apply no policy (RFC 7489 §6.6.3)`],
    }
  }
  const parsed = parseDmarcRecord(record)
  const effectivePolicy = parsed.valid ? (inherited ? (parsed.subdomainPolicy ?? parsed.policy) : parsed.policy) : null
  return {
    ...base,
    status: parsed.valid ? 'ok' : 'invalid',
    found: true,
    location,
    inherited,
    record,
    records,
    policy: parsed.policy,
    subdomainPolicy: parsed.subdomainPolicy,
    effectivePolicy,
    rua: parsed.rua,
    ruaValid: parsed.ruaUris.length > 0,
    pct: parsed.valid ? parsed.pct : null,
    adkim: parsed.valid ? parsed.adkim : null,
    aspf: parsed.valid ? parsed.aspf : null,
    errors: parsed.errors,
    warnings: parsed.warnings,
  }
}

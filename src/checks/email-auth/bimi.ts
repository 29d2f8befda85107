/**
 * BIMI for the email-authentication grade: the `default` selector's assertion record at `default._bimi.<host>`,
 * falling back to `default._bimi.<organizational domain>` like receivers (and mailauth) do. Both questions go out at
 * once. The logo (SVG Tiny-PS) and the mark certificate (`a=`) are not downloaded or validated.
 */

import { isDnsFailure, type DnsSource } from '../../sources/dns-types.js'
import { parseTagList } from './dmarc.js'

/** A parsed BIMI assertion record. */
export interface BimiRecord {
  /** `l=`: the logo URL ('' = declined to publish) */
  logo: string
  /** `a=`: the mark certificate (VMC/CMC) URL, '' or null when absent */
  authority: string | null
}

/**
 * Parses a BIMI assertion record: it must begin with `v=BIMI1`. Returns null for anything else.
 *
 * @example parseBimiRecord('v=BIMI1; l=https://example.com/logo.svg; a=') // { logo: 'https://example.com/logo.svg', authority: '' }
 */
export function parseBimiRecord(txt: string): BimiRecord | null {
  const list = parseTagList(txt)
  if (list.order[0] !== 'v' || (list.tags.get('v') ?? '').toUpperCase() !== 'BIMI1') return null
  if (list.errors.length > 0) return null
  return { logo: list.tags.get('l') ?? '', authority: list.tags.get('a') ?? null }
}

/** `found` = one valid record applies, `none` = no record, `invalid` = several or unparsable, `unknown` = DNS failed. */
export type BimiStatus = 'found' | 'none' | 'invalid' | 'unknown'

/** Result of {@link checkBimi}. */
export interface BimiCheckResult {
  domain: string
  status: BimiStatus
  found: boolean
  record: string | null
  /** the name the record was found at */
  location: string | null
  /** the logo URL of the record (null when none) */
  logo: string | null
  /** the record has a non-empty `a=` (mark certificate) */
  hasAuthority: boolean
  /** DNS questions asked */
  queries: number
}

/**
 * Looks up the BIMI record of `host` (`default._bimi.<host>`, else `default._bimi.<orgDomain>`). Never rejects.
 *
 * @example await checkBimi(dns, 'example.com', 'example.com') // { found: true, record: 'v=BIMI1; l=https://…', … }
 */
export async function checkBimi(dns: DnsSource, host: string, orgDomain: string | null): Promise<BimiCheckResult> {
  const useOrg = orgDomain !== null && orgDomain !== host
  const hostName = `default._bimi.${host}`
  const orgName = useOrg ? `default._bimi.${orgDomain}` : null
  const [hostAnswer, orgAnswer] = await Promise.all([
    dns.resolveTxt(hostName),
    orgName === null ? Promise.resolve(null) : dns.resolveTxt(orgName),
  ])
  const base: BimiCheckResult = {
    domain: host,
    status: 'none',
    found: false,
    record: null,
    location: null,
    logo: null,
    hasAuthority: false,
    queries: orgName === null ? 1 : 2,
  }
  if (isDnsFailure(hostAnswer.status)) return { ...base, status: 'unknown' }
  const isBimi = (t: string) => t.trimStart().slice(0, 7).toLowerCase() === 'v=bimi1'
  let records = (hostAnswer.status === 'ok' ? hostAnswer.records : []).filter(isBimi)
  let location = hostName
  if (records.length === 0 && orgAnswer !== null && orgName !== null) {
    if (isDnsFailure(orgAnswer.status)) return { ...base, status: 'unknown' }
    records = (orgAnswer.status === 'ok' ? orgAnswer.records : []).filter(isBimi)
    location = orgName
  }
  if (records.length === 0) return base
  const record = records[0] as string
  const parsed = records.length === 1 ? parseBimiRecord(record) : null
  if (!parsed) return { ...base, status: 'invalid', record, location }
  return {
    ...base,
    status: 'found',
    found: true,
    record,
    location,
    logo: parsed.logo,
    hasAuthority: parsed.authority !== null && parsed.authority !== '',
  }
}

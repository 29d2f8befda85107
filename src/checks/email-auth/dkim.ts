/**
 * DKIM discovery for the email-authentication grade: probes a documented list of common selectors
 * (data/email-auth/dkim-selectors.json, with sources) at `<selector>._domainkey.<host>`, all at once.
 *
 * A heuristic, like every selector-probing tool: a domain signing only with an unlisted selector reads "not found".
 * Key sizes are not judged.
 */

import selectorData from '../../../data/email-auth/dkim-selectors.json' with { type: 'json' }
import { isDnsFailure, type DnsAnswer, type DnsSource } from '../../sources/dns-types.js'
import { parseTagList } from './dmarc.js'

/** One selector of the bundled list. */
export interface DkimSelectorEntry {
  selector: string
  /** the provider the source lists name for it */
  provider: string
  /** keys of the source lists (see data/email-auth/SOURCES.md) */
  sources: string[]
}

/** The bundled selector list, most common first. */
export const DKIM_SELECTOR_LIST: readonly DkimSelectorEntry[] = selectorData.selectors

/** Just the selector names of {@link DKIM_SELECTOR_LIST}. */
export const DEFAULT_DKIM_SELECTORS: readonly string[] = DKIM_SELECTOR_LIST.map((s) => s.selector)

/** A parsed DKIM key record (RFC 6376 §3.6.1). */
export interface DkimKeyRecord {
  /** `k=` (default rsa) */
  keyType: string
  /** the base64 public key; '' for a revoked key */
  publicKey: string
  revoked: boolean
}

/**
 * Parses a TXT string as a DKIM key record: a tag list with `v=DKIM1` (when present it must come first) or a `p=`
 * tag (RFC 6376 §3.6.1 makes `v=` optional). Returns null for anything else (e.g. an SPF record reached through a
 * wildcard). An empty `p=` is a revoked key.
 *
 * @example parseDkimRecord('v=DKIM1; k=rsa; p=MIIBIjANBg…') // { keyType: 'rsa', publicKey: 'MIIBIjANBg…', revoked: false }
 */
export function parseDkimRecord(txt: string): DkimKeyRecord | null {
  const list = parseTagList(txt)
  const v = list.tags.get('v')
  if (v !== undefined && (v !== 'DKIM1' || list.order[0] !== 'v')) return null
  const p = list.tags.get('p')
  if (p === undefined) return null
  const publicKey = p.replace(/\s+/g, '')
  return { keyType: (list.tags.get('k') ?? 'rsa').toLowerCase(), publicKey, revoked: publicKey === '' }
}

/** `found` = at least one key, `not_found` = every selector answered without a key, `unknown` = none found and some failed. */
export type DkimStatus = 'found' | 'not_found' | 'unknown'

/** Result of {@link checkDkim}. */
export interface DkimCheckResult {
  domain: string
  status: DkimStatus
  found: boolean
  /** selectors with a (non-revoked) key, in list order */
  selectorsFound: string[]
  /** how many selectors were probed */
  selectorsChecked: number
  /** selectors publishing a revoked key (`p=` empty) */
  revoked: string[]
  /** selectors whose lookup failed (timeout, SERVFAIL …) */
  failed: string[]
  /** key type of each found selector */
  keys: Array<{ selector: string; keyType: string }>
  /** DNS questions asked */
  queries: number
}

/**
 * Probes `selectors` (default: the bundled list) under `host`, concurrently. Never rejects.
 *
 * @example
 * const dkim = await checkDkim(dns, 'example.com')
 * // { found: true, selectorsFound: ['google'], selectorsChecked: 48, … }
 */
export async function checkDkim(
  dns: DnsSource,
  host: string,
  selectors: readonly string[] = DEFAULT_DKIM_SELECTORS,
): Promise<DkimCheckResult> {
  const answers: Array<DnsAnswer<string>> = await Promise.all(selectors.map((s) => dns.resolveTxt(`${s}._domainkey.${host}`)))
  const selectorsFound: string[] = []
  const revoked: string[] = []
  const failed: string[] = []
  const keys: Array<{ selector: string; keyType: string }> = []
  answers.forEach((answer, i) => {
    const selector = selectors[i] as string
    if (answer.status === 'ok') {
      const parsed = answer.records.map(parseDkimRecord).filter((r): r is DkimKeyRecord => r !== null)
      const live = parsed.find((r) => !r.revoked)
      if (live) {
        selectorsFound.push(selector)
        keys.push({ selector, keyType: live.keyType })
      } else if (parsed.length > 0) revoked.push(selector)
    } else if (isDnsFailure(answer.status)) failed.push(selector)
  })
  const found = selectorsFound.length > 0
  return {
    domain: host,
    status: found ? 'found' : failed.length > 0 ? 'unknown' : 'not_found',
    found,
    selectorsFound,
    selectorsChecked: selectors.length,
    revoked,
    failed,
    keys,
    queries: selectors.length,
  }
}

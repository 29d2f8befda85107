/**
 * Loads the OpenSPF RFC 7208 test suite (test/fixtures/rfc7208/rfc7208-tests.yml, BSD-3-Clause, from
 * sdgathman/pyspf) into in-memory zones, the same way pyspf's own driver (test/testspf.py) does:
 * - `SPF:` entries are copied to TXT unless the name has TXT entries of its own;
 * - `NONE` values are dropped;
 * - a bare `TIMEOUT` makes questions of a type time out unless a record of that type came before it.
 */

import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import type { FakeRecords, FakeZone } from './email-auth-fake-dns.js'

/** One test case of the suite. */
export interface SuiteTest {
  scenario: string
  name: string
  spec: string
  /** acceptable RFC results (one or more) */
  results: string[]
  /** the domain check_host() is called with: the mail-from domain, or the HELO name when mail-from is empty */
  domain: string
  zone: FakeZone
}

const TYPES = ['A', 'AAAA', 'MX', 'TXT', 'PTR'] as const

function toZone(zonedata: Record<string, Array<string | Record<string, unknown>>>): FakeZone {
  const zone: FakeZone = {}
  for (const [rawName, entries] of Object.entries(zonedata)) {
    const name = rawName.toLowerCase().replace(/\.$/, '')
    const rec: FakeRecords = {}
    const hasTxt = entries.some((e) => typeof e === 'object' && 'TXT' in e)
    const seen = new Set<string>()
    const timeoutTypes: string[] = []
    const spf: Array<string | string[]> = []
    for (const entry of entries) {
      if (entry === 'TIMEOUT') {
        for (const t of TYPES) if (!seen.has(t) && !timeoutTypes.includes(t)) timeoutTypes.push(t)
        continue
      }
      if (typeof entry !== 'object') continue
      for (const [type, value] of Object.entries(entry)) {
        if (value === 'NONE' || (Array.isArray(value) && value.length === 1 && value[0] === 'NONE')) continue
        if (type === 'SPF') {
          if (!hasTxt) spf.push(value as string | string[])
          continue
        }
        seen.add(type)
        if (type === 'A') (rec.A ??= []).push(String(value))
        else if (type === 'AAAA') (rec.AAAA ??= []).push(String(value))
        else if (type === 'PTR') (rec.PTR ??= []).push(String(value).replace(/\.$/, ''))
        else if (type === 'CNAME') rec.CNAME = String(value).replace(/\.$/, '')
        else if (type === 'TXT') (rec.TXT ??= []).push(value as string | string[])
        else if (type === 'MX') {
          const [priority, exchange] = value as [number, string]
          ;(rec.MX ??= []).push({ priority, exchange: exchange.toLowerCase().replace(/\.$/, '') })
        }
      }
    }
    // generated TXT records come after every listed entry (pyspf getrdata appends them last)
    if (spf.length > 0) {
      if (timeoutTypes.includes('TXT')) {
        /* a TIMEOUT before the generated TXT records still times TXT out */
      }
      rec.TXT = [...(rec.TXT ?? []), ...spf]
    }
    if (timeoutTypes.length > 0) rec.timeoutTypes = timeoutTypes
    zone[name] = rec
  }
  return zone
}

/** Reads every test of the suite, in file order. */
export function loadRfc7208Suite(): SuiteTest[] {
  const file = fileURLToPath(new URL('./fixtures/rfc7208/rfc7208-tests.yml', import.meta.url))
  const out: SuiteTest[] = []
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const data = doc.toJS() as {
      description: string
      tests: Record<string, { spec: string; result: string | string[]; mailfrom?: string; helo: string }>
      zonedata: Record<string, Array<string | Record<string, unknown>>>
    } | null
    if (!data) continue
    const zone = toZone(data.zonedata)
    for (const [name, t] of Object.entries(data.tests)) {
      const mailfrom = t.mailfrom ?? ''
      const at = mailfrom.lastIndexOf('@')
      const domain = mailfrom === '' ? t.helo : at >= 0 ? mailfrom.slice(at + 1) : t.helo
      out.push({
        scenario: data.description,
        name,
        spec: String(t.spec),
        results: Array.isArray(t.result) ? t.result : [t.result],
        domain,
        zone,
      })
    }
  }
  return out
}

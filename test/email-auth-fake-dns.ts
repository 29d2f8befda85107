/**
 * An in-memory {@link DnsSource} for the email-authentication tests: a declarative zone (same shape as the loopback
 * DNS server's zones) that answers from memory and records every question it was asked, with start/end times so
 * tests can prove that queries overlap.
 */

import type { DnsAnswer, DnsSource, DnsStats, MxRecord } from '../src/sources/dns-types.js'

/** Records of one name. TXT entries may be split into character-strings (joined with '' like the real source). */
export interface FakeRecords {
  A?: string[]
  AAAA?: string[]
  MX?: MxRecord[]
  TXT?: Array<string | string[]>
  NS?: string[]
  PTR?: string[]
  CNAME?: string
  /** every question for this name times out / fails / is delayed */
  behaviour?: 'timeout' | 'servfail' | { delayMs: number }
  /** only these record types time out (RFC 7208 suite `TIMEOUT` semantics) */
  timeoutTypes?: string[]
}

/** A zone: lower-case names without trailing dot → records. */
export type FakeZone = Record<string, FakeRecords>

/** One recorded question. */
export interface FakeCall {
  type: 'A' | 'AAAA' | 'MX' | 'TXT' | 'NS' | 'PTR'
  name: string
  start: number
  end: number
}

/** The fake source plus what it saw. */
export interface FakeDns extends DnsSource {
  calls: FakeCall[]
  /** the largest number of questions that were in flight at the same time */
  maxInFlight(): number
}

/**
 * Creates the fake. `delayMs` delays every answer (default 0: answers on the next macrotask), which makes
 * concurrency observable through {@link FakeDns.maxInFlight}.
 */
export function createFakeDns(zone: FakeZone, options: { delayMs?: number } = {}): FakeDns {
  const calls: FakeCall[] = []
  let inFlight = 0
  let peak = 0
  let queries = 0
  let timeouts = 0
  const t0 = performance.now()

  function lookup<T>(type: FakeCall['type'], rawName: string, pick: (r: FakeRecords) => T[] | undefined, depth = 0): DnsAnswer<T> {
    const name = rawName.toLowerCase().replace(/\.$/, '')
    const rec = zone[name]
    if (!rec) return { status: 'nxdomain', records: [] }
    if (rec.behaviour === 'timeout' || rec.timeoutTypes?.includes(type)) return { status: 'timeout', records: [] }
    if (rec.behaviour === 'servfail') return { status: 'servfail', records: [] }
    if (rec.CNAME !== undefined && depth < 8) return lookup(type, rec.CNAME, pick, depth + 1)
    const records = pick(rec) ?? []
    return records.length > 0 ? { status: 'ok', records } : { status: 'nodata', records: [] }
  }

  function ask<T>(type: FakeCall['type'], name: string, pick: (r: FakeRecords) => T[] | undefined): Promise<DnsAnswer<T>> {
    queries++
    const call: FakeCall = { type, name, start: performance.now() - t0, end: -1 }
    calls.push(call)
    inFlight++
    peak = Math.max(peak, inFlight)
    const rec = zone[name.toLowerCase().replace(/\.$/, '')]
    const delay =
      rec && typeof rec.behaviour === 'object' ? rec.behaviour.delayMs : rec?.behaviour === 'timeout' ? 5 : (options.delayMs ?? 0)
    return new Promise((resolve) => {
      setTimeout(() => {
        inFlight--
        call.end = performance.now() - t0
        const answer = lookup(type, name, pick)
        if (answer.status === 'timeout') timeouts++
        resolve(answer)
      }, delay)
    })
  }

  return {
    calls,
    maxInFlight: () => peak,
    resolveMx: (n) => ask('MX', n, (r) => (r.MX ? [...r.MX].sort((a, b) => a.priority - b.priority) : undefined)),
    resolveTxt: (n) => ask('TXT', n, (r) => r.TXT?.map((t) => (Array.isArray(t) ? t.join('') : t))),
    resolve4: (n) => ask('A', n, (r) => r.A),
    resolve6: (n) => ask('AAAA', n, (r) => r.AAAA),
    reverse: (ip) => ask('PTR', ip, (r) => r.PTR),
    resolveNs: (n) => ask('NS', n, (r) => r.NS),
    stats: (): DnsStats => ({ queries, cacheHits: 0, deduplicated: 0, timeouts }),
    close: () => {},
  }
}

/**
 * The DNS source: Node's `dns.promises.Resolver` (c-ares, in-process) wrapped with a per-query timeout,
 * in-flight de-duplication, a TTL-respecting cache, bounded concurrency and counters.
 *
 * Every method resolves with a {@link DnsAnswer}; nothing here rejects. See `./dns-types.ts` for the contract.
 */
import { LRUCache } from 'lru-cache'
import { Resolver } from 'node:dns/promises'
import type { DnsAnswer, DnsSource, DnsStats, DnsStatus, MxRecord } from './dns-types.js'
import { Semaphore } from '../semaphore.js'
import { numberOption } from '../option-checks.js'
import { parseIp } from './ip/parse.js'

export type { DnsAnswer, DnsSource, DnsStats, DnsStatus, MxRecord } from './dns-types.js'

/** Options of {@link createDnsSource}. Every field is optional. */
export interface DnsSourceOptions {
  /**
   * Name servers as `'host'`, `'host:port'`, `'[v6]:port'` or a bare IPv6 address. Default: the system's
   * servers (as Node reads them at start-up).
   */
  servers?: string[]
  /** Timeout of one try, in milliseconds (default 3000). The whole question is also capped at `timeoutMs × tries`. */
  timeoutMs?: number
  /** Tries per server (default 2). */
  tries?: number
  /**
   * TTL in seconds used for record types whose TTL Node does not report (everything except A/AAAA); default 300.
   * `0` disables the cache altogether.
   */
  cacheTtlSeconds?: number
  /** Lower clamp of every cached TTL, in seconds (default 5). */
  minTtlSeconds?: number
  /** Upper clamp of every cached TTL, in seconds (default 3600). */
  maxTtlSeconds?: number
  /** TTL of negative answers (`nxdomain`, `nodata`), in seconds (default 60, also clamped). */
  negativeTtlSeconds?: number
  /**
   * Most questions sent at once (default {@link DEFAULT_MAX_IN_FLIGHT}: one email-authentication lookup asks up to 54
   * at once); further ones wait in a FIFO queue, and the wait counts against their time limit.
   */
  maxInFlight?: number
  /** Most cached answers kept (default 10,000); the oldest entry is dropped first. */
  maxCacheEntries?: number
  /** Clock in milliseconds since the epoch, for the cache (default `Date.now`). */
  now?: () => number
}

type QueryType = 'MX' | 'TXT' | 'A' | 'AAAA' | 'PTR' | 'NS'

interface CacheEntry {
  expiresAt: number
  answer: DnsAnswer<unknown>
}

/** Raw result of one resolver call: records plus the smallest TTL when Node reports one. */
interface RawResult<T> {
  records: T[]
  ttl: number | null
}

const MAX_NAME_LENGTH = 253

/** Default of {@link DnsSourceOptions.maxInFlight}: every question of one lookup goes out in the same round. */
export const DEFAULT_MAX_IN_FLIGHT = 64

/** Defaults of the DNS source, defined once: `createRiskcheck`'s settings (src/settings.ts) use these. */
export const DNS_DEFAULTS = {
  /** Timeout of one try of one query, in ms. */
  timeoutMs: 3000,
  /** Tries per query. */
  tries: 2,
  /** TTL of answers whose own TTL is not available (MX, TXT …), in seconds. */
  cacheTtlSeconds: 300,
  maxInFlight: DEFAULT_MAX_IN_FLIGHT,
} as const

/** Maps a c-ares error code (as Node reports it) to a {@link DnsStatus}. */
export function mapDnsErrorCode(code: unknown): DnsStatus {
  switch (code) {
    case 'ENOTFOUND':
      return 'nxdomain'
    case 'ENODATA':
      return 'nodata'
    case 'ETIMEOUT':
      return 'timeout'
    case 'ESERVFAIL':
      return 'servfail'
    case 'EREFUSED':
      return 'refused'
    default:
      return 'error'
  }
}

/** Lower-cases a name and strips one trailing dot; returns null for a name that cannot be asked. */
function normalizeName(name: unknown): string | null {
  if (typeof name !== 'string') return null
  if (name.length > MAX_NAME_LENGTH + 1) return null
  let n = name.toLowerCase()
  if (n.endsWith('.')) n = n.slice(0, -1)
  if (n.length === 0 || n.length > MAX_NAME_LENGTH) return null
  // Whitespace, control characters and anything c-ares would mis-handle are refused up front.
  for (let i = 0; i < n.length; i++) {
    const c = n.charCodeAt(i)
    if (c <= 0x20 || c === 0x7f || c > 0x7e) return null
  }
  if (n.includes('..')) return null
  return n
}

/** Strips one trailing dot and lower-cases a host name from an answer. */
function cleanHost(host: string): string {
  const h = host.toLowerCase()
  return h.endsWith('.') ? h.slice(0, -1) : h
}

function validateServers(servers: string[]): string[] {
  if (!Array.isArray(servers)) throw new TypeError('dns.servers must be an array of "host" or "host:port" strings')
  return servers.map((s) => {
    if (typeof s !== 'string' || s.trim() === '') throw new TypeError(`dns.servers: invalid server ${String(s)}`)
    return s.trim()
  })
}


/**
 * Creates a DNS source over Node's `dns.promises.Resolver`: a per-query timeout with an outer cap of
 * `timeoutMs × tries` from when the question is asked, identical questions in flight sent once, answers cached by TTL
 * (`nxdomain`/`nodata` for `negativeTtlSeconds`; failures never), at most `maxInFlight` questions out. No DNSSEC, no
 * CNAME following, no `/etc/hosts`. Bad options throw a `TypeError` (docs/decisions.md, "Sources and limits" → "DNS").
 *
 * @example
 * const dns = createDnsSource({ servers: ['127.0.0.1:5353'], timeoutMs: 1000 })
 * const mx = await dns.resolveMx('example.com') // { status: 'ok', records: [{ exchange, priority }] }
 */
export function createDnsSource(opts: DnsSourceOptions = {}): DnsSource {
  const settings = readDnsSettings(opts)
  const resolver = new Resolver({ timeout: settings.timeoutMs, tries: settings.tries })
  if (opts.servers !== undefined) {
    try {
      resolver.setServers(validateServers(opts.servers))
    } catch (err) {
      throw new TypeError(`dns.servers: ${(err as Error).message}`)
    }
  }
  const state: DnsState = {
    settings,
    // An LRU (not a Map trimmed from its front: V8 makes that O(n) per eviction once deletions pile up).
    cache: new LRUCache<string, CacheEntry>({ max: Math.max(1, settings.maxCacheEntries) }),
    inFlight: new Map(),
    timers: new Set(),
    slots: new Semaphore(settings.maxInFlight),
    stats: { queries: 0, cacheHits: 0, deduplicated: 0, timeouts: 0 },
    closed: false,
  }
  const ask = <T>(type: QueryType, name: unknown, call: (name: string) => Promise<RawResult<T>>) => askQuestion(state, type, name, call)
  return {
    resolveMx: (name) => ask('MX', name, (n) => resolveMxRecords(resolver, n)),
    resolveTxt: (name) => ask('TXT', name, async (n) => ({ records: (await resolver.resolveTxt(n)).map((chunks) => chunks.join('')), ttl: null })),
    resolve4: (name) =>
      ask('A', name, async (n) => {
        const recs = await resolver.resolve4(n, { ttl: true })
        return { records: recs.map((r) => r.address), ttl: minTtlOf(recs) }
      }),
    resolve6: (name) =>
      ask('AAAA', name, async (n) => {
        const recs = await resolver.resolve6(n, { ttl: true })
        return { records: recs.map((r) => r.address), ttl: minTtlOf(recs) }
      }),
    // a PTR question of our own: Resolver.reverse answers from /etc/hosts first, for any address listed there
    reverse: (ip) => ask('PTR', ip, async (n) => ({ records: (await resolver.resolvePtr(reverseName(n))).map(cleanHost), ttl: null })),
    resolveNs: (name) => ask('NS', name, async (n) => ({ records: (await resolver.resolveNs(n)).map(cleanHost), ttl: null })),
    servers: () => resolver.getServers(),
    stats: () => ({ ...state.stats }),
    close() {
      if (state.closed) return
      state.closed = true
      resolver.cancel()
      for (const t of state.timers) clearTimeout(t)
      state.timers.clear()
      state.cache.clear()
      // Waiters in the queue wake up, see `closed` and answer 'error'.
      state.slots.wakeAll()
    },
  }
}

/** The options of {@link createDnsSource}, checked, with their defaults. */
function readDnsSettings(opts: DnsSourceOptions) {
  const timeoutMs = numberOption('dns.timeoutMs', opts.timeoutMs, DNS_DEFAULTS.timeoutMs, { integer: false })
  const tries = Math.floor(numberOption('dns.tries', opts.tries, DNS_DEFAULTS.tries, { integer: false }))
  const defaultTtl = numberOption('dns.cacheTtlSeconds', opts.cacheTtlSeconds, DNS_DEFAULTS.cacheTtlSeconds, { min: 0, integer: false })
  const minTtl = numberOption('dns.minTtlSeconds', opts.minTtlSeconds, 5, { min: 0, integer: false })
  const maxTtl = numberOption('dns.maxTtlSeconds', opts.maxTtlSeconds, 3600, { min: 0, integer: false })
  const negativeTtl = numberOption('dns.negativeTtlSeconds', opts.negativeTtlSeconds, 60, { min: 0, integer: false })
  const maxInFlight = Math.floor(numberOption('dns.maxInFlight', opts.maxInFlight, DEFAULT_MAX_IN_FLIGHT, { integer: false }))
  const maxCacheEntries = Math.floor(numberOption('dns.maxCacheEntries', opts.maxCacheEntries, 10_000, { min: 0, integer: false }))
  return {
    timeoutMs,
    tries,
    overallTimeoutMs: timeoutMs * tries,
    defaultTtl,
    minTtl,
    maxTtl,
    negativeTtl,
    maxInFlight,
    maxCacheEntries,
    now: opts.now ?? Date.now,
    cacheEnabled: defaultTtl > 0 && maxCacheEntries > 0,
  }
}

/** What the questions of one DNS source share: settings, cache, questions in flight, slots, counters. */
interface DnsState {
  readonly settings: ReturnType<typeof readDnsSettings>
  readonly cache: LRUCache<string, CacheEntry>
  readonly inFlight: Map<string, Promise<DnsAnswer<unknown>>>
  readonly timers: Set<NodeJS.Timeout>
  readonly slots: Semaphore
  readonly stats: DnsStats
  closed: boolean
}

/** MX records, the null MX (`.`) as an empty exchange, sorted by priority then exchange. */
async function resolveMxRecords(resolver: Resolver, name: string): Promise<RawResult<MxRecord>> {
  const recs = await resolver.resolveMx(name)
  const records = recs
    .map((r) => ({ exchange: r.exchange === '.' ? '' : cleanHost(r.exchange), priority: r.priority }))
    .sort((a, b) => a.priority - b.priority || (a.exchange < b.exchange ? -1 : a.exchange > b.exchange ? 1 : 0))
  return { records, ttl: null }
}

/** Caches an answer: records for their TTL, negative answers for the negative TTL (clamped); never failures. */
function storeAnswer(state: DnsState, key: string, answer: DnsAnswer<unknown>, ttl: number | null): void {
  const { cacheEnabled, defaultTtl, negativeTtl, minTtl, maxTtl, now } = state.settings
  if (!cacheEnabled || state.closed) return
  const clampTtl = (seconds: number) => Math.min(maxTtl, Math.max(minTtl, seconds))
  let seconds: number
  if (answer.status === 'ok') seconds = clampTtl(ttl ?? defaultTtl)
  else if (answer.status === 'nxdomain' || answer.status === 'nodata') seconds = clampTtl(negativeTtl)
  else return // timeouts and failures are never cached
  if (seconds <= 0) return
  state.cache.set(key, { expiresAt: now() + seconds * 1000, answer })
}

/** The outer time limit of one question: a promise that settles `'guard'` when it runs out, and an abort signal. */
function questionGuard(state: DnsState) {
  const outOfTime = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const guard = new Promise<'guard'>((resolve) => {
    timer = setTimeout(() => {
      outOfTime.abort()
      resolve('guard')
    }, state.settings.overallTimeoutMs)
    timer.unref?.()
    state.timers.add(timer)
  })
  const stop = () => {
    if (timer) {
      clearTimeout(timer)
      state.timers.delete(timer)
    }
  }
  return { guard, signal: outOfTime.signal, stop }
}

/**
 * Runs one real question with the concurrency limit and the outer timeout. The timeout runs from now, so a question
 * that waits for a slot has that much less time, and one whose time runs out while queued is never sent.
 */
async function sendQuestion<T>(state: DnsState, call: () => Promise<RawResult<T>>): Promise<{ answer: DnsAnswer<T>; ttl: number | null }> {
  const timedOut = { answer: { status: 'timeout', records: [], error: `no answer within ${state.settings.overallTimeoutMs} ms` } as DnsAnswer<T>, ttl: null }
  // The time limit runs from now: it also ends a wait for a slot (the question then leaves the queue unsent).
  const { guard, signal, stop } = questionGuard(state)
  const slot = state.slots.acquireUnless(signal)
  const held = typeof slot === 'boolean' ? slot : await slot
  if (!held || signal.aborted) {
    // out of time while queued (a slot handed over in that same turn is given back)
    if (held) state.slots.release()
    stop()
    state.stats.timeouts++
    return timedOut
  }
  if (state.closed) {
    stop()
    state.slots.release()
    return { answer: { status: 'error', records: [], error: 'DNS source closed' }, ttl: null }
  }
  state.stats.queries++
  try {
    const result = await Promise.race([call(), guard])
    if (result === 'guard') {
      state.stats.timeouts++
      return timedOut
    }
    if (result.records.length === 0) return { answer: { status: 'nodata', records: [] }, ttl: null }
    return { answer: { status: 'ok', records: result.records }, ttl: result.ttl }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const status = state.closed ? 'error' : mapDnsErrorCode(code)
    if (status === 'timeout') state.stats.timeouts++
    if (status === 'nxdomain' || status === 'nodata') return { answer: { status, records: [] }, ttl: null }
    return { answer: { status, records: [], error: String(code ?? (err as Error).message) }, ttl: null }
  } finally {
    stop()
    state.slots.release()
  }
}

/** Cache → in-flight → network, for one (type, name) question. */
function askQuestion<T>(state: DnsState, type: QueryType, rawName: unknown, call: (name: string) => Promise<RawResult<T>>): Promise<DnsAnswer<T>> {
  if (state.closed) return Promise.resolve({ status: 'error', records: [], error: 'DNS source closed' })
  const name = type === 'PTR' ? normalizeIp(rawName) : normalizeName(rawName)
  if (name === null) {
    return Promise.resolve({ status: 'error', records: [], error: `not a valid ${type === 'PTR' ? 'IP address' : 'domain name'}` })
  }
  const key = `${type} ${name}`
  const hit = state.cache.get(key)
  if (hit) {
    if (hit.expiresAt > state.settings.now()) {
      state.stats.cacheHits++
      return Promise.resolve(copyAnswer(hit.answer as DnsAnswer<T>))
    }
    state.cache.delete(key)
  }
  const pending = state.inFlight.get(key)
  if (pending) {
    state.stats.deduplicated++
    return pending.then((a) => copyAnswer(a as DnsAnswer<T>))
  }
  const promise = sendQuestion(state, () => call(name)).then(({ answer, ttl }) => {
    state.inFlight.delete(key)
    storeAnswer(state, key, answer, ttl)
    return answer
  })
  state.inFlight.set(key, promise as Promise<DnsAnswer<unknown>>)
  return promise.then((a) => copyAnswer(a))
}

/** The canonical text of an address (an IPv4-mapped IPv6 address as its IPv4 one), or null. */
function normalizeIp(ip: unknown): string | null {
  if (typeof ip !== 'string' || ip.length > 64) return null
  return parseIp(ip.trim())?.address ?? null
}

const HEX = '0123456789abcdef'

/**
 * The name a PTR question asks for the address `ip` (canonical, see {@link normalizeIp}): `4.3.2.1.in-addr.arpa`, or
 * an IPv6 address's 32 nibbles, lowest first, under `ip6.arpa` (RFC 1035 §3.5, RFC 3596 §2.5).
 */
export function reverseName(ip: string): string {
  const p = parseIp(ip)
  if (p === null) throw new TypeError(`not an IP address: ${ip}`)
  if (p.version === 4) return `${p.value & 255}.${(p.value >>> 8) & 255}.${(p.value >>> 16) & 255}.${p.value >>> 24}.in-addr.arpa`
  let name = ''
  for (let w = 3; w >= 0; w--) for (let k = 0; k < 32; k += 4) name += `${HEX[((p.words[w] as number) >>> k) & 15]}.`
  return `${name}ip6.arpa`
}

function minTtlOf(recs: Array<{ ttl: number }>): number | null {
  if (recs.length === 0) return null
  let min = Infinity
  for (const r of recs) if (r.ttl < min) min = r.ttl
  return Number.isFinite(min) ? min : null
}

function copyAnswer<T>(a: DnsAnswer<T>): DnsAnswer<T> {
  const out: DnsAnswer<T> = { status: a.status, records: a.records.map((r) => (typeof r === 'object' && r !== null ? { ...r } : r)) }
  if (a.error !== undefined) out.error = a.error
  return out
}

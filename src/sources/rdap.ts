/**
 * The RDAP source: asks the registry's RDAP service (RFC 9082/9083) about a registered domain, through `rdapper`, and
 * answers with a small normalized record — data, never exceptions. Its limits, cache and failures:
 * docs/decisions.md, "Sources and limits" → "RDAP".
 */
import { LRUCache } from 'lru-cache'
import { lookup as rdapLookup, type BootstrapData, type DomainRecord, type LookupOptions } from 'rdapper'
import { httpFailureOf, networkFailureOf, type NetworkFailure, type NetworkFailureKind } from './network-failure.js'

/** The outcome of one RDAP domain query. */
export type RdapStatus =
  /** the registry returned a domain object */
  | 'found'
  /** the registry answered 404: the name is not registered */
  | 'not_found'
  /** no answer within the deadline */
  | 'timeout'
  /** any other failure: no RDAP server for the TLD, HTTP error, malformed or non-domain response, closed source */
  | 'error'

/**
 * Why a lookup failed (status `timeout` / `error`): how the network failed ({@link NetworkFailureKind}: `dns`,
 * `refused`, `unreachable`, `reset`, `timeout`, `tls`, `http`, `other`), or `no_service` (no RDAP server is known for
 * the TLD), `bad_answer` (the registry's answer is not a usable RDAP domain object), `closed` (the source was closed).
 */
export type RdapFailureCause = NetworkFailureKind | 'no_service' | 'bad_answer' | 'closed'

/** A normalized RDAP answer. Dates are ISO 8601 UTC strings (`2021-03-16T17:07:37.000Z`) or null. */
export interface RdapAnswer {
  status: RdapStatus
  /** the domain asked about (lower-case ASCII, no trailing dot) */
  domain: string
  /** registration event date; null when absent or not `found` */
  created: string | null
  /** "last changed" event date */
  updated: string | null
  /** expiration event date (many ccTLDs publish none) */
  expires: string | null
  /** registrar name from the `registrar` entity's vCard `fn` */
  registrar: string | null
  /** RDAP status strings as published (`client transfer prohibited`, `active`, …) */
  statuses: string[]
  /** name server host names, lower-case */
  nameservers: string[]
  /** `secureDNS.delegationSigned`; null when the registry does not say */
  dnssec: boolean | null
  /** why the lookup failed (status `timeout` / `error`), one clause naming the host: `DNS lookup of data.iana.org failed (ENOTFOUND)` */
  error?: string
  /** the kind of failure (status `timeout` / `error`) */
  cause?: RdapFailureCause
}

/** Options of {@link createRdapSource}. All optional; the defaults query the real IANA bootstrap. */
export interface RdapSourceOptions {
  /** where to fetch the IANA bootstrap file (default https://data.iana.org/rdap/dns.json) */
  bootstrapUrl?: string
  /** the bootstrap file's content (IANA `dns.json` shape); when given, `bootstrapUrl` is not fetched */
  bootstrapData?: object
  /** how long a fetched bootstrap file is reused, seconds (default 86 400) */
  bootstrapTtlSeconds?: number
  /** the fetch used for every request (default global fetch) */
  fetch?: typeof fetch
  /** deadline of one lookup (bootstrap + query + link hops), ms (default 8 000) */
  timeoutMs?: number
  /** cache lifetime of `found` answers, seconds (default 21 600 = 6 h; 0 disables the cache) */
  cacheTtlSeconds?: number
  /** cache lifetime of `not_found` answers, seconds (default 3 600) */
  notFoundTtlSeconds?: number
  /** most cached domains (default 10 000; oldest entries are dropped first) */
  maxCacheEntries?: number
  /**
   * Follow the registry's `related` links to the registrar's RDAP server and merge its answer (default false:
   * the registry answer carries every field we report, and a second, registry-chosen host would add latency
   * and could turn a good answer into a timeout).
   */
  followLinks?: boolean
  /** largest response body read, bytes (default 1 MiB) */
  maxResponseBytes?: number
  /** the clock for cache expiry (default `() => new Date()`) */
  now?: () => Date
}

/** Counters of a source, for tests and benchmarks. */
export interface RdapSourceStats {
  /** lookups answered by rdapper (network) */
  queries: number
  /** lookups answered from the cache */
  cacheHits: number
  /** lookups that joined a query already in flight */
  joined: number
  /** bootstrap files fetched */
  bootstrapFetches: number
}

/** An RDAP source. */
export interface RdapSource {
  /**
   * Look up a registrable domain (ASCII, e.g. `example.com`, `xn--bcher-kva.de`). Never rejects.
   * @example
   * const a = await rdap.lookup('example.com') // { status: 'found', created: '1995-08-14T04:00:00.000Z', … }
   */
  lookup(domain: string): Promise<RdapAnswer>
  /** counters since creation */
  stats(): RdapSourceStats
  /** abort lookups in flight, drop the cache; later lookups answer `error` */
  close(): Promise<void>
}

const DEFAULT_BOOTSTRAP_URL = 'https://data.iana.org/rdap/dns.json'
const DEFAULT_TIMEOUT_MS = 8_000
const DEFAULT_FOUND_TTL_S = 6 * 3600
const DEFAULT_NOT_FOUND_TTL_S = 3600
const DEFAULT_BOOTSTRAP_TTL_S = 86_400
const DEFAULT_MAX_ENTRIES = 10_000
const DEFAULT_MAX_BYTES = 1024 * 1024
const MAX_DOMAIN_LENGTH = 253
/** most statuses / name servers kept from one answer */
const MAX_LIST = 32
/** longest registrar name / status kept */
const MAX_STRING = 255

interface CacheEntry {
  answer: RdapAnswer
  expiresAt: number
}

/**
 * Build an RDAP source. It does no I/O until the first lookup.
 *
 * @example
 * const rdap = createRdapSource({ timeoutMs: 5000 })
 * const answer = await rdap.lookup('example.com')
 * if (answer.status === 'found') console.log(answer.created)
 * await rdap.close()
 */
export function createRdapSource(opts: RdapSourceOptions = {}): RdapSource {
  const timeoutMs = positiveOr(opts.timeoutMs, DEFAULT_TIMEOUT_MS)
  const foundTtlMs = nonNegativeOr(opts.cacheTtlSeconds, DEFAULT_FOUND_TTL_S) * 1000
  const notFoundTtlMs = nonNegativeOr(opts.notFoundTtlSeconds, DEFAULT_NOT_FOUND_TTL_S) * 1000
  const bootstrapTtlMs = nonNegativeOr(opts.bootstrapTtlSeconds, DEFAULT_BOOTSTRAP_TTL_S) * 1000
  const maxEntries = positiveOr(opts.maxCacheEntries, DEFAULT_MAX_ENTRIES)
  const maxBytes = positiveOr(opts.maxResponseBytes, DEFAULT_MAX_BYTES)
  const bootstrapUrl = opts.bootstrapUrl ?? DEFAULT_BOOTSTRAP_URL
  const now = opts.now ?? (() => new Date())
  const baseFetch: typeof fetch = opts.fetch ?? ((input, init) => fetch(input, init))
  const cappedFetch = createCappedFetch(baseFetch, maxBytes)

  // An LRU (not a Map trimmed from its front: V8 makes that O(n) per eviction once deletions pile up).
  const cache = new LRUCache<string, CacheEntry>({ max: Math.max(1, maxEntries) })
  const inFlight = new Map<string, Promise<RdapAnswer>>()
  const closer = new AbortController()
  const stats: RdapSourceStats = { queries: 0, cacheHits: 0, joined: 0, bootstrapFetches: 0 }
  let bootstrap: { data: BootstrapData; expiresAt: number } | null =
    opts.bootstrapData === undefined ? null : { data: opts.bootstrapData as BootstrapData, expiresAt: Infinity }
  let bootstrapInFlight: Promise<BootstrapData | BootstrapFailure> | null = null

  async function loadBootstrap(signal: AbortSignal): Promise<BootstrapData | BootstrapFailure> {
    if (bootstrap !== null && bootstrap.expiresAt > now().getTime()) return bootstrap.data
    if (bootstrapInFlight !== null) return bootstrapInFlight
    const p = (async (): Promise<BootstrapData | BootstrapFailure> => {
      stats.bootstrapFetches++
      try {
        const res = await cappedFetch(bootstrapUrl, { headers: { accept: 'application/json' }, signal })
        if (!res.ok) return bootstrapFailure(httpFailureOf(res.status, bootstrapUrl))
        const json: unknown = await res.json()
        if (!isBootstrapData(json)) return { failure: 'error', message: `the RDAP bootstrap file ${bootstrapUrl} has no valid services array`, cause: 'bad_answer' }
        bootstrap = { data: json, expiresAt: now().getTime() + bootstrapTtlMs }
        return json
      } catch (e) {
        const f = networkFailureOf(isTimeoutError(e, signal) ? timeoutReason(signal) : e, bootstrapUrl, timeoutMs)
        return bootstrapFailure(f)
      }
    })()
    bootstrapInFlight = p
    try {
      return await p
    } finally {
      bootstrapInFlight = null
    }
  }

  async function query(domain: string): Promise<RdapAnswer> {
    stats.queries++
    const deadline = AbortSignal.timeout(timeoutMs)
    const signal = anySignal(deadline, closer.signal)
    const data = await loadBootstrap(signal)
    if (isBootstrapFailure(data)) return failed(domain, data.failure, data.message, data.cause)
    const trace: FetchTrace = { failure: null, lastUrl: null }
    const lookupOpts: LookupOptions = {
      rdapOnly: true,
      rdapFollowLinks: opts.followLinks === true,
      maxRdapLinkHops: 1,
      customBootstrapData: data,
      customFetch: tracingFetch(cappedFetch, trace, timeoutMs),
      timeoutMs,
      signal,
      includeRaw: true,
    }
    try {
      const result = await rdapLookup(domain, lookupOpts)
      if (closer.signal.aborted) return failed(domain, 'error', 'RDAP source closed', 'closed')
      if (!result.ok || result.record === undefined) {
        const timedOut =
          deadline.aborted ||
          trace.failure?.kind === 'timeout' ||
          result.errorCode === 'timeout' ||
          result.attempts.some((a) => !a.ok && a.errorCode === 'timeout' && a.phase !== 'rdap_link')
        // The deadline may end the lookup before the cut fetch reports: the server asked last is the one that did not answer.
        if (trace.failure === null && timedOut && trace.lastUrl !== null) trace.failure = networkFailureOf(timeoutReason(deadline), trace.lastUrl, timeoutMs)
        if (trace.failure !== null) return failed(domain, timedOut ? 'timeout' : 'error', trace.failure.message, trace.failure.kind)
        if (timedOut) return failed(domain, 'timeout', `the registry did not answer within ${timeoutMs / 1000} s`, 'timeout')
        return failedWithoutNetworkCause(domain, result)
      }
      return toAnswer(domain, result.record)
    } catch (e) {
      // rdapper promises not to throw for lookup failures; this is a guard for the unexpected.
      if (trace.failure !== null) return failed(domain, deadline.aborted ? 'timeout' : 'error', trace.failure.message, trace.failure.kind)
      return failed(domain, deadline.aborted ? 'timeout' : 'error', describe(e), deadline.aborted ? 'timeout' : 'other')
    }
  }

  function remember(domain: string, answer: RdapAnswer): void {
    const ttl = answer.status === 'found' ? foundTtlMs : answer.status === 'not_found' ? notFoundTtlMs : 0
    if (ttl <= 0 || closer.signal.aborted) return
    cache.set(domain, { answer, expiresAt: now().getTime() + ttl })
  }

  return {
    async lookup(input: string): Promise<RdapAnswer> {
      const domain = normalizeDomain(input)
      if (closer.signal.aborted) return failed(domain, 'error', 'RDAP source closed', 'closed')
      if (domain === '' || domain.length > MAX_DOMAIN_LENGTH) return failed(domain, 'error', 'not a domain name', 'other')
      const hit = cache.get(domain)
      if (hit !== undefined) {
        if (hit.expiresAt > now().getTime()) {
          stats.cacheHits++
          return copyAnswer(hit.answer)
        }
        cache.delete(domain)
      }
      const pending = inFlight.get(domain)
      if (pending !== undefined) {
        stats.joined++
        return copyAnswer(await pending)
      }
      const p = query(domain)
      inFlight.set(domain, p)
      try {
        const answer = await p
        remember(domain, answer)
        return copyAnswer(answer)
      } finally {
        inFlight.delete(domain)
      }
    },
    stats: () => ({ ...stats }),
    async close(): Promise<void> {
      closer.abort(new Error('RDAP source closed'))
      cache.clear()
      await Promise.allSettled([...inFlight.values()])
    },
  }
}

/** Turn an rdapper record into an answer; a 200 that is not an RDAP domain object counts as an error. */
function toAnswer(domain: string, record: DomainRecord): RdapAnswer {
  if (!record.isRegistered && record.rawRdap === undefined) return failed(domain, 'not_found', undefined)
  const raw = record.rawRdap as unknown
  if (!isPlainObject(raw) || raw['objectClassName'] !== 'domain') {
    const cls = isPlainObject(raw) ? String(raw['objectClassName'] ?? 'none') : typeof raw
    return failed(domain, 'error', `the registry's answer is not an RDAP domain object (objectClassName: ${cls.slice(0, 40)})`, 'bad_answer')
  }
  if (!record.isRegistered) {
    // a domain object whose status says available/free/released: treat as not registered
    return failed(domain, 'not_found', undefined)
  }
  // RDAP servers are third parties: keep lists and strings to sane sizes.
  const nameservers: string[] = []
  for (const ns of record.nameservers ?? []) {
    const host = stripDot(ns.host.toLowerCase())
    if (host !== '' && host.length <= 253 && !nameservers.includes(host) && nameservers.length < MAX_LIST) nameservers.push(host)
  }
  const statuses: string[] = []
  for (const s of record.statuses ?? []) {
    const status = s.status.trim().slice(0, MAX_STRING)
    if (status !== '' && !statuses.includes(status) && statuses.length < MAX_LIST) statuses.push(status)
  }
  const name = record.registrar?.name
  return {
    status: 'found',
    domain,
    created: toIsoOrNull(record.creationDate),
    updated: toIsoOrNull(record.updatedDate),
    expires: toIsoOrNull(record.expirationDate),
    registrar: typeof name === 'string' && name.trim() !== '' ? name.trim().slice(0, MAX_STRING) : null,
    statuses,
    nameservers,
    dnssec: typeof record.dnssec?.enabled === 'boolean' ? record.dnssec.enabled : null,
  }
}

function failed(domain: string, status: RdapStatus, error: string | undefined, cause?: RdapFailureCause): RdapAnswer {
  const a: RdapAnswer = {
    status,
    domain,
    created: null,
    updated: null,
    expires: null,
    registrar: null,
    statuses: [],
    nameservers: [],
    dnssec: null,
  }
  if (error !== undefined) a.error = error
  if (cause !== undefined && (status === 'timeout' || status === 'error')) a.cause = cause
  return a
}

/**
 * A failed rdapper lookup that saw no network failure: no RDAP server for the TLD (no attempt was made), or an answer
 * that could not be used (malformed JSON, an unparseable body).
 */
function failedWithoutNetworkCause(domain: string, result: { errorCode?: string; attempts: { phase: string; ok: boolean; error?: string }[] }): RdapAnswer {
  const tried = result.attempts.filter((a) => a.phase === 'rdap')
  if (tried.length === 0) {
    const tld = domain.slice(domain.lastIndexOf('.') + 1)
    return failed(domain, 'error', `no RDAP service is known for .${tld} (the IANA bootstrap file names none)`, 'no_service')
  }
  const last = tried.at(-1)
  return failed(domain, 'error', `the registry's answer could not be used (${(last?.error ?? result.errorCode ?? 'unknown').slice(0, 160)})`, 'bad_answer')
}

/** Records the last failed request of one lookup (network error or HTTP status other than 404) in `trace`. */
/** What a lookup's fetches did: the last failure, and the URL asked last (named when the deadline cuts it short). */
interface FetchTrace {
  failure: NetworkFailure | null
  lastUrl: string | null
}

function tracingFetch(base: typeof fetch, trace: FetchTrace, timeoutMs: number): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    trace.lastUrl = url
    try {
      const res = await base(input, init)
      if (!res.ok && res.status !== 404) trace.failure = httpFailureOf(res.status, url)
      return res
    } catch (e) {
      const signal = init?.signal
      trace.failure = networkFailureOf(signal && isTimeoutError(e, signal) ? timeoutReason(signal) : e, url, timeoutMs)
      throw e
    }
  }
}

function copyAnswer(a: RdapAnswer): RdapAnswer {
  return { ...a, statuses: [...a.statuses], nameservers: [...a.nameservers] }
}

interface BootstrapFailure {
  failure: RdapStatus
  message: string
  cause: RdapFailureCause
}

function bootstrapFailure(f: NetworkFailure): BootstrapFailure {
  return { failure: f.kind === 'timeout' ? 'timeout' : 'error', message: `${f.message} (fetching the RDAP bootstrap file)`, cause: f.kind }
}

function isBootstrapFailure(x: BootstrapData | BootstrapFailure): x is BootstrapFailure {
  return 'failure' in x
}

function isBootstrapData(x: unknown): x is BootstrapData {
  if (!isPlainObject(x) || !Array.isArray(x['services'])) return false
  return (x['services'] as unknown[]).every(
    (s) => Array.isArray(s) && s.length >= 2 && Array.isArray(s[0]) && Array.isArray(s[1]),
  )
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

function toIsoOrNull(s: string | undefined): string | null {
  if (s === undefined) return null
  const t = Date.parse(s)
  return Number.isFinite(t) ? new Date(t).toISOString() : null
}

function normalizeDomain(s: string): string {
  const lower = typeof s === 'string' ? s.trim().toLowerCase() : ''
  return stripDot(lower)
}

function stripDot(s: string): string {
  let end = s.length
  while (end > 0 && s.charCodeAt(end - 1) === 0x2e) end--
  return s.slice(0, end)
}

function positiveOr(v: number | undefined, d: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : d
}

function nonNegativeOr(v: number | undefined, d: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : d
}

function describe(e: unknown): string {
  if (e instanceof Error) return e.message
  return String(e)
}

function isTimeoutError(e: unknown, signal: AbortSignal): boolean {
  if (e instanceof Error && e.name === 'TimeoutError') return true
  const reason: unknown = signal.reason
  return signal.aborted && reason instanceof Error && reason.name === 'TimeoutError'
}

/** What a deadline's abort is reported as: a TimeoutError (the signal's own reason when it is one). */
function timeoutReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason
  if (reason instanceof Error && reason.name === 'TimeoutError') return reason
  return Object.assign(new Error('timed out'), { name: 'TimeoutError' })
}

/** An AbortSignal that fires when any input fires (AbortSignal.any exists from Node 20.3). */
function anySignal(...signals: AbortSignal[]): AbortSignal {
  return AbortSignal.any(signals)
}

/**
 * Wrap fetch so a response body larger than `maxBytes` is refused before it is parsed (RDAP servers are
 * third parties). The returned Response carries the bytes read, with the original status and headers.
 */
function createCappedFetch(base: typeof fetch, maxBytes: number): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init)
    const declared = Number(res.headers.get('content-length') ?? '')
    if (Number.isFinite(declared) && declared > maxBytes) {
      await res.body?.cancel().catch(() => undefined)
      throw new Error(`RDAP response larger than ${maxBytes} bytes`)
    }
    if (res.body === null) return res
    const reader = res.body.getReader()
    const chunks: Uint8Array[] = []
    let total = 0
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined)
        throw new Error(`RDAP response larger than ${maxBytes} bytes`)
      }
      chunks.push(value)
    }
    const body = Buffer.concat(chunks)
    return new Response(res.status === 204 || res.status === 304 ? null : body, {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    })
  }
}

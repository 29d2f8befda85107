/**
 * The DNS source contract shared by every check (email, email-auth, domain, IP reverse DNS).
 *
 * One implementation (`createDnsSource` in `./dns.ts`) wraps Node's `dns.promises.Resolver`; tests may pass
 * any object of this shape (an in-memory zone) or point the real one at a loopback DNS server.
 *
 * Answers are data, never exceptions: "no such name" and "no records of that type" are statuses, and so are
 * timeouts and server failures. A check maps `timeout` / `servfail` / `refused` / `error` to *unknown*
 * (partial result) and only `nxdomain` / `nodata` to a negative finding.
 */

/** Outcome of one DNS question. */
export type DnsStatus =
  /** the name has records of the asked type (`records` is non-empty) */
  | 'ok'
  /** the name does not exist (NXDOMAIN) */
  | 'nxdomain'
  /** the name exists but has no records of the asked type (NOERROR/NODATA) */
  | 'nodata'
  /** no answer within the timeout */
  | 'timeout'
  /** the server answered SERVFAIL */
  | 'servfail'
  /** the server refused the query */
  | 'refused'
  /** any other failure (bad response, connection error, malformed name) */
  | 'error'

/**
 * True for the statuses that mean "could not tell" — timeout, SERVFAIL, REFUSED, any other error — as opposed to an
 * answer (`ok`) or a negative finding (`nxdomain`, `nodata`). The one place every check asks this.
 *
 * @example isDnsFailure('timeout') // true — isDnsFailure('nxdomain') // false
 */
export function isDnsFailure(status: DnsStatus): boolean {
  return status !== 'ok' && status !== 'nxdomain' && status !== 'nodata'
}

/** The answer to one DNS question. `records` is empty unless `status` is `'ok'`. */
export interface DnsAnswer<T> {
  status: DnsStatus
  records: T[]
  /** Human-readable cause for failures (never parsed by callers). */
  error?: string
}

/** One MX record. `exchange` is lower-cased without a trailing dot; RFC 7505 null MX has exchange `''`. */
export interface MxRecord {
  exchange: string
  priority: number
}

/** Counters of a DNS source, for benchmarks and tests (all monotonic). */
export interface DnsStats {
  /** questions actually sent to a server (after cache and in-flight de-duplication) */
  queries: number
  /** answers served from the TTL cache */
  cacheHits: number
  /** questions that joined an identical question already in flight */
  deduplicated: number
  /** questions that timed out */
  timeouts: number
}

/** The DNS source. Every method resolves (never rejects) with a {@link DnsAnswer}. */
export interface DnsSource {
  /** MX records, sorted by preference (lowest first). */
  resolveMx(name: string): Promise<DnsAnswer<MxRecord>>
  /** TXT records; the character-strings of one record are joined with '' (RFC 7208 §3.3), one string per record. */
  resolveTxt(name: string): Promise<DnsAnswer<string>>
  /** IPv4 addresses. */
  resolve4(name: string): Promise<DnsAnswer<string>>
  /** IPv6 addresses. */
  resolve6(name: string): Promise<DnsAnswer<string>>
  /** Reverse lookup (PTR) of an IP address; names without trailing dot. */
  reverse(ip: string): Promise<DnsAnswer<string>>
  /** NS records (names without trailing dot). */
  resolveNs(name: string): Promise<DnsAnswer<string>>
  /** The servers asked, as `host:port` (optional: a replaced source may not know). For messages only. */
  servers?(): string[]
  /** Counters so far. */
  stats(): DnsStats
  /** Cancels in-flight queries and drops the cache. */
  close(): void
}

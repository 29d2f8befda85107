/**
 * Per-key request rate limits in memory: a sliding log per bucket (an API key, or the client address without a valid
 * key), with the RateLimit headers (IETF draft) and the legacy X-RateLimit triple. With `--redis-url` instances share
 * ./queue/redis-rate-limit.ts instead (same rule). The rule and the headers: docs/decisions.md, "Rate limits" → "the
 * rule" and "headers".
 */

/** The state of a bucket after one request. */
export interface RateLimitState {
  /** Policy name, e.g. `key` or `ip`. */
  policy: string
  allowed: boolean
  limit: number
  /** Requests that would be accepted now: the limit less those accepted in the window (this one included). */
  remaining: number
  /**
   * Whole seconds (≥ 1, rounded up) until the oldest request counted in the window leaves it: one more request is
   * free then. On a refusal, when the next request is accepted (`Retry-After`).
   */
  resetSeconds: number
  windowSeconds: number
}

/** A rate limiter over sliding windows: no window-long span accepts more than the limit. */
export interface RateLimiter {
  /**
   * Counts one request in `bucket` against `limit` requests per window (when accepted) and returns the state (a
   * promise for a shared limiter such as the Redis one in `./queue/redis-rate-limit.ts`).
   */
  hit(bucket: string, limit: number, policy: string): RateLimitState | Promise<RateLimitState>
  /** Forgets every bucket. */
  reset(): void
}

/** The in-memory limiter: answers synchronously. */
export interface MemoryRateLimiter extends RateLimiter {
  hit(bucket: string, limit: number, policy: string): RateLimitState
  /** Buckets held now (at most `maxBuckets`). */
  size(): number
}

/** One bucket's log: the times of the requests it accepted in the window, oldest first, in a ring. */
interface Log {
  times: number[]
  head: number
  count: number
}

const EMPTY: Log = { times: [], head: 0, count: 0 }
const at = (log: Log, i: number) => log.times[(log.head + i) % log.times.length] as number

/** Appends `t`; a full ring is laid out from its oldest entry and grows by one (appends stop at the limit). */
function append(log: Log, t: number): void {
  if (log.count === log.times.length) {
    if (log.head !== 0) log.times = log.times.slice(log.head).concat(log.times.slice(0, log.head))
    log.head = 0
    log.times.push(t)
  } else {
    log.times[(log.head + log.count) % log.times.length] = t
  }
  log.count++
}

/**
 * Creates an in-memory sliding-log limiter: each bucket keeps the times it accepted in the window (at most `limit`, in
 * a ring); idle buckets are dropped and at most `maxBuckets` (default 100,000) kept. `now` (unix ms) is injectable
 * (docs/decisions.md, "Rate limits" → "memory bound" and "clock").
 *
 * @example
 * createRateLimiter().hit('key_abc', 10, 'key').allowed // true while fewer than 10 were accepted in the last second
 */
export function createRateLimiter(
  options: { windowMs?: number; now?: () => number; maxBuckets?: number } = {},
): MemoryRateLimiter {
  const windowMs = options.windowMs ?? 1000
  const now = options.now ?? Date.now
  const maxBuckets = Math.max(1, options.maxBuckets ?? 100_000)
  const windowSeconds = Math.max(1, Math.round(windowMs / 1000))
  const buckets = new Map<string, Log>()
  const state = (policy: string, allowed: boolean, limit: number, log: Log, t: number): RateLimitState => ({
    policy,
    allowed,
    limit,
    remaining: Math.max(0, limit - log.count),
    resetSeconds: log.count ? Math.max(1, Math.ceil((at(log, 0) + windowMs - t) / 1000)) : windowSeconds,
    windowSeconds,
  })
  /** Drops idle buckets from the front, then the least recently accepted ones down to room for one more. */
  const makeRoom = (cutoff: number) => {
    for (const [key, log] of buckets) {
      if (buckets.size < maxBuckets && !(log.count === 0 || at(log, log.count - 1) <= cutoff)) break
      buckets.delete(key)
    }
  }
  return {
    hit(bucket, limit, policy) {
      const t = now()
      const cutoff = t - windowMs
      let log = buckets.get(bucket)
      if (log) {
        while (log.count > 0 && at(log, 0) <= cutoff) {
          log.head = (log.head + 1) % log.times.length
          log.count--
        }
        if (log.count >= limit) return state(policy, false, limit, log, t)
        buckets.delete(bucket)
      } else {
        if (limit < 1) return state(policy, false, limit, EMPTY, t)
        makeRoom(cutoff)
        log = { times: [], head: 0, count: 0 }
      }
      // (a clock stepping back does not unsort the log: the time is at least its newest)
      append(log, log.count ? Math.max(t, at(log, log.count - 1)) : t)
      buckets.set(bucket, log) // last in the order: the most recently accepted
      return state(policy, true, limit, log, t)
    },
    size: () => buckets.size,
    reset() {
      buckets.clear()
    },
  }
}

/** The response headers of a rate-limit state (both the IETF draft fields and the X-RateLimit triple). */
export function rateLimitHeaders(s: RateLimitState): Record<string, string> {
  const h: Record<string, string> = {
    'RateLimit-Policy': `"${s.policy}";q=${s.limit};w=${s.windowSeconds}`,
    RateLimit: `"${s.policy}";r=${s.remaining};t=${s.resetSeconds}`,
    'X-RateLimit-Limit': String(s.limit),
    'X-RateLimit-Remaining': String(s.remaining),
    'X-RateLimit-Reset': String(s.resetSeconds),
  }
  if (!s.allowed) h['Retry-After'] = String(s.resetSeconds)
  return h
}

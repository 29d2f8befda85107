/**
 * Per-key request rate limits: a fixed one-second window per bucket (an API key, or the client address for requests
 * without a valid key), held in memory. Several server instances each count their own requests; with `--redis-url`
 * they share the Redis limiter of `./queue/redis-rate-limit.ts` instead.
 *
 * Headers (IETF draft-ietf-httpapi-ratelimit-headers-10, plus the common legacy triple):
 *
 *   RateLimit-Policy: "key";q=20;w=1
 *   RateLimit: "key";r=19;t=1
 *   X-RateLimit-Limit: 20 · X-RateLimit-Remaining: 19 · X-RateLimit-Reset: 1   (seconds until the window resets)
 *   Retry-After: 1                                                               (on 429 only)
 */

/** The state of a bucket after counting one request. */
export interface RateLimitState {
  /** Policy name, e.g. `key` or `ip`. */
  policy: string
  allowed: boolean
  limit: number
  remaining: number
  /** Whole seconds until the window resets (≥ 1). */
  resetSeconds: number
  windowSeconds: number
}

/** A rate limiter over fixed windows. */
export interface RateLimiter {
  /**
   * Counts one request in `bucket` against `limit` requests per window; returns the state (a promise for a shared
   * limiter such as the Redis one in `./queue/redis-rate-limit.ts`).
   */
  hit(bucket: string, limit: number, policy: string): RateLimitState | Promise<RateLimitState>
  /** Forgets every bucket. */
  reset(): void
}

/** The in-memory limiter: answers synchronously. */
export interface MemoryRateLimiter extends RateLimiter {
  hit(bucket: string, limit: number, policy: string): RateLimitState
}

/**
 * Creates an in-memory fixed-window limiter. `now` is injectable (unix ms) so tests control the windows.
 *
 * @example
 * const limiter = createRateLimiter()
 * limiter.hit('key_abc', 10, 'key').allowed // true for the first 10 hits of each second
 */
export function createRateLimiter(
  options: { windowMs?: number; now?: () => number; maxBuckets?: number } = {},
): MemoryRateLimiter {
  const windowMs = options.windowMs ?? 1000
  const now = options.now ?? Date.now
  const maxBuckets = options.maxBuckets ?? 100_000
  const buckets = new Map<string, { window: number; count: number }>()
  return {
    hit(bucket, limit, policy) {
      const t = now()
      const window = Math.floor(t / windowMs)
      let b = buckets.get(bucket)
      if (!b || b.window !== window) {
        if (!b && buckets.size >= maxBuckets) {
          // Drop buckets of past windows (they would reset anyway).
          for (const [k, v] of buckets) if (v.window !== window) buckets.delete(k)
          if (buckets.size >= maxBuckets) buckets.clear()
        }
        b = { window, count: 0 }
        buckets.set(bucket, b)
      }
      b.count++
      const allowed = b.count <= limit
      const resetMs = (window + 1) * windowMs - t
      return {
        policy,
        allowed,
        limit,
        remaining: Math.max(0, limit - b.count),
        resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
        windowSeconds: Math.max(1, Math.round(windowMs / 1000)),
      }
    },
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

/**
 * Rate limits shared by every instance: the sliding log of `../rate-limit.ts`, kept in Redis, one Lua call per request
 * on the Redis server's clock. When Redis cannot be reached, the `fallback` limiter counts the request (or, without
 * one, it is let through) and the error goes to `onError`. Why: docs/decisions.md, "Rate limits" → "Redis"; and
 * docs/decisions.md, "Scaling out (Redis)" → "shared rate limits".
 */
import type { Redis } from 'ioredis'
import type { RateLimiter, RateLimitState } from '../rate-limit.js'

// KEYS[1] = the bucket's list (newest first); ARGV[1] = limit, ARGV[2] = window ms, ARGV[3] = now ms ('' = the Redis
// clock). Returns { accepted 0/1, requests in the window, ms until the oldest of them leaves it }.
const SCRIPT = `
local now = tonumber(ARGV[3])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local key, limit, windowMs = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local oldest = tonumber(redis.call('LINDEX', key, -1))
while oldest and oldest <= now - windowMs do
  redis.call('RPOP', key)
  oldest = tonumber(redis.call('LINDEX', key, -1))
end
local count = redis.call('LLEN', key)
if count >= limit then
  if not oldest then return { 0, 0, windowMs } end
  return { 0, count, oldest + windowMs - now }
end
redis.call('LPUSH', key, now)
redis.call('PEXPIRE', key, windowMs)
return { 1, count + 1, (oldest or now) + windowMs - now }
`

/** The shared limiter: answers with a promise. */
export interface RedisRateLimiter extends RateLimiter {
  hit(bucket: string, limit: number, policy: string): Promise<RateLimitState>
}

/** Options of {@link createRedisRateLimiter}. */
export interface RedisRateLimiterOptions {
  /** A connected ioredis client (shared with the rest of the process is fine). */
  redis: Redis
  /** Prefix of the keys (default `riskcheck:`; a bucket's log is `<prefix>rl:<bucket>`); tests use a unique one. */
  prefix?: string
  /** Window length (default 1,000 ms). */
  windowMs?: number
  /** Clock in unix ms (tests); default: the Redis server's clock. */
  now?: () => number
  /** Called when Redis fails (the request is counted by `fallback`, or let through). */
  onError?: (err: unknown) => void
  /** Counts the requests while Redis cannot be reached (asked at once while the client is not connected). */
  fallback?: RateLimiter
}

/**
 * Creates the shared limiter. Its `hit` returns a promise; `reset` forgets nothing shared (the logs expire by
 * themselves) and exists for the interface.
 *
 * @example
 * const limiter = createRedisRateLimiter({ redis: new Redis(process.env.REDIS_URL) })
 * (await limiter.hit('key:key_abc', 5, 'key')).allowed
 */
export function createRedisRateLimiter(options: RedisRateLimiterOptions): RedisRateLimiter {
  const { redis } = options
  const prefix = `${options.prefix ?? 'riskcheck:'}rl:`
  const windowMs = options.windowMs ?? 1000
  const windowSeconds = Math.max(1, Math.round(windowMs / 1000))
  const cmd = 'riskcheckRateLimitLog'
  if (!(cmd in redis)) redis.defineCommand(cmd, { numberOfKeys: 1, lua: SCRIPT })
  type Run = (...a: string[]) => Promise<[number, number, number]>
  const run = (redis as unknown as Record<string, Run>)[cmd] as Run
  return {
    async hit(bucket, limit, policy) {
      const { fallback } = options
      if (fallback && redis.status !== 'ready') return fallback.hit(bucket, limit, policy)
      try {
        const now = options.now ? String(Math.floor(options.now())) : ''
        const [accepted, count, resetMs] = await run.call(redis, prefix + bucket, String(limit), String(windowMs), now)
        return {
          policy,
          allowed: accepted === 1,
          limit,
          remaining: Math.max(0, limit - count),
          resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
          windowSeconds,
        }
      } catch (err) {
        options.onError?.(err)
        if (fallback) return fallback.hit(bucket, limit, policy)
        return { policy, allowed: true, limit, remaining: limit, resetSeconds: windowSeconds, windowSeconds }
      }
    },
    reset() {},
  }
}

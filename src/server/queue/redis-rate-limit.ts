/**
 * Rate limits shared by every instance: the same fixed one-second windows as the in-memory limiter
 * (`../rate-limit.ts`), counted in Redis so N API instances together accept no more than a key's plan allows, and the
 * RateLimit headers each instance sends describe the shared count. One round trip per request: a Lua script
 * increments the window's counter (created with an expiry of two windows) and returns the count and the milliseconds
 * left in the window, both taken from the Redis server's clock so the instances' clocks need not agree.
 *
 * When Redis cannot be reached the limiter lets the request through (with the full limit in its headers) and reports
 * the error through `onError`: an outage of the limiter does not become an outage of the API (README "Scaling out").
 */
import type { Redis } from 'ioredis'
import type { RateLimiter, RateLimitState } from '../rate-limit.js'

// KEYS[1] = key prefix; ARGV[1] = bucket, ARGV[2] = window ms, ARGV[3] = now ms ('' = the Redis clock)
const SCRIPT = `
local now = tonumber(ARGV[3])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local windowMs = tonumber(ARGV[2])
local window = math.floor(now / windowMs)
local key = KEYS[1] .. ARGV[1] .. ':' .. window
local count = redis.call('INCR', key)
if count == 1 then redis.call('PEXPIRE', key, windowMs * 2) end
return { count, (window + 1) * windowMs - now }
`

/** The shared limiter: answers with a promise. */
export interface RedisRateLimiter extends RateLimiter {
  hit(bucket: string, limit: number, policy: string): Promise<RateLimitState>
}

/** Options of {@link createRedisRateLimiter}. */
export interface RedisRateLimiterOptions {
  /** A connected ioredis client (shared with the rest of the process is fine). */
  redis: Redis
  /** Prefix of the counter keys (default `riskcheck:`); tests use a unique one. */
  prefix?: string
  /** Window length (default 1,000 ms). */
  windowMs?: number
  /** Clock in unix ms (tests); default: the Redis server's clock. */
  now?: () => number
  /** Called when Redis fails (the request is let through). */
  onError?: (err: unknown) => void
}

/**
 * Creates the shared limiter. Its `hit` returns a promise; `reset` forgets nothing shared (the windows expire by
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
  const cmd = 'riskcheckRateLimitHit'
  if (!(cmd in redis)) redis.defineCommand(cmd, { numberOfKeys: 1, lua: SCRIPT })
  const run = (redis as unknown as Record<string, (...a: string[]) => Promise<[number, number]>>)[cmd] as (...a: string[]) => Promise<[number, number]>
  return {
    async hit(bucket, limit, policy) {
      try {
        const [count, resetMs] = await run.call(redis, prefix, bucket, String(windowMs), options.now ? String(Math.floor(options.now())) : '')
        return {
          policy,
          allowed: count <= limit,
          limit,
          remaining: Math.max(0, limit - count),
          resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
          windowSeconds,
        }
      } catch (err) {
        options.onError?.(err)
        return { policy, allowed: true, limit, remaining: limit, resetSeconds: windowSeconds, windowSeconds }
      }
    },
    reset() {},
  }
}

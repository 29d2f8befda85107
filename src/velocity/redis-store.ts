/**
 * Velocity counts shared by every process on one Redis: a sorted set per key (score = the check's time in ms), trimmed
 * to the day window and expiring a day after its newest check. One Lua call per request records the check under every
 * key and counts both windows atomically, on the Redis server's clock. About 60–100 bytes per check of the last day; on
 * Redis Cluster give a `prefix` with a hash tag (`{rc}:`), since the script touches several keys.
 */
import { randomBytes } from 'node:crypto'
import { DAY_MS, HOUR_MS, type VelocityStore, type WindowCount } from './store.js'

// KEYS = the counters; ARGV[1] = now ms ('' = the Redis clock), ARGV[2] = this check's member id, ARGV[3] = hour ms,
// ARGV[4] = day ms. Returns hour, day for each key in turn.
const SCRIPT = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local hourMs, dayMs = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {}
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - dayMs)
  redis.call('ZADD', key, now, ARGV[2])
  out[#out + 1] = redis.call('ZCOUNT', key, '(' .. string.format('%d', now - hourMs), '+inf')
  out[#out + 1] = redis.call('ZCARD', key)
  redis.call('PEXPIRE', key, dayMs)
end
return out
`

/** What the store needs of an ioredis client (`new Redis(url)` from the `ioredis` package). */
export interface RedisLike {
  defineCommand(name: string, definition: { numberOfKeys?: number; lua: string }): void
}

/** Options of {@link createRedisVelocityStore}. */
export interface RedisVelocityStoreOptions {
  /** A connected ioredis client (shared with the rest of the process is fine). */
  redis: RedisLike
  /** Prefix of the keys (default `riskcheck:vel:`); tests use a unique one. */
  prefix?: string
  /** Clock in Unix ms (tests); default: the Redis server's clock. */
  now?: () => number
}

const COMMAND = 'riskcheckVelocityHit'

/**
 * Creates the shared store. `hit` rejects when Redis fails; the lookup then answers without velocity (`velocity: null`,
 * `partial: true`).
 *
 * @example
 * // redis: an ioredis client, e.g. new Redis(process.env.REDIS_URL)
 * const rc = createRiskcheck({ velocity: { secret: process.env.VELOCITY_SECRET, store: createRedisVelocityStore({ redis }) } })
 */
export function createRedisVelocityStore(options: RedisVelocityStoreOptions): VelocityStore {
  const { redis } = options
  if (!redis || typeof (redis as { defineCommand?: unknown }).defineCommand !== 'function')
    throw new TypeError('riskcheck: createRedisVelocityStore needs `redis`, an ioredis client')
  const prefix = options.prefix ?? 'riskcheck:vel:'
  if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { lua: SCRIPT })
  type Run = (numberOfKeys: number, ...args: string[]) => Promise<number[]>
  const run = (redis as unknown as Record<string, Run>)[COMMAND] as Run
  const instance = randomBytes(6).toString('hex')
  let seq = 0
  return {
    async hit(keys, _nowMs, checkId) {
      if (keys.length === 0) return []
      const now = options.now ? String(Math.floor(options.now())) : ''
      // a check recorded again under its id is the same member: its time moves, the count does not
      const member = checkId !== undefined ? `id:${checkId}` : `${instance}:${(seq = (seq + 1) % Number.MAX_SAFE_INTEGER)}`
      const flat = await run.call(redis, keys.length, ...keys.map((k) => prefix + k), now, member, String(HOUR_MS), String(DAY_MS))
      const out: WindowCount[] = []
      for (let i = 0; i < keys.length; i++) out.push({ hour: Number(flat[i * 2]), day: Number(flat[i * 2 + 1]) })
      return out
    },
  }
}

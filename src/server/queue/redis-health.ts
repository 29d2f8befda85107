/**
 * The `redis` check of `GET /readyz` with `--redis-url` (the server adds it; `./health.ts` runs it with its time
 * limit): a PING answered. It reports whether Redis answered and the error code, never the URL or its password.
 */
import type { Redis } from 'ioredis'
import type { ReadinessCheck } from '../health.js'

/**
 * The Redis readiness check over a client of the process.
 *
 * @example
 * createServer({ readinessChecks: [redisReadyCheck(redis)] })
 */
export function redisReadyCheck(redis: Redis): ReadinessCheck {
  return {
    name: 'redis',
    async run() {
      try {
        const pong = await redis.ping()
        return pong === 'PONG' ? { ok: true } : { ok: false, message: 'unexpected reply to PING' }
      } catch (err) {
        const code = (err as { code?: unknown }).code
        return { ok: false, message: `Redis unreachable (${typeof code === 'string' ? code : 'connection closed'})` }
      }
    },
  }
}

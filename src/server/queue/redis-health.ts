/**
 * The `redis` check of `GET /readyz` with `--redis-url` (the server adds it; `../health.ts` runs it with its time
 * limit): a PING answered. It reports whether Redis answered and the error code, never the URL or its password. The
 * server answers without Redis (rate limits counted per instance; bulk jobs and webhook deliveries wait for it), so a
 * failure is `degraded`, not unready.
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
  const degraded = (why: string) => ({ ok: false, message: `Redis unreachable (${why}): rate limits are counted per instance; bulk jobs and webhook deliveries wait for it` })
  return {
    name: 'redis',
    degrades: true,
    async run() {
      // lost and reconnecting: said at once rather than after a PING that waits for the connection
      if (redis.status === 'reconnecting' || redis.status === 'close' || redis.status === 'end') return degraded(redis.status)
      try {
        const pong = await redis.ping()
        return pong === 'PONG' ? { ok: true } : { ok: false, message: 'unexpected reply to PING' }
      } catch (err) {
        const code = (err as { code?: unknown }).code
        return degraded(typeof code === 'string' ? code : 'connection closed')
      }
    },
  }
}

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
  // Before the first connection a PING is waited for (bounded by the readiness runner); once Redis was there, a
  // client that is not connected (reconnecting) is said at once rather than after a PING that waits for it.
  let connectedOnce = redis.status === 'ready'
  redis.once('ready', () => (connectedOnce = true))
  return {
    name: 'redis',
    degrades: true,
    async run() {
      if (connectedOnce && redis.status !== 'ready') return degraded(redis.status)
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

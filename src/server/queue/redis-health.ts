/**
 * The Redis check of `GET /readyz` with `--redis-url`: a PING answered within the timeout. It reports only whether
 * Redis answered (and the error code), never the URL or its password.
 */
import type { Redis } from 'ioredis'

/** The outcome of one readiness check. */
export interface ReadyCheckResult {
  ok: boolean
  /** Why not, without secrets (e.g. `timeout`, `ECONNREFUSED`). */
  error?: string
}

/** A named readiness check (the shape `/readyz` takes pluggable checks in). */
export interface ReadyCheck {
  name: string
  check(): Promise<ReadyCheckResult>
}

/**
 * The Redis readiness check over a client of the process.
 *
 * @example
 * const ready = redisReadyCheck(redis) // { name: 'redis', check: () => Promise<{ ok: true }> }
 */
export function redisReadyCheck(redis: Redis, timeoutMs = 1000): ReadyCheck {
  return {
    name: 'redis',
    async check() {
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<ReadyCheckResult>((resolve) => {
        timer = setTimeout(() => resolve({ ok: false, error: 'timeout' }), timeoutMs)
        timer.unref?.()
      })
      try {
        return await Promise.race([
          redis.ping().then((pong): ReadyCheckResult => (pong === 'PONG' ? { ok: true } : { ok: false, error: 'unexpected_reply' })),
          timeout,
        ])
      } catch (err) {
        const code = (err as { code?: unknown }).code
        return { ok: false, error: typeof code === 'string' ? code : 'error' }
      } finally {
        clearTimeout(timer)
      }
    },
  }
}

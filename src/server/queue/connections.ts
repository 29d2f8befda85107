/**
 * The Redis connections of one queue: each BullMQ queue, worker and subscriber gets its own ioredis client
 * (`maxRetriesPerRequest: null`, as BullMQ requires of worker connections), errors go to `onError` marked as Redis's
 * (../outage.ts), and `closeAll` ends them all when the queue closes.
 */
import type { Redis } from 'ioredis'
import { ioredis } from '../lazy-packages.js'
import { markDependency } from '../outage.js'

/** A factory of connections to `redisUrl` that remembers them for {@link RedisConnections.closeAll}. */
export interface RedisConnections {
  connect(): Redis
  closeAll(): Promise<void>
}

/**
 * @example
 * const conns = redisConnections(process.env.REDIS_URL!, console.error)
 * const queue = new Queue('q', { connection: conns.connect() })
 */
export function redisConnections(redisUrl: string, onError: (err: unknown) => void): RedisConnections {
  const all: Redis[] = []
  return {
    connect() {
      const c = new (ioredis().Redis)(redisUrl, { maxRetriesPerRequest: null })
      c.on('error', (err: Error) => onError(markDependency(err, 'redis')))
      all.push(c)
      return c
    },
    async closeAll() {
      await Promise.all(all.map((c) => c.quit().catch(() => c.disconnect())))
    },
  }
}

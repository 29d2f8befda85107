/**
 * Tests on a real Redis 7: they run when RISKCHECK_TEST_REDIS_URL is set (`.ci/run` sets it to
 * redis://127.0.0.1:6379), and without it print that they were skipped and how to run them. Each test run uses its
 * own key prefix and deletes only its own keys (other runs may share the server).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'

/** The Redis URL of the tests, or undefined (the suite is skipped, with a printed note). */
export function testRedisUrl(suite: string): string | undefined {
  const url = process.env.RISKCHECK_TEST_REDIS_URL
  if (!url) {
    console.log(
      `[skipped] ${suite}: needs Redis 7. Run it with RISKCHECK_TEST_REDIS_URL=redis://127.0.0.1:6379 npx vitest run (or .ci/run).`,
    )
  }
  return url || undefined
}

/** A key prefix no other test run uses. */
export function uniquePrefix(): string {
  return `riskcheck-test:${randomUUID().slice(0, 12)}:`
}

/** A client for the tests (BullMQ needs maxRetriesPerRequest null on the connections of its workers). */
export function testRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false })
}

/** Deletes every key under `prefix` (only this run's keys). */
export async function deleteKeys(redis: Redis, prefix: string): Promise<number> {
  let n = 0
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
    cursor = next
    if (keys.length) n += await redis.del(...keys)
  } while (cursor !== '0')
  return n
}

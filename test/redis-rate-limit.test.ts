/**
 * The shared rate limiter on a real Redis: two API instances over one store and one Redis accept together no more
 * than a key's plan allows in a window, and the RateLimit headers of each describe the shared count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { createRedisRateLimiter } from '../src/server/queue/redis-rate-limit.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite.js'
import { fakeClock } from './clock.js'
import { deleteKeys, testRedis, testRedisUrl, uniquePrefix } from './redis-env.js'

const url = testRedisUrl('shared rate limits (test/redis-rate-limit.test.ts)')

describe.skipIf(!url)('rate limits shared through Redis', () => {
  let redis: Redis
  let store: SqliteStore
  const prefix = uniquePrefix()
  let windowMs = 7_000_000
  const apps: RiskcheckServer[] = []

  beforeAll(async () => {
    redis = testRedis(url as string)
    store = createSqliteStore(':memory:')
    const clock = fakeClock('2026-11-22T00:00:00Z')
    for (let i = 0; i < 2; i++) {
      const app = createServer({
        db: store,
        purgeIntervalMs: 0,
        rateLimiter: createRedisRateLimiter({ redis, prefix, now: () => windowMs }),
        riskcheck: { offline: true, now: clock.now },
      })
      await app.ready()
      apps.push(app)
    }
  })

  afterAll(async () => {
    for (const app of apps) await app.close()
    store?.close()
    if (redis) {
      await deleteKeys(redis, prefix)
      await redis.quit()
    }
  })

  it('a plan of 5 requests a second: both instances together accept 5 of 20 concurrent requests, headers count down', async () => {
    const now = Date.parse('2026-11-22T00:00:00Z')
    const org = await store.createOrg({ name: 'Shared', planId: 'free' }, now)
    await store.setOrgPlan(org.id, { planId: 'free', ratePerSecond: 5 }, now)
    const key = await issueApiKey(store, { orgId: org.id }, now)
    windowMs += 250 // 250 ms into a window: 750 ms left → reset 1 s
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (apps[i % 2] as RiskcheckServer).inject({ method: 'GET', url: '/v1/account', headers: { authorization: `Bearer ${key.secret}` } }),
      ),
    )
    const ok = replies.filter((r) => r.statusCode === 200)
    const limited = replies.filter((r) => r.statusCode === 429)
    expect(ok.length).toBe(5)
    expect(limited.length).toBe(15)
    // The shared count is what the headers say: each accepted request saw a different remaining count.
    expect(ok.map((r) => r.headers['x-ratelimit-remaining']).sort()).toEqual(['0', '1', '2', '3', '4'])
    for (const r of replies) {
      expect(r.headers['ratelimit-policy']).toBe('"key";q=5;w=1')
      expect(r.headers['x-ratelimit-limit']).toBe('5')
      expect(r.headers['x-ratelimit-reset']).toBe('1')
    }
    for (const r of limited) {
      expect(r.headers['x-ratelimit-remaining']).toBe('0')
      expect(r.headers['retry-after']).toBe('1')
      expect(r.headers['ratelimit']).toBe('"key";r=0;t=1')
      expect(JSON.parse(r.body).error.code).toBe('RATE_LIMITED')
    }
    // The next window: each instance accepts again, and the count is shared from the first request.
    windowMs += 1000
    const a = await (apps[0] as RiskcheckServer).inject({ method: 'GET', url: '/v1/account', headers: { authorization: `Bearer ${key.secret}` } })
    const b = await (apps[1] as RiskcheckServer).inject({ method: 'GET', url: '/v1/account', headers: { authorization: `Bearer ${key.secret}` } })
    expect([a.statusCode, b.statusCode]).toEqual([200, 200])
    expect([a.headers['x-ratelimit-remaining'], b.headers['x-ratelimit-remaining']]).toEqual(['4', '3'])
  })

  it('counts on the Redis clock when no clock is given, and lets requests through when Redis fails', async () => {
    const limiter = createRedisRateLimiter({ redis, prefix })
    const first = await limiter.hit('key:clockless', 2, 'key')
    expect(first).toMatchObject({ allowed: true, limit: 2, remaining: 1, windowSeconds: 1 })
    expect(first.resetSeconds).toBe(1)
    const errors: unknown[] = []
    const broken = testRedis(url as string)
    await broken.quit()
    const failing = createRedisRateLimiter({ redis: broken, prefix, onError: (e) => errors.push(e) })
    expect(await failing.hit('key:x', 3, 'key')).toEqual({ policy: 'key', allowed: true, limit: 3, remaining: 3, resetSeconds: 1, windowSeconds: 1 })
    expect(errors).toHaveLength(1)
  })
})

describe.skipIf(!url)('the Redis readiness check', () => {
  it('is ok while Redis answers, and says why not (no URL, no password) when it does not', async () => {
    const { redisReadyCheck } = await import('../src/server/queue/redis-health.js')
    const redis = testRedis(url as string)
    const check = redisReadyCheck(redis)
    expect(check.name).toBe('redis')
    expect(await check.run()).toEqual({ ok: true })
    await redis.quit()
    const after = await check.run()
    expect(after.ok).toBe(false)
    expect(JSON.stringify(after)).not.toContain('redis://')
  })
})

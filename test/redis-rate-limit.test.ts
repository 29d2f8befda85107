/**
 * The shared rate limiter on a real Redis: two API instances over one store and one Redis accept together no more
 * than a key's plan allows in a window, and the RateLimit headers of each describe the shared count; the Redis
 * limiter answers as the rule of ./rate-limit-model.ts (and the in-memory limiter) does.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { createRedisRateLimiter } from '../src/server/queue/redis-rate-limit.js'
import { createRateLimiter } from '../src/server/rate-limit.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import { fakeClock } from './clock.js'
import { arrivalsArb, burstAcrossEdge, maxInAnySpan, slidingLogModel, startArb } from './rate-limit-model.js'
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

  it('30 requests across a second’s edge against 10 a second, sent one by one and all at once: 10 accepted, never more than 10 in one second', async () => {
    let now = 0
    const limiter = createRedisRateLimiter({ redis, prefix, now: () => now })
    const accepted: number[] = []
    for (const t of burstAcrossEdge()) {
      now = t
      if ((await limiter.hit('key:edge', 10, 'key')).allowed) accepted.push(t)
    }
    expect(maxInAnySpan(accepted)).toBe(10)
    expect(accepted).toHaveLength(10)
    // 30 at once from 999 ms into a second, then 30 more 2 ms later (across the edge): 10 accepted in all
    now = Date.parse('2026-11-22T00:00:10.999Z')
    const first = await Promise.all(Array.from({ length: 30 }, () => limiter.hit('key:edge2', 10, 'key')))
    now += 2
    const second = await Promise.all(Array.from({ length: 30 }, () => limiter.hit('key:edge2', 10, 'key')))
    expect([...first, ...second].filter((s) => s.allowed)).toHaveLength(10)
  })

  it('random arrivals: the same answers as the rule and as the in-memory limiter; a log holds at most the limit and expires', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), startArb, arrivalsArb(['a', 'b'], 60), async (limit, start, arrivals) => {
        run++
        let now = start
        const shared = createRedisRateLimiter({ redis, prefix: `${prefix}p${run}:`, now: () => now })
        const memory = createRateLimiter({ now: () => now })
        const models = { a: slidingLogModel(limit), b: slidingLogModel(limit) }
        const accepted: Record<string, number[]> = { a: [], b: [] }
        for (const { gap, bucket } of arrivals) {
          now += gap
          const s = await shared.hit(bucket, limit, 'key')
          const m = models[bucket as 'a' | 'b'](now)
          expect({ allowed: s.allowed, remaining: s.remaining, resetSeconds: s.resetSeconds }).toEqual(m)
          expect(s).toEqual(memory.hit(bucket, limit, 'key'))
          if (s.allowed) accepted[bucket]!.push(now)
        }
        expect(maxInAnySpan(accepted.a!)).toBeLessThanOrEqual(limit)
        expect(maxInAnySpan(accepted.b!)).toBeLessThanOrEqual(limit)
      }),
      { numRuns: 60 },
    )
    // A hammered bucket holds `limit` entries (refused requests are not logged) and expires with the window.
    const limiter = createRedisRateLimiter({ redis, prefix })
    for (let i = 0; i < 50; i++) await limiter.hit('key:hammered', 5, 'key')
    const key = `${prefix}rl:key:hammered`
    expect(await redis.llen(key)).toBe(5)
    const ttl = await redis.pttl(key)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(1000)
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
    // a script error (the bucket's key holds something else) is let through and reported the same way
    await redis.set(`${prefix}rl:key:not-a-list`, 'x')
    const odd = createRedisRateLimiter({ redis, prefix, onError: (e) => errors.push(e) })
    expect(await odd.hit('key:not-a-list', 3, 'key')).toMatchObject({ allowed: true, remaining: 3 })
    expect(errors).toHaveLength(2)
    expect(String(errors[1])).toContain('WRONGTYPE')
  })
})

// A Redis of this suite's own that it stops and starts again (never the shared one).
const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0
if (url && !hasRedisServer) console.log('[skipped] the shared limiter while Redis is down: needs redis-server on the PATH.')

describe.skipIf(!url || !hasRedisServer)('the shared limiter while Redis is down', () => {
  const port = 55431
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-rl-'))
  const startRedis = () =>
    spawnSync('redis-server', ['--port', String(port), '--daemonize', 'yes', '--save', '', '--appendonly', 'no', '--dir', dir, '--pidfile', join(dir, 'redis.pid')])
  const stopRedis = () => spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave'])
  let client: Redis | undefined

  afterAll(() => {
    client?.disconnect()
    stopRedis()
    rmSync(dir, { recursive: true, force: true })
  })

  it('lets every request through and reports each failure through onError; counts again once Redis is back', async () => {
    expect(startRedis().status).toBe(0)
    // the client options the server uses for its own connection
    client = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 1 })
    client.on('error', () => undefined)
    const ready = (c: Redis) => (c.status === 'ready' ? Promise.resolve() : new Promise<void>((r) => c.once('ready', () => r())))
    await ready(client)
    const errors: unknown[] = []
    const limiter = createRedisRateLimiter({ redis: client, onError: (e) => errors.push(e) })
    expect((await limiter.hit('key:down', 1, 'key')).allowed).toBe(true)
    expect((await limiter.hit('key:down', 1, 'key')).allowed).toBe(false)
    expect(stopRedis().status).toBe(0)
    for (let i = 0; i < 3; i++) {
      expect(await limiter.hit('key:down', 1, 'key')).toEqual({ policy: 'key', allowed: true, limit: 1, remaining: 1, resetSeconds: 1, windowSeconds: 1 })
    }
    expect(errors).toHaveLength(3)
    expect(startRedis().status).toBe(0)
    await ready(client)
    expect((await limiter.hit('key:down', 1, 'key')).allowed).toBe(true)
    expect((await limiter.hit('key:down', 1, 'key')).allowed).toBe(false)
    expect(errors).toHaveLength(3)
  }, 30_000)
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

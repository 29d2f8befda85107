/**
 * Velocity in the HTTP service on PostgreSQL + Redis: two server instances (each its own pool and Redis client)
 * count together and exactly — 100 checks split across them, the 100th sees 100 — with test keys and orgs apart, keys
 * in Redis only as keyed hashes that expire with the day window, and one Redis command per request for all of a
 * request's counters (the commands the servers send, counted by a proxy, with velocity on and off).
 * Needs RISKCHECK_TEST_DATABASE_URL and RISKCHECK_TEST_REDIS_URL.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer, type ServerOptions } from '../src/server/app.js'
import { openPostgresServerStores, type PostgresServerStores } from '../src/server/store/postgres/server.js'
import { DAY_MS } from '../src/velocity/store.js'
import { startRedisCommandProxy, type RedisCommandProxy } from './redis-command-proxy.js'
import { deleteKeys, testRedis, testRedisUrl } from './redis-env.js'

const databaseUrl = process.env.RISKCHECK_TEST_DATABASE_URL
if (!databaseUrl) console.log('[skipped] test/server-velocity-scaled.test.ts: needs RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test (or .ci/run).')
const redisUrl = testRedisUrl('server-velocity-scaled')

/** Servers on one PostgreSQL schema, each with its own store (pool) and Redis connection, under one Redis prefix. */
function deployment(suite: string) {
  const schema = `rc_vel_${suite}_${randomBytes(4).toString('hex')}`
  const prefix = `rc-vel-${randomBytes(5).toString('hex')}`
  const opened: PostgresServerStores[] = []
  const apps: RiskcheckServer[] = []
  return {
    schema,
    prefix,
    async instance(redis: string, extra: Partial<ServerOptions> = {}) {
      const stores = await openPostgresServerStores({ connectionString: databaseUrl!, schema })
      opened.push(stores)
      const app = createServer({
        db: stores.store,
        orgPolicies: stores.orgPolicies,
        queue: { redisUrl: redis, prefix, workers: false },
        riskcheck: { offline: true },
        dashboard: false,
        purgeIntervalMs: 0,
        // a hang guard, not the default 1 s: 99 requests at once on a loaded machine may wait longer for Redis
        velocity: { timeoutMs: 60_000 },
        ...extra,
      })
      apps.push(app)
      await app.ready()
      return { app, store: stores.store }
    },
    async close() {
      for (const a of apps) await a.close()
      for (const s of opened) await s.close()
      const admin = new pg.Pool({ connectionString: databaseUrl })
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    },
  }
}

async function orgWithKeys(store: RiskcheckServer['store']) {
  const now = Date.now()
  const org = await store.createOrg({ name: 'Velocity', planId: 'scale' }, now)
  await store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: 100_000, ratePerSecond: 10_000 }, now)
  const live = (await issueApiKey(store, { orgId: org.id, name: 'live' }, now)).secret
  const test = (await issueApiKey(store, { orgId: org.id, mode: 'test', name: 'test' }, now)).secret
  return { orgId: org.id, live, test }
}

const post = async (app: RiskcheckServer, key: string, url: string, body: unknown) => {
  const r = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) })
  expect(r.statusCode, r.body).toBe(200)
  return JSON.parse(r.body).data as { details: { velocity: Record<string, { hour: number; day: number } | null> | null }; risk: { factors: string[] } }
}

describe.skipIf(!databaseUrl || !redisUrl)('velocity in the service (PostgreSQL + Redis, two instances)', () => {
  const d = deployment('two')
  let redis: Redis
  beforeAll(() => {
    redis = testRedis(redisUrl!)
  })
  afterAll(async () => {
    await d.close()
    await deleteKeys(redis, `${d.prefix}:`)
    redis.disconnect()
  })

  it('counts exactly across instances, test keys and orgs apart, keys hashed and expiring', async () => {
    const a = await d.instance(redisUrl!)
    const b = await d.instance(redisUrl!)
    const acme = await orgWithKeys(a.store)
    // 99 checks at once, alternating instances: every count from 1 to 99 seen once
    const seen = await Promise.all(Array.from({ length: 99 }, (_, i) => post(i % 2 === 0 ? a.app : b.app, acme.live, '/v1/ip', { ip: '81.2.80.7' }).then((r) => r.details.velocity!.ip!.hour)))
    expect([...seen].sort((x, y) => x - y)).toEqual(Array.from({ length: 99 }, (_, i) => i + 1))
    const last = await post(b.app, acme.live, '/v1/check', { ip: '81.2.80.7', email: 'jane@acme-corp.com', context: 'checkout' })
    expect(last.details.velocity).toMatchObject({ ip: { hour: 100, day: 100 }, network: { hour: 100, day: 100 }, email: { hour: 1, day: 1 } })
    expect(last.risk.factors).toEqual(expect.arrayContaining(['velocity_ip_high', 'velocity_network_high']))

    // test keys: a space of their own; another org: its own
    expect((await post(a.app, acme.test, '/v1/ip', { ip: '81.2.80.7' })).details.velocity!.ip).toEqual({ hour: 1, day: 1 })
    const other = await orgWithKeys(a.store)
    expect((await post(b.app, other.live, '/v1/ip', { ip: '81.2.80.7' })).details.velocity!.ip).toEqual({ hour: 1, day: 1 })
    expect((await post(a.app, acme.live, '/v1/ip', { ip: '81.2.80.7' })).details.velocity!.ip).toEqual({ hour: 101, day: 101 })

    // Redis holds keyed hashes only, each expiring within the day window
    const keys: string[] = []
    let cursor = '0'
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${d.prefix}:vel:*`, 'COUNT', 500)
      cursor = next
      keys.push(...found)
    } while (cursor !== '0')
    expect(keys.length).toBe(2 /* acme live ip, network */ + 2 /* email, email domain */ + 2 /* acme test */ + 2 /* other org */)
    for (const k of keys) {
      expect(k).toMatch(new RegExp(`^${d.prefix}:vel:[lt][inedp]:[A-Za-z0-9_-]{22}$`))
      expect(k.toLowerCase()).not.toMatch(/81\.2|jane|acme/)
      const ttl = await redis.pttl(k)
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(DAY_MS)
      for (const member of await redis.zrange(k, 0, -1)) expect(member).toMatch(/^[0-9a-f]{12}:\d+$/)
    }
  })
})

describe.skipIf(!databaseUrl || !redisUrl)('velocity costs one Redis command per request', () => {
  const d = deployment('cost')
  let proxy: RedisCommandProxy
  let redis: Redis
  afterAll(async () => {
    await d.close()
    await proxy?.close()
    if (redis) {
      await deleteKeys(redis, `${d.prefix}:`)
      redis.disconnect()
    }
  })

  it('with velocity on, each combined check sends exactly one command more than with it off', async () => {
    const u = new URL(redisUrl!)
    proxy = await startRedisCommandProxy(Number(u.port || 6379), u.hostname)
    redis = testRedis(redisUrl!)
    const measure = async (velocity: boolean) => {
      const { app, store } = await d.instance(proxy.url, velocity ? {} : { velocity: false })
      const org = await orgWithKeys(store)
      const body = (i: number) => ({ ip: `81.2.81.${i}`, email: `u${i}@acme-corp.com`, phone: '+442079460958', context: 'signup' })
      for (let i = 0; i < 3; i++) await post(app, org.live, '/v1/check', body(i)) // warm-up: the script loaded, connections open
      proxy.reset()
      const n = 50
      for (let i = 0; i < n; i++) await post(app, org.live, '/v1/check', body(i))
      const per = proxy.counts()
      const total = proxy.total()
      await app.close()
      return { n, per, total }
    }
    const on = await measure(true)
    const off = await measure(false)
    console.log(`Redis commands per /v1/check: velocity on ${on.total / on.n} ${JSON.stringify(on.per)}, off ${off.total / off.n} ${JSON.stringify(off.per)}`)
    expect((on.total - off.total) / on.n).toBe(1)
    expect((on.per.evalsha ?? 0) - (off.per.evalsha ?? 0)).toBe(on.n)
  })
})

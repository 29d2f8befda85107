/**
 * The Redis velocity store on a real Redis 7: two riskcheck instances sharing it count together, exactly (100 checks
 * from one IP split across them: the 100th sees 100), in one round trip per request, and keys hold no input and
 * expire with the day window.
 */
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { createRedisVelocityStore } from '../src/velocity/redis-store.js'
import { DAY_MS, HOUR_MS } from '../src/velocity/store.js'
import { deleteKeys, testRedis, testRedisUrl, uniquePrefix } from './redis-env.js'

const url = testRedisUrl('velocity-redis')
const SECRET = 'a velocity secret shared by both'

describe.skipIf(!url)('Redis velocity store', () => {
  let redis: Redis
  let other: Redis
  const prefix = uniquePrefix()
  const instances: Riskcheck[] = []
  beforeAll(() => {
    redis = testRedis(url!)
    other = testRedis(url!)
  })
  afterAll(async () => {
    for (const rc of instances) await rc.close()
    await deleteKeys(redis, prefix)
    redis.disconnect()
    other.disconnect()
  })
  const instance = (client: Redis, now?: () => number) => {
    const rc = createRiskcheck({
      mode: 'test',
      // a hang guard, not the default 1 s: 99 checks at once on a loaded machine may wait longer for Redis
      velocity: { secret: SECRET, store: createRedisVelocityStore({ redis: client, prefix, ...(now ? { now } : {}) }), timeoutMs: 60_000 },
    })
    instances.push(rc)
    return rc
  }

  it('two instances count together, exactly: 100 checks split across them, the 100th sees 100', async () => {
    const a = instance(redis)
    const b = instance(other)
    const seen = await Promise.all(Array.from({ length: 99 }, (_, i) => (i % 2 === 0 ? a : b).ip('192.0.2.12').then((r) => r.details.velocity!.ip!.hour)))
    expect(new Set(seen).size).toBe(99) // every check saw a different count: none lost, none counted twice
    expect(Math.max(...seen)).toBe(99)
    const last = await b.check({ ip: '192.0.2.12', email: 'deliverable@example.com' })
    expect(last.details.velocity).toMatchObject({ ip: { hour: 100, day: 100 }, network: { hour: 100, day: 100 }, email: { hour: 1, day: 1 } })
  })

  it('one script call per request; keys are hashes that expire with the day window', async () => {
    // Count what the store sends: every command goes through the client's sendCommand.
    const sent: string[] = []
    const counted = new Proxy(redis, {
      get(target, p) {
        const v = Reflect.get(target, p, target)
        if (p === 'sendCommand') return (cmd: { name: string }, ...rest: unknown[]) => (sent.push(cmd.name), (v as Function).call(target, cmd, ...rest))
        return typeof v === 'function' ? v.bind(counted) : v
      },
    })
    const rc = createRiskcheck({ mode: 'test', velocity: { secret: SECRET, store: createRedisVelocityStore({ redis: counted, prefix: `${prefix}rt:` }) } })
    instances.push(rc)
    await rc.check({ ip: '192.0.2.13', email: 'deliverable@example.com', phone: '+44 7400 123456' })
    expect(sent.filter((c) => c === 'evalsha' || c === 'eval')).toHaveLength(1)
    expect(sent.filter((c) => c !== 'evalsha' && c !== 'eval' && c !== 'script')).toEqual([])
    const keys = await redis.keys(`${prefix}rt:*`)
    expect(keys).toHaveLength(5)
    for (const k of keys) {
      expect(k.slice(prefix.length + 3)).toMatch(/^t[indep]:[A-Za-z0-9_-]{22}$/)
      const ttl = await redis.pttl(k)
      expect(ttl).toBeGreaterThan(DAY_MS - 60_000)
      expect(ttl).toBeLessThanOrEqual(DAY_MS)
    }
  })

  it('sliding windows on the given clock: old checks leave the hour, then the day', async () => {
    let t = Date.UTC(2026, 10, 22, 12)
    const rc = instance(redis, () => t)
    const count = async () => (await rc.phone('+44 7400 999999')).details.velocity!.phone
    await count()
    await count()
    t += HOUR_MS
    expect(await count()).toEqual({ hour: 1, day: 3 })
    t += DAY_MS - HOUR_MS
    expect(await count()).toEqual({ hour: 1, day: 2 })
  })

  it('works on its own from the built package: createRiskcheck({ velocity: { secret, store } })', async () => {
    const pkg = (await import(new URL('../dist/index.js', import.meta.url).href)) as typeof import('../src/index.js')
    const store = pkg.createRedisVelocityStore({ redis: other, prefix: `${prefix}pkg:` })
    const rc = pkg.createRiskcheck({ mode: 'test', velocity: { secret: SECRET, store } })
    instances.push(rc)
    await rc.ip('192.0.2.40')
    expect((await rc.ip('192.0.2.41')).details.velocity).toMatchObject({ ip: { hour: 1, day: 1 }, network: { hour: 2, day: 2 } })
    expect(await redis.keys(`${prefix}pkg:*`)).toHaveLength(3)
  })
})

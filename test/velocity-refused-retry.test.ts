/**
 * Velocity and a refused request: a request with an Idempotency-Key refused with 503 UPSTREAM_UNAVAILABLE (its
 * settlement was refused: not answered, not charged) and retried with the same key counts its check once — on the
 * SQLite file's counts, in memory and on Redis counters. A new request (another key, or none) counts again.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type ServerOptions } from '../src/server/app.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { createRedisVelocityStore } from '../src/velocity/redis-store.js'
import { createMemoryVelocityStore } from '../src/velocity/store.js'
import { deleteKeys, testRedis, testRedisUrl, uniquePrefix } from './redis-env.js'

const redisUrl = testRedisUrl('velocity of a refused request on Redis')
const dir = mkdtempSync(join(tmpdir(), 'rc-velocity-refused-'))
const redisClients: Array<{ redis: Redis; prefix: string }> = []
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  for (const { redis, prefix } of redisClients) {
    await deleteKeys(redis, prefix)
    redis.disconnect()
  }
})

const counters: Array<{ name: string; enabled: boolean; velocity(): ServerOptions['velocity'] }> = [
  { name: 'the SQLite file', enabled: true, velocity: () => true },
  { name: 'the in-memory store', enabled: true, velocity: () => ({ store: createMemoryVelocityStore() }) },
  {
    name: 'Redis',
    enabled: Boolean(redisUrl),
    velocity() {
      const redis = testRedis(redisUrl!)
      const prefix = uniquePrefix()
      redisClients.push({ redis, prefix })
      return { store: createRedisVelocityStore({ redis, prefix }) }
    },
  },
]

for (const counter of counters) {
  describe.skipIf(!counter.enabled)(`velocity of a refused request (${counter.name})`, () => {
    it('a 503 retried with its Idempotency-Key counts once; another request counts again', async () => {
      const sqlite = createSqliteStore(join(dir, `${counter.name.length}-${Date.now()}.sqlite`))
      const leases = sqlite.leases!
      let refuse = 1
      // the first settlement is refused (as when the request's hold was swept): a 503 that charged nothing
      const store: Store = { ...sqlite, leases: { ...leases, closeHeld: async (...args) => (refuse-- > 0 ? false : leases.closeHeld(...args)) } }
      const app = createServer({ db: store, purgeIntervalMs: 0, webhookIntervalMs: 0, dashboard: false, riskcheck: { offline: true }, velocity: counter.velocity() })
      try {
        await app.ready()
        const now = Date.now()
        const org = await sqlite.createOrg({ name: 'Refused', planId: 'starter' }, now)
        const { secret } = await issueApiKey(sqlite, { orgId: org.id }, now)
        const post = (key?: string) =>
          app.inject({ method: 'POST', url: '/v1/ip', headers: { authorization: `Bearer ${secret}`, ...(key ? { 'idempotency-key': key } : {}) }, payload: { ip: '81.2.69.10' } })

        const refused = await post('k-1')
        expect(refused.statusCode).toBe(503)
        expect(refused.json().error.code).toBe('UPSTREAM_UNAVAILABLE')
        const retry = await post('k-1')
        expect(retry.statusCode).toBe(200)
        expect(retry.json().data.details.velocity.ip).toEqual({ hour: 1, day: 1 })
        expect(retry.json().data.metadata.credits_used).toBe(1)
        // a replay runs nothing; new requests count
        expect((await post('k-1')).headers['idempotent-replayed']).toBe('true')
        expect((await post('k-2')).json().data.details.velocity.ip).toEqual({ hour: 2, day: 2 })
        expect((await post()).json().data.details.velocity.ip).toEqual({ hour: 3, day: 3 })
      } finally {
        await app.close()
        sqlite.close()
      }
    })
  })
}

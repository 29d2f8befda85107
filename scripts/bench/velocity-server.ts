/**
 * What velocity costs the HTTP service on PostgreSQL + Redis: the Redis commands a request sends (counted by a proxy
 * in front of Redis that reads the commands the server's clients write; a Lua script is one command however many
 * it runs inside Redis), with velocity on and off, per route, and the mean request time of each over real HTTP.
 *
 *   npx tsx scripts/bench/velocity-server.ts [--requests 200] [--database-url postgres://postgres@127.0.0.1:5432/test]
 *                                            [--redis-url redis://127.0.0.1:6379]
 *
 * A fresh schema and a Redis key prefix of its own, both removed at the end; the server runs offline, one org with a
 * live key, requests one at a time (the count per request is exact; times are relative, the machine is shared).
 * Then the same routes on a temporary SQLite file (no Redis), velocity on and off: the request time only.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import pg from 'pg'
import { issueApiKey } from '../../src/accounts/keys.js'
import { createServer } from '../../src/server/app.js'
import { openPostgresServerStores } from '../../src/server/store/postgres/server.js'
import { startRedisCommandProxy } from '../../test/redis-command-proxy.js'
import { deleteKeys } from '../../test/redis-env.js'

const { values } = parseArgs({ options: { requests: { type: 'string' }, 'database-url': { type: 'string' }, 'redis-url': { type: 'string' } } })
const N = Number(values.requests ?? 200)
const DATABASE_URL = values['database-url'] ?? process.env.RISKCHECK_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = values['redis-url'] ?? process.env.RISKCHECK_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

const ROUTES: Array<[string, (i: number) => unknown]> = [
  ['/v1/check', (i) => ({ ip: `81.2.90.${i % 250}`, email: `u${i}@acme-corp.com`, phone: '+442079460958', context: 'signup' })],
  ['/v1/ip', (i) => ({ ip: `81.2.91.${i % 250}` })],
  ['/v1/email', (i) => ({ email: `u${i}@acme-corp.com`, smtp: false })],
]

async function main(): Promise<void> {
  const schema = `rc_bench_vel_${randomBytes(4).toString('hex')}`
  const prefix = `rc-bench-vel-${randomBytes(4).toString('hex')}`
  const u = new URL(REDIS_URL)
  const proxy = await startRedisCommandProxy(Number(u.port || 6379), u.hostname)
  const stores = await openPostgresServerStores({ connectionString: DATABASE_URL, schema })
  const rows: string[] = []
  try {
    const now = Date.now()
    const org = await stores.store.createOrg({ name: 'Bench', planId: 'scale' }, now)
    await stores.store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: 10_000_000, ratePerSecond: 100_000 }, now)
    const key = (await issueApiKey(stores.store, { orgId: org.id, name: 'bench' }, now)).secret
    for (const velocity of [true, false]) {
      const app = createServer({
        db: stores.store,
        orgPolicies: stores.orgPolicies,
        queue: { redisUrl: proxy.url, prefix, workers: false },
        riskcheck: { offline: true },
        dashboard: false,
        purgeIntervalMs: 0,
        velocity,
      })
      await app.listen({ host: '127.0.0.1', port: 0 })
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
      for (const [route, body] of ROUTES) {
        const send = async (i: number) => {
          const res = await fetch(`${base}${route}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body(i)) })
          if (res.status !== 200) throw new Error(`${route}: ${res.status} ${await res.text()}`)
          await res.arrayBuffer()
        }
        for (let i = 0; i < 20; i++) await send(i) // warm-up: connections, scripts loaded, JIT
        proxy.reset()
        const t0 = performance.now()
        for (let i = 0; i < N; i++) await send(i)
        const ms = (performance.now() - t0) / N
        const counts = proxy.counts()
        const per = Object.entries(counts)
          .map(([name, n]) => `${name} ${(n / N).toFixed(2)}`)
          .join(', ')
        rows.push(`${route.padEnd(10)} velocity ${velocity ? 'on ' : 'off'}  ${(proxy.total() / N).toFixed(2)} Redis commands/request (${per})  ${ms.toFixed(2)} ms/request`)
      }
      await app.close()
    }
  } finally {
    await stores.close()
    await proxy.close()
    const admin = new pg.Pool({ connectionString: DATABASE_URL })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
    const redis = new Redis(REDIS_URL)
    await deleteKeys(redis, `${prefix}:`)
    redis.disconnect()
  }
  console.log(`velocity over HTTP on PostgreSQL + Redis, ${N} sequential requests per row (offline lookups)`)
  for (const r of rows) console.log(r)
  console.log('The extra per request is the velocity script: one EVALSHA for all of a request\'s counters (one round trip).')
  console.log(`\nvelocity over HTTP on SQLite (one transaction per request that inserts and counts), ${N} sequential requests per row`)
  for (const r of await sqliteRows()) console.log(r)
}

/** The same routes on a SQLite file (no Redis): request time with velocity on and off. */
async function sqliteRows(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'rc-bench-vel-'))
  const rows: string[] = []
  try {
    for (const velocity of [true, false]) {
      const app = createServer({ db: join(dir, `${velocity}.sqlite`), riskcheck: { offline: true }, dashboard: false, purgeIntervalMs: 0, velocity })
      await app.ready()
      const now = Date.now()
      const org = await app.store.createOrg({ name: 'Bench', planId: 'scale' }, now)
      await app.store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: 10_000_000, ratePerSecond: 100_000 }, now)
      const key = (await issueApiKey(app.store, { orgId: org.id, name: 'bench' }, now)).secret
      await app.listen({ host: '127.0.0.1', port: 0 })
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
      for (const [route, body] of ROUTES) {
        const send = async (i: number) => {
          const res = await fetch(`${base}${route}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body(i)) })
          if (res.status !== 200) throw new Error(`${route}: ${res.status} ${await res.text()}`)
          await res.arrayBuffer()
        }
        for (let i = 0; i < 20; i++) await send(i)
        const t0 = performance.now()
        for (let i = 0; i < N; i++) await send(i)
        rows.push(`${route.padEnd(10)} velocity ${velocity ? 'on ' : 'off'}  ${((performance.now() - t0) / N).toFixed(2)} ms/request`)
      }
      await app.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}

main().catch((e: unknown) => {
  console.error(e)
  process.exit(1)
})

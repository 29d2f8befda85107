/**
 * The bulk job list on PostgreSQL with two servers on one database (a schema of the suite's own, dropped after): a
 * page cursor of one org and key mode continues its list on either instance, and is refused for another org or the
 * other mode. Needs RISKCHECK_TEST_DATABASE_URL.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createRateLimiter } from '../src/server/rate-limit.js'
import { createPostgresStore, type PostgresStore } from '../src/server/store/postgres/store.js'
import { fakeClock } from './clock.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
if (!url) console.log('[skipped] bulk on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')
const schema = `rc_bulk_${randomBytes(5).toString('hex')}`
const clock = fakeClock('2026-11-22T00:00:00Z')

const pools: pg.Pool[] = []
const stores: PostgresStore[] = []
let a: RiskcheckServer
let b: RiskcheckServer
let rate = 1_000_000

async function call(app: RiskcheckServer, method: string, path: string, key: string, body?: unknown) {
  rate += 1000 // each request in a rate-limit second of its own
  const r = await app.inject({
    method: method as 'GET',
    url: path,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  })
  return { status: r.statusCode, body: JSON.parse(r.body), raw: r.body }
}

describe.skipIf(!url)('the bulk job list on PostgreSQL, two instances', () => {
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 4 })
      pools.push(pool)
      stores.push(await createPostgresStore({ pool, schema }))
    }
    const server = (store: PostgresStore) =>
      createServer({
        db: store,
        dashboard: false,
        purgeIntervalMs: 0,
        webhookIntervalMs: 0,
        instanceLeaseMs: 3_600_000,
        rateLimiter: createRateLimiter({ now: () => rate }),
        riskcheck: { offline: true, now: clock.now },
      })
    a = server(stores[0]!)
    b = server(stores[1]!)
    await a.ready()
    await b.ready()
  })

  afterAll(async () => {
    await a?.close()
    await b?.close()
    for (const s of stores) await s.close()
    const admin = new pg.Pool({ connectionString: url })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
    for (const p of pools) await p.end().catch(() => undefined)
  })

  it('a job-list cursor is taken on either instance by its org and key mode alone', async () => {
    const now = clock.now().getTime()
    const orgOf = async (name: string) => {
      const org = await stores[0]!.createOrg({ name, planId: 'starter' }, now)
      const key = async (mode: 'live' | 'test') => (await issueApiKey(stores[0]!, { orgId: org.id, name: mode, mode, scopes: ['bulk'] }, now)).secret
      return { id: org.id, live: await key('live'), test: await key('test') }
    }
    const [x, y] = [await orgOf('Acme'), await orgOf('Other')]
    const made: string[] = []
    for (const o of [x, y, x, y]) {
      const r = await call(a, 'POST', '/v1/bulk/jobs', o.test, { type: 'ip', inputs: ['192.0.2.9'] })
      expect(r.status, r.raw).toBe(202)
      made.push(r.body.data.id)
      await a.bulk!.engineFor({ orgId: o.id, mode: 'test' }).waitFor(r.body.data.id)
    }
    const first = await call(a, 'GET', '/v1/bulk/jobs?limit=1', x.test)
    expect(first.body.data.map((j: { id: string }) => j.id)).toEqual([made[2]])
    const cursor = first.body.next_cursor as string
    // another org's keys and the other mode's key, on either instance: each was a page of its own jobs below x's place
    for (const app of [a, b]) {
      for (const key of [y.test, y.live, x.live]) {
        const r = await call(app, 'GET', `/v1/bulk/jobs?limit=1&cursor=${cursor}`, key)
        expect(r.status, r.raw).toBe(400)
        expect(r.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
      }
      const next = await call(app, 'GET', `/v1/bulk/jobs?limit=1&cursor=${cursor}`, x.test)
      expect(next.status, next.raw).toBe(200)
      expect(next.body.data.map((j: { id: string }) => j.id)).toEqual([made[0]])
      expect(next.body.next_cursor).toBeNull()
    }
  })
})

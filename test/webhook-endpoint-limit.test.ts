/**
 * At most 10 webhook endpoints per org, also when creations race: 20 concurrent POST /v1/webhook-endpoints of one org
 * on a server over an SQLite file, and on two servers sharing PostgreSQL (set RISKCHECK_TEST_DATABASE_URL), create
 * exactly 10; the others are refused 400 INVALID_REQUEST. The limit was a count read before the insert, which every
 * racing creation passed on PostgreSQL (15 or 20 of 20 were created).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { MAX_WEBHOOK_ENDPOINTS } from '../src/server/routes/webhooks.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { createPostgresStore } from '../src/server/store/postgres/store.js'
import { fakeClock } from './clock.js'

const PG_URL = process.env.RISKCHECK_TEST_DATABASE_URL

function server(db: string | Store): RiskcheckServer {
  let rateMs = 0
  const clock = fakeClock('2026-11-22T00:00:00Z')
  return createServer({ db, purgeIntervalMs: 0, webhookIntervalMs: 0, rateLimitNow: () => (rateMs += 1000), riskcheck: { offline: true, now: clock.now } })
}

/** 20 creations at once, spread over `apps`; their statuses and the org's endpoints after. */
async function race(apps: RiskcheckServer[]) {
  const now = Date.parse('2026-11-22T00:00:00Z')
  const org = await apps[0]!.store.createOrg({ name: 'Acme', planId: 'starter' }, now)
  const key = (await issueApiKey(apps[0]!.store, { orgId: org.id, mode: 'live', name: 'hooks', scopes: ['webhooks'] }, now)).secret
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const created = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      apps[i % apps.length]!.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers, payload: JSON.stringify({ url: `https://hooks${i}.example.org/in`, events: ['*'] }) }),
    ),
  )
  const listed = await apps[0]!.inject({ method: 'GET', url: '/v1/webhook-endpoints', headers })
  return { statuses: created.map((r) => r.statusCode), refusals: created.filter((r) => r.statusCode !== 201).map((r) => JSON.parse(r.body).error), endpoints: JSON.parse(listed.body).data as unknown[] }
}

function expectLimitHeld(r: Awaited<ReturnType<typeof race>>) {
  expect(r.statuses.filter((s) => s === 201)).toHaveLength(MAX_WEBHOOK_ENDPOINTS)
  expect(r.endpoints).toHaveLength(MAX_WEBHOOK_ENDPOINTS)
  expect(r.refusals).toHaveLength(20 - MAX_WEBHOOK_ENDPOINTS)
  for (const e of r.refusals) expect(e).toMatchObject({ code: 'INVALID_REQUEST', message: `At most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints may exist; delete one first.` })
}

describe('the endpoint limit under concurrent creations', () => {
  it('SQLite file: 20 at once create 10', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-endpoint-limit-'))
    const app = server(join(dir, 'hooks.sqlite'))
    try {
      await app.ready()
      expectLimitHeld(await race([app]))
    } finally {
      await app.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.skipIf(!PG_URL)('PostgreSQL, two servers on one database: 20 at once create 10', async () => {
    const schema = `rc_endpoint_limit_${randomBytes(5).toString('hex')}`
    const stores = [await createPostgresStore({ connectionString: PG_URL!, schema }), await createPostgresStore({ connectionString: PG_URL!, schema })]
    const apps = stores.map(server)
    try {
      for (const a of apps) await a.ready()
      expectLimitHeld(await race(apps))
    } finally {
      for (const a of apps) await a.close()
      for (const s of stores) await s.close()
      const admin = new pg.Pool({ connectionString: PG_URL, max: 1 })
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    }
  })
})

/**
 * Rechecks of deferred email answers on PostgreSQL with two instances on one database (a schema of the suite's own,
 * dropped after): a lookup deferred on A is due 5 minutes later, both instances look for due rechecks at once, and
 * exactly one takes it (one more RCPT TO at the mail server, one `email.rechecked` event in the outbox); a bulk job
 * with `recheck_deferred` run on A is completed by B's recheck pass; a refused request's rechecks are cancelled. Needs
 * RISKCHECK_TEST_DATABASE_URL.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RiskcheckServer } from '../src/server/app.js'
import type { EventPayload } from '../src/schema.js'
import { openStorage } from '../src/server/store/open-storage.js'
import type { PostgresServiceStorage } from '../src/server/store/contracts/service-storage.js'
import { fakeClock } from './clock.js'
import { call, DOMAIN, greyServer, MINUTE, orgWithEndpoint, startGreyWorld, waitForJob, type GreyWorld } from './rechecks-harness.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
if (!url) console.log('[skipped] rechecks on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')
const schema = `rc_rechecks_${randomBytes(5).toString('hex')}`
const clock = fakeClock('2026-11-22T00:00:00Z')

let world: GreyWorld
const storages: PostgresServiceStorage[] = []
let a: RiskcheckServer
let b: RiskcheckServer
const sent: EventPayload[] = []
let key: string

async function outboxCount(type: string): Promise<number> {
  const admin = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}` })
  try {
    const { rows } = await admin.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE type = $1', [type])
    return Number(rows[0]!.n)
  } finally {
    await admin.end()
  }
}

describe.skipIf(!url)('rechecks on PostgreSQL, two instances', () => {
  beforeAll(async () => {
    world = await startGreyWorld()
    for (let i = 0; i < 2; i++) storages.push(await openStorage({ postgres: url!, schema }))
    a = greyServer(world, storages[0]!, clock, sent)
    b = greyServer(world, storages[1]!, clock, sent)
    await a.ready()
    await b.ready()
    key = (await orgWithEndpoint(a, storages[0]!.store, clock.now().getTime())).key
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    for (const s of storages) await s.close()
    const admin = new pg.Pool({ connectionString: url })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
    await world?.close()
  })

  it('a recheck due on two instances is taken by exactly one', async () => {
    world.script.set('gina', { defer: 1, then: 'accept' })
    const first = await call(a, 'POST', '/v1/email', key, { email: `gina@${DOMAIN}` })
    expect(first.body.data.details.smtp_check).toBe('unknown')
    expect(await storages[1]!.rechecks.count()).toBe(1)
    clock.advance(5 * MINUTE)
    const [ra, rb] = await Promise.all([a.rechecks!.runOnce(), b.rechecks!.runOnce()])
    expect(ra + rb).toBe(1)
    expect(world.attempts.get('gina')).toBe(2) // the answer, and one recheck
    expect(await outboxCount('email.rechecked')).toBe(1)
    expect(await storages[0]!.rechecks.count()).toBe(0)
    await a.webhooks!.runOnce()
    await b.webhooks!.runOnce()
    const events = sent.filter((e) => e.type === 'email.rechecked')
    expect(events).toHaveLength(1)
    expect(events[0]!.data).toMatchObject({ request_id: first.body.data.request.id, verdict: 'valid', attempts: 1, definite: true })
    // the shared cache holds the new answer: B answers from it
    const again = await call(b, 'POST', '/v1/email', key, { email: `gina@${DOMAIN}` })
    expect(again.body.data.metadata.cache_hit).toBe(true)
    expect(again.body.data.details.smtp_check).toBe('deliverable')
  })

  it('a bulk job run on A is completed by the recheck pass B takes', async () => {
    world.script.set('hank', { defer: 1, then: 'accept' })
    const created = await call(a, 'POST', '/v1/bulk/jobs', key, { type: 'email', inputs: [`hank@${DOMAIN}`], recheck_deferred: true })
    expect(created.status).toBe(202)
    const id = created.body.data.id as string
    const waiting = await waitForJob(a, key, id, (j) => j.status !== 'queued' && j.status !== 'running')
    expect(waiting.status).toBe('rechecking')
    clock.advance(5 * MINUTE)
    expect(await b.rechecks!.runOnce()).toBe(1)
    expect(await a.rechecks!.runOnce()).toBe(0)
    const done = (await call(a, 'GET', `/v1/bulk/jobs/${id}`, key)).body.data
    expect(done.status).toBe('completed')
    const rows = (await call(a, 'GET', `/v1/bulk/jobs/${id}/results`, key)).body.data
    expect(rows[0]).toMatchObject({ input: `hank@${DOMAIN}`, status: 'valid', action: 'approve' })
    expect(await outboxCount('bulk.completed')).toBe(1)
  })

  it("a refused request's rechecks are cancelled on the shared table, another request's kept", async () => {
    const rechecks = storages[0]!.rechecks
    const before = await rechecks.count()
    const row = (requestId: string, orgId: string) => ({
      id: `rck_${requestId}`,
      orgId,
      mode: 'live' as const,
      target: { kind: 'request' as const, requestId },
      address: `x@${DOMAIN}`,
      answeredAt: 0,
      dueAt: 10 * 365 * 24 * 60 * MINUTE,
      attempt: 0,
      maxAttempts: 1,
    })
    await rechecks.schedule([row('req_refused', 'org_a'), row('req_kept', 'org_a'), row('req_other_org', 'org_b')])
    expect(await storages[1]!.rechecks.cancelForRequest('org_b', 'req_refused')).toBe(0) // another org's id: nothing
    expect(await storages[1]!.rechecks.cancelForRequest('org_a', 'req_refused')).toBe(1)
    expect(await rechecks.count()).toBe(before + 2)
    expect(await rechecks.cancelForRequest('org_a', 'req_kept')).toBe(1)
    expect(await rechecks.cancelForRequest('org_b', 'req_other_org')).toBe(1)
    expect(await rechecks.count()).toBe(before)
  })
})

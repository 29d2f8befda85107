/**
 * A recheck of a deferred email answer is scored as a live answer of its org (docs/rechecks.md): with the org's
 * allow/block lists (list_blocked), its outcome labels (email_bounced_before; a bulk row carries none, as in its job)
 * and its own policy — all read from the database by an instance that never served the org (the answers are given on
 * one server, which then stops; the next one on the same database rechecks them). On SQLite and on PostgreSQL (a
 * schema of the suite's own, dropped after; needs RISKCHECK_TEST_DATABASE_URL).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { EventPayload } from '../src/schema.js'
import { policyFromObject } from '../src/scoring/policy-file.js'
import type { ServiceStorage } from '../src/server/store/contracts/service-storage.js'
import { listsStoreOf, openStorage } from '../src/server/store/open-storage.js'
import { fakeClock } from './clock.js'
import { call, DOMAIN, greyServer, MINUTE, orgWithEndpoint, startGreyWorld, waitForJob, type GreyWorld } from './rechecks-harness.js'

const PG_URL = process.env.RISKCHECK_TEST_DATABASE_URL
if (!PG_URL) console.log('[skipped] org-scored rechecks on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')

let world: GreyWorld
let dir: string
beforeAll(async () => {
  world = await startGreyWorld()
  dir = mkdtempSync(join(tmpdir(), 'rc-rechecks-org-'))
})
afterAll(async () => {
  await world?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** The answers on a first server (then stopped), the rechecks on a second one over the same database. */
async function walk(open: () => ServiceStorage | Promise<ServiceStorage>, tag: string) {
  const [blocked, bounced, row] = [`ivan${tag}`, `judy${tag}`, `kim${tag}`]
  for (const local of [blocked, bounced, row]) world.script.set(local, { defer: 1, then: 'accept' })
  const clock = fakeClock('2026-11-22T00:00:00Z')
  const sent: EventPayload[] = []
  const now = clock.now().getTime()

  const first = await open()
  const a = greyServer(world, first, clock, sent)
  await a.ready()
  let orgA: { orgId: string; key: string }
  let orgB: { orgId: string; key: string }
  let jobId: string
  let requestA: string
  let requestB: string
  try {
    orgA = await orgWithEndpoint(a, first.store, now)
    orgB = await orgWithEndpoint(a, first.store, now)
    // Org A: a block list of the mail domain, and a policy of its own under which a block-list match is reviewed.
    const lists = listsStoreOf(first.store)!
    const ownerA = { orgId: orgA.orgId, mode: 'live' as const }
    const list = await lists.createList(ownerA, { name: 'blocked domains', kind: 'block', itemType: 'email_domain' }, now)
    await lists.addItems(ownerA, list.id, [{ value: DOMAIN, reason: 'test', expiresAt: null }], now)
    const policy = policyFromObject({ lists: { block: 'review' } })
    await first.orgPolicies.setOrgPolicy({ orgId: orgA.orgId, version: policy.version, canonical: policy.canonical, description: null, source: null, setAt: now })
    // Org B: a bounce reported for an address.
    const out = await call(a, 'POST', '/v1/outcomes', orgB.key, { outcomes: [{ input: `${bounced}@${DOMAIN}`, type: 'email', outcome: 'bounced' }] })
    expect(out.status, JSON.stringify(out.body)).toBe(200)

    const answerA = await call(a, 'POST', '/v1/email', orgA.key, { email: `${blocked}@${DOMAIN}` })
    expect(answerA.body.data.details.smtp_check).toBe('unknown')
    expect(answerA.body.data.risk.factors).toContain('list_blocked')
    expect(answerA.body.data.recommendation.action).toBe('review')
    requestA = answerA.body.data.request.id
    const answerB = await call(a, 'POST', '/v1/email', orgB.key, { email: `${bounced}@${DOMAIN}` })
    expect(answerB.body.data.details.smtp_check).toBe('unknown')
    expect(answerB.body.data.risk.factors).toContain('email_bounced_before')
    requestB = answerB.body.data.request.id
    const job = await call(a, 'POST', '/v1/bulk/jobs', orgA.key, { type: 'email', inputs: [`${row}@${DOMAIN}`], recheck_deferred: true })
    expect(job.status, JSON.stringify(job.body)).toBe(202)
    jobId = job.body.data.id
    expect((await waitForJob(a, orgA.key, jobId, (j) => j.status !== 'queued' && j.status !== 'running')).status).toBe('rechecking')
  } finally {
    await a.close()
    await first.close()
  }

  clock.advance(5 * MINUTE)
  const second = await open()
  const b = greyServer(world, second, clock, sent)
  await b.ready()
  try {
    expect(await b.rechecks!.runOnce()).toBe(3)
    await b.webhooks!.runOnce()
    const rechecked = sent.filter((e) => e.type === 'email.rechecked')
    const of = (email: string) => rechecked.find((e) => e.data.email === email)!
    // Org A's address: on its block list, reviewed under its own policy (the service's would block).
    expect(of(`${blocked}@${DOMAIN}`)).toMatchObject({ org_id: orgA.orgId, data: { request_id: requestA, smtp_check: 'deliverable', action: 'review', definite: true } })
    expect(of(`${blocked}@${DOMAIN}`).data.factors).toContain('list_blocked')
    // Org B's address: the bounce it reported.
    expect(of(`${bounced}@${DOMAIN}`)).toMatchObject({ org_id: orgB.orgId, data: { request_id: requestB, smtp_check: 'deliverable', definite: true } })
    expect(of(`${bounced}@${DOMAIN}`).data.factors).toContain('email_bounced_before')
    expect(of(`${bounced}@${DOMAIN}`).data.factors).not.toContain('list_blocked')
    // Org A's bulk row: its lists, rewritten in place with the match.
    expect(of(`${row}@${DOMAIN}`)).toMatchObject({ org_id: orgA.orgId, data: { bulk_job_id: jobId, row_index: 0, action: 'review' } })
    expect(of(`${row}@${DOMAIN}`).data.factors).toContain('list_blocked')
    const rows = (await call(b, 'GET', `/v1/bulk/jobs/${jobId}/results`, orgA.key)).body.data
    expect(rows[0].details.smtp_check).toBe('deliverable')
    expect(rows[0].factors).toContain('list_blocked')
  } finally {
    await b.close()
    await second.close()
  }
}

describe('rechecks are scored as live answers of their org', () => {
  it('SQLite', async () => {
    const file = join(dir, 'org.sqlite')
    await walk(() => openStorage({ sqlite: file }), 's')
  })

  it.skipIf(!PG_URL)('PostgreSQL', async () => {
    const schema = `rc_rechecks_org_${randomBytes(5).toString('hex')}`
    try {
      await walk(() => openStorage({ postgres: PG_URL!, schema }), 'p')
    } finally {
      const admin = new pg.Pool({ connectionString: PG_URL })
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    }
  })
})

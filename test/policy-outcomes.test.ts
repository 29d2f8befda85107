/**
 * `riskcheck admin policy set` measured on outcomes, on SQLite and on PostgreSQL (a schema of the suite's own,
 * dropped after; needs RISKCHECK_TEST_DATABASE_URL): a server answers lookups and records outcomes about them — by
 * request id, by input, one superseded, a later one winning, a delivery outcome, one about an input never seen — then
 * the dry-run backtest labels the org's answers by them and reports the counts worked out by hand below.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { runAdmin } from '../src/cli/admin-command.js'
import { createServer } from '../src/server/app.js'
import { createPostgresStore } from '../src/server/store/postgres/store.js'
import type { Store } from '../src/server/store/contracts/store.js'
import type { OrgPolicyStore } from '../src/server/store/contracts/org-policies.js'
import { createPostgresOrgPolicyStore } from '../src/server/store/postgres/org-policies.js'
import { fakeClock } from './clock.js'
import { memoryIO } from './helpers.js'

const PG_URL = process.env.RISKCHECK_TEST_DATABASE_URL
let dir: string
let policyFile: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-policy-outcomes-'))
  policyFile = join(dir, 'block-datacenters.yaml')
  // Offline, 8.8.8.8 fires ip_datacenter and ip_cloud (verify); 1.1.1.1 fires nothing (approve).
  writeFileSync(policyFile, 'rules:\n  - unusable_input_blocks\n  - { name: datacenter_blocks, when: { any: [ip_datacenter] }, action: block }\n')
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Answers four lookups and records the outcomes; returns the org id and the admin's clock. */
async function seed(db: string | Store, orgPolicies?: OrgPolicyStore): Promise<{ orgId: string; now: number }> {
  const clock = fakeClock('2026-11-22T00:00:00Z')
  let rateMs = 0
  const app = createServer({ db, ...(orgPolicies ? { orgPolicies } : {}), dashboard: false, purgeIntervalMs: 0, rateLimitNow: () => (rateMs += 1000), riskcheck: { offline: true, now: clock.now } })
  await app.ready()
  const now = clock.now().getTime()
  const org = await app.store.createOrg({ name: 'Outcomes Co', planId: 'starter' }, now)
  const live = (await issueApiKey(app.store, { orgId: org.id, name: 'live' }, now)).secret
  const post = async (url: string, body: unknown) => {
    const r = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${live}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) })
    expect(r.statusCode).toBe(200)
    return JSON.parse(r.body).data
  }
  const ip = async (v: string) => {
    const d = await post('/v1/ip', { ip: v })
    return d.request.id as string
  }
  try {
    const a = await ip('8.8.8.8') // verify
    const b = await ip('8.8.8.8') // verify
    const c = await ip('1.1.1.1') // approve
    const d = await ip('1.1.1.1') // approve
    const out = async (items: unknown[]) => {
      const { results } = await post('/v1/outcomes', { outcomes: items })
      expect(results.map((r: { status: string }) => r.status)).toEqual(items.map(() => 'recorded'))
    }
    await out([
      { request_id: a, outcome: 'fraud' }, // A: fraud
      { request_id: b, outcome: 'chargeback' }, // superseded below
      { input: '1.1.1.1', type: 'ip', outcome: 'legitimate' }, // C and D: good …
      { input: 'jane@example.org', type: 'email', outcome: 'bounced' }, // delivery: not a label
      { input: '203.0.113.9', type: 'ip', outcome: 'fraud' }, // no answer of that input
    ])
    clock.advance(1000)
    await out([
      { request_id: b, outcome: 'legitimate' }, // B: good (supersedes the chargeback)
      { request_id: d, outcome: 'account_takeover' }, // … D: fraud, the later outcome wins
    ])
  } finally {
    await app.close() // writes the answer log
  }
  return { orgId: org.id, now: clock.now().getTime() + 60_000 }
}

/** What the dry run must show: answers A fraud (verify), B good (verify), C good (approve), D fraud (approve). */
async function check(orgId: string, now: number, where: string[]) {
  const io = memoryIO()
  expect(await runAdmin(['policy', 'set', '--org', orgId, policyFile, '--dry-run', '--json', ...where], io, { now: () => now }), io.err()).toBe(0)
  const out = JSON.parse(io.out())
  expect(out.labels).toEqual({ source: 'outcomes', file: null, outcomes: { outcomes: 6, labels: 5, delivery: 1, superseded: 0, answersWithoutRequestId: 0 } })
  const r = out.backtest
  expect(r).toMatchObject({ read: 4, scored: 4, changed: 2 })
  // Five risk outcomes are current (B's chargeback is superseded): four answers matched, 203.0.113.9 matched none.
  expect(r.labels).toMatchObject({ given: 5, matched: 4, unmatched: 1 })
  expect(r.labels.fraud).toEqual({ current: { approve: 1, verify: 1, review: 0, block: 0 }, candidate: { approve: 1, verify: 0, review: 0, block: 1 } })
  expect(r.labels.good).toEqual({ current: { approve: 1, verify: 1, review: 0, block: 0 }, candidate: { approve: 1, verify: 0, review: 0, block: 1 } })
  expect(r.labels.metrics.candidate.actions.block).toEqual({ precision: 1 / 2, recall: 1 / 2 })
  expect(r.labels.metrics.current.actions.verify).toEqual({ precision: 1 / 2, recall: 1 / 2 })
  expect(r.labels.metrics.candidate.goodBlocked).toEqual({ count: 1, share: 1 / 2 })
  expect(r.labels.metrics.current.goodBlocked).toEqual({ count: 0, share: 0 })
  expect(r.reviewQueue).toEqual({ current: 0, candidate: 0, change: 0, ratio: null })

  // The text report says where the labels came from and shows the measures.
  const text = memoryIO()
  expect(await runAdmin(['policy', 'set', '--org', orgId, policyFile, '--dry-run', ...where], text, { now: () => now })).toBe(0)
  expect(text.out()).toContain("Labels: the org's outcomes — 5 current risk outcome(s) as labels")
  expect(text.out()).toContain('good customers blocked: 0 → 1 of 2 (0.0% → 50.0%)')
  expect(text.out()).toMatch(/ {2}block +– +50\.0% +0\.0% +50\.0%/)
  expect(text.out()).toContain('Review queue (answers with action review): 0 → 0')

  // --no-outcomes: no labels; --labels FILE: the file's.
  const none = memoryIO()
  expect(await runAdmin(['policy', 'set', '--org', orgId, policyFile, '--dry-run', '--json', '--no-outcomes', ...where], none, { now: () => now })).toBe(0)
  expect(JSON.parse(none.out()).backtest.labels).toBeNull()
  const labelsFile = join(dir, `labels-${randomBytes(3).toString('hex')}.csv`)
  writeFileSync(labelsFile, 'input,label\n8.8.8.8,good\n')
  const file = memoryIO()
  expect(await runAdmin(['policy', 'set', '--org', orgId, policyFile, '--dry-run', '--json', '--labels', labelsFile, ...where], file, { now: () => now })).toBe(0)
  const fromFile = JSON.parse(file.out())
  expect(fromFile.labels.source).toBe('file')
  expect(fromFile.backtest.labels).toMatchObject({ given: 1, matched: 2 })
}

describe('admin policy set labels the backtest by the org’s outcomes', () => {
  it('SQLite', async () => {
    const db = join(dir, 'outcomes.sqlite')
    const { orgId, now } = await seed(db)
    await check(orgId, now, ['--db', db])
  })

  it.skipIf(!PG_URL)('PostgreSQL', async () => {
    const schema = `rc_polout_${randomBytes(5).toString('hex')}`
    const pool = new pg.Pool({ connectionString: PG_URL, options: `-c search_path=${schema}`, max: 4 })
    try {
      const store = await createPostgresStore({ pool, schema })
      const { orgId, now } = await seed(store, createPostgresOrgPolicyStore(pool))
      const u = new URL(PG_URL!)
      u.searchParams.set('schema', schema)
      await check(orgId, now, ['--database-url', u.toString()])
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {})
      await pool.end()
    }
  })
})

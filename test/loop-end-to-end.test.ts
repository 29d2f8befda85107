/**
 * The loop from answers to outcomes to policies, one walk on real engines — two servers on one SQLite file, and two on
 * one PostgreSQL schema (needs RISKCHECK_TEST_DATABASE_URL): under the org's policy an answer on A is a review → B
 * lists it and blocks it, adding the IP to a block list → the outcome `fraud` is listed → A's next answer for that IP
 * carries reported_fraud_before and list_blocked → a candidate policy's backtest (`backtestOrg` and
 * `admin policy set --dry-run`) counts the decision as the one fraud label. RISKCHECK_PRINT_REPORT=1 prints the report.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { runAdmin } from '../src/cli/admin-command.js'
import { loadPolicyFile } from '../src/scoring/index.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { backtestOrg } from '../src/server/org-backtest.js'
import { outcomeStoreOf } from '../src/server/store/open-storage.js'
import type { Store } from '../src/server/store/contracts/store.js'
import type { OrgPolicyStore } from '../src/server/store/contracts/org-policies.js'
import { createPostgresOrgPolicyStore } from '../src/server/store/postgres/org-policies.js'
import { createPostgresStore } from '../src/server/store/postgres/store.js'
import { createSqliteOrgPolicyStore } from '../src/server/store/sqlite/org-policies.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { fakeClock } from './clock.js'
import { memoryIO } from './helpers.js'

const PG_URL = process.env.RISKCHECK_TEST_DATABASE_URL
// Offline, 8.8.8.8 fires ip_datacenter and ip_cloud: the org's policy makes it a review, the candidate a block.
const IP = '8.8.8.8'
const REVIEW_POLICY = 'rules:\n  - unusable_input_blocks\n  - { name: datacenter_reviews, when: { any: [ip_datacenter] }, action: review }\n'
const BLOCK_POLICY = 'rules:\n  - unusable_input_blocks\n  - { name: datacenter_blocks, when: { any: [ip_datacenter] }, action: block }\n'

/** One engine: how to open a store for each instance, the admin's flags, and how to read the policies afterwards. */
interface Engine {
  name: string
  skip: boolean
  open(): Promise<{
    stores: [Store, Store]
    orgPolicies: [OrgPolicyStore | undefined, OrgPolicyStore | undefined]
    where: string[]
    /** After the servers closed: the stores backtestOrg reads, and a close for them. */
    reopen(): Promise<{ policies: OrgPolicyStore; store: Store; close(): Promise<void> }>
    cleanup(): Promise<void>
  }>
}

const ENGINES: Engine[] = [
  {
    name: 'two servers on one SQLite file',
    skip: false,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'riskcheck-loop-'))
      const file = join(dir, 'loop.sqlite')
      return {
        stores: [createSqliteStore(file), createSqliteStore(file)],
        orgPolicies: [undefined, undefined], // the tables of the SQLite file
        where: ['--db', file],
        async reopen() {
          const store = createSqliteStore(file)
          return { store, policies: createSqliteOrgPolicyStore(store.db) as unknown as OrgPolicyStore, close: async () => store.close() }
        },
        async cleanup() {
          rmSync(dir, { recursive: true, force: true })
        },
      }
    },
  },
  {
    name: 'two servers on one PostgreSQL schema',
    skip: !PG_URL,
    async open() {
      const schema = `rc_loop_${randomBytes(5).toString('hex')}`
      const pools = [0, 1].map(() => new pg.Pool({ connectionString: PG_URL, options: `-c search_path=${schema}`, max: 4 }))
      const stores = [await createPostgresStore({ pool: pools[0]!, schema }), await createPostgresStore({ pool: pools[1]!, schema })] as [Store, Store]
      const u = new URL(PG_URL!)
      u.searchParams.set('schema', schema)
      return {
        stores,
        orgPolicies: [createPostgresOrgPolicyStore(pools[0]!), createPostgresOrgPolicyStore(pools[1]!)],
        where: ['--database-url', u.toString()],
        async reopen() {
          return { store: stores[0], policies: createPostgresOrgPolicyStore(pools[0]!), close: async () => undefined }
        },
        async cleanup() {
          for (const s of stores) await s.close()
          await pools[0]!.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
          for (const p of pools) await p.end().catch(() => undefined)
        },
      }
    },
  },
]

for (const engine of ENGINES) {
  describe.skipIf(engine.skip)(`the loop on ${engine.name}`, () => {
    const clock = fakeClock('2026-11-22T00:00:00Z')
    let dir: string
    let env: Awaited<ReturnType<Engine['open']>>
    let servers: RiskcheckServer[] = []
    let rateMs = 0
    let closed = false

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'riskcheck-loop-policies-'))
      writeFileSync(join(dir, 'review-datacenters.yaml'), REVIEW_POLICY)
      writeFileSync(join(dir, 'block-datacenters.yaml'), BLOCK_POLICY)
      env = await engine.open()
      servers = env.stores.map((db, i) =>
        createServer({
          db,
          ...(env.orgPolicies[i] ? { orgPolicies: env.orgPolicies[i] } : {}),
          dashboard: false,
          purgeIntervalMs: 0,
          webhookIntervalMs: 0,
          instanceLeaseMs: 3_600_000,
          rateLimitNow: () => (rateMs += 1000),
          riskcheck: { offline: true, now: clock.now },
        }),
      )
      for (const s of servers) await s.ready()
    }, 60_000)

    afterAll(async () => {
      if (!closed) for (const s of servers) await s.close()
      await env?.cleanup()
      rmSync(dir, { recursive: true, force: true })
    }, 60_000)

    it('review on A → listed and blocked on B → outcome fraud → A answers reported_fraud_before → the backtest counts one fraud label', async () => {
      const [a, b] = servers as [RiskcheckServer, RiskcheckServer]
      const now = clock.now().getTime()
      const org = await a.store.createOrg({ name: 'Loop Co', planId: 'starter' }, now)
      const key = (await issueApiKey(a.store, { orgId: org.id, name: 'live', scopes: ['lookup', 'lists'] }, now)).secret
      const call = async (app: RiskcheckServer, method: 'GET' | 'POST', url: string, body?: unknown) => {
        const r = await app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
          ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
        })
        return { status: r.statusCode, body: JSON.parse(r.body) }
      }

      // the org's policy: datacenter networks are a review (applied by the admin, read on the org's next request)
      const applied = memoryIO()
      expect(await runAdmin(['policy', 'set', '--org', org.id, join(dir, 'review-datacenters.yaml'), ...env.where], applied, { now: () => now }), applied.err()).toBe(0)
      expect(applied.out()).toContain(`Applied: ${org.id} now uses policy`)

      const answer = await call(a, 'POST', '/v1/ip', { ip: IP })
      expect(answer.status).toBe(200)
      expect(answer.body.data.recommendation.action).toBe('review')
      expect(answer.body.data.risk.factors).not.toContain('reported_fraud_before')
      const requestId = answer.body.data.request.id as string

      // queued on A (listing on A waits for A's batch of queue writes) …
      expect((await call(a, 'GET', '/v1/reviews?status=pending')).body.data.map((e: { request_id: string }) => e.request_id)).toEqual([requestId])
      // … B lists it …
      const queue = await call(b, 'GET', '/v1/reviews?status=pending')
      expect(queue.status).toBe(200)
      expect(queue.body.data).toHaveLength(1)
      const entry = queue.body.data[0]
      expect(entry).toMatchObject({ request_id: requestId, type: 'ip', input: IP, action: 'review', status: 'pending', decision: null })
      expect(entry.factors.map((f: { code: string }) => f.code)).toEqual(answer.body.data.risk.factors)

      // … and blocks it, adding the IP to a block list
      const list = await call(b, 'POST', '/v1/lists', { name: 'reviewed fraud', kind: 'block', item_type: 'ip' })
      expect(list.status).toBe(201)
      const decided = await call(b, 'POST', `/v1/reviews/${entry.id}/decision`, { decision: 'block', add_to_list: list.body.data.id, note: 'chargeback pattern' })
      expect(decided.status).toBe(200)
      expect(decided.body.data.review).toMatchObject({ id: entry.id, status: 'decided', decision: 'block', list_id: list.body.data.id })
      const outcomeId = decided.body.data.review.outcome_id as string

      const outcomes = await call(b, 'GET', `/v1/outcomes?request_id=${requestId}`)
      expect(outcomes.body.data).toEqual([expect.objectContaining({ id: outcomeId, outcome: 'fraud', note: 'chargeback pattern' })])
      expect((await call(a, 'GET', '/v1/reviews?status=pending')).body.data).toEqual([])

      // A's next answer for the same IP carries the decision
      const later = await call(a, 'POST', '/v1/ip', { ip: IP, bypass_cache: true })
      expect(later.status).toBe(200)
      expect(later.body.data.risk.factors).toContain('reported_fraud_before')
      expect(later.body.data.risk.factors).toContain('list_blocked')
      expect(later.body.data.recommendation.action).toBe('block')

      // the answer log is written when the servers close
      for (const s of servers) await s.close()
      closed = true
      const at = now + 60_000
      const candidate = join(dir, 'block-datacenters.yaml')

      const opened = await env.reopen()
      try {
        const { policy } = await loadPolicyFile(candidate)
        const bt = await backtestOrg({ policies: opened.policies, outcomes: outcomeStoreOf(opened.store), orgId: org.id, policy, nowMs: at })
        expect(bt.labelSource).toBe('outcomes')
        expect(bt.outcomes).toEqual({ outcomes: 1, labels: 1, delivery: 0, superseded: 0, answersWithoutRequestId: 0 })
        // two answers: the review (labelled fraud by the decision, by its request id) and the later block (unlabelled)
        expect(bt.report).toMatchObject({ read: 2, scored: 2, changed: 1 })
        expect(bt.report.reviewQueue).toEqual({ current: 1, candidate: 0, change: -1, ratio: 0 })
        expect(bt.report.labels).toMatchObject({ given: 1, matched: 1, unmatched: 0 })
        expect(bt.report.labels!.fraud).toEqual({ current: { approve: 0, verify: 0, review: 1, block: 0 }, candidate: { approve: 0, verify: 0, review: 0, block: 1 } })
        expect(bt.report.labels!.good).toEqual({ current: { approve: 0, verify: 0, review: 0, block: 0 }, candidate: { approve: 0, verify: 0, review: 0, block: 0 } })
      } finally {
        await opened.close()
      }

      const json = memoryIO()
      expect(await runAdmin(['policy', 'set', '--org', org.id, candidate, '--dry-run', '--json', ...env.where], json, { now: () => at }), json.err()).toBe(0)
      const out = JSON.parse(json.out())
      expect(out).toMatchObject({ applied: false, dry_run: true, answers: { read: 2 } })
      expect(out.labels).toEqual({ source: 'outcomes', file: null, outcomes: { outcomes: 1, labels: 1, delivery: 0, superseded: 0, answersWithoutRequestId: 0 } })
      expect(out.backtest.labels).toMatchObject({ given: 1, matched: 1, unmatched: 0 })
      expect(out.backtest.labels.metrics.candidate.actions.block).toEqual({ precision: 1, recall: 1 })
      expect(out.backtest.labels.metrics.current.actions.review).toEqual({ precision: 1, recall: 1 })
      expect(out.backtest.labels.metrics.current.actions.block).toEqual({ precision: null, recall: 0 })
      expect(out.backtest.labels.metrics.candidate.goodBlocked).toEqual({ count: 0, share: null }) // no good labels

      const text = memoryIO()
      expect(await runAdmin(['policy', 'set', '--org', org.id, candidate, '--dry-run', ...env.where], text, { now: () => at })).toBe(0)
      if (process.env.RISKCHECK_PRINT_REPORT) console.log(`${engine.name}:\n${text.out()}`)
      expect(text.out()).toContain("Labels: the org's outcomes — 1 current risk outcome(s) as labels")
      expect(text.out()).toContain('Labels: 1 given; 1 answers labelled (fraud 1, good 0)')
      expect(text.out()).toContain('fraud caught (blocked): 0 → 1 of 1 (0.0% → 100.0%)')
      expect(text.out()).toContain('Review queue (answers with action review): 1 → 0')
      expect(text.out()).toContain(`Dry run: nothing changed; ${org.id} still uses policy`)
    }, 60_000)
  })
}

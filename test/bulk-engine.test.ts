/**
 * The bulk engine with a controllable fake check: folding and billing arithmetic (refunds, cache hits, free answers,
 * cancellation), states and counts, paging with cursors and the action filter, retry, expiry, the job list,
 * concurrency bounds, email grouping by domain, and resuming a persistent store.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createBulkEngineFor, type BulkChecks } from '../src/bulk/engine.js'
import { createMemoryBulkStore } from '../src/bulk/memory-store.js'
import type { BulkEngine, BulkStore } from '../src/bulk/types.js'
import type { CheckDefinition } from '../src/checks/types.js'
import { createMemoryLedger } from '../src/credits.js'
import { RiskcheckError } from '../src/errors.js'
import { BulkJobSchema, BulkResultRowSchema, BulkResultsPageSchema, type BulkJob, type BulkResultRow } from '../src/schema.js'
import { createFakeCheck, createFakeEnv, settle } from './bulk-fakes.js'
import { schemaErrors } from './validate.js'

const DAY = 86_400_000
const engines: BulkEngine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()))
})

function setup(opts: { credits?: number; mode?: 'live' | 'test'; concurrency?: number; store?: BulkStore; onCompleted?: (j: BulkJob) => void; maxInputs?: number } = {}) {
  const fake = createFakeCheck()
  const { env, clock, ledger } = createFakeEnv({ ...(opts.credits !== undefined ? { credits: opts.credits } : {}), ...(opts.mode ? { mode: opts.mode } : {}) })
  const checks: BulkChecks = { phone: fake.def as CheckDefinition<any, any, any> }
  const engine = createBulkEngineFor(checks, env, {
    ...(opts.concurrency ? { concurrency: opts.concurrency } : {}),
    ...(opts.store ? { store: opts.store } : {}),
    ...(opts.onCompleted ? { onCompleted: opts.onCompleted } : {}),
    ...(opts.maxInputs ? { maxInputs: opts.maxInputs } : {}),
  })
  engines.push(engine)
  return { fake, env, clock, ledger, engine, checks }
}

async function waitUntil(cond: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('waitUntil: timed out')
    await new Promise((r) => setTimeout(r, 5))
  }
}

async function allRows(engine: BulkEngine, id: string, action: 'approve' | 'verify' | 'review' | 'block' | null = null, limit = 100) {
  const out: BulkResultRow[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const page = await engine.results(id, { cursor, limit, action })
    expect(schemaErrors(BulkResultsPageSchema, page)).toEqual([])
    expect(page.data.length).toBeLessThanOrEqual(limit)
    out.push(...page.data)
    cursor = page.next_cursor
    pages++
  } while (cursor !== null)
  return { rows: out, pages }
}

async function rejects(p: Promise<unknown>, code: string, status?: number) {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  )
  expect(e).toBeInstanceOf(RiskcheckError)
  expect((e as RiskcheckError).code).toBe(code)
  if (status !== undefined) expect((e as RiskcheckError).status).toBe(status)
}

describe('folding and billing', () => {
  const INPUTS = ['ok-1', 'OK-1 ', ' ', '', 'voip-2', 'invalid-3', 'bad-4', 'bad-4', 'partial-5', 'throw-6', 'review-7', 'ok-1']

  it('folds duplicates and blanks, reserves one credit per unique runnable input and refunds the unused ones', async () => {
    const { engine, ledger, fake } = setup({ credits: 100 })
    const job = await engine.create({ type: 'phone', inputs: INPUTS, name: 'mixed' })
    expect(schemaErrors(BulkJobSchema, job)).toEqual([])
    expect(job.status).toBe('queued')
    expect(job.total_rows).toBe(12)
    expect(job.unique_inputs).toBe(7) // ok-1 voip-2 invalid-3 bad-4 partial-5 throw-6 review-7
    expect(job.results.skipped).toBe(5) // 2 blanks, 2 repeats of ok-1, 1 repeat of bad-4
    expect(job.results.errors).toBe(1) // bad-4 cannot be looked up: an error row from the start
    expect(job.processed).toBe(1)
    expect(await ledger.balance()).toBe(94) // 6 runnable unique inputs reserved

    const done = await engine.waitFor(job.id)
    expect(schemaErrors(BulkJobSchema, done)).toEqual([])
    expect(done.status).toBe('completed')
    expect(done.completed_at).toBe('2026-11-22T10:00:00.000Z')
    expect(done.processed).toBe(7)
    // billed: ok 1, voip 1, partial 1 (a valid number), review 1; invalid number free, thrown row free
    expect(done.credits_used).toBe(4)
    expect(await ledger.balance()).toBe(96)
    expect(done.results).toEqual({ approve: 2, verify: 1, review: 1, block: 1, errors: 2, skipped: 5, cache_hits: 0 })
    // each unique input was looked up exactly once
    expect([...fake.calls.entries()].sort()).toEqual(
      ['invalid-3', 'ok-1', 'partial-5', 'review-7', 'throw-6', 'voip-2'].map((k) => [k, 1]),
    )

    const { rows } = await allRows(engine, job.id)
    expect(rows.map((r) => r.input)).toEqual(['ok-1', 'voip-2', 'invalid-3', 'bad-4', 'partial-5', 'throw-6', 'review-7'])
    for (const r of rows) expect(schemaErrors(BulkResultRowSchema, r)).toEqual([])
    const by = Object.fromEntries(rows.map((r) => [r.input, r]))
    expect(by['ok-1']).toMatchObject({ action: 'approve', status: 'valid', risk_score: 0, credits_used: 1, cache_hit: false, error: null, factors: [] })
    expect(by['ok-1']!.details).toMatchObject({ e164: '+14', valid: true })
    expect(by['voip-2']).toMatchObject({ action: 'verify', status: 'risky', risk_score: 40, credits_used: 1, factors: ['phone_voip'] })
    expect(by['invalid-3']).toMatchObject({ action: 'block', status: 'invalid', credits_used: 0 })
    expect(by['bad-4']).toMatchObject({ action: null, status: null, risk_score: null, credits_used: 0, factors: null, details: {} })
    expect(by['bad-4']!.error).toMatch(/^INVALID_INPUT: /)
    expect(by['partial-5']).toMatchObject({ action: 'approve', status: 'unknown', credits_used: 1, error: null })
    // An unexpected exception's message is internal (host names, stack details): the row says only that it failed.
    expect(by['throw-6']).toMatchObject({ action: null, credits_used: 0, error: 'INTERNAL_ERROR: The input could not be checked (internal error); retry the job later.' })
    expect(by['throw-6']!.error).not.toContain('socket hang up')
    expect(by['review-7']).toMatchObject({ action: 'review', risk_score: 65 })
  })

  it('serves repeats of earlier lookups from the cache free of charge (partial answers, and free ones offline, are not cached)', async () => {
    const { engine, ledger } = setup({ credits: 100 })
    await engine.waitFor((await engine.create({ type: 'phone', inputs: INPUTS })).id)
    expect(await ledger.balance()).toBe(96)
    const second = await engine.waitFor((await engine.create({ type: 'phone', inputs: INPUTS })).id)
    // ok, voip, review; the invalid row is free and (offline) not stored: it runs again, free again
    expect(second.results.cache_hits).toBe(3)
    expect(second.credits_used).toBe(1) // the partial row ran again
    expect(await ledger.balance()).toBe(95)
    const { rows } = await allRows(engine, second.id)
    expect(rows.filter((r) => r.cache_hit).map((r) => r.input)).toEqual(['ok-1', 'voip-2', 'review-7'])
    expect(rows.find((r) => r.input === 'invalid-3')).toMatchObject({ cache_hit: false, credits_used: 0 })
    expect(rows.filter((r) => r.cache_hit).every((r) => r.credits_used === 0)).toBe(true)
  })

  it('test mode reserves and charges nothing', async () => {
    const { engine, ledger } = setup({ credits: 3, mode: 'test' })
    const job = await engine.create({ type: 'phone', inputs: INPUTS })
    expect(await ledger.balance()).toBe(3)
    const done = await engine.waitFor(job.id)
    expect(done.credits_used).toBe(0)
    expect(done.processed).toBe(7)
    expect(await ledger.balance()).toBe(3)
  })

  it('fails with INSUFFICIENT_CREDITS and starts nothing when the balance is short', async () => {
    const { engine, ledger, fake } = setup({ credits: 2 })
    await rejects(engine.create({ type: 'phone', inputs: ['ok-1', 'ok-2', 'ok-3'] }), 'INSUFFICIENT_CREDITS', 402)
    expect(await ledger.balance()).toBe(2)
    expect((await engine.list()).data).toEqual([])
    await settle()
    expect(fake.calls.size).toBe(0)
    // folded and invalid inputs are not counted: 2 unique runnable inputs fit
    const job = await engine.create({ type: 'phone', inputs: ['ok-1', 'OK-1', '', 'bad-x', 'ok-2'] })
    expect(await ledger.balance()).toBe(0)
    expect((await engine.waitFor(job.id)).credits_used).toBe(2)
  })

  it('a job of only invalid inputs completes at once and costs nothing', async () => {
    const { engine, ledger } = setup({ credits: 0 })
    const done = await engine.waitFor((await engine.create({ type: 'phone', inputs: ['bad-1', 'bad-2', ' '] })).id)
    expect(done).toMatchObject({ status: 'completed', unique_inputs: 2, processed: 2, credits_used: 0 })
    expect(done.results).toMatchObject({ errors: 2, skipped: 1 })
    expect(await ledger.balance()).toBe(0)
  })
})

describe('request validation', () => {
  it('rejects bad parameters with the documented error codes', async () => {
    const { engine } = setup({ maxInputs: 10 })
    await rejects(engine.create({ type: 'phone', inputs: [] }), 'INVALID_INPUT', 422)
    await rejects(engine.create({ type: 'phone', inputs: ['', ' ', '\t'] }), 'INVALID_INPUT', 422) // blank lines only: as empty
    await rejects(engine.create({ type: 'phone', inputs: Array.from({ length: 11 }, (_, i) => `ok-${i}`) }), 'INPUT_LIMIT_EXCEEDED', 413)
    await rejects(engine.create({ type: 'fax' as 'phone', inputs: ['ok-1'] }), 'INVALID_REQUEST', 400)
    await rejects(engine.create({ type: 'email', inputs: ['a@b.c'] }), 'INVALID_REQUEST') // no check given for email here
    await rejects(engine.create({ type: 'phone', inputs: ['ok-1'], name: 'x'.repeat(201) }), 'INVALID_REQUEST')
    await rejects(engine.create({ type: 'phone', inputs: ['ok-1'], country: 'USA' }), 'INVALID_REQUEST')
    await rejects(engine.create({ type: 'phone', inputs: ['ok-1', 5 as unknown as string] }), 'INVALID_REQUEST')
    await rejects(engine.create({ type: 'phone', inputs: 'ok-1' as unknown as string[] }), 'INVALID_REQUEST')
    await rejects(engine.create({ type: 'phone' } as never), 'MISSING_FIELD')
    await rejects(engine.create({ inputs: ['x'] } as never), 'MISSING_FIELD')
    await rejects(engine.create({ type: 'phone', inputs: ['ok-1'], colour: 'red' } as never), 'INVALID_REQUEST')
    const ok = await engine.create({ type: 'phone', inputs: ['ok-1'], name: 'x'.repeat(200), country: 'gb' })
    expect(ok.name).toHaveLength(200)
  })

  it('rejects more than 100,000 inputs by default', async () => {
    const { engine } = setup()
    await rejects(engine.create({ type: 'phone', inputs: new Array<string>(100_001).fill('ok-1') }), 'INPUT_LIMIT_EXCEEDED', 413)
  })

  it('rejects bad engine options with a TypeError', () => {
    const { env } = createFakeEnv()
    expect(() => createBulkEngineFor({}, env, { concurrency: 0 })).toThrow(TypeError)
    expect(() => createBulkEngineFor({}, env, { maxInputs: 100_001 })).toThrow(/maxInputs/)
    expect(() => createBulkEngineFor({}, env, { store: {} as BulkStore })).toThrow(/store/)
  })
})

describe('states and cancellation', () => {
  it('goes queued → running → completed with live counts and 7-day expiry', async () => {
    const completed: BulkJob[] = []
    const { engine, fake, clock } = setup({ onCompleted: (j) => completed.push(j) })
    const job = await engine.create({ type: 'phone', inputs: ['ok-1', 'slow-2', 'ok-3'] })
    expect(job.status).toBe('queued')
    expect(job.created_at).toBe('2026-11-22T10:00:00.000Z')
    expect(job.expires_at).toBe('2026-11-29T10:00:00.000Z')
    await waitUntil(async () => (await engine.get(job.id)).processed === 2)
    const running = await engine.get(job.id)
    expect(running.status).toBe('running')
    expect(running.completed_at).toBeNull()
    clock.advance(90_000)
    fake.gate.open()
    const done = await engine.waitFor(job.id)
    expect(done.status).toBe('completed')
    expect(done.completed_at).toBe('2026-11-22T10:01:30.000Z')
    expect(await engine.get(job.id)).toEqual(done)
    expect(completed).toEqual([done])
  })

  it('cancel stops inputs not yet reached, keeps and charges the rows done, refunds the rest', async () => {
    const completed: BulkJob[] = []
    const { engine, fake, ledger } = setup({ credits: 10, concurrency: 2, onCompleted: (j) => completed.push(j) })
    const job = await engine.create({ type: 'phone', inputs: ['ok-a', 'slow-1', 'slow-2', 'ok-b', 'ok-c', 'invalid-d'] })
    expect(await ledger.balance()).toBe(4)
    await waitUntil(() => fake.calls.has('slow-1') && fake.calls.has('slow-2'))
    await waitUntil(async () => (await engine.get(job.id)).processed === 1)
    const cancelled = await engine.cancel(job.id)
    expect(schemaErrors(BulkJobSchema, cancelled)).toEqual([])
    expect(cancelled).toMatchObject({ status: 'cancelled', processed: 1, credits_used: 1, unique_inputs: 6 })
    expect(cancelled.completed_at).not.toBeNull()
    expect(await ledger.balance()).toBe(9) // 6 reserved, 1 used, 5 refunded
    // the slow rows finish after the cancel: discarded, not charged, and nothing else starts
    fake.gate.open()
    await new Promise((r) => setTimeout(r, 300)) // past the engine's write interval
    expect(fake.calls.has('ok-b')).toBe(false)
    expect(await engine.get(job.id)).toEqual(cancelled)
    expect(await ledger.balance()).toBe(9)
    const { rows } = await allRows(engine, job.id)
    expect(rows.map((r) => r.input)).toEqual(['ok-a'])
    // cancelling again returns the job as it is; cancelled jobs do not fire the completed callback
    expect(await engine.cancel(job.id)).toEqual(cancelled)
    expect(completed).toEqual([])
  })

  it('cancel of a queued job refunds everything', async () => {
    const { engine, ledger, fake } = setup({ credits: 5 })
    const job = await engine.create({ type: 'phone', inputs: ['ok-1', 'ok-2'] })
    const cancelled = await engine.cancel(job.id) // before the runner's first tick
    expect(cancelled).toMatchObject({ status: 'cancelled', processed: 0, credits_used: 0 })
    await settle(10)
    expect(fake.calls.size).toBe(0)
    expect(await ledger.balance()).toBe(5)
  })

  it('close() cancels running jobs of the in-memory store and refunds them', async () => {
    const { engine, ledger, fake } = setup({ credits: 5 })
    const job = await engine.create({ type: 'phone', inputs: ['slow-1', 'slow-2'] })
    await waitUntil(() => fake.calls.size === 2)
    await engine.close()
    expect(await ledger.balance()).toBe(5)
    await expect(engine.get(job.id)).rejects.toThrow(/closed/)
    fake.gate.open()
  })
})

describe('paging', () => {
  const kinds = ['ok', 'voip', 'review', 'invalid', 'ok', 'bad'] as const
  const inputs = Array.from({ length: 250 }, (_, i) => `${kinds[i % kinds.length]}-${i}`)
  const expectedAction = (i: number) => ({ ok: 'approve', voip: 'verify', review: 'review', invalid: 'block', bad: null })[kinds[i % kinds.length]!]

  it('pages all rows in input order with cursors, and filters by action across page boundaries', async () => {
    const { engine } = setup()
    const job = await engine.create({ type: 'phone', inputs })
    await engine.waitFor(job.id)
    const first = await engine.results(job.id)
    expect(first.data).toHaveLength(100) // default limit
    const all = await allRows(engine, job.id, null, 100)
    expect(all.pages).toBe(3)
    expect(all.rows.map((r) => r.input)).toEqual(inputs)
    expect(all.rows.map((r) => r.action)).toEqual(inputs.map((_, i) => expectedAction(i)))

    for (const action of ['approve', 'verify', 'review', 'block'] as const) {
      const want = inputs.filter((_, i) => expectedAction(i) === action)
      const got = await allRows(engine, job.id, action, 7)
      expect(got.rows.map((r) => r.input)).toEqual(want)
      expect(got.rows.every((r) => r.action === action)).toBe(true)
      expect(got.pages).toBe(Math.max(1, Math.ceil(want.length / 7)))
    }
    // an exact-size last page: 1000 limit returns all and no cursor
    const big = await engine.results(job.id, { limit: 1000 })
    expect(big.data).toHaveLength(250)
    expect(big.next_cursor).toBeNull()
  })

  it('rejects bad paging parameters and foreign cursors', async () => {
    const { engine } = setup()
    const a = await engine.create({ type: 'phone', inputs })
    const b = await engine.create({ type: 'phone', inputs: ['ok-1'] })
    await engine.waitFor(a.id)
    const page = await engine.results(a.id, { limit: 10, action: 'approve' })
    await rejects(engine.results(a.id, { limit: 0 }), 'INVALID_REQUEST')
    await rejects(engine.results(a.id, { limit: 1001 }), 'INVALID_REQUEST')
    await rejects(engine.results(a.id, { action: 'maybe' as 'approve' }), 'INVALID_REQUEST')
    await rejects(engine.results(a.id, { cursor: 'garbage!' }), 'INVALID_REQUEST')
    await rejects(engine.results(a.id, { cursor: page.next_cursor, action: 'block' }), 'INVALID_REQUEST')
    await rejects(engine.results(b.id, { cursor: page.next_cursor, action: 'approve' }), 'INVALID_REQUEST')
    await rejects(engine.results('bulk_nope'), 'NOT_FOUND', 404)
    await rejects(engine.get('bulk_nope'), 'NOT_FOUND', 404)
    await rejects(engine.cancel('bulk_nope'), 'NOT_FOUND', 404)
    await rejects(engine.retry('bulk_nope'), 'NOT_FOUND', 404)
  })

  it('while a job runs, returns rows up to the first unfinished one and a cursor to continue there', async () => {
    const { engine, fake } = setup({ concurrency: 4 })
    const job = await engine.create({ type: 'phone', inputs: ['ok-0', 'slow-1', 'ok-2', 'voip-3'] })
    await waitUntil(async () => (await engine.results(job.id)).data.length === 1)
    const page = await engine.results(job.id)
    expect(page.data.map((r) => r.input)).toEqual(['ok-0'])
    expect(page.next_cursor).not.toBeNull()
    const again = await engine.results(job.id, { cursor: page.next_cursor })
    expect(again.data).toEqual([])
    expect(again.next_cursor).toBe(page.next_cursor)
    fake.gate.open()
    await engine.waitFor(job.id)
    const rest = await engine.results(job.id, { cursor: page.next_cursor })
    expect(rest.data.map((r) => r.input)).toEqual(['slow-1', 'ok-2', 'voip-3'])
    expect(rest.next_cursor).toBeNull()
  })
})

describe('retry', () => {
  it('makes a new job of the rows that failed for temporary reasons only', async () => {
    const { engine, fake, ledger } = setup({ credits: 20 })
    const job = await engine.create({
      type: 'phone',
      inputs: ['partial-1', 'throw-2', 'reject-3', 'bad-4', 'ok-5', 'flaky-6', 'invalid-7', 'FLAKY-6'],
      name: 'first',
      country: 'us',
    })
    await rejects(engine.retry(job.id), 'INVALID_REQUEST') // still running
    const done = await engine.waitFor(job.id)
    expect(done.results.errors).toBe(3) // throw, reject, bad
    const before = await engine.get(job.id)
    fake.flaky.fixed = true
    const retry = await engine.retry(job.id)
    expect(retry.id).not.toBe(job.id)
    expect(retry.name).toBe('Retry of first')
    expect(retry.total_rows).toBe(3)
    expect(retry.unique_inputs).toBe(3)
    const retried = await engine.waitFor(retry.id)
    const { rows } = await allRows(engine, retry.id)
    expect(rows.map((r) => r.input)).toEqual(['partial-1', 'throw-2', 'flaky-6'])
    expect(rows.find((r) => r.input === 'flaky-6')).toMatchObject({ status: 'valid', action: 'approve', error: null })
    expect(retried.credits_used).toBe(2) // partial-1 and flaky-6 billed; throw-2 failed again
    expect(await engine.get(job.id)).toEqual(before) // the old job is unchanged
    // reject-3 (a request error) and bad-4 (invalid input) are never retried
    expect(fake.calls.get('reject-3')).toBe(1)
    // nothing temporary left in a clean job
    const clean = await engine.waitFor((await engine.create({ type: 'phone', inputs: ['ok-1', 'bad-2'] })).id)
    await rejects(engine.retry(clean.id), 'INVALID_REQUEST')
    expect(await ledger.balance()).toBe(20 - done.credits_used - retried.credits_used - clean.credits_used)
  })
})

describe('expiry and the job list', () => {
  it('an expired job and its results are gone (NOT_FOUND) after 7 days', async () => {
    const { engine, clock } = setup()
    const job = await engine.create({ type: 'phone', inputs: ['ok-1'] })
    await engine.waitFor(job.id)
    clock.advance(7 * DAY - 1)
    expect((await engine.results(job.id)).data).toHaveLength(1)
    expect((await engine.list()).data.map((j) => j.id)).toEqual([job.id])
    clock.advance(1)
    await rejects(engine.get(job.id), 'NOT_FOUND')
    await rejects(engine.results(job.id), 'NOT_FOUND')
    await rejects(engine.resultsCsv(job.id), 'NOT_FOUND')
    await rejects(engine.retry(job.id), 'NOT_FOUND')
    expect((await engine.list()).data).toEqual([])
  })

  it('lists jobs newest first with a cursor', async () => {
    const { engine, clock } = setup()
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      ids.push((await engine.create({ type: 'phone', inputs: [`ok-${i}`], name: `job ${i}` })).id)
      if (i % 2 === 0) clock.advance(1000) // some share a timestamp: order still follows creation
    }
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page = await engine.list({ limit: 2, cursor })
      expect(page.data.length).toBeLessThanOrEqual(2)
      for (const j of page.data) expect(schemaErrors(BulkJobSchema, j)).toEqual([])
      seen.push(...page.data.map((j) => j.id))
      cursor = page.next_cursor
    } while (cursor)
    expect(seen).toEqual([...ids].reverse())
    expect((await engine.list()).data).toHaveLength(5) // default limit 20
    await rejects(engine.list({ limit: 101 }), 'INVALID_REQUEST')
    await rejects(engine.list({ limit: 0 }), 'INVALID_REQUEST')
    await rejects(engine.list({ cursor: 'nope' }), 'INVALID_REQUEST')
  })
})

describe('throughput controls', () => {
  it('bounds lookups in flight globally, across jobs', async () => {
    const { engine, fake } = setup({ concurrency: 5 })
    const a = await engine.create({ type: 'phone', inputs: Array.from({ length: 30 }, (_, i) => `slow-a${i}`) })
    const b = await engine.create({ type: 'phone', inputs: Array.from({ length: 30 }, (_, i) => `slow-b${i}`) })
    await waitUntil(() => fake.calls.size === 5)
    await settle(20)
    expect(fake.calls.size).toBe(5)
    fake.gate.open()
    await engine.waitFor(a.id)
    await engine.waitFor(b.id)
    expect(fake.maxInFlight).toBe(5)
    expect(fake.calls.size).toBe(60)
  })

  it('runs emails grouped by domain, at most maxConnectionsPerHost at once per domain, output in input order', async () => {
    const order: string[] = []
    const perDomain = new Map<string, number>()
    let maxPerDomain = 0
    const emailDef: CheckDefinition<string, object, Record<string, unknown>> = {
      type: 'email',
      prepare: (input) => ({ input: String(input).trim().toLowerCase(), cacheKey: String(input).trim().toLowerCase() }),
      async run(_ctx, input) {
        const domain = input.split('@')[1]!
        order.push(domain)
        perDomain.set(domain, (perDomain.get(domain) ?? 0) + 1)
        maxPerDomain = Math.max(maxPerDomain, perDomain.get(domain)!)
        await new Promise((r) => setTimeout(r, 2))
        perDomain.set(domain, perDomain.get(domain)! - 1)
        return { details: { smtp_check: 'deliverable' }, factors: [], partial: false, dataSources: ['dns', 'smtp'] } // a lookup that consulted nothing is free
      },
      test: () => {
        throw new Error('not used')
      },
      testInputs: [],
      cli: { command: 'email', summary: '' },
    }
    const { env } = createFakeEnv({ credits: 100 })
    env.ctx.offline = false // "live" SMTP: the per-domain width applies (the fake check touches no network)
    const engine = createBulkEngineFor({ email: emailDef }, env, { concurrency: 8 })
    engines.push(engine)
    const inputs = Array.from({ length: 30 }, (_, i) => `user${i}@${['a.test', 'b.test', 'c.test'][i % 3]}`)
    const job = await engine.create({ type: 'email', inputs })
    const done = await engine.waitFor(job.id)
    expect(done.credits_used).toBe(30)
    expect(maxPerDomain).toBeLessThanOrEqual(2)
    // all three domains run side by side, each in its own lanes; the first calls start one domain's lanes first
    expect(order.slice(0, 2)).toEqual(['a.test', 'a.test'])
    const { rows } = await allRows(engine, job.id)
    expect(rows.map((r) => r.input)).toEqual(inputs)
  })
})

describe('robustness', () => {
  it('a store that fails mid-job fails the job, refunds the unused credits and reports it', async () => {
    const completed: BulkJob[] = []
    const inner = createMemoryBulkStore()
    const store: BulkStore = {
      ...inner,
      persistent: false,
      insertJob: (r, rows) => inner.insertJob(r, rows),
      commitRows: () => {
        throw new Error('disk full')
      },
    }
    for (const k of ['getJob', 'listJobs', 'listUnfinishedJobs', 'updateJob', 'pendingRows', 'listRows', 'listRetryableInputs', 'deleteExpired'] as const) {
      ;(store as unknown as Record<string, unknown>)[k] = (inner[k] as (...a: unknown[]) => unknown).bind(inner)
    }
    const { engine, ledger } = setup({ credits: 10, store, onCompleted: (j) => completed.push(j) })
    const job = await engine.create({ type: 'phone', inputs: ['ok-1', 'ok-2', 'ok-3'] })
    const done = await engine.waitFor(job.id)
    expect(done.status).toBe('failed')
    expect(completed.map((j) => j.status)).toEqual(['failed'])
    expect(await ledger.balance()).toBe(10 - done.credits_used)
    expect((await engine.get(job.id)).status).toBe('failed')
  })

  it('never starves the event loop, even when every lookup answers synchronously', async () => {
    const syncDef: CheckDefinition<string, object, Record<string, unknown>> = {
      type: 'ip',
      prepare: (input) => ({ input: String(input), cacheKey: String(input) }),
      run: () => {
        throw new Error('not used')
      },
      test: () => ({ details: {}, factors: [], partial: false, dataSources: [] }),
      testInputs: [],
      cli: { command: 'ip', summary: '' },
    }
    const { env } = createFakeEnv({ mode: 'test' })
    const engine = createBulkEngineFor({ ip: syncDef }, env)
    engines.push(engine)
    const job = await engine.create({ type: 'ip', inputs: Array.from({ length: 30_000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`) })
    // Event-loop turns other work got while the rows ran, counted by a callback that re-queues itself each turn. An
    // engine that never yielded would finish inside its first turn, before the counter ever ran.
    let turns = 0
    let running = true
    const spin = () => {
      if (!running) return
      turns++
      setImmediate(spin)
    }
    setImmediate(spin)
    const done = await engine.waitFor(job.id)
    running = false
    expect(done.processed).toBe(30_000)
    expect(turns).toBeGreaterThanOrEqual(2)
  })
})

describe('a persistent store', () => {
  it('resumes a running job after a restart: only pending rows run again, billing stays exact', async () => {
    const inner = createMemoryBulkStore()
    const store: BulkStore = Object.assign(Object.create(null), inner, { persistent: true })
    for (const k of Object.keys(inner) as Array<keyof BulkStore>) {
      const v = inner[k]
      if (typeof v === 'function') (store as unknown as Record<string, unknown>)[k] = (v as (...a: unknown[]) => unknown).bind(inner)
    }
    const ledger = createMemoryLedger(10)
    const first = createFakeCheck()
    const { env } = createFakeEnv({ credits: ledger })
    const engine1 = createBulkEngineFor({ phone: first.def as CheckDefinition<any, any, any> }, env, { store, concurrency: 2 })
    const job = await engine1.create({ type: 'phone', inputs: ['ok-1', 'invalid-2', 'slow-3', 'slow-4', 'ok-5', 'bad-6'] })
    expect(await ledger.balance()).toBe(5)
    await waitUntil(() => first.calls.has('slow-3') && first.calls.has('slow-4'))
    await engine1.close() // "crash": the job stays running in the store
    expect((await store.getJob(job.id))!.job.status).toBe('running')
    expect((await store.pendingRows(job.id)).map((r) => r.input)).toEqual(['slow-3', 'slow-4', 'ok-5'])

    const second = createFakeCheck()
    second.gate.open()
    const engine2 = createBulkEngineFor({ phone: second.def as CheckDefinition<any, any, any> }, env, { store })
    engines.push(engine2)
    const done = await engine2.waitFor(job.id)
    expect(done.status).toBe('completed')
    expect([...second.calls.keys()].sort()).toEqual(['ok-5', 'slow-3', 'slow-4'])
    expect(done.processed).toBe(6)
    expect(done.credits_used).toBe(4) // ok-1, slow-3, slow-4, ok-5
    expect(await ledger.balance()).toBe(6)
    const { rows } = await allRows(engine2, job.id)
    expect(rows.map((r) => r.input)).toEqual(['ok-1', 'invalid-2', 'slow-3', 'slow-4', 'ok-5', 'bad-6'])
    first.gate.open()
  })
})

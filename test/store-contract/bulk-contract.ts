/**
 * The contract of {@link BulkServiceStorage} (src/server/store/contracts/bulk.ts), run by ./contracts.test.ts on every
 * engine of ./engines.ts: jobs and rows per owner, the job and its credit reservation written in one transaction, the
 * reservation closed with the final status in one transaction (never twice), the sweep, and a real bulk engine run over
 * it.
 */
import { expect, it } from 'vitest'
import { createBulkEngineFor } from '../../src/bulk/engine.js'
import type { BulkJobRecord, BulkRowRecord, MaybePromise } from '../../src/bulk/types.js'
import type { BulkJob } from '../../src/schema.js'
import { createFakeCheck, createFakeEnv } from '../bulk-fakes.js'
import { eventsOfType, NOW, type OpenHarness, type ServiceHarness } from './service-harness.js'

let n = 0
const DAY = 86_400_000

/** A queued phone job of `rows` unique inputs, created at `createdAt`. */
export function jobRecord(rows: number, reserved: number, createdAt = NOW): Omit<BulkJobRecord, 'seq'> {
  const job: BulkJob = {
    id: `bulk_contract_${++n}_${Math.random().toString(16).slice(2, 10)}`,
    name: 'phone bulk job',
    type: 'phone',
    status: 'queued',
    total_rows: rows,
    unique_inputs: rows,
    processed: 0,
    credits_used: 0,
    results: { approve: 0, verify: 0, review: 0, block: 0, errors: 0, skipped: 0, cache_hits: 0 },
    created_at: new Date(createdAt).toISOString(),
    completed_at: null,
    expires_at: new Date(createdAt + 7 * DAY).toISOString(),
  }
  return { job, reserved, options: { country: null, smtp: null } }
}

/** `count` pending rows `in-0`, `in-1`, … */
export function* pendingRows(count: number): Generator<BulkRowRecord> {
  for (let i = 0; i < count; i++) {
    yield { index: i, input: `in-${i}`, state: 'pending', retryable: false, action: null, status: null, reason: null, risk_score: null, credits_used: 0, cache_hit: false, error: null, factors: null, details: {} }
  }
}

const doneRow = (index: number, action: 'approve' | 'block', retryable = false): BulkRowRecord => ({
  index,
  input: `in-${index}`,
  state: 'done',
  retryable,
  action,
  status: 'ok',
  reason: null,
  risk_score: action === 'block' ? 90 : 5,
  credits_used: 1,
  cache_hit: false,
  error: null,
  factors: action === 'block' ? ['phone_voip'] : [],
  details: { e164: `+1555000${index}`, valid: true },
})

/** Raises `crash` once `v` (a credit operation's answer, synchronous or not) is in. */
const crashAfter = (v: MaybePromise<boolean>, crash: Error): MaybePromise<boolean> => {
  if (v instanceof Promise) return v.then(() => Promise.reject(crash))
  throw crash
}

const final = (job: BulkJob, status: 'completed' | 'cancelled', creditsUsed: number): BulkJob => ({
  ...job,
  status,
  credits_used: creditsUsed,
  completed_at: new Date(NOW).toISOString(),
})

/** Registers the bulk contract cases; `open` gives a fresh database per case. */
export function bulkStorageContract(open: OpenHarness): void {
  const withHarness = (fn: (h: ServiceHarness) => Promise<void>) => async () => {
    const h = await open()
    try {
      await fn(h)
    } finally {
      await h.done()
    }
  }

  it(
    'a charged insert writes the job, its rows and its reservation together; a short balance writes nothing',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 10, purchased: 5 })
      const store = h.bulk.jobStore({ orgId: org, mode: 'live' })
      const ledger = h.bulk.ledger(org, () => NOW)
      const rec = jobRecord(12, 12)
      const stored = await store.insertJobCharged!(rec, pendingRows(12), (tx) => ledger.reserveFor!(rec.job.id, 12, tx))
      expect(stored).toMatchObject({ job: { id: rec.job.id }, reserved: 12 })
      expect(await h.balance(org)).toBe(3)
      expect(await h.stored()).toMatchObject({ reservations: 1, rows: 12 })

      const big = jobRecord(4, 4)
      expect(await store.insertJobCharged!(big, pendingRows(4), (tx) => ledger.reserveFor!(big.job.id, 4, tx))).toBeNull()
      expect(await store.getJob(big.job.id)).toBeUndefined()
      expect(await h.balance(org)).toBe(3)
      expect(await h.stored()).toMatchObject({ rows: 12, reservations: 1 })
    }),
  )

  it(
    "a reservation after the org's period ended renews it first (credits.added) and takes from the new allowance",
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 0, purchased: 2 })
      await h.endPeriod(org, 100)
      const ledger = h.bulk.ledger(org, () => NOW)
      const rec = jobRecord(30, 30)
      expect(await h.bulk.jobStore({ orgId: org, mode: 'live' }).insertJobCharged!(rec, pendingRows(30), (tx) => ledger.reserveFor!(rec.job.id, 30, tx))).not.toBeNull()
      expect(await h.balance(org)).toBe(100 + 2 - 30)
      expect(eventsOfType(await h.stored(), 'credits.added')).toBe(1)
      expect((await h.usage(org)).periodEnd).toBeGreaterThan(NOW)
    }),
  )

  it(
    'a crash between the job insert and the reservation, or while the rows are written, leaves neither job nor credits taken',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 50, purchased: 0 })
      const store = h.bulk.jobStore({ orgId: org, mode: 'live' })
      const ledger = h.bulk.ledger(org, () => NOW)
      const crash = new Error('the process died here')
      const first = jobRecord(6, 6)
      await expect(Promise.resolve().then(() => store.insertJobCharged!(first, pendingRows(6), (tx) => crashAfter(ledger.reserveFor!(first.job.id, 6, tx), crash)))).rejects.toBe(crash)
      function* dying(): Generator<BulkRowRecord> {
        let i = 0
        for (const row of pendingRows(6)) {
          if (i++ === 3) throw crash
          yield row
        }
      }
      const second = jobRecord(6, 6)
      await expect(Promise.resolve().then(() => store.insertJobCharged!(second, dying(), (tx) => ledger.reserveFor!(second.job.id, 6, tx)))).rejects.toBe(crash)
      expect(await h.balance(org)).toBe(50)
      expect(await h.stored()).toMatchObject({ jobs: 0, rows: 0, reservations: 0 })
    }),
  )

  it(
    "finishing refunds the unused credits once, with the final status; a second finish (another process, a resumed job) refunds nothing; another job's reservation is untouched",
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 20, purchased: 10 })
      const store = h.bulk.jobStore({ orgId: org, mode: 'live' })
      const ledger = h.bulk.ledger(org, () => NOW)
      expect(await ledger.reserveFor!('bulk_other', 7)).toBe(true)
      const rec = jobRecord(15, 15)
      await store.insertJobCharged!(rec, pendingRows(15), (tx) => ledger.reserveFor!(rec.job.id, 15, tx))
      expect(await h.balance(org)).toBe(8)
      const done = final(rec.job, 'completed', 10)
      await store.finishJob!(rec.job.id, done, (tx) => ledger.settleFor!(rec.job.id, 5, tx))
      expect(await h.balance(org)).toBe(13)
      await store.finishJob!(rec.job.id, done, (tx) => ledger.settleFor!(rec.job.id, 5, tx))
      await ledger.settleFor!(rec.job.id, 5) // the reservation is closed: nothing to give back
      expect(await h.balance(org)).toBe(13)
      expect((await store.getJob(rec.job.id))!.job.status).toBe('completed')
      expect((await h.stored()).reservations).toBe(1)
    }),
  )

  it(
    'a finish whose write fails rolls its refund back; finishing again refunds once',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 30, purchased: 0 })
      const store = h.bulk.jobStore({ orgId: org, mode: 'live' })
      const ledger = h.bulk.ledger(org, () => NOW)
      const rec = jobRecord(10, 10)
      await store.insertJobCharged!(rec, pendingRows(10), (tx) => ledger.reserveFor!(rec.job.id, 10, tx))
      const crash = new Error('crash at the final status')
      const settleThenCrash = (tx: unknown) => {
        const r = ledger.settleFor!(rec.job.id, 4, tx)
        if (r instanceof Promise) return r.then(() => Promise.reject(crash))
        throw crash
      }
      await expect(Promise.resolve().then(() => store.finishJob!(rec.job.id, final(rec.job, 'completed', 6), settleThenCrash))).rejects.toBe(crash)
      expect(await h.balance(org)).toBe(20)
      expect((await store.getJob(rec.job.id))!.job.status).toBe('queued')
      await store.finishJob!(rec.job.id, final(rec.job, 'completed', 6), (tx) => ledger.settleFor!(rec.job.id, 4, tx))
      expect(await h.balance(org)).toBe(24)
      expect((await h.stored()).reservations).toBe(0)
    }),
  )

  it(
    "a finished job's usage and event (onFinished) commit with its final status, once; a crash there rolls them back with it",
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 30, purchased: 0 })
      let crash: Error | null = new Error('crash after the usage was counted')
      let calls = 0
      const then = (v: MaybePromise<void>, f: () => MaybePromise<void>) => (v instanceof Promise ? v.then(f) : f())
      const store = h.bulk.jobStore({ orgId: org, mode: 'live' }, (job, tx) => {
        calls++
        const event = { id: `evt_done_${job.id}`, type: 'bulk.completed' as const, created: Math.floor(NOW / 1000), api_version: '1' as const, org_id: org, test_mode: false, data: { id: job.id } }
        return then(h.bulk.settleCredits(org, 4, NOW, tx), () =>
          then(h.bulk.insertEvent(event, tx), () => {
            if (crash) throw crash
          }),
        )
      })
      const ledger = h.bulk.ledger(org, () => NOW)
      const rec = jobRecord(6, 6)
      await store.insertJobCharged!(rec, pendingRows(6), (tx) => ledger.reserveFor!(rec.job.id, 6, tx))
      const done = final(rec.job, 'completed', 4)
      await expect(Promise.resolve().then(() => store.finishJob!(rec.job.id, done, (tx) => ledger.settleFor!(rec.job.id, 2, tx)))).rejects.toBe(crash)
      const state = async () => [(await h.usage(org)).periodLookups, eventsOfType(await h.stored(), 'bulk.completed'), await h.balance(org)]
      expect(await state()).toEqual([0, 0, 24])
      crash = null
      await store.finishJob!(rec.job.id, done, (tx) => ledger.settleFor!(rec.job.id, 2, tx))
      await store.finishJob!(rec.job.id, done, (tx) => ledger.settleFor!(rec.job.id, 2, tx))
      expect([...(await state()), calls]).toEqual([4, 1, 26, 2])
    }),
  )

  it(
    'rows and counters are committed together and read back by any view of the owner; other owners see nothing',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 100, purchased: 0 })
      const other = await h.createOrg({ subscription: 100, purchased: 0 })
      const owner = { orgId: org, mode: 'live' as const }
      const store = h.bulk.jobStore(owner)
      const rec = jobRecord(5, 0)
      const stored = await store.insertJob(rec, pendingRows(5))
      expect(await store.firstPendingIndex!(rec.job.id)).toBe(0)
      const running = { ...rec.job, status: 'running' as const, processed: 3, credits_used: 3 }
      await store.commitRows(rec.job.id, [doneRow(0, 'approve'), doneRow(1, 'block', true), doneRow(3, 'approve')], running)

      const again = h.bulk.jobStore(owner) // another process's view
      expect((await again.getJob(rec.job.id))!.job).toMatchObject({ status: 'running', processed: 3 })
      expect(await again.pendingRows(rec.job.id)).toEqual([
        { index: 2, input: 'in-2' },
        { index: 4, input: 'in-4' },
      ])
      expect(await again.firstPendingIndex!(rec.job.id)).toBe(2)
      expect(await again.listRows(rec.job.id, { fromIndex: 0, toIndex: null, action: null, limit: 10 })).toEqual([doneRow(0, 'approve'), doneRow(1, 'block', true), doneRow(3, 'approve')])
      expect((await again.listRows(rec.job.id, { fromIndex: 0, toIndex: 2, action: null, limit: 10 })).map((r) => r.index)).toEqual([0, 1])
      expect((await again.listRows(rec.job.id, { fromIndex: 1, toIndex: null, action: 'approve', limit: 10 })).map((r) => r.index)).toEqual([3])
      expect(await again.listRetryableInputs(rec.job.id)).toEqual(['in-1'])
      expect((await again.listUnfinishedJobs()).map((r) => r.job.id)).toEqual([rec.job.id])

      const newer = await store.insertJob(jobRecord(1, 0), pendingRows(1))
      expect(newer.seq).toBeGreaterThan(stored.seq)
      expect((await again.listJobs({ beforeSeq: null, limit: 10 })).map((r) => r.seq)).toEqual([newer.seq, stored.seq])
      expect((await again.listJobs({ beforeSeq: newer.seq, limit: 10 })).map((r) => r.seq)).toEqual([stored.seq])

      const stranger = h.bulk.jobStore({ orgId: other, mode: 'live' })
      const testView = h.bulk.jobStore({ orgId: org, mode: 'test' })
      expect(await stranger.getJob(rec.job.id)).toBeUndefined()
      expect(await testView.getJob(rec.job.id)).toBeUndefined()
      expect(await stranger.listJobs({ beforeSeq: null, limit: 10 })).toEqual([])
      expect(await h.bulk.ownersWithUnfinishedJobs()).toEqual([owner])
      expect(await h.bulk.unfinishedCount()).toBe(2)
    }),
  )

  it(
    'the sweep deletes expired jobs with their rows (every owner); the outbox ignores a repeated event',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      const store = h.bulk.jobStore({ orgId: org, mode: 'test' })
      const old = jobRecord(3, 0, NOW - 8 * DAY)
      const fresh = jobRecord(2, 0)
      await store.insertJob(old, pendingRows(3))
      await store.insertJob(fresh, pendingRows(2))
      expect(await h.bulk.sweepExpired(NOW)).toEqual([old.job.id])
      expect(await h.stored()).toMatchObject({ jobs: 1, rows: 2 })
      expect(await store.deleteExpired(NOW + 7 * DAY)).toEqual([fresh.job.id])
      expect((await h.stored()).rows).toBe(0)

      const event = { id: 'evt_contract_1', type: 'bulk.completed' as const, created: Math.floor(NOW / 1000), api_version: '1' as const, org_id: org, test_mode: false, data: { id: fresh.job.id } }
      await h.bulk.insertEvent(event)
      await h.bulk.insertEvent(event)
      expect((await h.stored()).events.filter((e) => e.id === 'evt_contract_1')).toHaveLength(1)
    }),
  )

  it(
    'the bulk engine runs a job over the storage: every unique input charged once, the rest refunded, the reservation closed',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 40, purchased: 0 })
      const fake = createFakeCheck()
      const { env } = createFakeEnv({ credits: h.bulk.ledger(org, () => NOW), cache: null })
      const engine = createBulkEngineFor({ phone: fake.def } as never, env, { store: h.bulk.jobStore({ orgId: org, mode: 'live' }), concurrency: 4 })
      try {
        const inputs = [...Array.from({ length: 25 }, (_, i) => `ok-${i}`), 'bad-1', 'bad-2', 'ok-0']
        const job = await engine.create({ type: 'phone', inputs })
        expect(await h.balance(org)).toBe(40 - 25)
        const done = await engine.waitFor(job.id)
        expect(done).toMatchObject({ status: 'completed', processed: 27, credits_used: 25, unique_inputs: 27 })
        expect(await h.balance(org)).toBe(15)
        expect(await h.stored()).toMatchObject({ reservations: 0, pendingRows: 0 })
        expect((await engine.results(job.id, { limit: 1000 })).data).toHaveLength(27)
        await expect(engine.create({ type: 'phone', inputs: Array.from({ length: 16 }, (_, i) => `x-${i}`) })).rejects.toMatchObject({ code: 'INSUFFICIENT_CREDITS' })
        expect(await h.balance(org)).toBe(15)
      } finally {
        await engine.close()
      }
    }),
  )
}

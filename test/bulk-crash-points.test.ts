/**
 * Money under crashes (the bulk job's write boundaries), on the server's real SQLite store: the job store, the bulk
 * credit ledger and the result cache share one database file, as in `riskcheck serve`.
 *
 * - A failure while a job is being created (inside the insert of its rows) leaves no job and no credits taken: the
 *   reservation is taken in the same transaction as the job.
 * - A failure at the end (the final status write) rolls the refund back with it; the job resumes after a restart and
 *   refunds exactly once — never out of another job's reservation.
 * - Lookups that ran before the process died but whose rows were not saved are run again and charged after the
 *   restart (their answers were not cached before the rows were saved, so they do not come back as free cache hits):
 *   each unique input of a job is charged exactly once.
 *
 * A "crash" at a boundary is a SQLite trigger that aborts that write (a real database error at that exact
 * statement), or a store whose writes never return (the process is gone: nothing after that point happens); the
 * "restart" is a new engine over the same database file.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createBulkEngineFor } from '../src/bulk/engine.js'
import type { BulkEngine, BulkStore } from '../src/bulk/types.js'
import { createBulkLedger, createSqliteBulkStore } from '../src/server/store/sqlite/bulk.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import type { CreditLedger } from '../src/credits.js'
import { createFakeCheck, createFakeEnv, settle } from './bulk-fakes.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bulk-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const NOW = Date.parse('2026-11-22T10:00:00Z')
let n = 0

function open(
  store: SqliteStore,
  orgId: string,
  wrap: (s: BulkStore) => BulkStore = (s) => s,
  onCompleted?: () => void,
  wrapLedger: (l: CreditLedger) => CreditLedger = (l) => l,
) {
  const fake = createFakeCheck()
  const ledger = wrapLedger(createBulkLedger(store.db, store, orgId, () => NOW))
  const { env } = createFakeEnv({ credits: ledger, cache: store.resultCache })
  const engine: BulkEngine = createBulkEngineFor({ phone: fake.def } as never, env, {
    store: wrap(createSqliteBulkStore(store.db, { orgId, mode: 'live' })),
    concurrency: 4,
    ...(onCompleted ? { onCompleted } : {}),
  })
  return { engine, fake }
}

function setup() {
  const store = createSqliteStore(join(dir, `crash-${++n}.sqlite`))
  const org = store.createOrg({ name: 'Acme', planId: 'starter' }, NOW)
  const balance = () => store.balance(org.id, NOW)
  const count = (table: string) => (store.db.prepare(`SELECT COUNT(*) AS c FROM ${table}`).get() as { c: number }).c
  return { store, org, balance, count }
}

const inputs = (k: number, prefix = 'ok') => Array.from({ length: k }, (_, i) => `${prefix}-${i}`)

async function finished(engine: BulkEngine, id: string) {
  for (let i = 0; i < 2000; i++) {
    const job = await engine.get(id)
    if (job.status === 'completed' || job.status === 'cancelled' || job.status === 'failed') return job
    await new Promise((r) => setTimeout(r, 5))
  }
  throw new Error('the job did not finish')
}

describe('bulk job crash points (SQLite)', () => {
  it('creation: the process dying while inserting the rows takes no credits and leaves no job', async () => {
    const { store, org, balance, count } = setup()
    const before = balance()
    store.db.exec(`CREATE TEMP TRIGGER crash BEFORE INSERT ON bulk_rows WHEN NEW.idx = 3 BEGIN SELECT RAISE(ABORT, 'crash at row 3'); END`)
    // the process dies there: no code after the failed write runs (a give-back of credits never happens)
    const dead = (l: CreditLedger): CreditLedger => ({ ...l, refund: () => new Promise<void>(() => {}) })
    const { engine } = open(store, org.id, undefined, undefined, dead)
    let outcome: unknown = 'still running'
    engine.create({ type: 'phone', inputs: inputs(6) }).then(
      () => (outcome = 'created'),
      (e: Error) => (outcome = e.message),
    )
    await settle(50)
    expect(outcome).toBe('crash at row 3')
    expect(balance()).toBe(before)
    expect([count('bulk_jobs'), count('bulk_rows'), count('bulk_reservations')]).toEqual([0, 0, 0])
    store.db.exec('DROP TRIGGER temp.crash')
    // the same job created again runs and is billed once
    const job = await engine.create({ type: 'phone', inputs: inputs(6) })
    expect((await finished(engine, job.id)).credits_used).toBe(6)
    expect(balance()).toBe(before - 6)
    await engine.close()
    store.close()
  })

  it("finish: a failed final-status write rolls its refund back; after a restart the job refunds once, never another job's credits", async () => {
    const { store, org, balance, count } = setup()
    const before = balance()
    // another job's reservation of 7 credits is open in the same org
    expect(createBulkLedger(store.db, store, org.id, () => NOW).reserveFor!('bulk_other', 7)).toBe(true)
    store.db.exec(`CREATE TEMP TRIGGER crash BEFORE UPDATE ON bulk_jobs WHEN NEW.status IN ('completed', 'failed', 'cancelled') BEGIN SELECT RAISE(ABORT, 'crash at the final status'); END`)
    let ended!: () => void
    const finishTried = new Promise<void>((r) => (ended = r))
    const first = open(store, org.id, undefined, () => ended())
    // 5 inputs that cannot be parsed (free error rows) and 10 that are looked up: 15 reserved, 10 used
    const job = await first.engine.create({ type: 'phone', inputs: [...inputs(10), ...inputs(5, 'bad')] })
    // every row is saved, then the finish fails (the engine logs nothing and goes on: the job is over for it)
    await finishTried
    expect((store.db.prepare('SELECT COUNT(*) AS c FROM bulk_rows WHERE state = 0').get() as { c: number }).c).toBe(0)
    await first.engine.close() // the first process stops
    const stored = store.db.prepare('SELECT status, reserved FROM bulk_jobs WHERE id = ?').get(job.id) as { status: string; reserved: number }
    expect(stored.status).not.toBe('completed')
    expect(balance()).toBe(before - 7 - stored.reserved) // nothing was refunded: the refund rolled back with the status
    store.db.exec('DROP TRIGGER temp.crash')

    const second = open(store, org.id) // restart: the job resumes and finishes
    const done = await finished(second.engine, job.id)
    expect(done.status).toBe('completed')
    expect(done.credits_used).toBe(10)
    expect(balance()).toBe(before - 7 - 10)
    // the job's reservation is closed; the other job's is untouched
    expect(store.db.prepare('SELECT job_id, amount FROM bulk_reservations').all()).toEqual([{ job_id: 'bulk_other', amount: 7 }])
    expect(second.fake.calls.size).toBe(0) // no row was looked up again
    await second.engine.close()
    // a third process finds the job final: nothing more is refunded
    const third = open(store, org.id)
    expect((await third.engine.get(job.id)).status).toBe('completed')
    expect(balance()).toBe(before - 7 - 10)
    expect(count('bulk_reservations')).toBe(1)
    await third.engine.close()
    store.close()
  })

  it('rows: lookups that ran before the process died but were not saved are run and charged again, once', async () => {
    const { store, org, balance } = setup()
    const before = balance()
    // the first process dies at its first row write: the write never returns and nothing after it happens
    let commits = 0
    const dying = (s: BulkStore): BulkStore => ({
      ...s,
      commitRows: () => {
        commits++
        return new Promise<void>(() => {})
      },
    })
    const first = open(store, org.id, dying)
    const job = await first.engine.create({ type: 'phone', inputs: inputs(40) })
    for (let i = 0; i < 2000 && (commits === 0 || first.fake.calls.size < 40); i++) await new Promise((r) => setTimeout(r, 5))
    expect(first.fake.calls.size).toBe(40) // every lookup ran …
    expect(commits).toBeGreaterThan(0) // … and the process died writing their rows
    expect(store.db.prepare('SELECT COUNT(*) AS c FROM result_cache').get()).toEqual({ c: 0 }) // no answer cached before its row was saved

    const second = open(store, org.id) // restart on the same file, same cache
    const done = await finished(second.engine, job.id)
    expect(done.status).toBe('completed')
    expect(second.fake.calls.size).toBe(40) // run again: not free cache hits
    expect(done.results.cache_hits).toBe(0)
    expect(done.credits_used).toBe(40)
    expect(balance()).toBe(before - 40) // each unique input charged exactly once
    expect(store.db.prepare('SELECT COUNT(*) AS c FROM bulk_reservations').get()).toEqual({ c: 0 })
    // saved rows' answers are cached now: a new job of the same inputs is 40 free cache hits
    const again = await second.engine.create({ type: 'phone', inputs: inputs(40) })
    const repeat = await finished(second.engine, again.id)
    expect([repeat.credits_used, repeat.results.cache_hits]).toEqual([0, 40])
    expect(balance()).toBe(before - 40)
    await second.engine.close()
    store.close()
  })
})

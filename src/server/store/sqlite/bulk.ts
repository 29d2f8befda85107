/**
 * Bulk jobs on SQLite (tables of migration 002): a {@link BulkStore} per owner (org + key mode), the persistent credit
 * ledger of bulk jobs ({@link createBulkLedger}) and the retention sweep ({@link sweepExpiredBulkJobs}). Why per
 * owner, one row per input, one transaction per commit: docs/decisions.md, "Storage engines" → "SQLite tables".
 */
import type Database from 'better-sqlite3'
import { detailsCodec, type DetailsCodec } from '../../../bulk/codec.js'
import type { BulkJobOptions, BulkJobRecord, BulkRowRecord, BulkRowState, BulkStore, MaybePromise } from '../../../bulk/types.js'
import type { CreditLedger } from '../../../credits.js'
import { FINAL_BULK_STATUSES, type Action, type BulkJob, type BulkType, type EventPayload } from '../../../schema.js'
import { insertOutboxEvent } from './outbox.js'
import type { BulkOwner, BulkServiceStorage } from '../contracts/bulk.js'
import { moveActionCount, packResult, STATE_CODE, unpackRow, type RowRow } from '../common/bulk-rows.js'
import type { CreditReservation } from '../../../accounts/types.js'

export type { BulkOwner } from '../contracts/bulk.js'

interface JobRow {
  seq: number
  id: string
  job: string
  reserved: number
  options: string
}

const toRecord = (r: JobRow): BulkJobRecord => ({
  job: JSON.parse(r.job) as BulkJob,
  seq: r.seq,
  reserved: r.reserved,
  options: JSON.parse(r.options) as BulkJobOptions,
})

/** A better-sqlite3 transaction cannot wait: what runs inside one must answer synchronously. */
function inline<T>(value: MaybePromise<T>): T {
  if (value instanceof Promise) throw new TypeError('bulk store: a credit operation inside a SQLite transaction must be synchronous')
  return value
}

/** The statements of a bulk store (one owner's view of the bulk tables). */
function bulkStatements(db: Database.Database) {
  return {
    insertJob: db.prepare(
      `INSERT INTO bulk_jobs (id, org_id, mode, status, job, reserved, options, created_at, expires_at)
       VALUES (@id, @org_id, @mode, @status, @job, @reserved, @options, @created_at, @expires_at)`,
    ),
    insertRow: db.prepare('INSERT INTO bulk_rows (job_seq, idx, state, retryable, action, input, result) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    job: db.prepare('SELECT seq, id, job, reserved, options FROM bulk_jobs WHERE id = ? AND org_id = ? AND mode = ?'),
    seqOf: db.prepare('SELECT seq, job FROM bulk_jobs WHERE id = ? AND org_id = ? AND mode = ?'),
    list: db.prepare(
      'SELECT seq, id, job, reserved, options FROM bulk_jobs WHERE org_id = ? AND mode = ? AND seq < ? ORDER BY seq DESC LIMIT ?',
    ),
    unfinished: db.prepare(
      `SELECT seq, id, job, reserved, options FROM bulk_jobs WHERE status IN ('queued', 'running') AND org_id = ? AND mode = ?
       ORDER BY seq`,
    ),
    update: db.prepare('UPDATE bulk_jobs SET job = ?, status = ? WHERE id = ? AND org_id = ? AND mode = ?'),
    commitRow: db.prepare('UPDATE bulk_rows SET state = ?, retryable = ?, action = ?, result = ? WHERE job_seq = ? AND idx = ?'),
    pending: db.prepare('SELECT idx, input FROM bulk_rows WHERE job_seq = ? AND state = 0 ORDER BY idx'),
    rowAction: db.prepare('SELECT action, state FROM bulk_rows WHERE job_seq = ? AND idx = ?'),
    // In primary-key order, stopping at the first pending row (rows below it are done).
    firstPending: db.prepare('SELECT idx FROM bulk_rows WHERE job_seq = ? AND state = 0 ORDER BY idx LIMIT 1'),
    rows: db.prepare(
      `SELECT idx, state, retryable, action, input, result FROM bulk_rows
       WHERE job_seq = ? AND idx >= ? AND idx < ? AND state <> 0 ORDER BY idx LIMIT ?`,
    ),
    rowsByAction: db.prepare(
      `SELECT idx, state, retryable, action, input, result FROM bulk_rows
       WHERE job_seq = ? AND idx >= ? AND idx < ? AND state <> 0 AND action = ? ORDER BY idx LIMIT ?`,
    ),
    retryable: db.prepare('SELECT input FROM bulk_rows WHERE job_seq = ? AND retryable = 1 ORDER BY idx'),
    expired: db.prepare('SELECT seq, id FROM bulk_jobs WHERE org_id = ? AND mode = ? AND expires_at <= ?'),
    deleteRows: db.prepare('DELETE FROM bulk_rows WHERE job_seq = ?'),
    deleteJob: db.prepare('DELETE FROM bulk_jobs WHERE seq = ?'),
  }
}

/**
 * The bulk store of one owner over `db` (a store opened by `createSqliteStore`, migration 002 applied). Persistent:
 * the engine leaves running jobs to be resumed by the next engine on this owner. `onFinished` runs inside the
 * transaction that writes a job's final status (never twice for one job): the server counts the job's usage and
 * writes its bulk.completed event there, so a crash cannot finish a job without them.
 *
 * @example
 * const engine = createBulkEngine(env, { store: createSqliteBulkStore(store.db, { orgId, mode: 'live' }) })
 */
export function createSqliteBulkStore(db: Database.Database, owner: BulkOwner, onFinished?: (job: BulkJob) => void): BulkStore {
  const q = bulkStatements(db)
  /** Codec and seq of jobs seen (a job's type and seq never change). */
  const known = new Map<string, { seq: number; codec: DetailsCodec }>()

  const must = (id: string) => {
    let k = known.get(id)
    if (!k) {
      const r = q.seqOf.get(id, owner.orgId, owner.mode) as { seq: number; job: string } | undefined
      if (!r) throw new Error(`bulk store: no job ${id}`)
      k = { seq: r.seq, codec: detailsCodec((JSON.parse(r.job) as BulkJob).type) }
      known.set(id, k)
    }
    return k
  }

  const insertTx = db.transaction((record: Omit<BulkJobRecord, 'seq'>, rows: Iterable<BulkRowRecord>): BulkJobRecord => {
    const job = record.job
    const info = q.insertJob.run({
      id: job.id,
      org_id: owner.orgId,
      mode: owner.mode,
      status: job.status,
      job: JSON.stringify(job),
      reserved: record.reserved,
      options: JSON.stringify(record.options),
      created_at: Date.parse(job.created_at),
      expires_at: Date.parse(job.expires_at),
    })
    const seq = Number(info.lastInsertRowid)
    const codec = detailsCodec(job.type as BulkType)
    for (const row of rows) {
      if (row.index < 0 || row.index >= job.unique_inputs) throw new Error(`bulk store: row ${row.index} out of range`)
      const done = row.state !== 'pending'
      q.insertRow.run(seq, row.index, STATE_CODE[row.state], row.retryable ? 1 : 0, row.action, row.input, done ? packResult(codec, row) : null)
    }
    known.set(job.id, { seq, codec })
    return { ...record, job: { ...job, results: { ...job.results } }, options: { ...record.options }, seq }
  })

  /** Thrown inside {@link chargedInsertTx} to roll the insert back when the balance is short. */
  const SHORT = Symbol('short')
  const chargedInsertTx = db.transaction((record: Omit<BulkJobRecord, 'seq'>, rows: Iterable<BulkRowRecord>, charge: (tx: unknown) => MaybePromise<boolean>) => {
    if (!inline(charge(undefined))) throw SHORT
    return insertTx(record, rows)
  })
  const finishTx = db.transaction((id: string, job: BulkJob, settle: (tx: unknown) => MaybePromise<void>) => {
    // a job already final was settled with its final status: settling again would refund twice
    const now = q.job.get(id, owner.orgId, owner.mode) as JobRow | undefined
    if (now && FINAL_BULK_STATUSES.has((JSON.parse(now.job) as BulkJob).status)) return
    inline(settle(undefined))
    q.update.run(JSON.stringify(job), job.status, id, owner.orgId, owner.mode)
    onFinished?.(job)
  })

  const commitTx = db.transaction((id: string, rows: readonly BulkRowRecord[], job: BulkJob) => {
    const { seq, codec } = must(id)
    for (const row of rows) {
      q.commitRow.run(STATE_CODE[row.state], row.retryable ? 1 : 0, row.action, packResult(codec, row), seq, row.index)
    }
    q.update.run(JSON.stringify(job), job.status, id, owner.orgId, owner.mode)
  })

  const replaceTx = db.transaction((id: string, row: BulkRowRecord): boolean => {
    const r = q.seqOf.get(id, owner.orgId, owner.mode) as { seq: number; job: string } | undefined
    if (!r) return false
    const old = q.rowAction.get(r.seq, row.index) as { action: string | null; state: number } | undefined
    if (!old || old.state === STATE_CODE.pending) return false
    const job = JSON.parse(r.job) as BulkJob
    moveActionCount(job, old.action, row.action)
    q.commitRow.run(STATE_CODE[row.state], row.retryable ? 1 : 0, row.action, packResult(detailsCodec(job.type), row), r.seq, row.index)
    q.update.run(JSON.stringify(job), job.status, id, owner.orgId, owner.mode)
    return true
  })

  const deleteTx = db.transaction((nowMs: number): string[] => {
    const gone = q.expired.all(owner.orgId, owner.mode, nowMs) as Array<{ seq: number; id: string }>
    for (const g of gone) {
      q.deleteRows.run(g.seq)
      q.deleteJob.run(g.seq)
      known.delete(g.id)
    }
    return gone.map((g) => g.id)
  })

  return {
    persistent: true,
    insertJob: (record, rows) => insertTx.immediate(record, rows),
    insertJobCharged(record, rows, charge) {
      try {
        return chargedInsertTx.immediate(record, rows, charge)
      } catch (e) {
        if (e === SHORT) return null
        throw e
      }
    },
    finishJob: (id, job, settle) => finishTx.immediate(id, job, settle),
    getJob(id) {
      const r = q.job.get(id, owner.orgId, owner.mode) as JobRow | undefined
      return r ? toRecord(r) : undefined
    },
    listJobs({ beforeSeq, limit }) {
      return (q.list.all(owner.orgId, owner.mode, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit) as JobRow[]).map(toRecord)
    },
    listUnfinishedJobs() {
      return (q.unfinished.all(owner.orgId, owner.mode) as JobRow[]).map(toRecord)
    },
    updateJob(id, job) {
      q.update.run(JSON.stringify(job), job.status, id, owner.orgId, owner.mode)
    },
    commitRows: (id, rows, job) => commitTx.immediate(id, rows, job),
    replaceRow: (id, row) => replaceTx.immediate(id, row),
    pendingRows(id) {
      return (q.pending.all(must(id).seq) as Array<{ idx: number; input: string }>).map((r) => ({ index: r.idx, input: r.input }))
    },
    firstPendingIndex(id) {
      return (q.firstPending.get(must(id).seq) as { idx: number } | undefined)?.idx ?? null
    },
    listRows(id, query) {
      const { seq, codec } = must(id)
      const to = query.toIndex ?? Number.MAX_SAFE_INTEGER
      const rows = (
        query.action === null
          ? q.rows.all(seq, query.fromIndex, to, query.limit)
          : q.rowsByAction.all(seq, query.fromIndex, to, query.action, query.limit)
      ) as RowRow[]
      return rows.map((r) => unpackRow(codec, r))
    },
    listRetryableInputs(id) {
      return (q.retryable.all(must(id).seq) as Array<{ input: string }>).map((r) => r.input)
    },
    deleteExpired: (nowMs) => deleteTx.immediate(nowMs),
  }
}

/**
 * Deletes every bulk job (any owner) whose results expired (`expires_at <= nowMs`, 7 days after creation), with its
 * rows. Returns the ids deleted. The server runs it periodically.
 */
export function sweepExpiredBulkJobs(db: Database.Database, nowMs: number): string[] {
  return db
    .transaction(() => {
      const gone = db.prepare('SELECT seq, id FROM bulk_jobs WHERE expires_at <= ?').all(nowMs) as Array<{ seq: number; id: string }>
      const delRows = db.prepare('DELETE FROM bulk_rows WHERE job_seq = ?')
      const delJob = db.prepare('DELETE FROM bulk_jobs WHERE seq = ?')
      for (const g of gone) {
        delRows.run(g.seq)
        delJob.run(g.seq)
      }
      return gone.map((g) => g.id)
    })
    .immediate()
}

/** Owners (org + mode) with queued or running jobs: the engines to start so those jobs resume. */
export function listOwnersWithUnfinishedJobs(db: Database.Database): BulkOwner[] {
  return (
    db.prepare(`SELECT DISTINCT org_id, mode FROM bulk_jobs WHERE status IN ('queued', 'running')`).all() as Array<{ org_id: string; mode: string }>
  ).map((r) => ({ orgId: r.org_id, mode: r.mode as 'live' | 'test' }))
}

/** What the bulk ledger needs of the store: the credit operations (the SQLite store's, synchronous). */
export interface CreditOps {
  reserveCredits(orgId: string, amount: number, nowMs: number): CreditReservation | null
  refundCredits(orgId: string, reservation: CreditReservation, amount: number, nowMs: number): void
  balance(orgId: string, nowMs: number): number
}

/**
 * The credit ledger of an org's bulk engine. Unlike the per-request ledger, its reservations are kept in the
 * database (table `bulk_reservations`), in the same transaction as the balance change: a job that resumes after a
 * restart refunds its unused credits to the buckets they came from, and a crash can neither lose nor repeat a
 * refund. Refunds give back the most recent reservations first (by bucket: purchased, then subscription).
 */
export function createBulkLedger(db: Database.Database, credits: CreditOps, orgId: string, nowMs: () => number): CreditLedger {
  const insert = db.prepare(
    'INSERT INTO bulk_reservations (org_id, amount, from_subscription, from_purchased, period_start, job_id) VALUES (?, ?, ?, ?, ?, ?)',
  )
  // reservations of jobs created before migration 004 have no job id: they are settled per org, newest first
  const latest = db.prepare('SELECT * FROM bulk_reservations WHERE org_id = ? AND job_id IS NULL ORDER BY id DESC LIMIT 1')
  const ofJob = db.prepare('SELECT * FROM bulk_reservations WHERE org_id = ? AND job_id = ? ORDER BY id')
  const shrink = db.prepare('UPDATE bulk_reservations SET amount = ?, from_subscription = ?, from_purchased = ? WHERE id = ?')
  const remove = db.prepare('DELETE FROM bulk_reservations WHERE id = ?')
  const reserveTx = db.transaction((amount: number): boolean => {
    const r = credits.reserveCredits(orgId, amount, nowMs())
    if (!r) return false
    insert.run(orgId, r.amount, r.fromSubscription, r.fromPurchased, r.periodStart, null)
    return true
  })
  type ReservationRow = { id: number; amount: number; from_subscription: number; from_purchased: number; period_start: number }
  const toReservation = (row: ReservationRow): CreditReservation => ({
    amount: row.amount,
    fromSubscription: row.from_subscription,
    fromPurchased: row.from_purchased,
    periodStart: row.period_start,
  })
  const reserveForTx = db.transaction((jobId: string, amount: number): boolean => {
    const r = credits.reserveCredits(orgId, amount, nowMs())
    if (!r) return false
    insert.run(orgId, r.amount, r.fromSubscription, r.fromPurchased, r.periodStart, jobId)
    return true
  })
  const settleForTx = db.transaction((jobId: string, unused: number) => {
    const rows = ofJob.all(orgId, jobId) as ReservationRow[]
    if (rows.length === 0) {
      // a job created before migration 004 (its reservation has no job id); nothing at all when already settled
      if (unused > 0) refundTx(unused)
      return
    }
    let left = unused
    for (const row of rows) {
      const part = Math.min(left, row.amount)
      if (part > 0) credits.refundCredits(orgId, toReservation(row), part, nowMs())
      left -= part
      remove.run(row.id)
    }
  })
  const refundTx = db.transaction((amount: number) => {
    let left = amount
    while (left > 0) {
      const row = latest.get(orgId) as
        | { id: number; amount: number; from_subscription: number; from_purchased: number; period_start: number }
        | undefined
      if (!row) break
      const part = Math.min(left, row.amount)
      const res: CreditReservation = {
        amount: row.amount,
        fromSubscription: row.from_subscription,
        fromPurchased: row.from_purchased,
        periodStart: row.period_start,
      }
      credits.refundCredits(orgId, res, part, nowMs())
      const fromPurchased = Math.min(part, row.from_purchased)
      if (part === row.amount) remove.run(row.id)
      else shrink.run(row.amount - part, row.from_subscription - (part - fromPurchased), row.from_purchased - fromPurchased, row.id)
      left -= part
    }
  })
  return {
    reserve: (amount) => (amount <= 0 ? true : reserveTx.immediate(amount)),
    // run inside the job store's transactions (nested: a savepoint), or alone
    reserveFor: (jobId, amount) => (amount <= 0 ? true : reserveForTx.immediate(jobId, amount)),
    settleFor: (jobId, unused) => settleForTx.immediate(jobId, unused),
    refund(amount) {
      if (amount > 0) refundTx.immediate(amount)
    },
    balance: () => credits.balance(orgId, nowMs()),
  }
}

/**
 * The bulk service's storage on the server's SQLite file (migrations 002 and 004): the per-owner job stores and
 * ledgers above, the outbox, and the store's own credit settlement.
 */
export function createSqliteBulkStorage(
  db: Database.Database,
  credits: CreditOps & { settleCredits(orgId: string, lookups: number, nowMs: number): void },
): BulkServiceStorage {
  const unfinished = db.prepare(`SELECT count(*) AS n FROM bulk_jobs WHERE status IN ('queued', 'running')`)
  return {
    // the store's transactions belong to the connection: `onFinished` runs inside them as it is
    jobStore: (owner, onFinished) => createSqliteBulkStore(db, owner, onFinished && ((job) => inline(onFinished(job, undefined)))),
    ledger: (orgId, nowMs) => createBulkLedger(db, credits, orgId, nowMs),
    settleCredits: (orgId, lookups, nowMs) => credits.settleCredits(orgId, lookups, nowMs),
    insertEvent: (event: EventPayload) => insertOutboxEvent(db, event),
    ownersWithUnfinishedJobs: () => listOwnersWithUnfinishedJobs(db),
    sweepExpired: (nowMs) => sweepExpiredBulkJobs(db, nowMs),
    unfinishedCount: () => (unfinished.get() as { n: number }).n,
  }
}

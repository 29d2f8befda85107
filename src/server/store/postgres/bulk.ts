/**
 * Bulk jobs on PostgreSQL: the {@link BulkServiceStorage} of servers whose store is PostgreSQL, over the bulk tables
 * and the core store's `orgs` and `events` (docs/decisions.md "PostgreSQL store" → bulk jobs).
 */
import type pg from 'pg'
import { detailsCodec, type DetailsCodec } from '../../../bulk/codec.js'
import type { BulkJobOptions, BulkJobRecord, BulkRowRecord, BulkStore, MaybePromise } from '../../../bulk/types.js'
import type { CreditLedger } from '../../../credits.js'
import { FINAL_BULK_STATUSES, type BulkJob, type BulkType } from '../../../schema.js'
import { buildEvent, dueAlerts, refundSplit, reserveSplit, type AlertLevel } from '../../../accounts/ledger.js'
import { moveActionCount, packResult, STATE_CODE, unpackRow, type RowRow } from '../common/bulk-rows.js'
import { num, inTransaction, type Queryable } from './client.js'
import { lockCredits } from './credits.js'
import { insertEvent } from './events.js'
import type { BulkOwner, BulkServiceStorage } from '../contracts/service-storage.js'
import type { CreditReservation } from '../../../accounts/types.js'

/** Rows per INSERT when a job is created (a job of 100,000 inputs takes 20 statements). */
const INSERT_BATCH = 5000

interface JobRow {
  seq: string
  id: string
  job: string
  reserved: string
  options: string
}

const toRecord = (r: JobRow): BulkJobRecord => ({
  job: JSON.parse(r.job) as BulkJob,
  seq: num(r.seq),
  reserved: num(r.reserved),
  options: JSON.parse(r.options) as BulkJobOptions,
})

const JOB_COLUMNS = 'seq, id, job, reserved, options'

/**
 * The credit statements of the bulk ledger, run on the caller's transaction client against the core `orgs` table
 * (the columns of the SQLite store). Each locks the org's row for the rest of the transaction and renews a period
 * that has ended first, as the core store does on any credit operation.
 */
export interface PgBulkCredits {
  /** Takes `amount` credits (subscription first); null and nothing taken when the balance is short or no org. */
  reserve(q: Queryable, orgId: string, amount: number, nowMs: number): Promise<CreditReservation | null>
  /** Gives back `amount` of a reservation (purchased part first; subscription only within the period it came from). */
  refund(q: Queryable, orgId: string, reservation: CreditReservation, amount: number, nowMs: number): Promise<void>
  /** Counts `lookups` into the usage and writes the credit alerts the balance calls for (the core store's settlement). */
  settle(q: Queryable, orgId: string, lookups: number, nowMs: number): Promise<void>
}

/** The credit statements of the core `orgs` table (see {@link PgBulkCredits}). */
export const PG_BULK_CREDITS: PgBulkCredits = {
  async reserve(q, orgId, amount, nowMs) {
    const row = await lockCredits(q, orgId, nowMs)
    if (!row) return null
    const split = reserveSplit(num(row.subscription_credits), num(row.purchased_credits), amount)
    if (!split) return null
    const { fromSubscription: sub, fromPurchased: pur } = split
    await q.query(
      `UPDATE orgs SET subscription_credits = subscription_credits - $2, purchased_credits = purchased_credits - $3,
         period_credits = period_credits + $4, total_credits = total_credits + $4 WHERE id = $1`,
      [orgId, sub, pur, amount],
    )
    return { amount, fromSubscription: sub, fromPurchased: pur, periodStart: num(row.period_start) }
  },
  async refund(q, orgId, res, amount, nowMs) {
    const row = await lockCredits(q, orgId, nowMs)
    if (!row) return
    const { fromPurchased: pur, fromSubscription: subPart } = refundSplit(res, amount)
    const samePeriod = num(row.period_start) === res.periodStart
    const sub = samePeriod ? subPart : 0
    await q.query(
      `UPDATE orgs SET subscription_credits = subscription_credits + $2, purchased_credits = purchased_credits + $3,
         period_credits = GREATEST(0, period_credits - $4), total_credits = GREATEST(0, total_credits - $5) WHERE id = $1`,
      [orgId, sub, pur, samePeriod ? pur + subPart : 0, pur + subPart],
    )
  },
  async settle(q, orgId, lookups, nowMs) {
    const row = await lockCredits(q, orgId, nowMs)
    if (!row) return
    if (lookups > 0) await q.query('UPDATE orgs SET period_lookups = period_lookups + $2, total_lookups = total_lookups + $2 WHERE id = $1', [orgId, lookups])
    const level = row.alert_level as AlertLevel
    const due = dueAlerts(num(row.subscription_credits) + num(row.purchased_credits), num(row.monthly_credits), level)
    if (due.level !== level) await q.query('UPDATE orgs SET alert_level = $2 WHERE id = $1', [orgId, due.level])
    for (const e of due.events) await insertEvent(q, buildEvent(orgId, e, nowMs))
  },
}

/** Rows as the columns of one multi-row statement. */
function rowArrays(codec: DetailsCodec, rows: readonly BulkRowRecord[]) {
  return [
    rows.map((r) => r.index),
    rows.map((r) => STATE_CODE[r.state]),
    rows.map((r) => (r.retryable ? 1 : 0)),
    rows.map((r) => r.action),
    rows.map((r) => r.input),
    rows.map((r) => (r.state === 'pending' ? null : packResult(codec, r))),
  ]
}

/** Replaces a finished row of a job (a recheck's new answer) and moves the job's action counts, in one transaction. */
function replaceRowOn(pool: pg.Pool, owner: BulkOwner, id: string, row: BulkRowRecord): Promise<boolean> {
  const { orgId, mode } = owner
  return inTransaction(pool, async (client) => {
    const j = (await client.query<{ seq: string; job: string }>('SELECT seq, job FROM bulk_jobs WHERE id = $1 AND org_id = $2 AND mode = $3 FOR UPDATE', [id, orgId, mode])).rows[0]
    if (!j) return false
    const seq = num(j.seq)
    const old = (await client.query<{ action: string | null; state: number }>('SELECT action, state FROM bulk_rows WHERE job_seq = $1 AND idx = $2', [seq, row.index])).rows[0]
    if (!old || old.state === STATE_CODE.pending) return false
    const job = JSON.parse(j.job) as BulkJob
    moveActionCount(job, old.action, row.action)
    const result = packResult(detailsCodec(job.type), row)
    await client.query('UPDATE bulk_rows SET state = $3, retryable = $4, action = $5, result = $6 WHERE job_seq = $1 AND idx = $2', [seq, row.index, STATE_CODE[row.state], row.retryable ? 1 : 0, row.action, result])
    await client.query('UPDATE bulk_jobs SET job = $1, status = $2 WHERE id = $3 AND org_id = $4 AND mode = $5', [JSON.stringify(job), job.status, id, orgId, mode])
    return true
  })
}

/**
 * The job store of one owner on `pool`. `onFinished` runs inside the transaction that writes a job's final status
 * (with the transaction's client), once per job.
 */
export function createPostgresBulkStore(pool: pg.Pool, owner: BulkOwner, onFinished?: (job: BulkJob, tx: unknown) => MaybePromise<void>): BulkStore {
  const { orgId, mode } = owner
  /** Codec and seq of jobs seen (a job's type and seq never change). */
  const known = new Map<string, { seq: number; codec: DetailsCodec }>()

  const must = async (id: string) => {
    let k = known.get(id)
    if (!k) {
      const r = (await pool.query<{ seq: string; job: string }>('SELECT seq, job FROM bulk_jobs WHERE id = $1 AND org_id = $2 AND mode = $3', [id, orgId, mode])).rows[0]
      if (!r) throw new Error(`bulk store: no job ${id}`)
      k = { seq: num(r.seq), codec: detailsCodec((JSON.parse(r.job) as BulkJob).type) }
      known.set(id, k)
    }
    return k
  }

  const insertOn = async (q: Queryable, record: Omit<BulkJobRecord, 'seq'>, rows: Iterable<BulkRowRecord>): Promise<BulkJobRecord> => {
    const job = record.job
    const inserted = await q.query<{ seq: string }>(
      `INSERT INTO bulk_jobs (id, org_id, mode, status, job, reserved, options, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING seq`,
      [job.id, orgId, mode, job.status, JSON.stringify(job), record.reserved, JSON.stringify(record.options), Date.parse(job.created_at), Date.parse(job.expires_at)],
    )
    const seq = num(inserted.rows[0]!.seq)
    const codec = detailsCodec(job.type as BulkType)
    let batch: BulkRowRecord[] = []
    const flush = async () => {
      if (batch.length === 0) return
      await q.query(
        `INSERT INTO bulk_rows (job_seq, idx, state, retryable, action, input, result)
         SELECT $1, * FROM unnest($2::int[], $3::smallint[], $4::smallint[], $5::text[], $6::text[], $7::text[])`,
        [seq, ...rowArrays(codec, batch)],
      )
      batch = []
    }
    for (const row of rows) {
      if (row.index < 0 || row.index >= job.unique_inputs) throw new Error(`bulk store: row ${row.index} out of range`)
      batch.push(row)
      if (batch.length >= INSERT_BATCH) await flush()
    }
    await flush()
    known.set(job.id, { seq, codec })
    return { ...record, job: { ...job, results: { ...job.results } }, options: { ...record.options }, seq }
  }

  const updateOn = (q: Queryable, id: string, job: BulkJob) =>
    q.query('UPDATE bulk_jobs SET job = $1, status = $2 WHERE id = $3 AND org_id = $4 AND mode = $5', [JSON.stringify(job), job.status, id, orgId, mode])

  /** Thrown inside the charged insert to roll it back when the balance is short. */
  const SHORT = Symbol('short')

  return {
    persistent: true,
    insertJob: (record, rows) => inTransaction(pool, (client) => insertOn(client, record, rows)),
    async insertJobCharged(record, rows, charge: (tx: unknown) => MaybePromise<boolean>) {
      try {
        return await inTransaction(pool, async (client) => {
          if (!(await charge(client))) throw SHORT
          return insertOn(client, record, rows)
        })
      } catch (e) {
        if (e === SHORT) return null
        throw e
      }
    },
    async finishJob(id, job, settle) {
      await inTransaction(pool, async (client) => {
        // the row lock makes a concurrent finish wait, then see the final status
        const now = (await client.query<{ status: string }>('SELECT status FROM bulk_jobs WHERE id = $1 AND org_id = $2 AND mode = $3 FOR UPDATE', [id, orgId, mode])).rows[0]
        if (now && FINAL_BULK_STATUSES.has(now.status)) return
        await settle(client)
        await updateOn(client, id, job)
        await onFinished?.(job, client)
      })
    },
    async getJob(id) {
      const r = (await pool.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM bulk_jobs WHERE id = $1 AND org_id = $2 AND mode = $3`, [id, orgId, mode])).rows[0]
      return r ? toRecord(r) : undefined
    },
    async listJobs({ beforeSeq, limit }) {
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM bulk_jobs WHERE org_id = $1 AND mode = $2 AND seq < $3 ORDER BY seq DESC LIMIT $4`,
        [orgId, mode, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit],
      )
      return rows.map(toRecord)
    },
    async listUnfinishedJobs() {
      const { rows } = await pool.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM bulk_jobs WHERE status IN ('queued', 'running') AND org_id = $1 AND mode = $2 ORDER BY seq`,
        [orgId, mode],
      )
      return rows.map(toRecord)
    },
    async updateJob(id, job) {
      await updateOn(pool, id, job)
    },
    async commitRows(id, rows, job) {
      const { seq, codec } = await must(id)
      await inTransaction(pool, async (client) => {
        const [idx, state, retryable, action, , result] = rowArrays(codec, rows)
        await client.query(
          `UPDATE bulk_rows r SET state = u.state, retryable = u.retryable, action = u.action, result = u.result
           FROM unnest($2::int[], $3::smallint[], $4::smallint[], $5::text[], $6::text[]) AS u(idx, state, retryable, action, result)
           WHERE r.job_seq = $1 AND r.idx = u.idx`,
          [seq, idx, state, retryable, action, result],
        )
        await updateOn(client, id, job)
      })
    },
    replaceRow: (id, row) => replaceRowOn(pool, owner, id, row),
    async pendingRows(id) {
      const { rows } = await pool.query<{ idx: number; input: string }>('SELECT idx, input FROM bulk_rows WHERE job_seq = $1 AND state = 0 ORDER BY idx', [(await must(id)).seq])
      return rows.map((r) => ({ index: r.idx, input: r.input }))
    },
    async firstPendingIndex(id) {
      const r = (await pool.query<{ idx: number }>('SELECT idx FROM bulk_rows WHERE job_seq = $1 AND state = 0 ORDER BY idx LIMIT 1', [(await must(id)).seq])).rows[0]
      return r?.idx ?? null
    },
    async listRows(id, query) {
      const { seq, codec } = await must(id)
      const to = query.toIndex ?? 2 ** 31 - 1
      const values: unknown[] = [seq, query.fromIndex, to, query.limit]
      if (query.action !== null) values.push(query.action)
      const { rows } = await pool.query<RowRow>(
        `SELECT idx, state, retryable, action, input, result FROM bulk_rows
         WHERE job_seq = $1 AND idx >= $2 AND idx < $3 AND state <> 0${query.action === null ? '' : ' AND action = $5'} ORDER BY idx LIMIT $4`,
        values,
      )
      return rows.map((r) => unpackRow(codec, r))
    },
    async listRetryableInputs(id) {
      const { rows } = await pool.query<{ input: string }>('SELECT input FROM bulk_rows WHERE job_seq = $1 AND retryable = 1 ORDER BY idx', [(await must(id)).seq])
      return rows.map((r) => r.input)
    },
    async deleteExpired(nowMs) {
      const { rows } = await pool.query<{ id: string }>('DELETE FROM bulk_jobs WHERE org_id = $1 AND mode = $2 AND expires_at <= $3 RETURNING id', [orgId, mode, nowMs])
      for (const r of rows) known.delete(r.id)
      return rows.map((r) => r.id)
    },
  }
}

interface ReservationRow {
  id: string
  amount: string
  from_subscription: string
  from_purchased: string
  period_start: string
}

const toReservation = (r: ReservationRow): CreditReservation => ({
  amount: num(r.amount),
  fromSubscription: num(r.from_subscription),
  fromPurchased: num(r.from_purchased),
  periodStart: num(r.period_start),
})

/**
 * The credit ledger of an org's bulk engine on PostgreSQL: reservations are rows of `bulk_reservations`, written and
 * closed in the job store's transactions (`tx`, the transaction's client); without one, in a transaction of their own.
 */
export function createPostgresBulkLedger(pool: pg.Pool, credits: PgBulkCredits, orgId: string, nowMs: () => number): CreditLedger {
  const reserveOn = async (q: Queryable, jobId: string | null, amount: number): Promise<boolean> => {
    const r = await credits.reserve(q, orgId, amount, nowMs())
    if (!r) return false
    await q.query(
      'INSERT INTO bulk_reservations (org_id, amount, from_subscription, from_purchased, period_start, job_id) VALUES ($1, $2, $3, $4, $5, $6)',
      [orgId, r.amount, r.fromSubscription, r.fromPurchased, r.periodStart, jobId],
    )
    return true
  }

  /** Gives back `amount` from the reservations listed (in order), closing the ones used up (or all, with `close`). */
  const giveBack = async (q: Queryable, rows: ReservationRow[], amount: number, close: boolean) => {
    let left = amount
    for (const row of rows) {
      const res = toReservation(row)
      const part = Math.min(left, res.amount)
      if (part > 0) await credits.refund(q, orgId, res, part, nowMs())
      left -= part
      if (close || part === res.amount) await q.query('DELETE FROM bulk_reservations WHERE id = $1', [row.id])
      else if (part > 0) {
        const fromPurchased = Math.min(part, res.fromPurchased)
        await q.query('UPDATE bulk_reservations SET amount = $2, from_subscription = $3, from_purchased = $4 WHERE id = $1', [
          row.id,
          res.amount - part,
          res.fromSubscription - (part - fromPurchased),
          res.fromPurchased - fromPurchased,
        ])
      }
      if (!close && left <= 0) break
    }
  }

  const cols = 'id, amount, from_subscription, from_purchased, period_start'
  /** Closes a job's reservations, giving back what it did not use. */
  const settleOn = async (q: Queryable, jobId: string, unused: number) => {
    const { rows } = await q.query<ReservationRow>(`SELECT ${cols} FROM bulk_reservations WHERE org_id = $1 AND job_id = $2 ORDER BY id FOR UPDATE`, [orgId, jobId])
    await giveBack(q, rows, unused, true)
  }
  return {
    reserve: (amount) => (amount <= 0 ? true : inTransaction(pool, (q) => reserveOn(q, null, amount))),
    // with `tx`, on the job store's transaction; else in one of its own
    reserveFor: (jobId, amount, tx) => (amount <= 0 ? true : tx ? reserveOn(tx as Queryable, jobId, amount) : inTransaction(pool, (q) => reserveOn(q, jobId, amount))),
    settleFor: (jobId, unused, tx) => (tx ? settleOn(tx as Queryable, jobId, unused) : inTransaction(pool, (q) => settleOn(q, jobId, unused))),
    async refund(amount) {
      if (amount <= 0) return
      await inTransaction(pool, async (q) => {
        const { rows } = await q.query<ReservationRow>(`SELECT ${cols} FROM bulk_reservations WHERE org_id = $1 AND job_id IS NULL ORDER BY id DESC FOR UPDATE`, [orgId])
        await giveBack(q, rows, amount, false)
      })
    },
    async balance() {
      const r = (await pool.query<{ b: string }>('SELECT subscription_credits + purchased_credits AS b FROM orgs WHERE id = $1', [orgId])).rows[0]
      return r ? num(r.b) : 0
    },
  }
}

/** Options of {@link createPostgresBulkStorage}. */
export interface PostgresBulkStorageOptions {
  /** The core store's pool (its schema holds `orgs` and `events`). */
  pool: pg.Pool
  /** The core store's settlement (usage counters and credit alerts), used outside a job's final transaction. */
  settleCredits(orgId: string, lookups: number, nowMs: number): MaybePromise<void>
  /** The credit statements (default {@link PG_BULK_CREDITS}). */
  credits?: PgBulkCredits
}

/** The bulk service's storage on PostgreSQL. */
export function createPostgresBulkStorage(options: PostgresBulkStorageOptions): BulkServiceStorage {
  const { pool } = options
  const credits = options.credits ?? PG_BULK_CREDITS
  return {
    jobStore: (owner, onFinished) => createPostgresBulkStore(pool, owner, onFinished),
    ledger: (orgId, nowMs) => createPostgresBulkLedger(pool, credits, orgId, nowMs),
    // inside a job's final transaction: the same settlement on its client; else the core store's
    settleCredits: (orgId, lookups, nowMs, tx) => (tx ? credits.settle(tx as Queryable, orgId, lookups, nowMs) : options.settleCredits(orgId, lookups, nowMs)),
    insertEvent: (event, tx) => insertEvent((tx as Queryable | undefined) ?? pool, event),
    async ownersWithUnfinishedJobs() {
      const { rows } = await pool.query<{ org_id: string; mode: 'live' | 'test' }>(`SELECT DISTINCT org_id, mode FROM bulk_jobs WHERE status IN ('queued', 'running')`)
      return rows.map((r) => ({ orgId: r.org_id, mode: r.mode }))
    },
    async sweepExpired(nowMs) {
      const { rows } = await pool.query<{ id: string }>('DELETE FROM bulk_jobs WHERE expires_at <= $1 RETURNING id', [nowMs])
      return rows.map((r) => r.id)
    },
    async unfinishedCount() {
      return num((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM bulk_jobs WHERE status IN ('queued', 'running')`)).rows[0]!.n)
    },
  }
}

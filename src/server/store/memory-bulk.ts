/**
 * Bulk jobs over the in-memory store (./memory.ts): the {@link BulkServiceStorage} of `createServer({ db:
 * createMemoryStore() })`. Jobs and rows are kept per owner in the bulk engine's own memory store
 * (../../bulk/memory-store.ts); credits come from the memory store's buckets through its credit functions, with each
 * job's reservation kept here. What a database gets from its transactions this gets from the store's
 * (`MemoryStoreInternals.transaction`): a job is inserted with its reservation, and finished with the closing of its
 * reservation, its usage and its bulk.completed event, all or nothing.
 */
import { createMemoryBulkStore } from '../../bulk/memory-store.js'
import type { BulkStore, MaybePromise } from '../../bulk/types.js'
import type { CreditLedger } from '../../credits.js'
import type { BulkJob } from '../../schema.js'
import type { MemoryStore, MemoryStoreInternals } from './memory.js'
import type { BulkOwner, BulkServiceStorage } from './contracts/service-storage.js'
import type { CreditReservation } from '../../accounts/types.js'

const FINAL = new Set(['completed', 'cancelled', 'failed'])

/** A reservation of an org's credits, kept until its job settles it. `jobId` null: reserved outside a job. */
interface HeldReservation extends CreditReservation {
  orgId: string
  jobId: string | null
}

/** A memory transaction cannot wait: what runs inside one must answer synchronously. */
function inline<T>(value: MaybePromise<T>): T {
  if (value instanceof Promise) throw new TypeError('bulk store: a credit operation inside a memory store transaction must be synchronous')
  return value
}

/**
 * The credit ledger of an org's bulk engine over `store`: reservations per job in `held`, taken from and given back
 * to the org's buckets by the store's `reserveCredits` and `refundCredits` (the rules of ../ledger.ts), each inside a
 * store transaction so that the reservation and the balance change are one write.
 */
function memoryBulkLedger(store: MemoryStore, tx: MemoryStoreInternals, held: HeldReservation[], orgId: string, nowMs: () => number): CreditLedger {
  const hold = (jobId: string | null, amount: number) =>
    tx.transaction(() => {
      const r = store.reserveCredits(orgId, amount, nowMs())
      if (!r) return false
      const kept: HeldReservation = { orgId, jobId, amount: r.amount, fromSubscription: r.fromSubscription, fromPurchased: r.fromPurchased, periodStart: r.periodStart }
      held.push(kept)
      tx.onRollback(() => held.splice(held.indexOf(kept), 1))
      return true
    })
  /** Gives back `part` of `r` and drops it from `held` (or shrinks it, purchased part first, when `shrink`). */
  const giveBack = (r: HeldReservation, part: number, shrink: boolean) => {
    if (part > 0) store.refundCredits(orgId, r, part, nowMs())
    const before = { ...r }
    tx.onRollback(() => {
      Object.assign(r, before)
      if (!held.includes(r)) held.push(r)
    })
    if (!shrink || part === r.amount) {
      held.splice(held.indexOf(r), 1)
      return
    }
    const fromPurchased = Math.min(part, r.fromPurchased)
    r.amount -= part
    r.fromPurchased -= fromPurchased
    r.fromSubscription -= part - fromPurchased
  }
  return {
    reserve: (amount) => amount <= 0 || hold(null, amount),
    reserveFor: (jobId, amount) => amount <= 0 || hold(jobId, amount),
    settleFor: (jobId, unused) =>
      tx.transaction(() => {
        let left = unused
        for (const r of held.filter((h) => h.orgId === orgId && h.jobId === jobId)) {
          const part = Math.min(left, r.amount)
          giveBack(r, part, false)
          left -= part
        }
      }),
    // reservations made outside a job are given back newest first
    refund: (amount) =>
      tx.transaction(() => {
        let left = amount
        for (let r = newestUnattached(); left > 0 && r; r = newestUnattached()) {
          const part = Math.min(left, r.amount)
          giveBack(r, part, true)
          left -= part
        }
      }),
    balance: () => store.balance(orgId, nowMs()),
  }
  function newestUnattached(): HeldReservation | undefined {
    return held.findLast((h) => h.orgId === orgId && h.jobId === null)
  }
}

/**
 * The bulk service's storage over the memory store `store`. Jobs live as long as the store (a second server over it
 * resumes the jobs the first left running), so its job stores say they are persistent.
 */
export function createMemoryBulkStorage(store: MemoryStore, tx: MemoryStoreInternals): BulkServiceStorage & { openReservations(): number } {
  const owners = new Map<string, { owner: BulkOwner; jobs: BulkStore }>()
  const held: HeldReservation[] = []
  const jobsOf = (owner: BulkOwner): BulkStore => {
    const key = `${owner.mode}:${owner.orgId}`
    let entry = owners.get(key)
    if (!entry) owners.set(key, (entry = { owner: { orgId: owner.orgId, mode: owner.mode }, jobs: createMemoryBulkStore() }))
    return entry.jobs
  }
  const unfinished = () => [...owners.values()].map((o) => ({ owner: o.owner, n: (o.jobs.listUnfinishedJobs() as unknown[]).length }))

  const jobStore = (owner: BulkOwner, onFinished?: (job: BulkJob, tx: unknown) => MaybePromise<void>): BulkStore => {
    const jobs = jobsOf(owner)
    return {
      persistent: true,
      insertJob: (record, rows) => jobs.insertJob(record, rows),
      // the rows are read before the job is stored: a failure while reading them leaves no job, and rolls the charge back
      insertJobCharged: (record, rows, charge) => tx.transaction(() => (inline(charge(undefined)) ? inline(jobs.insertJob(record, rows)) : null)),
      finishJob: (id, job, settle) =>
        tx.transaction(() => {
          // a job already final was settled with its final status: settling again would refund twice
          const before = inline(jobs.getJob(id))
          if (before && FINAL.has(before.job.status)) return
          inline(settle(undefined))
          if (before) {
            inline(jobs.updateJob(id, job))
            tx.onRollback(() => void jobs.updateJob(id, before.job))
          }
          if (onFinished) inline(onFinished(job, undefined))
        }),
      getJob: (id) => jobs.getJob(id),
      listJobs: (query) => jobs.listJobs(query),
      listUnfinishedJobs: () => jobs.listUnfinishedJobs(),
      updateJob: (id, job) => jobs.updateJob(id, job),
      commitRows: (id, rows, job) => jobs.commitRows(id, rows, job),
      pendingRows: (id) => jobs.pendingRows(id),
      firstPendingIndex: (id) => jobs.firstPendingIndex!(id),
      listRows: (id, query) => jobs.listRows(id, query),
      listRetryableInputs: (id) => jobs.listRetryableInputs(id),
      deleteExpired: (nowMs) => jobs.deleteExpired(nowMs),
      // no close: the jobs belong to the store, not to the engine
    }
  }

  return {
    jobStore,
    ledger: (orgId, nowMs) => memoryBulkLedger(store, tx, held, orgId, nowMs),
    // inside a transaction when called from `onFinished`: the store's own settlement joins it
    settleCredits: (orgId, lookups, nowMs) => store.settleCredits(orgId, lookups, nowMs),
    insertEvent: (event) => tx.outbox.insert(event),
    ownersWithUnfinishedJobs: () => unfinished().filter((u) => u.n > 0).map((u) => ({ ...u.owner })),
    sweepExpired: (nowMs) => [...owners.values()].flatMap((o) => inline(o.jobs.deleteExpired(nowMs))),
    unfinishedCount: () => unfinished().reduce((sum, u) => sum + u.n, 0),
    /** Reservations not closed yet (what a database keeps as rows of `bulk_reservations`). */
    openReservations: () => held.length,
  }
}

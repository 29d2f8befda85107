/**
 * Bulk jobs in the server process: one bulk engine per owner (org + key mode), each over its own view of the job tables
 * (`BulkServiceStorage.jobStore`, ./store/contracts/bulk.ts) and, for live keys, the org's credit ledger. Engines
 * start on first use and, at start, for every owner with unfinished jobs. A finished job counts usage, writes due
 * credit alerts and puts a `bulk.completed` event in the outbox.
 */
import { createBulkEngine } from '../bulk/index.js'
import type { BulkEngine, BulkListCursor, BulkRechecks } from '../bulk/types.js'
import type { LookupEnv } from '../lookup.js'
import type { Policy } from '../scoring/rules.js'
import type { Signals } from '../signals.js'
import type { BulkJob } from '../schema.js'
import { buildBulkCompletedEvent } from '../webhooks/events.js'
import { encodePageCursor, seqOfPageCursor, type PageScope } from './page-cursor.js'
import type { BulkOwner, BulkServiceStorage } from './store/contracts/service-storage.js'
/** Options of {@link createBulkService}. */
export interface BulkServiceOptions {
  /** Where jobs, rows, reservations and the outbox live (`createSqliteBulkStorage`, `createPostgresBulkStorage`). */
  storage: BulkServiceStorage
  /** The live lookup environment (its ledger is replaced per org). */
  liveEnv: LookupEnv
  /** The test-mode environment (no ledger). */
  testEnv: LookupEnv
  nowMs: () => number
  /**
   * The scoring policy of an org now (its own, else the service's): read by each row as it is scored, so a policy
   * change applies to rows scored after it (default: the environments' policy).
   */
  policyOf?: (orgId: string) => Policy
  /**
   * The allow/block lists (and velocity counter) of an owner's rows, read by each row as it is answered (default: the
   * environments' signals). The server gives each org's own lists, as single lookups have.
   */
  signalsOf?: (owner: BulkOwner) => Signals | undefined
  /** Lookups in flight per engine (default 32). */
  concurrency?: number
  /** Called after a job's completion was recorded (the server wakes the webhook pump). */
  onCompleted?: (owner: BulkOwner, job: BulkJob) => void
  /** With `--redis-url`: jobs are handed to the BullMQ bulk queue instead of running here (`./queue/bulk-queue.ts`). */
  dispatch?: (owner: BulkOwner, job: BulkJob) => void | Promise<void>
  /** Rechecks of the deferred email rows of an owner's jobs (the server's recheck service; none when absent). */
  rechecksFor?: (owner: BulkOwner) => BulkRechecks | undefined
  /** With `--redis-url`: cancels a job a worker may run (see `BulkOptions.cancelRemote`). */
  cancelRemote?: (owner: BulkOwner, id: string) => Promise<boolean>
}

/** The bulk jobs of the server. */
export interface BulkService {
  /** The engine of an owner (created on first use). */
  engineFor(owner: BulkOwner): BulkEngine
  /** Counts a job's lookups into the org's usage and writes due credit alerts (after create, cancel). */
  settle(owner: BulkOwner, lookups: number): Promise<void>
  /** Deletes every job whose results expired (7 days after creation). Returns the ids. */
  sweep(): Promise<string[]>
  /** Runs or resumes an unfinished job here (a worker of the BullMQ bulk queue); null when there is none. */
  runJob(owner: BulkOwner, id: string, onStart?: (job: BulkJob) => void): Promise<BulkJob | null>
  /** Cancels a job if this process runs it; false when it does not. */
  cancelLocal(owner: BulkOwner, id: string): Promise<boolean>
  /** Stops running a job here without finishing it (its queue lock was lost: another worker resumes it). */
  releaseLocal(owner: BulkOwner, id: string): Promise<boolean>
  /** The queued and running jobs of every owner (re-queued at worker start, so a lost message loses no job). */
  unfinished(): Promise<Array<{ owner: BulkOwner; id: string }>>
  /** Resolves once the engines of the owners with unfinished jobs at start are created (they resume those jobs). */
  readonly started: Promise<void>
  /** Stops every engine: running jobs stay `running` in the database and resume with the next service. */
  close(): Promise<void>
}

/** The job list's cursor of an owner: a page cursor of listing `bulk_jobs`, its org and key mode (no filters). */
function jobListCursor(owner: BulkOwner): BulkListCursor {
  const scope: PageScope = { listing: 'bulk_jobs', orgId: owner.orgId, mode: owner.mode, filters: {} }
  return { encode: (seq) => encodePageCursor(seq, scope), seqOf: (cursor) => seqOfPageCursor(cursor, scope) }
}

/** Lookups a finished job counts into usage: rows with a result (errors are not lookups). */
export function lookupsOf(job: BulkJob): number {
  return Math.max(0, job.processed - job.results.errors)
}

/**
 * Creates the service and resumes the jobs that were queued or running when the last process stopped.
 */
export function createBulkService(options: BulkServiceOptions): BulkService {
  const { storage, nowMs } = options
  const engines = new Map<string, BulkEngine>()
  let closed = false

  const settle = async (owner: BulkOwner, lookups: number) => {
    if (owner.mode === 'live') await storage.settleCredits(owner.orgId, lookups, nowMs())
  }

  const engineFor = (owner: BulkOwner): BulkEngine => {
    const key = `${owner.mode}:${owner.orgId}`
    let engine = engines.get(key)
    if (engine) return engine
    if (closed) throw new Error('riskcheck server: the bulk service is closed')
    const env: LookupEnv =
      owner.mode === 'test' ? { ...options.testEnv } : { ...options.liveEnv, ledger: storage.ledger(owner.orgId, nowMs) }
    const policyOf = options.policyOf
    if (policyOf) Object.defineProperty(env, 'policy', { get: () => policyOf(owner.orgId), enumerable: true })
    if (options.signalsOf) env.signals = options.signalsOf(owner)
    const { dispatch, cancelRemote } = options
    const rechecks = options.rechecksFor?.(owner)
    engine = createBulkEngine(env, {
      // Usage and the bulk.completed event commit with the final status (a cancel is settled by its route).
      store: storage.jobStore(owner, (job, tx) => {
        if (job.status === 'cancelled') return
        const event = buildBulkCompletedEvent({ orgId: owner.orgId, now: new Date(nowMs()), job, testMode: owner.mode === 'test' })
        const counted = owner.mode === 'live' ? storage.settleCredits(owner.orgId, lookupsOf(job), nowMs(), tx) : undefined
        // synchronous on SQLite (inside its transaction), a promise on PostgreSQL
        return counted instanceof Promise ? counted.then(() => storage.insertEvent(event, tx)) : storage.insertEvent(event, tx)
      }),
      ...(dispatch ? { dispatch: (job: BulkJob) => dispatch(owner, job) } : {}),
      ...(cancelRemote ? { cancelRemote: (id: string) => cancelRemote(owner, id) } : {}),
      ...(options.concurrency ? { concurrency: options.concurrency } : {}),
      ...(rechecks ? { rechecks } : {}),
      listCursor: jobListCursor(owner),
      onCompleted(job) {
        options.onCompleted?.(owner, job)
      },
    })
    engines.set(key, engine)
    return engine
  }

  const started = (async () => {
    for (const owner of await storage.ownersWithUnfinishedJobs()) if (!closed) engineFor(owner)
  })()
  started.catch(() => undefined)

  return {
    engineFor,
    settle,
    started,
    sweep: async () => storage.sweepExpired(nowMs()),
    runJob: (owner, id, onStart) => engineFor(owner).runJob(id, onStart),
    cancelLocal: (owner, id) => engineFor(owner).cancelLocal(id),
    releaseLocal: (owner, id) => engineFor(owner).releaseLocal(id),
    async unfinished() {
      const list: Array<{ owner: BulkOwner; id: string }> = []
      for (const owner of await storage.ownersWithUnfinishedJobs()) {
        for (const r of await storage.jobStore(owner).listUnfinishedJobs()) list.push({ owner, id: r.job.id })
      }
      return list
    },
    async close() {
      closed = true
      await started.catch(() => undefined)
      await Promise.all([...engines.values()].map((e) => e.close()))
      engines.clear()
    },
  }
}

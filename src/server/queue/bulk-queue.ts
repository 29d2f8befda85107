/**
 * Bulk jobs distributed by BullMQ on Redis (`--redis-url`; docs/service.md "Scaling out"). The store is the system of
 * record (job, rows, counters, credit reservation); BullMQ carries one message per job, its job id the bulk job id, and
 * one worker at a time runs it from its pending rows. A worker shutting down writes what it has done and gives the
 * message back. Why: docs/decisions.md, "Scaling out (Redis)" → "bulk distribution" and "cancel across instances".
 */
import type { Job, Queue, Worker } from 'bullmq'
import { bullmq } from '../lazy-packages.js'
import { redisConnections } from './connections.js'
import { markDependency } from '../outage.js'
import type { BulkJob } from '../../schema.js'
import type { BulkOwner } from '../store/contracts/bulk.js'

/** The BullMQ queue name of bulk jobs. */
export const BULK_QUEUE_NAME = 'bulk-jobs'

interface BulkMessage {
  id: string
  orgId: string
  mode: 'live' | 'test'
}

/** Options of {@link createBulkQueue}. */
export interface BulkQueueOptions {
  /** `--redis-url`. */
  redisUrl: string
  /** BullMQ key prefix (default `riskcheck`); tests use a unique one. */
  prefix?: string
  /**
   * Runs or resumes a job here; resolves with it when it ends or this process stops (then it is not final).
   * `onStart` gets the job as it starts here.
   */
  runJob(owner: BulkOwner, id: string, onStart?: (job: BulkJob) => void): Promise<BulkJob | null>
  /** Cancels a job if this process runs it. */
  cancelLocal(owner: BulkOwner, id: string): Promise<boolean>
  /** Stops running a job here without finishing it (called when this worker lost the job's lock). */
  releaseLocal?(owner: BulkOwner, id: string): Promise<boolean>
  /** Jobs one worker runs at once (default 2; each runs its lookups with the bulk concurrency). */
  concurrency?: number
  onError?: (err: unknown) => void
  /** Each job this worker takes and gives up, once each (the server logs them: {@link bulkJobLogLine}). */
  onJob?: (event: BulkJobEvent) => void
  /** BullMQ worker tuning (`--queue-lock-timeout`: a shorter lock hands a dead worker's job on sooner). */
  worker?: { lockDuration?: number; stalledInterval?: number }
}

/**
 * A job this worker took (`taken`: as stored when it starts here), and how it left it: `finished` (completed, failed
 * or cancelled) or `handed_back` (not final: this process stops, or it lost the job's lock; another worker resumes it).
 */
export interface BulkJobEvent {
  phase: 'taken' | 'finished' | 'handed_back'
  owner: BulkOwner
  job: BulkJob
}

/**
 * The log line of a {@link BulkJobEvent}: the job's id, org, type and counts — never its name or any input, which are
 * the customer's data.
 *
 * @example bulkJobLogLine(e).message // 'bulk job bulk_1 finished (completed): 1000 of 1000 rows, 900 approve, …'
 */
export function bulkJobLogLine(e: BulkJobEvent): { fields: Record<string, unknown>; message: string } {
  const j = e.job
  const fields = {
    bulk_job: j.id,
    org_id: e.owner.orgId,
    mode: e.owner.mode,
    type: j.type,
    status: j.status,
    unique_inputs: j.unique_inputs,
    processed: j.processed,
    ...(e.phase === 'taken' ? {} : { credits_used: j.credits_used, results: j.results }),
  }
  const rows = `${j.processed} of ${j.unique_inputs} rows`
  if (e.phase === 'taken') return { fields, message: `bulk job ${j.id} taken (${j.type}, ${e.owner.mode}): ${rows} done so far` }
  if (e.phase === 'handed_back') return { fields, message: `bulk job ${j.id} handed back at ${rows} (another worker resumes it)` }
  const r = j.results
  const counts = `${r.approve} approve, ${r.verify} verify, ${r.review} review, ${r.block} block, ${r.errors} errors, ${r.cache_hits} cache hits`
  return { fields, message: `bulk job ${j.id} finished (${j.status}): ${rows}, ${counts}, ${j.credits_used} credits` }
}

/** The bulk queue of one process. */
export interface BulkQueue {
  readonly queue: Queue
  /** Adds the message of a stored job (a no-op when it is queued already). */
  dispatch(owner: BulkOwner, job: Pick<BulkJob, 'id'>): Promise<void>
  /** See `BulkOptions.cancelRemote`: true when the message was taken off the queue before a worker started it. */
  cancelRemote(owner: BulkOwner, id: string): Promise<boolean>
  /** Starts this process's worker (idempotent). */
  startWorker(): void
  /** Jobs waiting, delayed or active (queue depth). */
  depth(): Promise<number>
  /** Closes the worker (after `stopping`, which makes the jobs it runs give their messages back), queue, connections. */
  close(options?: { force?: boolean; stopping?: Promise<unknown> }): Promise<void>
}

const isFinal = (j: BulkJob) => j.status === 'completed' || j.status === 'cancelled' || j.status === 'failed'

/**
 * Creates the queue (and, on `startWorker()`, the worker and its cancel subscription).
 *
 * @example
 * const q = createBulkQueue({ redisUrl, runJob: bulk.runJob, cancelLocal: bulk.cancelLocal })
 */
export function createBulkQueue(options: BulkQueueOptions): BulkQueue {
  const prefix = options.prefix ?? 'riskcheck'
  const onError = options.onError ?? (() => undefined)
  const channel = `${prefix}:bulk-cancel`
  const connections = redisConnections(options.redisUrl, onError)
  const connect = connections.connect
  const publisher = connect()
  const queue = new (bullmq().Queue)<BulkMessage>(BULK_QUEUE_NAME, { connection: publisher, prefix })
  // a BullMQ queue's or worker's 'error' events are its Redis connections' (../outage.ts)
  const onRedisError = (err: Error) => onError(markDependency(err, 'redis'))
  queue.on('error', onRedisError)
  let worker: Worker<BulkMessage> | null = null

  async function process(job: Job<BulkMessage>): Promise<string> {
    const { id, orgId, mode } = job.data
    const owner = { orgId, mode }
    let taken = false
    const result = await options.runJob(owner, id, (started) => {
      taken = true
      options.onJob?.({ phase: 'taken', owner, job: started })
    })
    if (result && taken) options.onJob?.({ phase: isFinal(result) ? 'finished' : 'handed_back', owner, job: result })
    if (result && !isFinal(result)) throw new Error(`bulk job ${id} stopped with this worker; another worker resumes it`)
    return result ? result.status : 'none'
  }

  return {
    queue,
    async dispatch(owner, job) {
      await queue.add(
        'run',
        { id: job.id, orgId: owner.orgId, mode: owner.mode },
        { jobId: job.id, attempts: 1000, backoff: { type: 'fixed', delay: 1000 }, removeOnComplete: true, removeOnFail: true },
      )
    },
    async cancelRemote(owner, id) {
      const job = await queue.getJob(id)
      if (!job) return true
      try {
        await job.remove()
        return true
      } catch {
        // locked: a worker runs it
        await publisher.publish(channel, JSON.stringify({ id, orgId: owner.orgId, mode: owner.mode }))
        return false
      }
    },
    startWorker() {
      if (worker) return
      const subscriber = connect()
      void subscriber.subscribe(channel).catch(onError)
      subscriber.on('message', (_ch: string, text: string) => {
        try {
          const m = JSON.parse(text) as BulkMessage
          options.cancelLocal({ orgId: m.orgId, mode: m.mode }, m.id).catch(onError)
        } catch (e) {
          onError(e)
        }
      })
      worker = new (bullmq().Worker)<BulkMessage>(BULK_QUEUE_NAME, process, {
        connection: connect(),
        prefix,
        concurrency: options.concurrency ?? 2,
        ...(options.worker?.lockDuration ? { lockDuration: options.worker.lockDuration } : {}),
        ...(options.worker?.stalledInterval ? { stalledInterval: options.worker.stalledInterval } : {}),
        maxStalledCount: 1000,
      })
      worker.on('error', onRedisError)
      // A worker that could not renew a job's lock (e.g. its event loop was blocked past the lock duration) may see
      // the job handed to another worker: it stops running it here at once, so one worker at a time writes its rows.
      worker.on('lockRenewalFailed', (ids: string[]) => {
        for (const id of ids) {
          void (async () => {
            const job = await queue.getJob(id)
            if (job && options.releaseLocal) await options.releaseLocal({ orgId: job.data.orgId, mode: job.data.mode }, id)
          })().catch(onError)
        }
      })
    },
    async depth() {
      const c = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized')
      return Object.values(c).reduce((a, b) => a + b, 0)
    },
    async close(o = {}) {
      if (worker) await Promise.all([worker.close(o.force === true), o.stopping])
      else await o.stopping
      await queue.close()
      await connections.closeAll()
    },
  }
}

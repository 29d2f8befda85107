/**
 * Bulk jobs of the server: the service over the store's bulk tables and, with `ServerOptions.queue`, the BullMQ
 * queue that spreads jobs over instances (its worker started here unless `workers: false`). Its routes are
 * ../routes/bulk.ts; ./lifecycle.ts sweeps and closes it.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Redis } from 'ioredis'
import type { LookupEnv } from '../../lookup.js'
import type { Riskcheck } from '../../riskcheck.js'
import type { BulkJob } from '../../schema.js'
import type { ServerOptions } from '../app.js'
import { createBulkService, type BulkService } from '../bulk-service.js'
import type { OrgLists } from '../org-lists.js'
import type { OrgPolicies } from '../org-policies.js'
import { bulkJobLogLine, createBulkQueue, type BulkQueue } from '../queue/bulk-queue.js'
import type { BulkOwner } from '../store/contracts/bulk.js'
import type { ServiceStorage } from '../store/contracts/service-storage.js'
import type { RecheckService } from '../recheck-service.js'
interface BulkParts {
  options: ServerOptions
  service: ServiceStorage
  rc: Riskcheck
  testEnv: LookupEnv
  nowMs: () => number
  redis: Redis | undefined
  orgPolicies: OrgPolicies
  orgLists: OrgLists
  backgroundLog: () => FastifyBaseLogger | undefined
  /** The recheck service (made after the bulk service: asked when an engine is made). */
  rechecks: () => RecheckService | undefined
}

/** The BullMQ queue of bulk jobs, running them on `bulk()` (made after it). */
function createServerBulkQueue(o: BulkParts, bulk: () => BulkService): BulkQueue | undefined {
  const q = o.options.queue
  if (!q) return undefined
  return createBulkQueue({
    redisUrl: q.redisUrl,
    prefix: q.prefix ?? 'riskcheck',
    runJob: (owner, id, onStart) => bulk().runJob(owner, id, onStart),
    cancelLocal: (owner, id) => bulk().cancelLocal(owner, id),
    releaseLocal: (owner, id) => bulk().releaseLocal(owner, id),
    onError: (err) => o.backgroundLog()?.error({ err }, 'bulk queue error'),
    onJob: (event) => {
      const line = bulkJobLogLine(event)
      o.backgroundLog()?.info(line.fields, line.message)
    },
    ...(q.worker ? { worker: q.worker } : {}),
  })
}

/** The bulk service (and its queue with `options.queue`), the queue's worker started when this instance runs one. */
export function startServerBulk(o: BulkParts): { bulk: BulkService; bulkQueue: BulkQueue | undefined } {
  let bulk: BulkService | undefined
  const bq = createServerBulkQueue(o, () => bulk as BulkService)
  const { redis } = o
  bulk = createBulkService({
    ...(bq
      ? {
          dispatch: (owner: BulkOwner, job: Pick<BulkJob, 'id'>) => {
            const sent = bq.dispatch(owner, job)
            if (redis?.status === 'ready') return sent
            // Redis is down: the job is stored and charged; its message waits in the connection's queue and is
            // added once Redis is back (or by the next worker's start), so the request is not held meanwhile
            sent.catch((err: unknown) => o.backgroundLog()?.error({ err }, 'bulk queue error'))
          },
          cancelRemote: bq.cancelRemote,
        }
      : {}),
    storage: o.service.bulk,
    liveEnv: o.rc.env,
    testEnv: o.testEnv,
    nowMs: o.nowMs,
    policyOf: (orgId) => o.orgPolicies.current(orgId),
    // each org's rows meet its own lists of the job's mode, as its single lookups do
    signalsOf: (owner) => o.orgLists.bulkSignalsOf(owner, (owner.mode === 'test' ? o.testEnv : o.rc.env).signals),
    ...(o.options.bulkConcurrency ? { concurrency: o.options.bulkConcurrency } : {}),
    rechecksFor: (owner) => {
      const rechecks = o.rechecks()
      if (!rechecks) return undefined
      // test keys never reach a mail server: nothing is deferred, a job's second pass is empty
      if (owner.mode === 'test') return { schedule: () => undefined, pending: () => 0 }
      return {
        schedule: (job, rows, secondPass) => rechecks.scheduleRows(owner, job.id, rows, o.nowMs(), secondPass),
        pending: (jobId) => o.service.rechecks.pendingForJob(jobId),
      }
    },
  })
  if (bq && o.options.queue?.workers !== false) {
    bq.startWorker()
    // Unfinished jobs get their message again (a no-op when it is queued): a lost message loses no job.
    bulk
      .unfinished()
      .then((list) => Promise.all(list.map((u) => bq.dispatch(u.owner, { id: u.id }))))
      .catch((err: unknown) => o.backgroundLog()?.error({ err }, 'bulk queue error'))
  }
  return { bulk, bulkQueue: bq }
}

/**
 * Webhook deliveries distributed by BullMQ on Redis (`--redis-url`; docs/service.md "Scaling out"). The store is the
 * system of record (each delivery a row, each attempt a line of its log); BullMQ carries one message per delivery, its
 * job id the delivery id. {@link DeliveryQueue.sweep} leases due deliveries and adds their jobs; the worker makes one
 * attempt per message. Why: docs/decisions.md, "Scaling out (Redis)" → "system of record" and "delivery sweep" and
 * "webhook retry schedule".
 */
import type { Job, Queue, Worker } from 'bullmq'
import { bullmq } from '../lazy-packages.js'
import { redisConnections } from './connections.js'
import { markDependency } from '../outage.js'
import { DEFAULT_DELIVERY_TIMEOUT_MS } from '../../webhooks/deliver.js'
import { attemptDelivery, type AttemptContext, type DeliverFunction, type DeliveryStore, type DeliveryWorkerOptions, type TickResult } from '../../webhooks/queue.js'
import { MAX_DELIVERY_ATTEMPTS, RETRY_DELAYS_MS } from '../../webhooks/schedule.js'
import { deliverWebhook } from '../../webhooks/deliver.js'

/** The BullMQ queue name of webhook deliveries. */
export const DELIVERY_QUEUE_NAME = 'webhook-deliveries'

/** Options of {@link createDeliveryQueue}. */
export interface DeliveryQueueOptions {
  /** `--redis-url`. */
  redisUrl: string
  /** BullMQ key prefix (default `riskcheck`); tests use a unique one. */
  prefix?: string
  /** The delivery store (needs `getDelivery`). */
  store: DeliveryStore
  /** The clock (default the system clock; BullMQ's delays run on it). */
  now?: () => Date
  /** The sender (default `deliverWebhook`); tests pass a fake. */
  deliver?: DeliverFunction
  allowLoopback?: boolean
  /** Per-attempt timeout (default 10 s). */
  timeoutMs?: number
  /** Deliveries one worker sends at once (default 8). */
  concurrency?: number
  /** Deliveries leased per sweep (default 500). */
  sweepLimit?: number
  /** How long a swept delivery stays leased to its job before a sweep adds it again (default 10 min). */
  leaseMs?: number
  /** The retry delays (default the documented schedule); tests scale them down. */
  retryDelaysMs?: readonly number[]
  jitterRatio?: number
  onEndpointDisabled?: DeliveryWorkerOptions['onEndpointDisabled']
  onAttempt?: DeliveryWorkerOptions['onAttempt']
  /** Store or Redis failures of the worker and the sweep. */
  onError?: (err: unknown) => void
  /** BullMQ worker tuning (`--queue-lock-timeout`: a shorter lock hands a dead worker's job on sooner). */
  worker?: { lockDuration?: number; stalledInterval?: number; maxStalledCount?: number }
}

/** The delivery queue of one process. */
export interface DeliveryQueue {
  readonly queue: Queue
  /** Leases due deliveries and adds their jobs; resolves with the number leased. */
  sweep(): Promise<number>
  /** Starts this process's BullMQ worker (idempotent). */
  startWorker(): void
  /** Jobs waiting, delayed or active (the queue depth of GET /metrics). */
  depth(): Promise<number>
  /** Closes the worker (waiting for the attempts in flight unless `force`), the queue and their connections. */
  close(force?: boolean): Promise<void>
}

/** Thrown by the job of a failed attempt with retries left: BullMQ's backoff waits `delayMs` (until the row is due). */
class RetryLater extends Error {
  constructor(
    readonly delayMs: number,
    message: string,
  ) {
    super(message)
    this.name = 'RetryLater'
  }
}

const emptyTick = (): TickResult => ({ leased: 0, succeeded: 0, retrying: 0, failed: 0, skipped: 0, disabledEndpoints: [] })

/**
 * Creates the queue (and, on `startWorker()`, the worker) over `options.store`.
 *
 * @example
 * const q = createDeliveryQueue({ redisUrl: process.env.REDIS_URL!, store: deliveries })
 * q.startWorker(); setInterval(() => void q.sweep(), 1000)
 */
export function createDeliveryQueue(options: DeliveryQueueOptions): DeliveryQueue {
  const { store } = options
  const getDelivery = store.getDelivery?.bind(store)
  if (!getDelivery) throw new TypeError('createDeliveryQueue: the delivery store has no getDelivery')
  const now = options.now ?? (() => new Date())
  const prefix = options.prefix ?? 'riskcheck'
  const delays = options.retryDelaysMs ?? RETRY_DELAYS_MS
  const leaseMs = options.leaseMs ?? 10 * 60_000
  const sweepLimit = options.sweepLimit ?? 500
  const onError = options.onError ?? (() => undefined)
  const connections = redisConnections(options.redisUrl, onError)
  const connect = connections.connect
  const queue = new (bullmq().Queue)(DELIVERY_QUEUE_NAME, { connection: connect(), prefix })
  // a BullMQ queue's or worker's 'error' events are its Redis connections' (../outage.ts)
  const onRedisError = (err: Error) => onError(markDependency(err, 'redis'))
  queue.on('error', onRedisError)
  const ctx: AttemptContext = {
    store,
    now,
    deliver: options.deliver ?? deliverWebhook,
    timeoutMs: options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS,
    allowLoopback: options.allowLoopback === true,
    options: {
      ...(options.jitterRatio ? { jitterRatio: options.jitterRatio } : {}),
      ...(options.onEndpointDisabled ? { onEndpointDisabled: options.onEndpointDisabled } : {}),
      ...(options.onAttempt ? { onAttempt: options.onAttempt } : {}),
    },
    retryDelaysMs: delays,
  }

  async function process(job: Job<{ deliveryId: string }>, token?: string): Promise<string> {
    const id = job.data.deliveryId
    const d = await getDelivery!(id)
    if (!d || d.status !== 'pending') return 'done'
    const due = d.nextAttemptAt?.getTime() ?? 0
    if (due > now().getTime()) {
      await job.moveToDelayed(due, token)
      throw new (bullmq().DelayedError)()
    }
    const result = emptyTick()
    await attemptDelivery(ctx, d, result)
    if (result.retrying > 0) {
      const after = await getDelivery!(id)
      const next = after?.nextAttemptAt?.getTime() ?? now().getTime()
      throw new RetryLater(Math.max(0, next - now().getTime()), `attempt ${d.attempts + 1} failed: ${after?.lastError ?? 'error'}`)
    }
    return result.succeeded ? 'succeeded' : result.failed ? 'failed' : 'skipped'
  }

  let worker: Worker | null = null
  // Retries of store or Redis failures (not attempts): the schedule by BullMQ's count, capped at its last delay.
  const fallbackDelay = (attemptsMade: number) => delays[Math.min(Math.max(0, attemptsMade - 1), delays.length - 1)] ?? 60_000

  return {
    queue,
    async sweep() {
      const at = now()
      const due = await store.leaseDue(at, sweepLimit, new Date(at.getTime() + leaseMs))
      if (due.length === 0) return 0
      await queue.addBulk(
        due.map((d) => ({
          name: 'deliver',
          data: { deliveryId: d.id },
          opts: {
            jobId: d.id,
            // The store decides the delivery's final failure; BullMQ's count only bounds retries of a broken store.
            attempts: MAX_DELIVERY_ATTEMPTS * 2,
            backoff: { type: 'riskcheck' },
            removeOnComplete: true,
            removeOnFail: true,
          },
        })),
      )
      return due.length
    },
    startWorker() {
      if (worker) return
      worker = new (bullmq().Worker)(DELIVERY_QUEUE_NAME, process, {
        connection: connect(),
        prefix,
        concurrency: options.concurrency ?? 8,
        ...(options.worker?.lockDuration ? { lockDuration: options.worker.lockDuration } : {}),
        ...(options.worker?.stalledInterval ? { stalledInterval: options.worker.stalledInterval } : {}),
        maxStalledCount: options.worker?.maxStalledCount ?? 10,
        settings: {
          backoffStrategy: (attemptsMade, _type, err) => (err instanceof RetryLater ? err.delayMs : fallbackDelay(attemptsMade)),
        },
      })
      worker.on('error', onRedisError)
      worker.on('failed', (_job, err) => {
        if (!(err instanceof RetryLater)) onError(err)
      })
    },
    async depth() {
      const c = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized')
      return Object.values(c).reduce((a, b) => a + b, 0)
    },
    async close(force = false) {
      if (worker) await worker.close(force)
      await queue.close()
      await connections.closeAll()
    },
  }
}

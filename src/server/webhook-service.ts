/**
 * The webhook side of the server process: the delivery store (SQLite or PostgreSQL, ./store/contracts/deliveries.ts), the
 * outbox pump and the delivery worker on a timer (every second by default), the 30-day log retention sweep, and the
 * operator notice written when an endpoint is auto-disabled (a log line plus a row in `operator_notices`, listed by
 * `riskcheck admin notices list`).
 */
import type Database from 'better-sqlite3'
import type { FastifyBaseLogger } from 'fastify'
import type { EventPayload } from '../schema.js'
import { buildPingEvent } from '../webhooks/events.js'
import {
  createDeliveryWorker,
  pruneDeliveryLog,
  type WebhookEndpointRecord,
  resendDeliveries,
  type DeliverFunction,
  type DeliveryAttemptRecord,
  type DeliveryCrashHook,
  type DeliveryStore,
  type DeliveryWorker,
  type TickResult,
} from '../webhooks/queue.js'
import { insertOutboxEvent } from './store/sqlite/outbox.js'
import { createDeliveryQueue, type DeliveryQueue, type DeliveryQueueOptions } from './queue/delivery-queue.js'
import { createSqliteDeliveryStorage, type SqliteDeliveryStore } from './store/sqlite/deliveries.js'
import { disabledEndpointLogLine } from './store/common/endpoints.js'
import type { DeliveryServiceStorage, EndpointDeliveryStore, StoredEndpoint } from './store/contracts/service-storage.js'

/** Options of {@link createWebhookService}. */
export interface WebhookServiceOptions {
  /** Where endpoints, deliveries and the outbox live (`createSqliteDeliveryStorage`, `createPostgresDeliveryStorage`). */
  storage?: DeliveryServiceStorage
  /** Instead of `storage`: the SQLite database of the server (its delivery storage is created over it). */
  db?: Database.Database
  /** The server clock (unix ms). */
  nowMs: () => number
  /** Deliveries to loopback allowed (tests, local development). Production never sets it. */
  allowLoopback: boolean
  /** Pump + delivery tick period in ms; 0 = no timer (call `runOnce`). */
  intervalMs: number
  /** The logger (asked when logging: the server's is created after the service). */
  log?: () => FastifyBaseLogger | undefined
  /** Replaces the HTTP sender (tests). */
  deliver?: DeliverFunction
  /** Deliveries sent at once (default 8). */
  concurrency?: number
  /** Per-attempt timeout (default 10 s). */
  timeoutMs?: number
  /** Called after each delivery attempt is recorded (metrics). */
  onAttempt?: (ok: boolean) => void
  /**
   * With `--redis-url`: deliveries go through BullMQ (`./queue/delivery-queue.ts`) — each round hands the due ones to
   * the queue instead of sending them here; this process sends only when `workers` is true.
   */
  queue?: Pick<DeliveryQueueOptions, 'redisUrl' | 'prefix' | 'worker' | 'retryDelaysMs' | 'onError'> & { workers: boolean }
  /** Crash tests only: called at each boundary of a delivery's life (pump and timer worker). */
  crashHook?: DeliveryCrashHook
}

/** The running webhook service; `D`: its delivery store (synchronous over SQLite's `db`). */
export interface WebhookService<D extends EndpointDeliveryStore = EndpointDeliveryStore> {
  readonly deliveries: D
  readonly worker: DeliveryWorker
  /** The BullMQ delivery queue (with `queue`). */
  readonly queue: DeliveryQueue | undefined
  /** Fans out new outbox events, then sends what is due. Resolves with the worker's tick result. */
  runOnce(): Promise<TickResult & { events: number }>
  /** Writes a ping event for the endpoint into the outbox; the next round delivers it (even to a disabled endpoint). */
  ping(endpoint: StoredEndpoint, message?: string): Promise<EventPayload>
  /** Writes an operator notice and logs it. */
  notice(orgId: string | null, subject: string, kind: string, message: string): Promise<void>
  /** Deletes delivery logs older than 30 days. */
  prune(): Promise<{ attempts: number; deliveries: number; events: number }>
  /** Starts the timer (no-op when `intervalMs` is 0 or it runs). */
  start(): void
  /** Stops the timer and waits for the running round. */
  stop(): Promise<void>
}

/** Operator actions on an endpoint shared by the CLI and tests: re-enable, resend missed deliveries, ping. */
export const webhookOperator = {
  /**
   * Re-enables an endpoint (a fresh failing window starts now). Null when there is none. Answers as the store does
   * (synchronously for SQLite's).
   */
  enable<R>(deliveries: { enableEndpoint(endpointId: string, nowMs: number): R }, endpointId: string, nowMs: number): R {
    return deliveries.enableEndpoint(endpointId, nowMs)
  },
  /** Queues again every event of the endpoint's log (since `since`) that has no succeeded or pending delivery. */
  async resend(deliveries: DeliveryStore, endpointId: string, nowMs: number, since?: Date) {
    return resendDeliveries({ store: deliveries, now: () => new Date(nowMs), endpointId, ...(since ? { since } : {}) })
  },
  /**
   * Writes a ping event for the endpoint into the outbox of a SQLite file; the server delivers it (even to a disabled
   * endpoint). A running server's {@link WebhookService.ping} does the same on any store.
   */
  ping(db: Database.Database, endpoint: StoredEndpoint, nowMs: number, message?: string) {
    const event = buildPingEvent({ orgId: endpoint.orgId, now: new Date(nowMs), endpointId: endpoint.id, ...(message ? { message } : {}) })
    insertOutboxEvent(db, event)
    return event
  },
}

const PRUNE_EVERY_MS = 60 * 60 * 1000

/**
 * The log line of one delivery attempt: ids, attempt number, outcome, HTTP status and time — not the payload, the URL
 * or the receiver's answer.
 *
 * @example deliveryLogLine(a).message // 'webhook delivery dlv_1 attempt 1: delivered (HTTP 200, 31 ms)'
 */
export function deliveryLogLine(a: DeliveryAttemptRecord): { fields: Record<string, unknown>; message: string } {
  const fields = { delivery: a.deliveryId, event: a.eventId, endpoint: a.endpointId, attempt: a.attempt, ok: a.ok, http_status: a.status, error: a.error, duration_ms: a.durationMs }
  const outcome = a.status !== null ? `HTTP ${a.status}` : (a.error ?? 'no answer')
  return { fields, message: `webhook delivery ${a.deliveryId} attempt ${a.attempt}: ${a.ok ? 'delivered' : 'failed'} (${outcome}, ${a.durationMs} ms)` }
}

/**
 * Creates the webhook service over the server's database (migration 002 applied). Call `start()` to run the timer.
 */
export function createWebhookService(options: WebhookServiceOptions & { db: Database.Database; storage?: undefined }): WebhookService<SqliteDeliveryStore>
export function createWebhookService(options: WebhookServiceOptions): WebhookService
export function createWebhookService(options: WebhookServiceOptions): WebhookService {
  const { nowMs } = options
  if (!options.storage && !options.db) throw new TypeError('createWebhookService: give `storage` (or `db`, a SQLite database)')
  const log = {
    info: (o: object, m: string) => options.log?.()?.info(o, m),
    warn: (o: object, m: string) => options.log?.()?.warn(o, m),
    error: (o: object, m: string) => options.log?.()?.error(o, m),
  }
  const now = () => new Date(nowMs())
  const storage = options.storage ?? createSqliteDeliveryStorage(options.db!, nowMs)
  const deliveries = storage.deliveries

  const notice = async (orgId: string | null, subject: string, kind: string, message: string) => {
    await deliveries.addNotice({ at: nowMs(), orgId, subject, kind, message })
    log.warn({ notice: kind, subject, org_id: orgId }, message)
  }

  // The notice row is written by the store with the delivery's last failure; only the log line (no URL) is written here.
  const onEndpointDisabled = (endpoint: WebhookEndpointRecord, at: Date) => {
    const line = disabledEndpointLogLine(endpoint, at)
    log.warn(line.fields, line.message)
  }

  // What the timer worker and the BullMQ worker share: the store, clock, sender, limits and callbacks.
  const sending = {
    store: deliveries,
    now,
    allowLoopback: options.allowLoopback,
    ...(options.deliver ? { deliver: options.deliver } : {}),
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    onAttempt: (attempt: DeliveryAttemptRecord) => {
      const line = deliveryLogLine(attempt)
      log.info(line.fields, line.message)
      options.onAttempt?.(attempt.ok)
    },
    onEndpointDisabled,
  }
  const worker = createDeliveryWorker({
    ...sending,
    onError: (err) => log.error({ err }, 'webhook delivery store error'),
    ...(options.crashHook ? { crashHook: options.crashHook } : {}),
  })
  const queue = options.queue
    ? createDeliveryQueue({ ...options.queue, ...sending, onError: options.queue.onError ?? ((err) => log.error({ err }, 'webhook queue error')) })
    : undefined
  if (queue && options.queue?.workers) queue.startWorker()
  const dispatch = async (): Promise<TickResult> => {
    const leased = queue ? await queue.sweep() : 0
    return { leased, succeeded: 0, retrying: 0, failed: 0, skipped: 0, disabledEndpoints: [] }
  }

  let running: Promise<TickResult & { events: number }> | null = null
  let lastPrune = Number.NEGATIVE_INFINITY
  const prune = () => pruneDeliveryLog({ store: deliveries, now })

  async function round(): Promise<TickResult & { events: number }> {
    const events = await storage.pumpOutbox(now, undefined, options.crashHook)
    const result = queue ? await dispatch() : await worker.tick()
    if (nowMs() - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = nowMs()
      await prune()
    }
    return { ...result, events }
  }
  const runOnce = () => {
    running ??= round().finally(() => {
      running = null
    })
    return running
  }

  let timer: NodeJS.Timeout | null = null
  let stopped = true
  const schedule = (delay: number) => {
    if (stopped) return
    timer = setTimeout(() => {
      timer = null
      runOnce().then(
        (r) => schedule(r.leased > 0 || r.events >= 500 ? 0 : options.intervalMs),
        (err: unknown) => {
          log.error({ err }, 'webhook round failed')
          schedule(options.intervalMs)
        },
      )
    }, delay)
    timer.unref?.()
  }

  return {
    deliveries,
    worker,
    queue,
    runOnce,
    async ping(endpoint, message) {
      const event = buildPingEvent({ orgId: endpoint.orgId, now: now(), endpointId: endpoint.id, ...(message ? { message } : {}) })
      await storage.insertEvent(event)
      return event
    },
    notice,
    prune,
    start() {
      if (!stopped || options.intervalMs <= 0) return
      stopped = false
      schedule(0)
    },
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = null
      if (running) await running.catch(() => undefined)
      await queue?.close()
    },
  }
}

/**
 * The delivery queue core: fan-out of an event to endpoints ({@link enqueueEvent}), resend of missed deliveries
 * ({@link resendDeliveries}), log retention ({@link pruneDeliveryLog}) and the worker ({@link createDeliveryWorker}),
 * over a {@link DeliveryStore}. A delivery's lifecycle and why it is at least once: docs/decisions.md, "Webhooks" →
 * "delivery lifecycle".
 */
import type { EventPayload } from '../schema.js'
import { buildDelivery, deliverWebhook, DEFAULT_DELIVERY_TIMEOUT_MS, type DeliverWebhookOptions, type DeliveryResult } from './deliver.js'
import { createDeliveryId, matchesSubscription } from './events.js'
import type { DeliveryAttemptRecord, DeliveryRecord, DeliveryStatus, DeliveryStore, DeliveryUpdate, WebhookEndpointRecord } from '../server/store/contracts/deliveries.js'
import { DELIVERY_LOG_RETENTION_MS, nextAttemptAt, shouldDisable } from './schedule.js'

import type { Awaitable as MaybePromise } from '../awaitable.js'

export type { MaybePromise }

export type {
  DeliveryAttemptRecord,
  DeliveryCompletion,
  DeliveryRecord,
  DeliveryStatus,
  DeliveryStore,
  DeliveryUpdate,
  WebhookEndpointRecord,
} from '../server/store/contracts/deliveries.js'

/**
 * The boundaries of a delivery's life where a process may die, in order: the outbox pump has written an event's
 * deliveries (`pump.fanned-out`) and then moved its cursor past the event (`pump.advanced`); a worker has leased due
 * deliveries (`worker.leased`), had the endpoint's answer to one (`worker.sent`) and recorded that attempt and its
 * outcome (`worker.recorded`). test/delivery-crash-points.test.ts kills a process at each one and checks that a
 * restart loses and repeats nothing but the at-least-once resend of a POST whose outcome was not recorded.
 */
export const DELIVERY_CRASH_POINTS = ['pump.fanned-out', 'pump.advanced', 'worker.leased', 'worker.sent', 'worker.recorded'] as const

/** One of {@link DELIVERY_CRASH_POINTS}. */
export type DeliveryCrashPoint = (typeof DELIVERY_CRASH_POINTS)[number]

/**
 * A test seam called right after each of {@link DELIVERY_CRASH_POINTS} (crash tests kill the process there). Unset in
 * production: one undefined check per boundary.
 */
export type DeliveryCrashHook = (point: DeliveryCrashPoint) => void

/** Options common to the queue functions. */
export interface QueueBase {
  store: DeliveryStore
  /** the clock */
  now: () => Date
  /** id generator for deliveries (default `createDeliveryId`) */
  createId?: () => string
}

function newDelivery(
  base: { id: string; eventId: string; endpoint: WebhookEndpointRecord; at: Date; resendOf: string | null },
  status: DeliveryStatus,
  lastError: string | null,
): DeliveryRecord {
  return {
    id: base.id,
    eventId: base.eventId,
    endpointId: base.endpoint.id,
    orgId: base.endpoint.orgId,
    status,
    attempts: 0,
    nextAttemptAt: status === 'pending' ? new Date(base.at.getTime()) : null,
    leaseUntil: null,
    createdAt: new Date(base.at.getTime()),
    lastAttemptAt: null,
    lastStatus: null,
    lastError,
    resendOf: base.resendOf,
  }
}

/**
 * Stores an event and creates one delivery per endpoint that receives it: for fan-out types every endpoint of the
 * event's org whose subscription matches ({@link matchesSubscription}); for `ping` only `endpointId` (required, and it
 * must belong to the org). Enabled endpoints get a pending delivery due now; disabled ones a `skipped` delivery (so a
 * resend after re-enabling can send it). Returns the deliveries created.
 *
 * @example
 * await enqueueEvent({ store, now, event: buildCreditsLowEvent({ orgId, now: now(), balance, thresholdPercent: 25, monthlyCredits }) })
 */
export async function enqueueEvent(input: QueueBase & { event: EventPayload; endpointId?: string }): Promise<DeliveryRecord[]> {
  const { store, event } = input
  const at = input.now()
  const createId = input.createId ?? createDeliveryId
  let targets: WebhookEndpointRecord[]
  if (event.type === 'ping') {
    if (!input.endpointId) throw new TypeError('enqueueEvent: a ping needs endpointId')
    const ep = await store.getEndpoint(input.endpointId)
    if (!ep || ep.orgId !== event.org_id) throw new TypeError(`enqueueEvent: no endpoint ${input.endpointId} in org ${event.org_id}`)
    targets = [ep]
  } else {
    targets = (await store.listEndpoints(event.org_id)).filter((ep) => matchesSubscription(ep.events, event.type))
  }
  await store.insertEvent(event)
  const deliveries = targets.map((endpoint) => {
    const base = { id: createId(), eventId: event.id, endpoint, at, resendOf: null }
    return endpoint.status === 'enabled' || event.type === 'ping'
      ? newDelivery(base, 'pending', null)
      : newDelivery(base, 'skipped', 'endpoint_disabled')
  })
  if (deliveries.length > 0) await store.insertDeliveries(deliveries)
  return deliveries
}

/**
 * Resends the missed deliveries of an endpoint (operator `webhook resend ENDPOINT_ID [--since ISO]`): for every
 * event of the endpoint's log since `since` that has no succeeded and no pending delivery, a new delivery (new
 * delivery id, SAME event id, `resendOf` = the latest earlier delivery) due now. Does nothing for a disabled endpoint
 * (re-enable it first) and returns the deliveries created.
 *
 * @example await resendDeliveries({ store, now, endpointId: 'we_1', since: new Date(Date.now() - 86400e3) })
 */
export async function resendDeliveries(input: QueueBase & { endpointId: string; since?: Date }): Promise<DeliveryRecord[]> {
  const { store } = input
  const endpoint = await store.getEndpoint(input.endpointId)
  if (!endpoint || endpoint.status !== 'enabled') return []
  const at = input.now()
  const createId = input.createId ?? createDeliveryId
  const filter: { endpointId: string; since?: Date } = { endpointId: endpoint.id }
  if (input.since) filter.since = input.since
  const log = await store.listDeliveries(filter)
  const byEvent = new Map<string, DeliveryRecord[]>()
  for (const d of log) {
    const list = byEvent.get(d.eventId)
    if (list) list.push(d)
    else byEvent.set(d.eventId, [d])
  }
  const created: DeliveryRecord[] = []
  for (const [eventId, list] of byEvent) {
    if (list.some((d) => d.status === 'succeeded' || d.status === 'pending')) continue
    const latest = list.reduce((a, b) => (b.createdAt.getTime() >= a.createdAt.getTime() ? b : a))
    created.push(newDelivery({ id: createId(), eventId, endpoint, at, resendOf: latest.id }, 'pending', null))
  }
  if (created.length > 0) await store.insertDeliveries(created)
  return created
}

/**
 * The retention sweep: deletes delivery-log entries older than 30 days (docs/service.md: delivery logs are kept 30 days).
 *
 * @example setInterval(() => pruneDeliveryLog({ store, now: () => new Date() }), 3600e3)
 */
export async function pruneDeliveryLog(input: { store: DeliveryStore; now: () => Date; retentionMs?: number }) {
  const cutoff = new Date(input.now().getTime() - (input.retentionMs ?? DELIVERY_LOG_RETENTION_MS))
  return input.store.pruneBefore(cutoff)
}

/** Sends one built delivery; defaults to {@link deliverWebhook}. Must not throw (a throw counts as a `network` failure). */
export type DeliverFunction = (request: DeliverWebhookOptions) => Promise<DeliveryResult>

/** Options of {@link createDeliveryWorker}. */
export interface DeliveryWorkerOptions {
  store: DeliveryStore
  /** the clock (a fake one in tests) */
  now: () => Date
  /** the sender (default {@link deliverWebhook}); tests pass a fake */
  deliver?: DeliverFunction
  /** called once when an endpoint is auto-disabled: log an operator notice / email owners */
  onEndpointDisabled?: (endpoint: WebhookEndpointRecord, at: Date) => void | Promise<void>
  /** called after each attempt is recorded (metrics, logs) */
  onAttempt?: (attempt: DeliveryAttemptRecord, delivery: DeliveryRecord) => void
  /** deliveries sent at the same time (default 8) */
  concurrency?: number
  /** deliveries leased per tick (default 4 × concurrency) */
  batchSize?: number
  /** per-attempt timeout (default 10,000 ms) */
  timeoutMs?: number
  /** tests / local development only (`--unsafe-allow-loopback-webhooks`) */
  allowLoopback?: boolean
  /** how long a lease holds beyond the timeout before another worker may retry (default 60,000 ms) */
  leaseGraceMs?: number
  /** retry jitter fraction (default 0; e.g. 0.2 for ±20 %) */
  jitterRatio?: number
  /** reported by `tick()` through `onError` instead of throwing: store failures */
  onError?: (err: unknown) => void
  /** crash tests only: called at each boundary ({@link DeliveryCrashHook}) */
  crashHook?: DeliveryCrashHook
}

/** What one `tick()` did. */
export interface TickResult {
  leased: number
  succeeded: number
  /** failed attempts with a retry scheduled */
  retrying: number
  /** deliveries that failed their last attempt */
  failed: number
  skipped: number
  /** endpoints auto-disabled in this tick */
  disabledEndpoints: string[]
}

/** A delivery worker (see {@link createDeliveryWorker}). */
export interface DeliveryWorker {
  /** Leases due deliveries and sends them (bounded concurrency); resolves when all are recorded. Overlapping calls share one run. */
  tick(): Promise<TickResult>
  /** Runs `tick()` every `intervalMs` (default 1,000 ms), at once again when a tick leased a full batch. */
  start(intervalMs?: number): void
  /** Stops the loop and waits for the running tick. */
  stop(): Promise<void>
}

/** What {@link attemptDelivery} needs: the store, clock and sender, and the worker options it reads. */
export interface AttemptContext {
  store: DeliveryStore
  now: () => Date
  deliver: DeliverFunction
  timeoutMs: number
  allowLoopback: boolean
  options: Pick<DeliveryWorkerOptions, 'jitterRatio' | 'onEndpointDisabled' | 'onAttempt' | 'crashHook'>
  /** The retry delays (default the documented schedule of ./schedule.ts; tests scale it down). */
  retryDelaysMs?: readonly number[]
}

async function skipDelivery(store: DeliveryStore, d: DeliveryRecord, reason: string): Promise<void> {
  await store.completeDelivery(
    d.id,
    {
      status: 'skipped',
      attempts: d.attempts,
      nextAttemptAt: null,
      lastAttemptAt: d.lastAttemptAt,
      lastStatus: d.lastStatus,
      lastError: reason,
    },
    null,
  )
}

/**
 * One attempt of a delivery the caller holds (leased by the timer worker, or the job of the BullMQ worker in
 * `src/server/queue/`): skip it (no attempt) when the endpoint is gone, or disabled and the event is not a ping;
 * otherwise sign and send it, append the attempt, and finish it or schedule the next attempt; disable the endpoint
 * when the last retry failed and nothing succeeded for a day. Counts the outcome into `result`.
 */
export async function attemptDelivery(ctx: AttemptContext, d: DeliveryRecord, result: TickResult): Promise<void> {
  const { store, now, deliver, timeoutMs, allowLoopback, options } = ctx
  const jitter = { ...(options.jitterRatio ? { jitterRatio: options.jitterRatio } : {}), ...(ctx.retryDelaysMs ? { delaysMs: ctx.retryDelaysMs } : {}) }
  const [endpoint, event] = await Promise.all([store.getEndpoint(d.endpointId), store.getEvent(d.eventId)])
  if (!endpoint) {
    await skipDelivery(store, d, 'endpoint_deleted')
    result.skipped++
    return
  }
  if (!event) {
    await skipDelivery(store, d, 'event_missing')
    result.skipped++
    return
  }
  if (endpoint.status !== 'enabled' && event.type !== 'ping') {
    await skipDelivery(store, d, 'endpoint_disabled')
    result.skipped++
    return
  }
  const at = now()
  const request = buildDelivery(event, endpoint, { deliveryId: d.id, now: at })
  let res: DeliveryResult
  try {
    res = await deliver({ url: endpoint.url, body: request.body, headers: request.headers, timeoutMs, allowLoopback })
  } catch (err) {
    res = {
      ok: false,
      status: null,
      durationMs: 0,
      responseBody: '',
      error: 'network',
      errorDetail: err instanceof Error ? err.message : String(err),
      address: null,
    }
  }
  options.crashHook?.('worker.sent')
  const ended = now()
  const attemptNo = d.attempts + 1
  const attempt: DeliveryAttemptRecord = {
    deliveryId: d.id,
    eventId: d.eventId,
    endpointId: d.endpointId,
    attempt: attemptNo,
    at,
    ok: res.ok,
    status: res.status,
    durationMs: res.durationMs,
    responseBody: res.responseBody,
    error: res.error,
    errorDetail: res.errorDetail,
  }
  const base = { attempts: attemptNo, lastAttemptAt: at, lastStatus: res.status, lastError: res.error }
  if (res.ok) {
    await store.completeDelivery(d.id, { ...base, status: 'succeeded', nextAttemptAt: null, endpointSuccessAt: ended }, attempt)
    options.crashHook?.('worker.recorded')
    result.succeeded++
  } else {
    const next = nextAttemptAt(attemptNo, ended, jitter)
    if (next) {
      await store.completeDelivery(d.id, { ...base, status: 'pending', nextAttemptAt: next }, attempt)
      options.crashHook?.('worker.recorded')
      result.retrying++
    } else {
      const fresh = await store.getEndpoint(endpoint.id)
      const disable =
        fresh !== null &&
        fresh.status === 'enabled' &&
        shouldDisable({
          lastAttemptFailedFinal: true,
          lastSuccessAt: fresh.lastSuccessAt,
          endpointCreatedAt: fresh.createdAt,
          enabledAt: fresh.enabledAt,
          now: ended,
        })
      const update: DeliveryUpdate = { ...base, status: 'failed', nextAttemptAt: null, ...(disable ? { disableEndpoint: { reason: 'failing', at: ended } } : {}) }
      const done = await store.completeDelivery(d.id, update, attempt)
      options.crashHook?.('worker.recorded')
      result.failed++
      if (done?.endpointDisabled && fresh) {
        result.disabledEndpoints.push(fresh.id)
        const disabled = (await store.getEndpoint(fresh.id)) ?? { ...fresh, status: 'disabled', disabledReason: 'failing' }
        await options.onEndpointDisabled?.(disabled, ended)
      }
    }
  }
  options.onAttempt?.(attempt, d)
}

/**
 * The worker the server runs (one per process; processes may share a store thanks to leases). Each leased delivery is
 * skipped when its endpoint is gone (or disabled, unless a ping), else built and signed at send time, sent, logged, and
 * finished or rescheduled; an endpoint failing for a day is disabled (docs/decisions.md, "Webhooks" → "delivery
 * lifecycle" and "auto-disable").
 *
 * @example
 * createDeliveryWorker({ store, now: () => new Date(), onEndpointDisabled: (ep) => log.warn(ep.id) }).start()
 */
export function createDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const { store, now } = options
  const deliver: DeliverFunction = options.deliver ?? deliverWebhook
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 8))
  const batchSize = Math.max(1, Math.floor(options.batchSize ?? concurrency * 4))
  const timeoutMs = options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS
  const leaseGraceMs = options.leaseGraceMs ?? 60_000
  const allowLoopback = options.allowLoopback === true

  let running: Promise<TickResult> | null = null
  let timer: NodeJS.Timeout | null = null
  let stopped = true

  const ctx: AttemptContext = { store, now, deliver, timeoutMs, allowLoopback, options }
  const processOne = (d: DeliveryRecord, result: TickResult) => attemptDelivery(ctx, d, result)

  async function runTick(): Promise<TickResult> {
    const result: TickResult = { leased: 0, succeeded: 0, retrying: 0, failed: 0, skipped: 0, disabledEndpoints: [] }
    const at = now()
    const leased = await store.leaseDue(at, batchSize, new Date(at.getTime() + timeoutMs + leaseGraceMs))
    result.leased = leased.length
    if (leased.length > 0) options.crashHook?.('worker.leased')
    let next = 0
    const lane = async (): Promise<void> => {
      while (next < leased.length) {
        const d = leased[next++] as DeliveryRecord
        try {
          await processOne(d, result)
        } catch (err) {
          // A store failure: the lease expires and the delivery is tried again later.
          options.onError?.(err)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, leased.length) }, lane))
    return result
  }

  function tick(): Promise<TickResult> {
    if (!running) {
      running = runTick().finally(() => {
        running = null
      })
    }
    return running
  }

  function schedule(delay: number, intervalMs: number): void {
    if (stopped) return
    timer = setTimeout(() => {
      timer = null
      tick().then(
        (r) => schedule(r.leased >= batchSize ? 0 : intervalMs, intervalMs),
        (err: unknown) => {
          options.onError?.(err)
          schedule(intervalMs, intervalMs)
        },
      )
    }, delay)
    timer.unref?.()
  }

  return {
    tick,
    start(intervalMs = 1000) {
      if (!stopped) return
      stopped = false
      schedule(0, intervalMs)
    },
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = null
      if (running) await running.catch(() => undefined)
    },
  }
}

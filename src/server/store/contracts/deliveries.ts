/**
 * Webhook storage contracts: the delivery queue's {@link DeliveryStore} with its records, and what the server's routes
 * and webhook service need beyond it ({@link EndpointDeliveryStore}, {@link DeliveryServiceStorage}). Guarantees:
 * docs/decisions.md, "Storage engines".
 */
import type { Awaitable } from '../../../awaitable.js'
import type { EventPayload } from '../../../schema.js'
import type { WebhookFormat } from '../../../webhooks/format.js'
import type { DeliveryCrashHook } from '../../../webhooks/queue.js'

/** An endpoint as the queue needs it (the server's row, mapped). */
export interface WebhookEndpointRecord {
  id: string
  orgId: string
  /** the normalised URL (validateWebhookUrl(...).url.href) */
  url: string
  format: WebhookFormat
  /** the CURRENT `whsec_` secret; rotation replaces it and queued deliveries are signed with the new one */
  secret: string
  /** subscribed event types, or ['*'] */
  events: string[]
  status: 'enabled' | 'disabled'
  /** `failing` when auto-disabled; null when enabled */
  disabledReason: string | null
  createdAt: Date
  /** when an operator last re-enabled it (starts a fresh failing window); null if never */
  enabledAt: Date | null
  /** the last successful delivery to it; null if none */
  lastSuccessAt: Date | null
}

/** State of a delivery (see the module comment). */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'skipped'

/** One event × one endpoint. */
export interface DeliveryRecord {
  /** `dlv_…`; sent as SVC-Delivery-Id */
  id: string
  /** the event (sent as SVC-Event-Id); a resend keeps it */
  eventId: string
  endpointId: string
  orgId: string
  status: DeliveryStatus
  /** attempts made so far (0–11) */
  attempts: number
  /** when the next attempt is due (pending only) */
  nextAttemptAt: Date | null
  /** a worker holds it until then (pending only); null when not leased */
  leaseUntil: Date | null
  createdAt: Date
  lastAttemptAt: Date | null
  /** HTTP status of the last attempt, null when none arrived */
  lastStatus: number | null
  /** error code of the last attempt (DeliveryError) or why it was skipped (`endpoint_disabled`, `endpoint_deleted`, `event_missing`) */
  lastError: string | null
  /** the delivery this one re-sends, if any */
  resendOf: string | null
}

/** One line of the delivery log: an attempt. Kept 30 days. */
export interface DeliveryAttemptRecord {
  deliveryId: string
  eventId: string
  endpointId: string
  /** 1-based attempt number */
  attempt: number
  /** when the attempt started */
  at: Date
  ok: boolean
  /** HTTP status, null when no response */
  status: number | null
  durationMs: number
  /** the response body, truncated (4 KiB) */
  responseBody: string
  /** DeliveryError code, null on success */
  error: string | null
  errorDetail: string | null
}

/** The new state of a delivery after an attempt (or a skip). Completing also releases the lease. */
export interface DeliveryUpdate {
  status: DeliveryStatus
  attempts: number
  nextAttemptAt: Date | null
  lastAttemptAt: Date | null
  lastStatus: number | null
  lastError: string | null
  /** A success: the endpoint's `lastSuccessAt` becomes this time (if later) in the same write. */
  endpointSuccessAt?: Date
  /**
   * A last failure that meets the auto-disable rule: the endpoint, if still enabled, is disabled with this reason in
   * the same write (a store may record its operator notice there too).
   */
  disableEndpoint?: { reason: 'failing'; at: Date }
}

/** What {@link DeliveryStore.completeDelivery} did beyond the delivery: whether it disabled the endpoint. */
export interface DeliveryCompletion {
  endpointDisabled: boolean
}

/**
 * Persistence the queue (../../../webhooks/queue.ts) needs. Methods may be sync or async. SQLite sketch:
 * ```sql
 * webhook_events(id PRIMARY KEY, org_id, type, created, payload_json, stored_at)
 * webhook_deliveries(id PRIMARY KEY, event_id, endpoint_id, org_id, status, attempts, next_attempt_at, lease_until,
 *                    created_at, last_attempt_at, last_status, last_error, resend_of)
 *   INDEX (status, next_attempt_at)  INDEX (endpoint_id, created_at)
 * webhook_attempts(delivery_id, attempt, event_id, endpoint_id, at, ok, status, duration_ms, response_body, error,
 *                  error_detail, PRIMARY KEY (delivery_id, attempt))
 * -- leaseDue, in one transaction:
 * UPDATE webhook_deliveries SET lease_until = :leaseUntil WHERE id IN (SELECT id FROM webhook_deliveries
 *   WHERE status = 'pending' AND next_attempt_at <= :now AND (lease_until IS NULL OR lease_until <= :now)
 *   ORDER BY next_attempt_at LIMIT :limit) RETURNING *
 * ```
 */
export interface DeliveryStore {
  /** Stores an event payload (idempotent by id). */
  insertEvent(event: EventPayload): Awaitable<void>
  getEvent(eventId: string): Awaitable<EventPayload | null>
  /** The org's endpoints (enabled and disabled) for fan-out. */
  listEndpoints(orgId: string): Awaitable<WebhookEndpointRecord[]>
  /** One endpoint with its CURRENT secret, or null when deleted. */
  getEndpoint(endpointId: string): Awaitable<WebhookEndpointRecord | null>
  insertDeliveries(deliveries: DeliveryRecord[]): Awaitable<void>
  /**
   * Atomically takes up to `limit` deliveries that are pending, due (`nextAttemptAt <= now`) and not leased (or whose
   * lease expired), oldest due first, and sets their `leaseUntil`. Returns them as they were before the lease.
   */
  leaseDue(now: Date, limit: number, leaseUntil: Date): Awaitable<DeliveryRecord[]>
  /**
   * Applies `update`, clears the lease, appends `attempt` to the log when given (null for a skip), and applies the
   * update's endpoint changes (last success, auto-disable) — all in one write, so a crash cannot record an outcome
   * without its effect on the endpoint.
   */
  completeDelivery(deliveryId: string, update: DeliveryUpdate, attempt: DeliveryAttemptRecord | null): Awaitable<DeliveryCompletion | void>
  /**
   * One delivery by id, or null. Needed by the BullMQ delivery worker (`src/server/queue/delivery-queue.ts`), whose
   * jobs carry only the delivery id; the timer worker does not use it.
   */
  getDelivery?(deliveryId: string): Awaitable<DeliveryRecord | null>
  /** Deliveries of an endpoint created at or after `since` (all when omitted), oldest first. */
  listDeliveries(filter: { endpointId: string; since?: Date }): Awaitable<DeliveryRecord[]>
  /**
   * Deletes attempts older than `cutoff`, finished deliveries created before it, and events no delivery refers to
   * any more. Returns counts.
   */
  pruneBefore(cutoff: Date): Awaitable<{ attempts: number; deliveries: number; events: number }>
}

/** An endpoint as the routes see it. */
export interface StoredEndpoint extends WebhookEndpointRecord {
  description: string | null
}

/** Fields of a new endpoint. */
export interface NewEndpointInput {
  orgId: string
  url: string
  description: string | null
  events: string[]
  format: WebhookFormat
  secret: string
}

/** An operator notice (e.g. an endpoint auto-disabled). */
export interface OperatorNotice {
  id: number
  at: number
  orgId: string | null
  subject: string
  kind: string
  message: string
}

/**
 * The webhook queue's {@link DeliveryStore} plus what the routes, the dashboard and operators need: endpoints
 * (create, list, count, rotate the secret, delete, re-enable), operator notices and the attempt log.
 */
export interface EndpointDeliveryStore extends DeliveryStore {
  getDelivery(deliveryId: string): Awaitable<DeliveryRecord | null>
  /**
   * Creates an endpoint. With `maxPerOrg`: throws 400 INVALID_REQUEST when the org has that many already, counted and
   * inserted in one transaction (serialised per org), so concurrent creations cannot pass the limit together.
   */
  createEndpoint(input: NewEndpointInput, nowMs: number, maxPerOrg?: number): Awaitable<StoredEndpoint>
  /** Endpoints of an org, oldest first. */
  listOrgEndpoints(orgId: string): Awaitable<StoredEndpoint[]>
  countEndpoints(orgId: string): Awaitable<number>
  getStoredEndpoint(endpointId: string): Awaitable<StoredEndpoint | null>
  /** Replaces the secret; null when there is no such endpoint (in `orgId` when given). */
  rotateSecret(endpointId: string, secret: string, orgId?: string): Awaitable<StoredEndpoint | null>
  /** Deletes an endpoint; false when there is none (in `orgId` when given). Its queued deliveries are skipped. */
  deleteEndpoint(endpointId: string, orgId?: string): Awaitable<boolean>
  /** Operator re-enable: enabled, reason cleared, a fresh failing window from `nowMs`. */
  enableEndpoint(endpointId: string, nowMs: number): Awaitable<StoredEndpoint | null>
  addNotice(notice: Omit<OperatorNotice, 'id'>): Awaitable<void>
  /** Notices, newest first. */
  listNotices(limit?: number): Awaitable<OperatorNotice[]>
  /** The attempt log of an endpoint, newest first. */
  listAttempts(endpointId: string, limit?: number): Awaitable<DeliveryAttemptRecord[]>
}

/** The storage of the webhook service. */
export interface DeliveryServiceStorage {
  /** Endpoints, deliveries (`leaseDue` is the claim: one worker per delivery until its lease expires), the log. */
  readonly deliveries: EndpointDeliveryStore
  /** Writes an event (a ping) into the outbox; a repeated id is ignored. */
  insertEvent(event: EventPayload): Awaitable<void>
  /**
   * Fans out up to `limit` outbox events written since the last pump, oldest first — one delivery per subscribed
   * endpoint, exactly once however often and wherever it runs — and moves the pump's cursor past them. Returns how
   * many events were taken.
   */
  pumpOutbox(now: () => Date, limit?: number, crashHook?: DeliveryCrashHook): Promise<number>
  /** Deliveries pending (the backlog of GET /metrics). */
  pendingCount(): Awaitable<number>
}

/**
 * What the server's bulk service (../bulk-service.ts) and webhook service (../webhook-service.ts) need of a database,
 * beyond the core {@link Store}: the bulk jobs with their credit reservations, the event outbox, and the webhook
 * endpoints and delivery queue. SQLite implements it over the server's one file (./bulk-store.ts,
 * ./delivery-store.ts); PostgreSQL over a pool shared by many server processes (./postgres/bulk.ts,
 * ./postgres/deliveries.ts); the memory store over its maps and outbox (./memory-bulk.ts, ./memory-deliveries.ts).
 * One contract suite per seam (test/store-contract/) runs against all three.
 *
 * Guarantees every implementation gives (the contract suites check them):
 * - A bulk job and its credit reservation are written in ONE transaction (`BulkStore.insertJobCharged` running the
 *   ledger's `reserveFor`), and the reservation is closed — unused credits given back — in ONE transaction with the
 *   job's final status (`BulkStore.finishJob` running `settleFor`): a crash can neither keep credits without a job,
 *   nor refund twice, nor refund out of another job's reservation.
 * - A finished job's usage and its bulk.completed event are written in that same final transaction (`onFinished` of
 *   {@link BulkServiceStorage.jobStore}), so a crash cannot finish a job without them, nor write them twice.
 * - The outbox pump creates at most one first delivery per event and subscribed endpoint, however often it runs
 *   and however many processes run it.
 * - A delivery's outcome, its attempt, the endpoint's last success and an auto-disable (with its operator notice)
 *   are one write (`completeDelivery`).
 * - A delivery is held by one worker at a time (a lease); a lease that expires (its worker died) lets another worker
 *   take the delivery.
 *
 * Methods may be synchronous (SQLite, memory) or return promises (PostgreSQL); callers always `await`.
 */
import type { BulkStore } from '../../bulk/types.js'
import type { CreditLedger } from '../../credits.js'
import type { BulkJob, EventPayload } from '../../schema.js'
import type { DeliveryAttemptRecord, DeliveryCrashHook, DeliveryRecord, DeliveryStore, MaybePromise } from '../../webhooks/queue.js'
import type { WebhookFormat } from '../../webhooks/format.js'
import type { WebhookEndpointRecord } from '../../webhooks/queue.js'

/** A value or a promise of it. */
export type Awaitable<T> = MaybePromise<T>

/** Who owns the jobs of one bulk store view: an org, in one key mode (test jobs are never billed). */
export interface BulkOwner {
  orgId: string
  mode: 'live' | 'test'
}

/** The storage of the bulk service. */
export interface BulkServiceStorage {
  /**
   * The job store of one owner: sees (lists, resumes, sweeps) only that owner's jobs. It implements
   * `insertJobCharged` and `finishJob`, whose transactions run the {@link ledger}'s `reserveFor` and `settleFor`;
   * `onFinished` runs in `finishJob`'s transaction too (`tx`, as for the ledger), once per job, after the final
   * status is written. A synchronous store needs a synchronous `onFinished`.
   */
  jobStore(owner: BulkOwner, onFinished?: (job: BulkJob, tx: unknown) => MaybePromise<void>): BulkStore
  /**
   * The credit ledger of an org's live bulk engine: reservations are kept per job in the database (they survive a
   * restart, so a resumed job refunds exactly what it did not use) and taken from / given back to the org's
   * buckets (subscription first; purchased first when given back).
   */
  ledger(orgId: string, nowMs: () => number): CreditLedger
  /**
   * Counts `lookups` into the org's usage and writes the credit alerts its balance calls for (the core store's
   * settlement), inside the transaction `tx` of `onFinished` when given.
   */
  settleCredits(orgId: string, lookups: number, nowMs: number, tx?: unknown): Awaitable<void>
  /** Writes an event (bulk.completed) into the outbox, inside `tx` when given; a repeated id is ignored. */
  insertEvent(event: EventPayload, tx?: unknown): Awaitable<void>
  /** Owners with queued or running jobs: the engines to start (or the jobs to queue again) at start. */
  ownersWithUnfinishedJobs(): Awaitable<BulkOwner[]>
  /** Deletes every job (any owner) whose results expired (`expires_at <= nowMs`), with its rows. Returns the ids. */
  sweepExpired(nowMs: number): Awaitable<string[]>
  /** Jobs queued or running, all owners (the queue depth of GET /metrics). */
  unfinishedCount(): Awaitable<number>
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
  createEndpoint(input: NewEndpointInput, nowMs: number): Awaitable<StoredEndpoint>
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

/** The two storages a server runs its bulk and webhook services on. */
export interface ServiceStorage {
  bulk: BulkServiceStorage
  webhooks: DeliveryServiceStorage
}

/**
 * Webhooks on SQLite (tables of migration 002): the queue's {@link DeliveryStore}, endpoint management for the routes
 * and operator commands, and the operator notices. Why deliveries live in the database and fan-out is idempotent:
 * docs/decisions.md, "Storage engines" → "SQLite tables".
 */
import type Database from 'better-sqlite3'
import type { EventPayload } from '../../../schema.js'
import type { DeliveryAttemptRecord, DeliveryRecord, DeliveryStore, DeliveryUpdate, WebhookEndpointRecord } from '../../../webhooks/queue.js'
import { insertOutboxEvent, pumpOutbox } from './outbox.js'
import type { DeliveryServiceStorage, EndpointDeliveryStore, NewEndpointInput, OperatorNotice, StoredEndpoint } from '../contracts/deliveries.js'
import { disabledEndpointNotice, endpointLimitError, newEndpointId } from '../common/endpoints.js'
import { toAttempt, toDelivery, toEndpoint, type AttemptRow, type DeliveryRow, type EndpointRow } from '../common/record-rows.js'

export type { NewEndpointInput, OperatorNotice, StoredEndpoint } from '../contracts/deliveries.js'

/** The SQLite delivery store plus endpoint management: {@link EndpointDeliveryStore}, synchronous. */
export interface SqliteDeliveryStore extends EndpointDeliveryStore {
  getDelivery(deliveryId: string): DeliveryRecord | null
  createEndpoint(input: NewEndpointInput, nowMs: number, maxPerOrg?: number): StoredEndpoint
  /** Endpoints of an org, oldest first. */
  listOrgEndpoints(orgId: string): StoredEndpoint[]
  countEndpoints(orgId: string): number
  getStoredEndpoint(endpointId: string): StoredEndpoint | null
  /** Replaces the secret; null when there is no such endpoint (in `orgId` when given). */
  rotateSecret(endpointId: string, secret: string, orgId?: string): StoredEndpoint | null
  /** Deletes an endpoint; false when there is none (in `orgId` when given). Its queued deliveries are skipped. */
  deleteEndpoint(endpointId: string, orgId?: string): boolean
  /** Operator re-enable: enabled, reason cleared, a fresh failing window from `nowMs`. */
  enableEndpoint(endpointId: string, nowMs: number): StoredEndpoint | null
  addNotice(notice: Omit<OperatorNotice, 'id'>): void
  listNotices(limit?: number): OperatorNotice[]
  /** The attempt log of an endpoint, newest first. */
  listAttempts(endpointId: string, limit?: number): DeliveryAttemptRecord[]
}

const ms = (d: Date | null): number | null => (d === null ? null : d.getTime())

/** Options of {@link createSqliteDeliveryStore}. */
export interface SqliteDeliveryStoreOptions {
  /**
   * The operator notice of an endpoint auto-disabled at `at`, written in the transaction that disables it (with the
   * delivery's last failure), so a crash cannot disable an endpoint without telling the operator.
   */
  disabledNotice?: (endpoint: StoredEndpoint, at: Date) => Omit<OperatorNotice, 'id'>
}

/** The statements of the delivery store over the webhook tables. */
function deliveryStatements(db: Database.Database) {
  return {
    insertEvent: db.prepare('INSERT OR IGNORE INTO webhook_events (id, org_id, type, created, payload, stored_at) VALUES (?, ?, ?, ?, ?, ?)'),
    event: db.prepare('SELECT payload FROM webhook_events WHERE id = ?'),
    endpoints: db.prepare('SELECT * FROM webhook_endpoints WHERE org_id = ? ORDER BY created_at, id'),
    endpoint: db.prepare('SELECT * FROM webhook_endpoints WHERE id = ?'),
    count: db.prepare('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE org_id = ?'),
    insertEndpoint: db.prepare(
      `INSERT INTO webhook_endpoints (id, org_id, url, description, events, format, secret, status, disabled_reason, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'enabled', NULL, ?)`,
    ),
    rotate: db.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?'),
    deleteEndpoint: db.prepare('DELETE FROM webhook_endpoints WHERE id = ?'),
    enable: db.prepare(`UPDATE webhook_endpoints SET status = 'enabled', disabled_reason = NULL, enabled_at = ? WHERE id = ?`),
    insertDelivery: db.prepare(
      `INSERT OR IGNORE INTO webhook_deliveries (id, event_id, endpoint_id, org_id, status, attempts, next_attempt_at, lease_until,
         created_at, last_attempt_at, last_status, last_error, resend_of)
       VALUES (@id, @event_id, @endpoint_id, @org_id, @status, @attempts, @next_attempt_at, @lease_until, @created_at,
         @last_attempt_at, @last_status, @last_error, @resend_of)`,
    ),
    due: db.prepare(
      `SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
       ORDER BY next_attempt_at LIMIT ?`,
    ),
    lease: db.prepare('UPDATE webhook_deliveries SET lease_until = ? WHERE id = ?'),
    delivery: db.prepare('SELECT * FROM webhook_deliveries WHERE id = ?'),
    complete: db.prepare(
      `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?, last_status = ?,
         last_error = ?, lease_until = NULL WHERE id = ?`,
    ),
    insertAttempt: db.prepare(
      `INSERT OR REPLACE INTO webhook_attempts (delivery_id, attempt, event_id, endpoint_id, at, ok, status, duration_ms,
         response_body, error, error_detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    endpointOf: db.prepare('SELECT endpoint_id FROM webhook_deliveries WHERE id = ?').pluck(),
    success: db.prepare(
      'UPDATE webhook_endpoints SET last_success_at = ? WHERE id = ? AND (last_success_at IS NULL OR last_success_at < ?)',
    ),
    disable: db.prepare(`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = ? WHERE id = ? AND status = 'enabled'`),
    deliveries: db.prepare('SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND created_at >= ? ORDER BY created_at, rowid'),
    pruneAttempts: db.prepare('DELETE FROM webhook_attempts WHERE at < ?'),
    pruneDeliveries: db.prepare(`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ?`),
    pruneEvents: db.prepare('DELETE FROM webhook_events WHERE id NOT IN (SELECT event_id FROM webhook_deliveries) AND stored_at < ?'),
    insertNotice: db.prepare('INSERT INTO operator_notices (at, org_id, subject, kind, message) VALUES (?, ?, ?, ?, ?)'),
    notices: db.prepare('SELECT id, at, org_id, subject, kind, message FROM operator_notices ORDER BY id DESC LIMIT ?'),
    attempts: db.prepare('SELECT * FROM webhook_attempts WHERE endpoint_id = ? ORDER BY at DESC, attempt DESC LIMIT ?'),
  }
}

/**
 * The delivery store over `db` (a store opened by `createSqliteStore`). `now` stamps stored events.
 *
 * @example
 * const deliveries = createSqliteDeliveryStore(store.db)
 * const worker = createDeliveryWorker({ store: deliveries, now: () => new Date() })
 */
export function createSqliteDeliveryStore(
  db: Database.Database,
  now: () => number = Date.now,
  options: SqliteDeliveryStoreOptions = {},
): SqliteDeliveryStore {
  const q = deliveryStatements(db)

  const leaseTx = db.transaction((nowMs: number, limit: number, until: number): DeliveryRecord[] => {
    const rows = q.due.all(nowMs, nowMs, limit) as DeliveryRow[]
    for (const r of rows) q.lease.run(until, r.id)
    return rows.map(toDelivery)
  })
  const completeTx = db.transaction((id: string, u: DeliveryUpdate, a: DeliveryAttemptRecord | null): { endpointDisabled: boolean } => {
    q.complete.run(u.status, u.attempts, ms(u.nextAttemptAt), ms(u.lastAttemptAt), u.lastStatus, u.lastError, id)
    if (a) {
      q.insertAttempt.run(
        a.deliveryId,
        a.attempt,
        a.eventId,
        a.endpointId,
        a.at.getTime(),
        a.ok ? 1 : 0,
        a.status,
        Math.max(0, Math.round(a.durationMs)),
        a.responseBody,
        a.error,
        a.errorDetail,
      )
    }
    const endpointId = q.endpointOf.get(id) as string | undefined
    if (endpointId === undefined) return { endpointDisabled: false }
    if (u.endpointSuccessAt) q.success.run(u.endpointSuccessAt.getTime(), endpointId, u.endpointSuccessAt.getTime())
    if (!u.disableEndpoint || q.disable.run(u.disableEndpoint.reason, endpointId).changes !== 1) return { endpointDisabled: false }
    if (options.disabledNotice) {
      const n = options.disabledNotice(toEndpoint(q.endpoint.get(endpointId) as EndpointRow), u.disableEndpoint.at)
      q.insertNotice.run(n.at, n.orgId, n.subject, n.kind, n.message)
    }
    return { endpointDisabled: true }
  })
  const insertDeliveriesTx = db.transaction((list: DeliveryRecord[]) => {
    for (const d of list) {
      q.insertDelivery.run({
        id: d.id,
        event_id: d.eventId,
        endpoint_id: d.endpointId,
        org_id: d.orgId,
        status: d.status,
        attempts: d.attempts,
        next_attempt_at: ms(d.nextAttemptAt),
        lease_until: ms(d.leaseUntil),
        created_at: d.createdAt.getTime(),
        last_attempt_at: ms(d.lastAttemptAt),
        last_status: d.lastStatus,
        last_error: d.lastError,
        resend_of: d.resendOf,
      })
    }
  })
  const pruneTx = db.transaction((cutoff: number) => ({
    attempts: q.pruneAttempts.run(cutoff).changes,
    deliveries: q.pruneDeliveries.run(cutoff).changes,
    events: q.pruneEvents.run(cutoff).changes,
  }))
  // the count and the insert in one write transaction: concurrent creations cannot pass the limit together
  const createEndpointTx = db.transaction((input: NewEndpointInput, nowMs: number, maxPerOrg: number | undefined): StoredEndpoint => {
    if (maxPerOrg !== undefined && (q.count.get(input.orgId) as { n: number }).n >= maxPerOrg) throw endpointLimitError(maxPerOrg)
    const id = newEndpointId()
    q.insertEndpoint.run(id, input.orgId, input.url, input.description, JSON.stringify(input.events), input.format, input.secret, nowMs)
    return toEndpoint(q.endpoint.get(id) as EndpointRow)
  })
  const inOrg = (id: string, orgId?: string): EndpointRow | undefined => {
    const r = q.endpoint.get(id) as EndpointRow | undefined
    return r && (orgId === undefined || r.org_id === orgId) ? r : undefined
  }

  return {
    insertEvent(event: EventPayload) {
      q.insertEvent.run(event.id, event.org_id, event.type, event.created, JSON.stringify(event), now())
    },
    getEvent(id) {
      const r = q.event.get(id) as { payload: string } | undefined
      return r ? (JSON.parse(r.payload) as EventPayload) : null
    },
    listEndpoints: (orgId) => (q.endpoints.all(orgId) as EndpointRow[]).map(toEndpoint),
    getEndpoint(id) {
      const r = q.endpoint.get(id) as EndpointRow | undefined
      return r ? toEndpoint(r) : null
    },
    insertDeliveries: (list) => insertDeliveriesTx.immediate(list),
    leaseDue: (at, limit, until) => leaseTx.immediate(at.getTime(), limit, until.getTime()),
    completeDelivery: (id, update, attempt) => completeTx.immediate(id, update, attempt),
    getDelivery(id) {
      const r = q.delivery.get(id) as DeliveryRow | undefined
      return r ? toDelivery(r) : null
    },
    listDeliveries(filter) {
      return (q.deliveries.all(filter.endpointId, filter.since?.getTime() ?? Number.MIN_SAFE_INTEGER) as DeliveryRow[]).map(toDelivery)
    },
    pruneBefore: (cutoff) => pruneTx.immediate(cutoff.getTime()),

    createEndpoint: (input, nowMs, maxPerOrg) => createEndpointTx.immediate(input, nowMs, maxPerOrg),
    listOrgEndpoints: (orgId) => (q.endpoints.all(orgId) as EndpointRow[]).map(toEndpoint),
    countEndpoints: (orgId) => (q.count.get(orgId) as { n: number }).n,
    getStoredEndpoint(id) {
      const r = q.endpoint.get(id) as EndpointRow | undefined
      return r ? toEndpoint(r) : null
    },
    rotateSecret(id, secret, orgId) {
      if (!inOrg(id, orgId)) return null
      q.rotate.run(secret, id)
      return toEndpoint(q.endpoint.get(id) as EndpointRow)
    },
    deleteEndpoint(id, orgId) {
      if (!inOrg(id, orgId)) return false
      return q.deleteEndpoint.run(id).changes === 1
    },
    enableEndpoint(id, nowMs) {
      if (q.enable.run(nowMs, id).changes !== 1) return null
      return toEndpoint(q.endpoint.get(id) as EndpointRow)
    },
    addNotice(n) {
      q.insertNotice.run(n.at, n.orgId, n.subject, n.kind, n.message)
    },
    listNotices(limit = 100) {
      return (q.notices.all(limit) as Array<{ id: number; at: number; org_id: string | null; subject: string; kind: string; message: string }>).map(
        (r) => ({ id: r.id, at: r.at, orgId: r.org_id, subject: r.subject, kind: r.kind, message: r.message }),
      )
    },
    listAttempts(endpointId, limit = 100) {
      return (q.attempts.all(endpointId, limit) as AttemptRow[]).map(toAttempt)
    },
  }
}

/**
 * The webhook service's storage on the server's SQLite file (migration 002): deliveries and the `events` outbox. An
 * endpoint auto-disabled gets its operator notice ({@link disabledEndpointNotice}) in the same transaction.
 */
export function createSqliteDeliveryStorage(db: Database.Database, now: () => number = Date.now): DeliveryServiceStorage & { deliveries: SqliteDeliveryStore } {
  const deliveries = createSqliteDeliveryStore(db, now, { disabledNotice: disabledEndpointNotice })
  const pending = db.prepare(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`)
  return {
    deliveries,
    insertEvent: (event) => insertOutboxEvent(db, event),
    pumpOutbox: (clock, limit, crashHook) => pumpOutbox(db, deliveries, clock, limit, crashHook),
    pendingCount: () => (pending.get() as { n: number }).n,
  }
}

/**
 * The webhook queue's store for tests of the queue itself: the SQLite delivery store on a `:memory:` database, with
 * helpers to add endpoints of a given id and time and to read back every delivery, attempt and event.
 */
import { createSqliteDeliveryStore } from '../src/server/store/sqlite/deliveries.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { toAttempt, toDelivery, toEndpoint, type AttemptRow, type DeliveryRow, type EndpointRow } from '../src/server/store/common/record-rows.js'
import type { DeliveryAttemptRecord, DeliveryRecord, DeliveryStore, WebhookEndpointRecord } from '../src/webhooks/queue.js'
import type { WebhookFormat } from '../src/webhooks/format.js'

/** Fields needed to add an endpoint; the rest default (enabled, no success yet). */
export interface NewEndpoint {
  id: string
  orgId: string
  url: string
  secret: string
  events: string[]
  format?: WebhookFormat
  createdAt: Date
}

/** The delivery store plus what a test of the queue needs. */
export interface TestDeliveryStore extends DeliveryStore {
  addEndpoint(endpoint: NewEndpoint): WebhookEndpointRecord
  rotateSecret(endpointId: string, secret: string): void
  /** Disables an enabled endpoint with `reason`; true when it changed. */
  disableEndpoint(endpointId: string, reason: 'failing'): boolean
  enableEndpoint(endpointId: string, at: Date): void
  deleteEndpoint(endpointId: string): void
  /** Every delivery, in insertion order. */
  allDeliveries(): DeliveryRecord[]
  /** The attempt log, optionally of one delivery, in order. */
  allAttempts(deliveryId?: string): DeliveryAttemptRecord[]
  eventCount(): number
  close(): void
}

/** A fresh store (events are stamped with `now`). */
export function createTestDeliveryStore(now: () => number = Date.now): TestDeliveryStore {
  const store = createSqliteStore(':memory:')
  const { db } = store
  const deliveries = createSqliteDeliveryStore(db, now)
  const endpoint = (id: string) => toEndpoint(db.prepare('SELECT * FROM webhook_endpoints WHERE id = ?').get(id) as EndpointRow)
  return {
    insertEvent: deliveries.insertEvent,
    getEvent: deliveries.getEvent,
    listEndpoints: deliveries.listEndpoints,
    getEndpoint: deliveries.getEndpoint,
    insertDeliveries: deliveries.insertDeliveries,
    leaseDue: deliveries.leaseDue,
    completeDelivery: deliveries.completeDelivery,
    getDelivery: deliveries.getDelivery,
    listDeliveries: deliveries.listDeliveries,
    pruneBefore: deliveries.pruneBefore,
    addEndpoint(e) {
      db.prepare(
        `INSERT INTO webhook_endpoints (id, org_id, url, description, events, format, secret, status, disabled_reason, created_at)
         VALUES (?, ?, ?, NULL, ?, ?, ?, 'enabled', NULL, ?)`,
      ).run(e.id, e.orgId, e.url, JSON.stringify(e.events), e.format ?? 'json', e.secret, e.createdAt.getTime())
      return endpoint(e.id)
    },
    rotateSecret(id, secret) {
      deliveries.rotateSecret(id, secret)
    },
    disableEndpoint: (id, reason) =>
      db.prepare(`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = ? WHERE id = ? AND status = 'enabled'`).run(reason, id).changes === 1,
    enableEndpoint(id, at) {
      deliveries.enableEndpoint(id, at.getTime())
    },
    deleteEndpoint(id) {
      deliveries.deleteEndpoint(id)
    },
    allDeliveries: () => (db.prepare('SELECT * FROM webhook_deliveries ORDER BY rowid').all() as DeliveryRow[]).map(toDelivery),
    allAttempts: (deliveryId) =>
      (
        (deliveryId === undefined
          ? db.prepare('SELECT * FROM webhook_attempts ORDER BY rowid').all()
          : db.prepare('SELECT * FROM webhook_attempts WHERE delivery_id = ? ORDER BY rowid').all(deliveryId)) as AttemptRow[]
      ).map(toAttempt),
    eventCount: () => (db.prepare('SELECT COUNT(*) AS n FROM webhook_events').get() as { n: number }).n,
    close: () => store.close(),
  }
}

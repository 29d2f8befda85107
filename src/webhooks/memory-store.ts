/**
 * An in-memory {@link DeliveryStore}: for tests, the benchmark, and in-process users without a database. It behaves
 * like the SQLite tables sketched in `./queue.ts` (leases, log, pruning) and adds endpoint management helpers the
 * server otherwise does in its own tables (add, rotate the secret, enable, delete). Records are copied in and out,
 * so callers cannot change stored state by mutating what they got.
 */
import type { EventPayload } from '../schema.js'
import type { WebhookFormat } from './format.js'
import type {
  DeliveryAttemptRecord,
  DeliveryRecord,
  DeliveryStore,
  DeliveryUpdate,
  WebhookEndpointRecord,
} from './queue.js'

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

/** The in-memory store plus helpers for endpoints and for reading the log. */
export interface MemoryDeliveryStore extends DeliveryStore {
  addEndpoint(endpoint: NewEndpoint): WebhookEndpointRecord
  /** Replaces the secret (the old one stops working at once; queued deliveries use the new one). */
  rotateSecret(endpointId: string, secret: string): void
  /** Disables an enabled endpoint with `reason`; true when it changed. */
  disableEndpoint(endpointId: string, reason: 'failing'): boolean
  /** Operator re-enable: status enabled, reason cleared, `enabledAt = at`. */
  enableEndpoint(endpointId: string, at: Date): void
  deleteEndpoint(endpointId: string): void
  /** Every delivery (copies), in insertion order. */
  allDeliveries(): DeliveryRecord[]
  /** The attempt log (copies), optionally of one delivery, in order. */
  allAttempts(deliveryId?: string): DeliveryAttemptRecord[]
  /** Number of stored events. */
  eventCount(): number
}

const cloneDate = (d: Date | null): Date | null => (d ? new Date(d.getTime()) : null)
const cloneEndpoint = (e: WebhookEndpointRecord): WebhookEndpointRecord => ({
  ...e,
  events: [...e.events],
  createdAt: new Date(e.createdAt.getTime()),
  enabledAt: cloneDate(e.enabledAt),
  lastSuccessAt: cloneDate(e.lastSuccessAt),
})
const cloneDelivery = (d: DeliveryRecord): DeliveryRecord => ({
  ...d,
  nextAttemptAt: cloneDate(d.nextAttemptAt),
  leaseUntil: cloneDate(d.leaseUntil),
  createdAt: new Date(d.createdAt.getTime()),
  lastAttemptAt: cloneDate(d.lastAttemptAt),
})
const cloneAttempt = (a: DeliveryAttemptRecord): DeliveryAttemptRecord => ({ ...a, at: new Date(a.at.getTime()) })

/**
 * Creates an empty in-memory delivery store.
 *
 * @example
 * const store = createMemoryDeliveryStore()
 * store.addEndpoint({ id: 'we_1', orgId: 'org_1', url: 'https://hooks.example.com/x', secret: createWebhookSecret(), events: ['*'], createdAt: new Date() })
 */
export function createMemoryDeliveryStore(): MemoryDeliveryStore {
  const endpoints = new Map<string, WebhookEndpointRecord>()
  const events = new Map<string, EventPayload>()
  const deliveries = new Map<string, DeliveryRecord>()
  let attempts: DeliveryAttemptRecord[] = []

  const disable = (id: string, reason: string): boolean => {
    const e = endpoints.get(id)
    if (!e || e.status !== 'enabled') return false
    e.status = 'disabled'
    e.disabledReason = reason
    return true
  }

  const mustEndpoint = (id: string): WebhookEndpointRecord => {
    const e = endpoints.get(id)
    if (!e) throw new Error(`no endpoint ${id}`)
    return e
  }

  return {
    insertEvent(event) {
      if (!events.has(event.id)) events.set(event.id, structuredClone(event))
    },
    getEvent(id) {
      const e = events.get(id)
      return e ? structuredClone(e) : null
    },
    listEndpoints(orgId) {
      return [...endpoints.values()].filter((e) => e.orgId === orgId).map(cloneEndpoint)
    },
    getEndpoint(id) {
      const e = endpoints.get(id)
      return e ? cloneEndpoint(e) : null
    },
    insertDeliveries(list) {
      for (const d of list) {
        if (deliveries.has(d.id)) throw new Error(`duplicate delivery id ${d.id}`)
        deliveries.set(d.id, cloneDelivery(d))
      }
    },
    getDelivery(id) {
      const d = deliveries.get(id)
      return d ? cloneDelivery(d) : null
    },
    leaseDue(now, limit, leaseUntil) {
      const t = now.getTime()
      const due = [...deliveries.values()]
        .filter(
          (d) =>
            d.status === 'pending' &&
            d.nextAttemptAt !== null &&
            d.nextAttemptAt.getTime() <= t &&
            (d.leaseUntil === null || d.leaseUntil.getTime() <= t),
        )
        .sort((a, b) => (a.nextAttemptAt as Date).getTime() - (b.nextAttemptAt as Date).getTime())
        .slice(0, limit)
      const out = due.map(cloneDelivery)
      for (const d of due) d.leaseUntil = new Date(leaseUntil.getTime())
      return out
    },
    completeDelivery(id, update: DeliveryUpdate, attempt) {
      const d = deliveries.get(id)
      if (!d) throw new Error(`no delivery ${id}`)
      d.status = update.status
      d.attempts = update.attempts
      d.nextAttemptAt = cloneDate(update.nextAttemptAt)
      d.lastAttemptAt = cloneDate(update.lastAttemptAt)
      d.lastStatus = update.lastStatus
      d.lastError = update.lastError
      d.leaseUntil = null
      if (attempt) attempts.push(cloneAttempt(attempt))
      const e = endpoints.get(d.endpointId)
      const success = update.endpointSuccessAt
      if (e && success && (!e.lastSuccessAt || e.lastSuccessAt.getTime() < success.getTime())) e.lastSuccessAt = new Date(success.getTime())
      return { endpointDisabled: update.disableEndpoint ? disable(d.endpointId, update.disableEndpoint.reason) : false }
    },
    disableEndpoint: (id, reason) => disable(id, reason),
    listDeliveries(filter) {
      const since = filter.since?.getTime() ?? -Infinity
      return [...deliveries.values()]
        .filter((d) => d.endpointId === filter.endpointId && d.createdAt.getTime() >= since)
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
        .map(cloneDelivery)
    },
    pruneBefore(cutoff) {
      const c = cutoff.getTime()
      const beforeAttempts = attempts.length
      attempts = attempts.filter((a) => a.at.getTime() >= c)
      let removedDeliveries = 0
      for (const [id, d] of deliveries) {
        if (d.status !== 'pending' && d.createdAt.getTime() < c) {
          deliveries.delete(id)
          removedDeliveries++
        }
      }
      const referenced = new Set([...deliveries.values()].map((d) => d.eventId))
      let removedEvents = 0
      for (const id of [...events.keys()]) {
        if (!referenced.has(id)) {
          events.delete(id)
          removedEvents++
        }
      }
      return { attempts: beforeAttempts - attempts.length, deliveries: removedDeliveries, events: removedEvents }
    },

    addEndpoint(n) {
      if (endpoints.has(n.id)) throw new Error(`duplicate endpoint id ${n.id}`)
      const rec: WebhookEndpointRecord = {
        id: n.id,
        orgId: n.orgId,
        url: n.url,
        format: n.format ?? 'json',
        secret: n.secret,
        events: [...n.events],
        status: 'enabled',
        disabledReason: null,
        createdAt: new Date(n.createdAt.getTime()),
        enabledAt: null,
        lastSuccessAt: null,
      }
      endpoints.set(n.id, rec)
      return cloneEndpoint(rec)
    },
    rotateSecret(id, secret) {
      mustEndpoint(id).secret = secret
    },
    enableEndpoint(id, at) {
      const e = mustEndpoint(id)
      e.status = 'enabled'
      e.disabledReason = null
      e.enabledAt = new Date(at.getTime())
    },
    deleteEndpoint(id) {
      endpoints.delete(id)
    },
    allDeliveries() {
      return [...deliveries.values()].map(cloneDelivery)
    },
    allAttempts(deliveryId) {
      return attempts.filter((a) => deliveryId === undefined || a.deliveryId === deliveryId).map(cloneAttempt)
    },
    eventCount() {
      return events.size
    },
  }
}

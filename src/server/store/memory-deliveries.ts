/**
 * Webhooks over the in-memory store (./memory.ts): the {@link DeliveryServiceStorage} of `createServer({ db:
 * createMemoryStore() })`. Deliveries, leases and the attempt log are the webhooks module's in-memory delivery store
 * (../../webhooks/memory-store.ts); this adds what the routes and operators need of endpoints (a description, checks
 * of the org, newest-first logs, operator notices) and the database stores' rules: the first delivery of an event to
 * an endpoint is written once however often the pump runs, an auto-disable writes its operator notice with it, and
 * an attempt's duration is kept in whole milliseconds. The pump reads the memory store's own outbox.
 */
import type { EventPayload } from '../../schema.js'
import { createMemoryDeliveryStore, type MemoryDeliveryStore } from '../../webhooks/memory-store.js'
import type { DeliveryRecord, WebhookEndpointRecord } from '../../webhooks/queue.js'
import { pumpEvents } from './shared/outbox-pump.js'
import { disabledEndpointNotice, newEndpointId } from './shared/endpoints.js'
import type { MemoryStoreInternals } from './memory.js'
import type { DeliveryServiceStorage, EndpointDeliveryStore, OperatorNotice, StoredEndpoint } from './contracts/service-storage.js'
import type { Synchronous } from './contracts/store.js'

/** The key of an event's first delivery to an endpoint (resends are not first deliveries). */
const fanoutKey = (d: DeliveryRecord) => `${d.eventId}\u0000${d.endpointId}`

/** The endpoint and delivery store (synchronous), and every delivery it holds. */
function memoryEndpointDeliveries(): { deliveries: EndpointDeliveryStore; all: () => DeliveryRecord[] } {
  // it answers synchronously and has every method, the optional ones included
  const base = createMemoryDeliveryStore() as Synchronous<Required<MemoryDeliveryStore>>
  const descriptions = new Map<string, string | null>()
  const notices: OperatorNotice[] = []
  let fannedOut = new Set<string>()

  const stored = (e: WebhookEndpointRecord): StoredEndpoint => ({ ...e, description: descriptions.get(e.id) ?? null })
  const storedById = (id: string) => {
    const e = base.getEndpoint(id)
    return e ? stored(e) : null
  }
  const inOrg = (id: string, orgId?: string) => {
    const e = base.getEndpoint(id)
    return e !== null && (orgId === undefined || e.orgId === orgId)
  }
  // oldest first; endpoints created in the same millisecond keep the order they were created in
  const ofOrg = (orgId: string) => base.listEndpoints(orgId).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
  const addNotice = (n: Omit<OperatorNotice, 'id'>) => void notices.push({ id: notices.length + 1, ...n })

  const deliveries: EndpointDeliveryStore = {
    insertEvent: (event: EventPayload) => base.insertEvent(event),
    getEvent: (id) => base.getEvent(id),
    listEndpoints: ofOrg,
    getEndpoint: (id) => base.getEndpoint(id),
    insertDeliveries(list) {
      // a repeated id, or a second first delivery of an event to an endpoint (a pump repeated after a crash), is ignored
      const fresh = list.filter((d) => {
        if (base.getDelivery(d.id)) return false
        if (d.resendOf !== null) return true
        if (fannedOut.has(fanoutKey(d))) return false
        fannedOut.add(fanoutKey(d))
        return true
      })
      base.insertDeliveries(fresh)
    },
    leaseDue: (now, limit, until) => base.leaseDue(now, limit, until),
    completeDelivery(id, update, attempt) {
      const kept = attempt && { ...attempt, durationMs: Math.max(0, Math.round(attempt.durationMs)) }
      const done = base.completeDelivery(id, update, kept)
      const endpoint = done?.endpointDisabled && update.disableEndpoint ? base.getEndpoint(base.getDelivery(id)!.endpointId) : null
      if (endpoint) addNotice(disabledEndpointNotice(endpoint, update.disableEndpoint!.at))
      return done
    },
    getDelivery: (id) => base.getDelivery(id),
    listDeliveries: (filter) => base.listDeliveries(filter),
    pruneBefore(cutoff) {
      const pruned = base.pruneBefore(cutoff)
      fannedOut = new Set(base.allDeliveries().filter((d) => d.resendOf === null).map(fanoutKey))
      return pruned
    },

    createEndpoint(input, nowMs) {
      const id = newEndpointId()
      descriptions.set(id, input.description)
      return stored(base.addEndpoint({ id, orgId: input.orgId, url: input.url, secret: input.secret, events: input.events, format: input.format, createdAt: new Date(nowMs) }))
    },
    listOrgEndpoints: (orgId) => ofOrg(orgId).map(stored),
    countEndpoints: (orgId) => base.listEndpoints(orgId).length,
    getStoredEndpoint: storedById,
    rotateSecret(id, secret, orgId) {
      if (!inOrg(id, orgId)) return null
      base.rotateSecret(id, secret)
      return storedById(id)
    },
    deleteEndpoint(id, orgId) {
      if (!inOrg(id, orgId)) return false
      base.deleteEndpoint(id)
      descriptions.delete(id)
      return true
    },
    enableEndpoint(id, nowMs) {
      if (!base.getEndpoint(id)) return null
      base.enableEndpoint(id, new Date(nowMs))
      return storedById(id)
    },
    addNotice,
    listNotices: (limit = 100) => notices.slice(-limit).reverse(),
    listAttempts: (endpointId, limit = 100) =>
      base
        .allAttempts()
        .filter((a) => a.endpointId === endpointId)
        .sort((a, b) => b.at.getTime() - a.at.getTime() || b.attempt - a.attempt)
        .slice(0, limit),
  }
  return { deliveries, all: () => base.allDeliveries() }
}

/**
 * The webhook service's storage over a memory store: the deliveries above, and the store's outbox with the pump's
 * cursor. Like the jobs, it lives as long as the store.
 */
export function createMemoryDeliveryStorage(store: MemoryStoreInternals): DeliveryServiceStorage & { allDeliveries(): DeliveryRecord[] } {
  const { deliveries, all } = memoryEndpointDeliveries()
  let cursor = 0
  const outbox = {
    after: (limit: number) => store.outbox.after(cursor, limit),
    advance(seq: number) {
      cursor = Math.max(cursor, seq)
    },
  }
  return {
    deliveries,
    insertEvent: (event) => store.outbox.insert(event),
    pumpOutbox: (now, limit, crashHook) => pumpEvents(outbox, deliveries, now, limit, crashHook),
    pendingCount: () => all().filter((d) => d.status === 'pending').length,
    /** Every delivery, oldest first. */
    allDeliveries: all,
  }
}

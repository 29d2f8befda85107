/**
 * The bulk and delivery storage contracts (./bulk-contract.ts, ./delivery-contract.ts) on the in-memory store, a
 * fresh one per case, and how the server picks that storage: once per store, so it outlives a server.
 */
import { describe, expect, it } from 'vitest'
import type { BulkOwner } from '../../src/server/store/contracts/service-storage.js'
import { createMemoryBulkStorage } from '../../src/server/store/memory-bulk.js'
import { createMemoryDeliveryStorage } from '../../src/server/store/memory-deliveries.js'
import { createMemoryStore, memoryStoreInternals } from '../../src/server/store/memory.js'
import { serviceStorageOf } from '../../src/server/store/pick-storage.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { bulkStorageContract, jobRecord, pendingRows } from './bulk-contract.js'
import { deliveryStorageContract } from './delivery-contract.js'
import { NOW, type ServiceHarness } from './service-harness.js'

async function open(): Promise<ServiceHarness> {
  const store = createMemoryStore()
  const internals = memoryStoreInternals(store)!
  const bulk = createMemoryBulkStorage(store, internals)
  const webhooks = createMemoryDeliveryStorage(internals)
  // the owners whose job stores were asked for: the views a count of jobs and rows goes through
  const owners = new Map<string, BulkOwner>()
  const org = (orgId: string) => internals.orgState(orgId)!
  return {
    bulk: {
      ...bulk,
      jobStore(owner, onFinished) {
        owners.set(`${owner.mode}:${owner.orgId}`, owner)
        return bulk.jobStore(owner, onFinished)
      },
    },
    webhooks,
    async createOrg({ subscription, purchased }) {
      const id = store.createOrg({ name: 'Contract', planId: 'starter' }, NOW - 86_400_000).id
      Object.assign(org(id), { subscriptionCredits: subscription, purchasedCredits: purchased })
      return id
    },
    balance: async (orgId) => org(orgId).subscriptionCredits + org(orgId).purchasedCredits,
    async usage(orgId) {
      const o = store.getOrg(orgId, NOW)!
      return { periodEnd: o.periodEnd, periodLookups: o.usage.periodLookups }
    },
    async endPeriod(orgId, monthlyCredits) {
      Object.assign(org(orgId), { monthlyCredits, periodEnd: NOW - 1 })
    },
    async stored() {
      let jobs = 0
      let rows = 0
      let pending = 0
      for (const owner of owners.values()) {
        const view = bulk.jobStore(owner)
        for (const { job } of await view.listJobs({ beforeSeq: null, limit: Number.MAX_SAFE_INTEGER })) {
          jobs++
          rows += job.unique_inputs // a job's rows are all stored with it
          pending += (await view.pendingRows(job.id)).length
        }
      }
      return {
        jobs,
        rows,
        pendingRows: pending,
        reservations: bulk.openReservations(),
        events: store.listEvents({ limit: Number.MAX_SAFE_INTEGER }).map((e) => ({ id: e.id, type: e.type })),
        deliveries: webhooks.allDeliveries().map((d) => d.eventId),
      }
    },
    async done() {
      store.close()
    },
  }
}

describe('bulk storage in memory', () => bulkStorageContract(open))
describe('delivery storage in memory', () => deliveryStorageContract(open))

describe('the storage the server picks for a memory store', () => {
  it('is the memory storage, made once per store: a second server over the store sees the jobs of the first', async () => {
    const store = createMemoryStore()
    const picked = serviceStorageOf(store)!
    expect(serviceStorageOf(store)).toBe(picked)
    expect(serviceStorageOf(createMemoryStore())).not.toBe(picked)
    const org = store.createOrg({ name: 'Picked', planId: 'starter' }, NOW).id
    const owner = { orgId: org, mode: 'live' as const }
    const rec = jobRecord(3, 3)
    const ledger = picked.bulk.ledger(org, () => NOW)
    await picked.bulk.jobStore(owner).insertJobCharged!(rec, pendingRows(3), (tx) => ledger.reserveFor!(rec.job.id, 3, tx))
    expect(store.balance(org, NOW)).toBe(store.getOrg(org, NOW)!.monthlyCredits - 3)
    expect(await serviceStorageOf(store)!.bulk.ownersWithUnfinishedJobs()).toEqual([owner])
    // a store of another kind gets its own storage
    const sqlite = createSqliteStore(':memory:')
    expect(serviceStorageOf(sqlite)!.bulk).not.toBe(picked.bulk)
    sqlite.close()
  })
})

/**
 * How the server picks the storage of a memory store: once per store, so it outlives a server. (The bulk and delivery
 * contracts run on it from ./contracts.test.ts.)
 */
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../src/server/store/memory.js'
import { serviceStorageOf } from '../../src/server/store/pick-storage.js'
import { createSqliteStore } from '../../src/server/store/sqlite.js'
import { jobRecord, pendingRows } from './bulk-contract.js'
import { NOW } from './service-harness.js'

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

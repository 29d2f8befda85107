/**
 * The storage the server picks for a memory store (SQLite on `:memory:`) lives in the store's database, so it outlives
 * a server. (The bulk and delivery contracts run on it from ./contracts.test.ts.)
 */
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../src/server/store/sqlite/memory.js'
import { storageOf } from '../../src/server/store/open-storage.js'
import { jobRecord, pendingRows } from './bulk-contract.js'
import { NOW } from './service-harness.js'

describe('the storage the server picks for a memory store', () => {
  it('is the tables of the store itself: a second server over the store sees the jobs of the first', async () => {
    const store = createMemoryStore()
    const picked = storageOf(store)!
    expect(picked.engine).toBe('memory')
    const org = store.createOrg({ name: 'Picked', planId: 'starter' }, NOW).id
    const owner = { orgId: org, mode: 'live' as const }
    const rec = jobRecord(3, 3)
    const ledger = picked.bulk.ledger(org, () => NOW)
    await picked.bulk.jobStore(owner).insertJobCharged!(rec, pendingRows(3), (tx) => ledger.reserveFor!(rec.job.id, 3, tx))
    expect(store.balance(org, NOW)).toBe(store.getOrg(org, NOW)!.monthlyCredits - 3)
    expect(await storageOf(store)!.bulk.ownersWithUnfinishedJobs()).toEqual([owner])
    // another memory store is another database
    const other = createMemoryStore()
    expect(await storageOf(other)!.bulk.ownersWithUnfinishedJobs()).toEqual([])
    other.close()
    store.close()
  })
})

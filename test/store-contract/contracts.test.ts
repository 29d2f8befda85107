/**
 * Every storage contract on every engine of ./engines.ts: the server's store, its instance leases, org policies, bulk
 * and delivery storage, the review queue, the lists' item counts, and the dashboard's team store — each case on a fresh storage, closed or dropped after it.
 */
import { describe } from 'vitest'
import { bulkStorageContract } from './bulk-contract.js'
import { deliveryStorageContract } from './delivery-contract.js'
import { ENGINES, type ContractName, type Engine } from './engines.js'
import { leasesContract } from './leases-contract.js'
import { listsContract } from './lists-contract.js'
import { orgPolicyContract } from './org-policy-contract.js'
import { reviewContract } from './review-contract.js'
import { policySetter, storeContract } from './store-contract.js'
import { teamStoreContract } from './team-store-contract.js'

const T0 = Date.parse('2026-11-22T00:00:00Z')

/** Each contract, run on one engine. */
const CONTRACTS: Record<ContractName, (engine: Engine) => void> = {
  store: ({ name, open }) =>
    storeContract(name, async () => {
      const s = await open()
      return { store: s.store, setPolicyVersion: policySetter(s.orgPolicies()), done: s.done }
    }),
  leases: ({ name, open }) => leasesContract(name, open),
  orgPolicies: ({ name, open }) =>
    orgPolicyContract(name, async (options) => {
      const s = await open()
      const a = (await s.store.createOrg({ name: 'A', planId: 'free' }, T0)).id
      const b = (await s.store.createOrg({ name: 'B', planId: 'free' }, T0)).id
      return { policies: s.orgPolicies(options), a, b, done: s.done }
    }),
  bulk: ({ name, open }) => describe(`bulk storage (${name})`, () => bulkStorageContract(async () => (await open()).service())),
  deliveries: ({ name, open }) => describe(`delivery storage (${name})`, () => deliveryStorageContract(async () => (await open()).service())),
  lists: ({ name, open }) =>
    describe(`lists storage (${name})`, () =>
      listsContract(async () => {
        const s = await open()
        return { lists: s.lists(), store: s.store, sql: s.sql, migrations: s.migrations, done: s.done }
      })),
  reviews: ({ name, open }) =>
    describe(`review queue storage (${name})`, () =>
      reviewContract(async () => {
        const s = await open()
        return { reviews: s.reviews(), store: s.store, done: s.done }
      })),
  teamStore: ({ name, open }) =>
    describe(`TeamStore (${name})`, () =>
      teamStoreContract(async () => {
        const s = await open()
        const store = await s.teamStore()
        return {
          store,
          async done() {
            await store.close()
            await s.done()
          },
        }
      })),
}

for (const engine of ENGINES) {
  if (engine.skip) console.log(`[skipped] storage contracts on ${engine.name}: ${engine.skip}`)
  // Each case opens a storage of its own, so a server's engine runs its cases at once: a PostgreSQL case is mostly
  // waiting for its schema to be migrated and dropped.
  describe.skipIf(engine.skip !== null)(`storage contracts on ${engine.name}`, { concurrent: engine.name === 'PostgreSQL' }, () => {
    for (const [contract, run] of Object.entries(CONTRACTS) as Array<[ContractName, (engine: Engine) => void]>) {
      if (!engine.lacks?.[contract]) run(engine)
    }
  })
}

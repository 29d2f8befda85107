/**
 * The Store contract (./store-contract.ts) and the instance leases' (./leases-contract.ts) on the embedded SQLite
 * store, a fresh in-memory database per case.
 */
import { createSqliteOrgPolicyStore } from '../../src/server/store/sqlite/org-policies.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { leasesContract } from './leases-contract.js'
import { policySetter, storeContract } from './store-contract.js'

storeContract('SQLite', async () => {
  const store = createSqliteStore(':memory:')
  return {
    store,
    setPolicyVersion: policySetter(createSqliteOrgPolicyStore(store.db)),
    async done() {
      store.close()
    },
  }
})

leasesContract('SQLite', async () => {
  const store = createSqliteStore(':memory:')
  return { store, done: async () => store.close() }
})

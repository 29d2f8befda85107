/** The Store contract (./store-contract.ts) on the in-memory store (SQLite on `:memory:`), a fresh one per case. */
import { createMemoryStore } from '../../src/server/store/sqlite/memory.js'
import { policySetter, storeContract } from './store-contract.js'

storeContract('memory', async () => {
  const store = createMemoryStore()
  return {
    store,
    setPolicyVersion: policySetter(store.orgPolicies),
    async done() {
      store.close()
    },
  }
})

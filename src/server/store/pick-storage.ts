/**
 * Which storage the bulk and webhook services run on, told by the store the server is given: the SQLite store's own
 * file, or the PostgreSQL store's pool (the core store exposes it as `pool`).
 * Other stores have none: the server then runs without bulk jobs and webhooks.
 */
import pg from 'pg'
import { createSqliteBulkStorage } from './sqlite/bulk.js'
import { createSqliteDeliveryStorage } from './sqlite/deliveries.js'
import { createPostgresBulkStorage } from './postgres-bulk.js'
import { createPostgresDeliveryStorage } from './postgres-deliveries.js'
import type { ServiceStorage } from './contracts/service-storage.js'
import type { SqliteStore } from './sqlite/store.js'
import type { Store } from './contracts/store.js'

/** The service storage of `store`, or undefined when it has none. `nowMs` (the server clock) stamps stored webhook events. */
export function serviceStorageOf(store: Store, nowMs: () => number = Date.now): ServiceStorage | undefined {
  const sqlite = store as Partial<SqliteStore>
  if (sqlite.db) {
    const s = store as SqliteStore
    return { bulk: createSqliteBulkStorage(s.db, s), webhooks: createSqliteDeliveryStorage(s.db, nowMs) }
  }
  const pool = (store as { pool?: unknown }).pool
  if (pool instanceof pg.Pool) {
    return {
      bulk: createPostgresBulkStorage({ pool, settleCredits: (orgId, lookups, at) => store.settleCredits(orgId, lookups, at) }),
      webhooks: createPostgresDeliveryStorage({ pool, now: nowMs }),
    }
  }
  return undefined
}

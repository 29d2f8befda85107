/**
 * The one place where the server picks its storage from `ServerOptions.db`: the store (opened here from a path, or
 * the caller's), and what rides on it — the bulk and webhook tables, the default per-org policy store and the
 * dashboard's default team store. Everything else reaches storage through the parts this returns.
 */
import { createSqliteTeamStore } from '../../dashboard/store/sqlite.js'
import type { TeamStore } from '../../dashboard/store/types.js'
import type { ServerOptions } from '../app.js'
import type { MemoryStore } from '../store/memory.js'
import { createMemoryOrgPolicyStore, createSqliteOrgPolicyStore, type OrgPolicyStore } from '../store/org-policy-store.js'
import { serviceStorageOf } from '../store/pick-storage.js'
import type { ServiceStorage } from '../store/service-storage.js'
import { createSqliteStore, type SqliteStore } from '../store/sqlite.js'
import type { Store } from '../store/types.js'

/** The store of `options.db`, and whether the server opened it (then closing the server closes it). */
export function openStore(options: ServerOptions): { store: Store; ownStore: boolean } {
  const ownStore = typeof options.db !== 'object'
  const store: Store = typeof options.db === 'object' ? options.db : createSqliteStore(options.db ?? './riskcheck.sqlite')
  return { store, ownStore }
}

/** What the server keeps beside its store. */
export interface ServerStorage {
  /** The store when it is the SQLite one (its file also holds the service tables). */
  sqlite: SqliteStore | undefined
  /** Bulk jobs and webhooks' tables (undefined: the server runs without them). */
  service: ServiceStorage | undefined
  /** Per-org policies and answer logs (`ServerOptions.orgPolicies`, else next to the store, else in memory). */
  orgPolicies: OrgPolicyStore
  /** The dashboard's team store when none is configured (SQLite's file), else undefined (in memory). */
  defaultTeamStore: (() => TeamStore) | undefined
}

/** The storage beside `store`; `nowMs` (the server clock) stamps stored webhook events. */
export function serverStorageOf(store: Store, options: ServerOptions, nowMs: () => number): ServerStorage {
  const sqlite = (store as Partial<SqliteStore>).db ? (store as SqliteStore) : undefined
  // Bulk jobs and webhooks keep their tables next to the store's (SQLite migration 002, or the PostgreSQL pool's).
  const service = serviceStorageOf(store, nowMs)
  const orgPolicies =
    options.orgPolicies ??
    (sqlite
      ? createSqliteOrgPolicyStore(sqlite.db, { groupWrite: (write) => sqlite.groupWrite(write) })
      : ((store as Partial<MemoryStore>).orgPolicies ?? createMemoryOrgPolicyStore()))
  return { sqlite, service, orgPolicies, defaultTeamStore: sqlite ? () => createSqliteTeamStore(sqlite.db) : undefined }
}


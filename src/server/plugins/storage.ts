/**
 * The one place where the server turns `ServerOptions.db` into its storage: a path opened with `openStorage`, the
 * storage `openStorage` returned, or a store an engine made (told by its `engine` tag). Everything else reaches
 * storage through the parts this returns.
 */
import type { ServerOptions } from '../app.js'
import type { OrgPolicyStore } from '../store/contracts/org-policies.js'
import type { ServiceStorage, SqliteServiceStorage } from '../store/contracts/service-storage.js'
import type { Store } from '../store/contracts/store.js'
import type { TeamStore } from '../store/contracts/team-store.js'
import { isServiceStorage, openStorage, storageOf } from '../store/open-storage.js'
import { createMemoryOrgPolicyStore } from '../store/sqlite/memory.js'
import type { SqliteStore } from '../store/sqlite/store.js'

/** What `options.db` opens to, and whether the server opened it (then closing the server closes it). */
export interface OpenedStore {
  store: Store
  ownStore: boolean
  /** Every store of the engine when the server opened it or was given `openStorage`'s result. */
  opened: ServiceStorage | undefined
}

/** The store of `options.db`; `nowMs` (read later: the server clock) stamps stored webhook events. */
export function openStore(options: ServerOptions, nowMs: () => number): OpenedStore {
  if (typeof options.db === 'object') {
    const opened = isServiceStorage(options.db) ? options.db : undefined
    return { store: opened?.store ?? (options.db as Store), ownStore: false, opened }
  }
  const opened = openStorage({ sqlite: options.db ?? './riskcheck.sqlite', nowMs })
  return { store: opened.store, ownStore: true, opened }
}

/** What the server keeps beside its store. */
export interface ServerStorage {
  /** The storage when it is SQLite (a file or `:memory:`): its database also holds the service tables. */
  sqlite: SqliteServiceStorage<SqliteStore> | undefined
  /** Bulk jobs and webhooks' tables (undefined: a store of the caller's own; the server runs without them). */
  service: ServiceStorage | undefined
  /** Per-org policies and answer logs (`ServerOptions.orgPolicies`, else the engine's, else in memory). */
  orgPolicies: OrgPolicyStore
  /** The dashboard's team store when none is configured (SQLite's database), else undefined (in memory). */
  defaultTeamStore: (() => TeamStore) | undefined
}

/** The storage beside the opened store. */
export function serverStorageOf(opened: OpenedStore, options: ServerOptions, nowMs: () => number): ServerStorage {
  const service = opened.opened ?? storageOf(opened.store, nowMs)
  const sqlite = service && service.engine !== 'postgres' ? (service as SqliteServiceStorage<SqliteStore>) : undefined
  const orgPolicies = options.orgPolicies ?? service?.orgPolicies ?? createMemoryOrgPolicyStore()
  return { sqlite, service, orgPolicies, defaultTeamStore: sqlite ? () => sqlite.teamStore() : undefined }
}

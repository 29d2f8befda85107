/**
 * The one place that turns a deployment's choice of engine into its stores: `openStorage({ sqlite: path })`,
 * `openStorage({ memory: true })` or `openStorage({ postgres: url })`, and {@link storageOf} for a store an engine made
 * (told by its `engine` tag). See docs/decisions.md, "Storage engines" → "where the storage code lives".
 */
import type { PostgresServiceStorage, ServiceStorage, SqliteServiceStorage } from './contracts/service-storage.js'
import type { Store } from './contracts/store.js'
import type { TeamStore } from './contracts/team-store.js'
import type { ListsStore } from './contracts/lists.js'
import type { OrgPolicyStore } from './contracts/org-policies.js'
import type { OutcomeStore } from './contracts/outcomes.js'
import type { ReviewStore } from './contracts/reviews.js'
import { createPostgresBulkStorage } from './postgres/bulk.js'
import { createPostgresDeliveryStorage } from './postgres/deliveries.js'
import { createPostgresListsStore } from './postgres/lists.js'
import { createPostgresOutcomeStore } from './postgres/outcomes.js'
import { createPostgresReviewStore } from './postgres/reviews.js'
import { createPostgresRecheckStore } from './postgres/rechecks.js'
import { openPostgresServerStores } from './postgres/server.js'
import type { PostgresStore } from './postgres/store.js'
import { createSqliteBulkStorage } from './sqlite/bulk.js'
import { createSqliteTeamStore } from './sqlite/dashboard.js'
import { createSqliteDeliveryStorage } from './sqlite/deliveries.js'
import { createSqliteListsStore } from './sqlite/lists.js'
import { createMemoryOrgPolicyStore, createMemoryStore, createMemoryTeamStore, type MemoryStoreOptions } from './sqlite/memory.js'
import { createSqliteOrgPolicyStore } from './sqlite/org-policies.js'
import { createSqliteOutcomeStore } from './sqlite/outcomes.js'
import { createSqliteReviewStore } from './sqlite/reviews.js'
import { createSqliteRecheckStore } from './sqlite/rechecks.js'
import { createSqliteStore, type SqliteStore, type SqliteStoreOptions } from './sqlite/store.js'

/** Options every engine takes. */
interface Common {
  /** The clock stamping stored webhook events (default `Date.now`; a server passes its own). */
  nowMs?: () => number
}

/** SQLite on a file (`:memory:` works too), migrated on open. */
export type SqliteChoice = Common & SqliteStoreOptions & { sqlite: string }
/** SQLite on `:memory:`: gone when the process ends (an application's unit tests). */
export type MemoryChoice = Common & MemoryStoreOptions & { memory: true }
/** PostgreSQL: a connection string, optionally a schema; migrated unless `migrate: false`. */
export type PostgresChoice = Common & { postgres: string; schema?: string; migrate?: boolean; timeoutMs?: number }
/** Which engine a deployment runs on. */
export type StorageChoice = SqliteChoice | MemoryChoice | PostgresChoice

/**
 * Opens every store of the engine named: the core store, bulk jobs, webhook deliveries, per-org policies and the
 * dashboard's tables. SQLite answers at once; PostgreSQL with a promise (it connects and migrates first).
 *
 * @example
 * const storage = openStorage({ sqlite: './riskcheck.sqlite' })
 * const app = createServer({ db: storage })
 */
export function openStorage(choice: SqliteChoice): SqliteServiceStorage<SqliteStore>
export function openStorage(choice: MemoryChoice): SqliteServiceStorage<SqliteStore>
export function openStorage(choice: PostgresChoice): Promise<PostgresServiceStorage<PostgresStore>>
export function openStorage(choice: StorageChoice): ServiceStorage | Promise<ServiceStorage>
export function openStorage(choice: StorageChoice): ServiceStorage | Promise<ServiceStorage> {
  const nowMs = choice.nowMs ?? Date.now
  if ('postgres' in choice) return openPostgres(choice, nowMs)
  if ('memory' in choice) return sqliteStorage(createMemoryStore(choice.plans ? { plans: choice.plans } : {}), nowMs)
  const { sqlite, nowMs: _, ...options } = choice
  return sqliteStorage(createSqliteStore(sqlite, options), nowMs)
}

async function openPostgres(choice: PostgresChoice, nowMs: () => number): Promise<PostgresServiceStorage<PostgresStore>> {
  const stores = await openPostgresServerStores(
    { connectionString: choice.postgres, schema: choice.schema },
    { ...(choice.migrate !== undefined ? { migrate: choice.migrate } : {}), ...(choice.timeoutMs !== undefined ? { timeoutMs: choice.timeoutMs } : {}) },
  )
  return postgresStorage(stores.store, nowMs, stores)
}

/** Every store over a SQLite store (a file or `:memory:`): its tables all live in that one database. */
export function sqliteStorage(store: SqliteStore, nowMs: () => number = Date.now): SqliteServiceStorage<SqliteStore> {
  let teams: TeamStore | undefined
  return {
    engine: store.engine,
    store,
    bulk: createSqliteBulkStorage(store.db, store),
    webhooks: createSqliteDeliveryStorage(store.db, nowMs),
    orgPolicies: createSqliteOrgPolicyStore(store.db, { groupWrite: (write) => store.groupWrite(write) }),
    rechecks: createSqliteRecheckStore(store.db),
    teamStore: () => (teams ??= createSqliteTeamStore(store.db)),
    probeWrite: () => store.probeWrite(),
    close: async () => store.close(),
  }
}

/**
 * Every store over a PostgreSQL store's pool. Without `extras` (a store opened on its own, not by
 * {@link openStorage}) the policies and dashboard stay in memory, as they always have for such a store.
 */
export function postgresStorage(
  store: PostgresStore,
  nowMs: () => number = Date.now,
  extras?: { orgPolicies: OrgPolicyStore; teamStore(): Promise<TeamStore>; close(): Promise<void> },
): PostgresServiceStorage<PostgresStore> {
  return {
    engine: 'postgres',
    store,
    bulk: createPostgresBulkStorage({ pool: store.pool, settleCredits: (orgId, lookups, at) => store.settleCredits(orgId, lookups, at) }),
    webhooks: createPostgresDeliveryStorage({ pool: store.pool, now: nowMs }),
    orgPolicies: extras?.orgPolicies ?? createMemoryOrgPolicyStore(),
    rechecks: createPostgresRecheckStore(store.pool),
    teamStore: extras ? () => extras.teamStore() : async () => createMemoryTeamStore(),
    close: extras ? () => extras.close() : async () => store.close(),
  }
}

/**
 * The storage of a store an engine made, told by its `engine` tag; undefined for a store of your own (the server then
 * runs without bulk jobs and webhooks). `nowMs` stamps stored webhook events.
 */
export function storageOf(store: Store, nowMs: () => number = Date.now): ServiceStorage | undefined {
  switch (store.engine) {
    case 'sqlite':
    case 'memory':
      return sqliteStorage(store as SqliteStore, nowMs)
    case 'postgres':
      return postgresStorage(store as PostgresStore, nowMs)
    default:
      return undefined
  }
}

/** True for what {@link openStorage} returns (a storage), false for a bare store. */
export function isServiceStorage(db: Store | ServiceStorage): db is ServiceStorage {
  return 'store' in db && 'bulk' in db && typeof (db as { engine?: unknown }).engine === 'string'
}

/** The allow/block lists storage of a store an engine made, told by its engine tag; undefined for a store of your own. */
export function listsStoreOf(store: Store): ListsStore | undefined {
  switch (store.engine) {
    case 'sqlite':
    case 'memory':
      return createSqliteListsStore((store as SqliteStore).db, { afterLargeCommit: () => (store as SqliteStore).afterLargeCommit() })
    case 'postgres':
      return createPostgresListsStore((store as PostgresStore).pool)
    default:
      return undefined
  }
}

/** The outcome storage of a store an engine made, told by its engine tag; undefined for a store of your own. */
export function outcomeStoreOf(store: Store): OutcomeStore | undefined {
  switch (store.engine) {
    case 'sqlite':
    case 'memory': {
      const s = store as SqliteStore
      return createSqliteOutcomeStore(s.db, (write) => s.groupWrite(write))
    }
    case 'postgres':
      return createPostgresOutcomeStore((store as PostgresStore).pool, (store as PostgresStore).answerInputs)
    default:
      return undefined
  }
}

/** The review queue storage of a store an engine made, told by its engine tag; undefined for a store of your own. */
export function reviewStoreOf(store: Store): ReviewStore | undefined {
  switch (store.engine) {
    case 'sqlite':
    case 'memory': {
      const s = store as SqliteStore
      return createSqliteReviewStore(s.db, (write) => s.groupWrite(write))
    }
    case 'postgres':
      return createPostgresReviewStore((store as PostgresStore).pool)
    default:
      return undefined
  }
}

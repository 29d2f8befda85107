/**
 * Every store of one engine, as a deployment opens them (../open-storage.ts): the core store, bulk jobs, webhook
 * deliveries, per-org policies and the dashboard's tables. The guarantees every engine gives (checked by the contract
 * suites of test/store-contract/): docs/decisions.md, "Storage engines".
 */
import type { BulkServiceStorage } from './bulk.js'
import type { DeliveryServiceStorage } from './deliveries.js'
import type { OrgPolicyStore } from './org-policies.js'
import type { RecheckStore } from './rechecks.js'
import type { StorageEngine, Store } from './store.js'
import type { TeamStore } from './team-store.js'

export type { Awaitable } from '../../../awaitable.js'
export type { BulkOwner, BulkServiceStorage } from './bulk.js'
export type { DeliveryServiceStorage, EndpointDeliveryStore, NewEndpointInput, OperatorNotice, StoredEndpoint } from './deliveries.js'

/** What every engine's storage holds. */
interface EngineStorage<S extends Store> {
  /** The core store (accounts, credits, idempotency, the result cache). */
  readonly store: S
  /** Bulk jobs with their credit reservations. */
  readonly bulk: BulkServiceStorage
  /** Webhook endpoints, the outbox and the delivery queue. */
  readonly webhooks: DeliveryServiceStorage
  /** Per-org scoring policies and the answer log. */
  readonly orgPolicies: OrgPolicyStore
  /** Pending rechecks of email answers a mail server deferred (docs/rechecks.md). */
  readonly rechecks: RecheckStore
  /** Closes the store (and the dashboard's store when opened). */
  close(): Promise<void>
}

/** SQLite, on a file or `:memory:` (the in-memory engine). */
export interface SqliteServiceStorage<S extends Store = Store> extends EngineStorage<S> {
  readonly engine: 'sqlite' | 'memory'
  /** The dashboard's tables, in the same database. */
  teamStore(): TeamStore
  /** Writes one row of its own: throws when the file cannot be written (the database's outage probe). */
  probeWrite(): void
}

/** PostgreSQL, on a pool several server processes share. */
export interface PostgresServiceStorage<S extends Store = Store> extends EngineStorage<S> {
  readonly engine: 'postgres'
  /** The dashboard's tables (opened on first call). */
  teamStore(): Promise<TeamStore>
}

/** The storage of one engine, told by its `engine` tag. */
export type ServiceStorage = SqliteServiceStorage | PostgresServiceStorage

export type { StorageEngine }

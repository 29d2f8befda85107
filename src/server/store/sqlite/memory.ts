/**
 * The in-memory engine: the SQLite store on `:memory:` — same SQL, same migrations, gone when the process ends
 * (docs/decisions.md, "Storage engines" → "the in-memory engine"). For an application's unit tests of `createServer`.
 */
import Database from 'better-sqlite3'
import { validatePlans, type Plan } from '../../../accounts/plans.js'
import type { TeamStore } from '../contracts/team-store.js'
import { createSqliteTeamStore } from './dashboard.js'
import { createSqliteOrgPolicyStore, type SqliteOrgPolicyStore } from './org-policies.js'
import type { OrgPolicyStoreOptions } from '../contracts/org-policies.js'
import { createSqliteStore, type SqliteStore } from './store.js'

/** The in-memory store: a SQLite store on `:memory:` with its per-org policies at hand. */
export interface MemoryStore extends SqliteStore {
  readonly engine: 'memory'
  /** Per-org scoring policies and answer logs, in the store's own tables (the auth read takes an org's version there). */
  readonly orgPolicies: SqliteOrgPolicyStore
}

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** The plan catalogue it starts with (default: the default plans); `createServer({ plans })` replaces it anyway. */
  plans?: readonly Plan[]
}

/**
 * Creates an empty in-memory store: the default plan catalogue (or `plans`), a random key-hash secret, no orgs.
 *
 * @example
 * import { createMemoryStore, createServer } from 'riskcheck/server'
 * const store = createMemoryStore()
 * const app = createServer({ db: store, riskcheck: { offline: true } })
 * const org = store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const plans = options.plans === undefined ? undefined : validatePlans(options.plans)
  const store = createSqliteStore(':memory:', plans ? { plans } : {})
  return Object.assign(store, { engine: 'memory' as const, orgPolicies: createSqliteOrgPolicyStore(store.db) as SqliteOrgPolicyStore })
}

/**
 * Per-org policies and answer logs on a `:memory:` database of their own, for a server over a store of your own.
 * No orgs live there, so the org of a policy is not checked.
 */
export function createMemoryOrgPolicyStore(options: OrgPolicyStoreOptions = {}): SqliteOrgPolicyStore {
  const { db } = createSqliteStore(':memory:')
  db.pragma('foreign_keys = OFF')
  return createSqliteOrgPolicyStore(db, { ...options, groupWrite: undefined }) as SqliteOrgPolicyStore
}

/** The dashboard's tables on a `:memory:` database of their own (a dashboard over a store without them). */
export function createMemoryTeamStore(): TeamStore {
  return createSqliteTeamStore(new Database(':memory:'))
}

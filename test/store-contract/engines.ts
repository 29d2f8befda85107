/**
 * The storage engines the contract suites run on, one entry each: ./contracts.test.ts runs every contract on every
 * entry of {@link ENGINES}, so a new engine is one entry here. This is the one file of the suites that names an
 * engine's factories; engine-specific cases (./postgres.test.ts, …) keep their own files.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createMemoryTeamStore } from '../../src/dashboard/store/memory.js'
import { createPgTeamStore } from '../../src/server/store/postgres/dashboard.js'
import { createSqliteTeamStore } from '../../src/dashboard/store/sqlite.js'
import type { TeamStore } from '../../src/dashboard/store/types.js'
import { createSqliteBulkStorage } from '../../src/server/store/bulk-store.js'
import { createSqliteDeliveryStorage } from '../../src/server/store/delivery-store.js'
import { createMemoryBulkStorage } from '../../src/server/store/memory-bulk.js'
import { createMemoryDeliveryStorage } from '../../src/server/store/memory-deliveries.js'
import { createMemoryStore, memoryStoreInternals, type MemoryStore } from '../../src/server/store/memory.js'
import { createPostgresOrgPolicyStore } from '../../src/server/store/postgres/org-policies.js'
import { createMemoryOrgPolicyStore, createSqliteOrgPolicyStore, type OrgPolicyStore, type OrgPolicyStoreOptions } from '../../src/server/store/org-policy-store.js'
import { serviceStorageOf } from '../../src/server/store/pick-storage.js'
import { createPostgresStore, type PostgresStore } from '../../src/server/store/postgres/store.js'
import type { BulkOwner } from '../../src/server/store/service-storage.js'
import { createSqliteStore, type SqliteStore } from '../../src/server/store/sqlite.js'
import type { Store } from '../../src/server/store/types.js'
import { NOW, storedInTables, type ServiceHarness } from './service-harness.js'

/** The contracts of ./contracts.test.ts. */
export type ContractName = 'store' | 'leases' | 'orgPolicies' | 'bulk' | 'deliveries' | 'teamStore'

/** A fresh storage of one engine, for one case: every seam the contracts test, over one database. */
export interface FreshStorage {
  store: Store
  /** The org-policy store over the database of `store`. */
  orgPolicies(options?: OrgPolicyStoreOptions): OrgPolicyStore
  /** The bulk and delivery storages the server picks for `store`, with what their contracts read back. */
  service(): ServiceHarness
  /** The dashboard's team store over the database of `store`. */
  teamStore(): Promise<TeamStore>
  /** Closes it and drops what it created. */
  done(): Promise<void>
}

export interface Engine {
  name: string
  /** Why the engine's cases do not run here and how to make them, or null when they run. */
  skip: string | null
  /** Contracts this engine does not offer, each with why. */
  lacks?: Partial<Record<ContractName, string>>
  open(): Promise<FreshStorage>
}

/** The PostgreSQL 15 the suites use (each case in a schema of its own); without it they are skipped with a note. */
export const PG_URL = process.env.RISKCHECK_TEST_DATABASE_URL

export const ENGINES: Engine[] = [
  { name: 'memory', skip: null, lacks: { leases: 'one process holds it all: there are no other instances to take over' }, open: openMemory },
  { name: 'SQLite', skip: null, open: openSqlite },
  { name: 'PostgreSQL', skip: PG_URL ? null : 'set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it', open: openPostgres },
]

async function openMemory(): Promise<FreshStorage> {
  const store = createMemoryStore()
  const done = async () => store.close()
  return {
    store,
    // The store's own policies are what its auth read sees; a cap of answers needs a store of its own.
    orgPolicies: (options) => (options ? createMemoryOrgPolicyStore(options) : store.orgPolicies),
    service: () => memoryHarness(store, done),
    teamStore: async () => createMemoryTeamStore(),
    done,
  }
}

async function openSqlite(): Promise<FreshStorage> {
  const store = createSqliteStore(':memory:')
  const done = async () => store.close()
  return {
    store,
    orgPolicies: (options) => createSqliteOrgPolicyStore(store.db, options),
    service: () => sqliteHarness(store, done),
    teamStore: async () => createSqliteTeamStore(store.db),
    done,
  }
}

async function openPostgres(): Promise<FreshStorage> {
  const s = await freshPostgres()
  return {
    store: s.store,
    orgPolicies: (options) => createPostgresOrgPolicyStore(s.pool, options),
    service: () => pgHarness(s.store, s.drop),
    teamStore: () => createPgTeamStore({ pool: s.pool }),
    done: s.drop,
  }
}

/** A PostgreSQL store in a fresh schema of its own: a pool factory (each pool is "a server process") and the drop. */
export async function freshPostgres() {
  const schema = `rc_svc_${randomBytes(6).toString('hex')}`
  const pools: pg.Pool[] = []
  const poolIn = (max = 10) => {
    const p = new pg.Pool({ connectionString: PG_URL, options: `-c search_path=${schema}`, max })
    pools.push(p)
    return p
  }
  const admin = new pg.Pool({ connectionString: PG_URL, max: 1 })
  const store = await createPostgresStore({ connectionString: PG_URL!, schema })
  return {
    schema,
    store,
    pool: store.pool,
    poolIn,
    async drop() {
      await Promise.all(pools.map((p) => p.end()))
      await store.close()
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    },
  }
}

/** The memory store's harness: balances and counts read from its state (it has no tables). */
function memoryHarness(store: MemoryStore, done: () => Promise<void>): ServiceHarness {
  const internals = memoryStoreInternals(store)!
  const bulk = createMemoryBulkStorage(store, internals)
  const webhooks = createMemoryDeliveryStorage(internals)
  // the owners whose job stores were asked for: the views a count of jobs and rows goes through
  const owners = new Map<string, BulkOwner>()
  const org = (orgId: string) => internals.orgState(orgId)!
  return {
    bulk: {
      ...bulk,
      jobStore(owner, onFinished) {
        owners.set(`${owner.mode}:${owner.orgId}`, owner)
        return bulk.jobStore(owner, onFinished)
      },
    },
    webhooks,
    async createOrg({ subscription, purchased }) {
      const id = store.createOrg({ name: 'Contract', planId: 'starter' }, NOW - 86_400_000).id
      Object.assign(org(id), { subscriptionCredits: subscription, purchasedCredits: purchased })
      return id
    },
    balance: async (orgId) => org(orgId).subscriptionCredits + org(orgId).purchasedCredits,
    async usage(orgId) {
      const o = store.getOrg(orgId, NOW)!
      return { periodEnd: o.periodEnd, periodLookups: o.usage.periodLookups }
    },
    async endPeriod(orgId, monthlyCredits) {
      Object.assign(org(orgId), { monthlyCredits, periodEnd: NOW - 1 })
    },
    async stored() {
      let jobs = 0
      let rows = 0
      let pending = 0
      for (const owner of owners.values()) {
        const view = bulk.jobStore(owner)
        for (const { job } of await view.listJobs({ beforeSeq: null, limit: Number.MAX_SAFE_INTEGER })) {
          jobs++
          rows += job.unique_inputs // a job's rows are all stored with it
          pending += (await view.pendingRows(job.id)).length
        }
      }
      return {
        jobs,
        rows,
        pendingRows: pending,
        reservations: bulk.openReservations(),
        events: store.listEvents({ limit: Number.MAX_SAFE_INTEGER }).map((e) => ({ id: e.id, type: e.type })),
        deliveries: webhooks.allDeliveries().map((d) => d.eventId),
      }
    },
    done,
  }
}

/** The SQLite store's harness: balances and counts read from its tables. */
function sqliteHarness(store: SqliteStore, done: () => Promise<void>): ServiceHarness {
  const { db } = store
  return {
    bulk: createSqliteBulkStorage(db, store),
    webhooks: createSqliteDeliveryStorage(db, () => NOW),
    async createOrg({ subscription, purchased }) {
      const org = store.createOrg({ name: 'Contract', planId: 'starter' }, NOW - 86_400_000)
      db.prepare('UPDATE orgs SET subscription_credits = ?, purchased_credits = ? WHERE id = ?').run(subscription, purchased, org.id)
      return org.id
    },
    async balance(orgId) {
      return (db.prepare('SELECT subscription_credits + purchased_credits AS b FROM orgs WHERE id = ?').get(orgId) as { b: number }).b
    },
    async usage(orgId) {
      return db.prepare('SELECT period_end AS periodEnd, period_lookups AS periodLookups FROM orgs WHERE id = ?').get(orgId) as { periodEnd: number; periodLookups: number }
    },
    async endPeriod(orgId, monthlyCredits) {
      db.prepare('UPDATE orgs SET monthly_credits = ?, period_end = ? WHERE id = ?').run(monthlyCredits, NOW - 1, orgId)
    },
    stored: () => storedInTables(async (sql) => db.prepare(sql).all() as Array<Record<string, unknown>>),
    done,
  }
}

/**
 * The PostgreSQL store's harness on `store` — or, for a second "process" on the same schema, on its own `pool` (its
 * storage then settles through `store` as well, as the core store of that process would).
 */
export function pgHarness(store: PostgresStore, drop: () => Promise<void>, pool: pg.Pool = store.pool): ServiceHarness & { count(table: string, where?: string): Promise<number> } {
  const storage = serviceStorageOf(pool === store.pool ? store : ({ pool, settleCredits: store.settleCredits.bind(store) } as unknown as PostgresStore), () => NOW)!
  return {
    bulk: storage.bulk,
    webhooks: storage.webhooks,
    async createOrg({ subscription, purchased }) {
      const org = await store.createOrg({ name: 'Contract', planId: 'starter' }, NOW - 86_400_000)
      await pool.query('UPDATE orgs SET subscription_credits = $2, purchased_credits = $3 WHERE id = $1', [org.id, subscription, purchased])
      return org.id
    },
    async balance(orgId) {
      return Number((await pool.query('SELECT subscription_credits + purchased_credits AS b FROM orgs WHERE id = $1', [orgId])).rows[0].b)
    },
    async usage(orgId) {
      const r = (await pool.query('SELECT period_end, period_lookups FROM orgs WHERE id = $1', [orgId])).rows[0]
      return { periodEnd: Number(r.period_end), periodLookups: Number(r.period_lookups) }
    },
    async endPeriod(orgId, monthlyCredits) {
      await pool.query('UPDATE orgs SET monthly_credits = $2, period_end = $3 WHERE id = $1', [orgId, monthlyCredits, NOW - 1])
    },
    stored: () => storedInTables(async (sql) => (await pool.query(sql)).rows),
    /** Rows of a table (optionally with a WHERE clause without parameters): what only PostgreSQL's own cases read. */
    async count(table: string, where?: string) {
      return Number((await pool.query(`SELECT count(*) AS n FROM ${table}${where ? ` WHERE ${where}` : ''}`)).rows[0].n)
    },
    done: drop,
  }
}

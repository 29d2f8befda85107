/**
 * The storage engines the contract suites run on, one entry each: ./contracts.test.ts runs every contract on every
 * entry of {@link ENGINES}, so a new engine is one entry here. This is the one file of the suites that names an
 * engine's factories; engine-specific cases (./postgres.test.ts, …) keep their own files.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createPgTeamStore } from '../../src/server/store/postgres/dashboard.js'
import { createSqliteTeamStore } from '../../src/server/store/sqlite/dashboard.js'
import type { TeamStore } from '../../src/server/store/contracts/team-store.js'
import { createMemoryStore } from '../../src/server/store/sqlite/memory.js'
import { createPostgresOrgPolicyStore } from '../../src/server/store/postgres/org-policies.js'
import { createSqliteOrgPolicyStore } from '../../src/server/store/sqlite/org-policies.js'
import { type OrgPolicyStore, type OrgPolicyStoreOptions } from '../../src/server/store/contracts/org-policies.js'
import { listsStoreOf, postgresStorage, reviewStoreOf } from '../../src/server/store/open-storage.js'
import type { ListsStore } from '../../src/server/store/contracts/lists.js'
import type { Migration } from '../../src/server/store/common/migration.js'
import { MIGRATIONS } from '../../src/server/store/sqlite/migrations.js'
import { POSTGRES_MIGRATIONS } from '../../src/server/store/postgres/migrations.js'
import type { ReviewStore } from '../../src/server/store/contracts/reviews.js'
import { createPostgresStore, type PostgresStore } from '../../src/server/store/postgres/store.js'
import { createSqliteStore, type SqliteStore } from '../../src/server/store/sqlite/store.js'
import type { Store } from '../../src/server/store/contracts/store.js'
import { NOW, storedInTables, type ServiceHarness } from './service-harness.js'
import { sqliteServiceHarness } from './sqlite-harness.js'

/** The contracts of ./contracts.test.ts. */
export type ContractName = 'store' | 'leases' | 'orgPolicies' | 'bulk' | 'deliveries' | 'teamStore' | 'reviews' | 'lists'

/** A fresh storage of one engine, for one case: every seam the contracts test, over one database. */
export interface FreshStorage {
  store: Store
  /** The org-policy store over the database of `store`. */
  orgPolicies(options?: OrgPolicyStoreOptions): OrgPolicyStore
  /** The bulk and delivery storages the server picks for `store`, with what their contracts read back. */
  service(): ServiceHarness
  /** The dashboard's team store over the database of `store`. */
  teamStore(): Promise<TeamStore>
  /** The review queue storage over the database of `store`. */
  reviews(): ReviewStore
  /** The lists storage over the database of `store`. */
  lists(): ListsStore
  /** Runs one statement on the database of `store` (no parameters) and answers its rows. */
  sql(text: string): Promise<Array<Record<string, unknown>>>
  /** The engine's service migrations. */
  migrations: readonly Migration[]
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
  { name: 'memory (SQLite on :memory:)', skip: null, open: () => openSqlite(createMemoryStore()) },
  { name: 'SQLite', skip: null, open: () => openSqlite(createSqliteStore(':memory:')) },
  { name: 'PostgreSQL', skip: PG_URL ? null : 'set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it', open: openPostgres },
]

async function openSqlite(store: SqliteStore): Promise<FreshStorage> {
  const done = async () => store.close()
  return {
    store,
    orgPolicies: (options) => createSqliteOrgPolicyStore(store.db, options),
    service: () => sqliteServiceHarness(store),
    teamStore: async () => createSqliteTeamStore(store.db),
    reviews: () => reviewStoreOf(store)!,
    lists: () => listsStoreOf(store)!,
    sql: async (text) => {
      const st = store.db.prepare(text)
      return st.reader ? (st.all() as Array<Record<string, unknown>>) : (st.run(), [])
    },
    migrations: MIGRATIONS,
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
    reviews: () => reviewStoreOf(s.store)!,
    lists: () => listsStoreOf(s.store)!,
    sql: async (text) => (await s.pool.query(text)).rows,
    migrations: POSTGRES_MIGRATIONS,
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

/**
 * The PostgreSQL store's harness on `store` — or, for a second "process" on the same schema, on its own `pool` (its
 * storage then settles through `store` as well, as the core store of that process would).
 */
export function pgHarness(store: PostgresStore, drop: () => Promise<void>, pool: pg.Pool = store.pool): ServiceHarness & { count(table: string, where?: string): Promise<number> } {
  const storage = postgresStorage(pool === store.pool ? store : ({ pool, settleCredits: store.settleCredits.bind(store) } as unknown as PostgresStore), () => NOW)
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

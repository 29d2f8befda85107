/**
 * Everything a server process keeps in PostgreSQL, opened on one pool: the core store (./store.ts), the per-org policies
 * (./org-policies.ts) and the dashboard's team store (./dashboard.ts). `riskcheck serve`, `worker` and `admin
 * --database-url` all open it here, so they agree on what "migrated" means: both ledgers at this code's versions.
 */
import type pg from 'pg'
import { pgModule } from '../../lazy-packages.js'
import { createPgTeamStore } from './dashboard.js'
import type { TeamStore } from '../contracts/team-store.js'
import { createPostgresOrgPolicyStore } from './org-policies.js'
import type { OrgPolicyStore } from '../contracts/org-policies.js'
import { createPostgresStore, type PostgresStore } from './store.js'
import { checkSchemaName, DASHBOARD_LEDGER, migratePostgres, PG_DASHBOARD_MIGRATIONS, postgresSchemaStatus } from './migrations.js'

/** Where the tables are: a connection string and, optionally, the schema (default: the connection's search_path). */
export interface PostgresLocation {
  connectionString: string
  schema?: string | undefined
}

/** The schema versions of one database: the core store's ledger and the dashboard's, each against this code's. */
export interface PostgresServerStatus {
  core: { current: number; expected: number }
  dashboard: { current: number; expected: number }
}

/** The versions {@link migratePostgresServer} applied, per ledger (empty when the schema was current). */
export interface PostgresServerMigrated {
  core: number[]
  dashboard: number[]
}

/** The stores of a server process on PostgreSQL, sharing the core store's pool. */
export interface PostgresServerStores {
  store: PostgresStore
  orgPolicies: OrgPolicyStore
  /** The dashboard's store (opened on first call; needs the dashboard's migrations applied). */
  teamStore(): Promise<TeamStore>
  /** Closes the team store (when opened) and the pool. */
  close(): Promise<void>
}

/** A pool whose connections use the location's schema. */
function poolOf(at: PostgresLocation): pg.Pool {
  checkSchemaName(at.schema)
  const pool = new (pgModule().Pool)({ connectionString: at.connectionString, max: 2, ...(at.schema ? { options: `-c search_path=${at.schema}` } : {}) })
  pool.on('error', () => undefined) // an idle connection dropped by the server; the next query reports a real outage
  return pool
}

async function withPool<T>(at: PostgresLocation, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = poolOf(at)
  try {
    return await fn(pool)
  } finally {
    await pool.end()
  }
}

/** Whether both ledgers are at the versions this code expects. */
export function isCurrent(status: PostgresServerStatus): boolean {
  return status.core.current === status.core.expected && status.dashboard.current === status.dashboard.expected
}

/**
 * What is wrong with the schema, in one sentence an operator can act on, or null when it is current: behind (run
 * `riskcheck admin migrate`) or newer than this code (upgrade riskcheck).
 */
export function describeStatus(status: PostgresServerStatus): string | null {
  const { core, dashboard } = status
  if (core.current > core.expected || dashboard.current > dashboard.expected) {
    return `the PostgreSQL schema (version ${core.current}, dashboard ${dashboard.current}) is newer than this riskcheck (${core.expected}, dashboard ${dashboard.expected}): upgrade riskcheck`
  }
  if (isCurrent(status)) return null
  return `the PostgreSQL schema is behind: version ${core.current} of ${core.expected}, dashboard ${dashboard.current} of ${dashboard.expected}: run riskcheck admin migrate --database-url …`
}

/** Reads both ledgers without changing anything (`riskcheck admin migrate --check`, `--no-migrate` starts). */
export async function postgresServerStatus(at: PostgresLocation): Promise<PostgresServerStatus> {
  return withPool(at, async (pool) => {
    const schema = at.schema ? { schema: at.schema } : {}
    const core = await postgresSchemaStatus(pool, schema)
    // The dashboard's ledger lives in the core schema; without it (never migrated) there is nothing to read.
    const dashboard = await postgresSchemaStatus(pool, { ...schema, migrations: PG_DASHBOARD_MIGRATIONS, ledger: DASHBOARD_LEDGER })
    return { core, dashboard: core.current === 0 ? { ...dashboard, current: 0 } : dashboard }
  })
}

/**
 * Applies the pending migrations of both ledgers (the core one first: it creates the schema), each in one
 * transaction under its advisory lock, so instances and `riskcheck admin migrate` running at once migrate once.
 */
export async function migratePostgresServer(at: PostgresLocation, nowMs: number = Date.now()): Promise<PostgresServerMigrated> {
  return withPool(at, async (pool) => {
    const core = await migratePostgres(pool, { ...(at.schema ? { schema: at.schema } : {}), nowMs })
    const dashboard = await migratePostgres(pool, { migrations: PG_DASHBOARD_MIGRATIONS, ledger: DASHBOARD_LEDGER, nowMs })
    return { core, dashboard }
  })
}

/**
 * Opens the server's stores. With `migrate` (the default) pending migrations are applied first; without it a
 * schema that is not current is refused with {@link describeStatus}'s sentence.
 *
 * @example
 * const pgs = await openPostgresServerStores({ connectionString: process.env.DATABASE_URL! })
 * const app = createServer({ db: pgs.store, orgPolicies: pgs.orgPolicies, dashboard: { teamStore: await pgs.teamStore() } })
 */
export async function openPostgresServerStores(
  at: PostgresLocation,
  options: { migrate?: boolean; /** bound of every statement and connection wait, ms (default 5000) */ timeoutMs?: number } = {},
): Promise<PostgresServerStores> {
  if (options.migrate === false) {
    const problem = describeStatus(await postgresServerStatus(at))
    if (problem) throw new Error(problem)
  } else {
    await migratePostgresServer(at)
  }
  const store = await createPostgresStore({
    connectionString: at.connectionString,
    ...(at.schema ? { schema: at.schema } : {}),
    migrate: false,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  })
  let teams: Promise<TeamStore> | undefined
  return {
    store,
    orgPolicies: createPostgresOrgPolicyStore(store.pool),
    teamStore: () => (teams ??= createPgTeamStore({ pool: store.pool })),
    async close() {
      if (teams) await (await teams.catch(() => null))?.close()
      await store.close()
    },
  }
}

/**
 * The one PostgreSQL migration runner over both ledgers (the service's `riskcheck_migrations`, the dashboard's
 * `dashboard_migrations`): a database migrated before the runners were one is up to date for it, a dashboard ledger
 * left behind moves forward alone, and servers starting at once migrate each version once. Needs
 * RISKCHECK_TEST_DATABASE_URL; every case gets a fresh schema, dropped afterwards.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { DASHBOARD_LEDGER, migratePostgres, PG_DASHBOARD_MIGRATIONS, POSTGRES_MIGRATIONS } from '../src/server/store/postgres/migrations.js'
import { isCurrent, migratePostgresServer, postgresServerStatus } from '../src/server/store/postgres/server.js'
import type { Migration } from '../src/server/store/common/migration.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
const CORE = POSTGRES_MIGRATIONS.length
const DASHBOARD = PG_DASHBOARD_MIGRATIONS.length

const pools: pg.Pool[] = []
const schemas: string[] = []

/** A fresh schema (created) and a pool whose connections use it. */
async function freshSchema(): Promise<{ schema: string; pool: pg.Pool }> {
  const schema = `rc_mig_${randomBytes(6).toString('hex')}`
  schemas.push(schema)
  const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 2 })
  pools.push(pool)
  await pool.query(`CREATE SCHEMA ${schema}`)
  return { schema, pool }
}

/** What the former runners left in a ledger: its table as they created it, the list's SQL, one row per version. */
async function migratedBefore(pool: pg.Pool, table: string, list: readonly Migration[]): Promise<void> {
  await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
  for (const m of list) {
    await pool.query(m.sql)
    await pool.query(`INSERT INTO ${table} (version, name, applied_at) VALUES ($1, $2, 1)`, [m.version, m.name])
  }
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()))
  const admin = new pg.Pool({ connectionString: url })
  for (const s of schemas.splice(0)) await admin.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`)
  await admin.end()
})

describe.skipIf(!url)('PostgreSQL migrations: one runner, two ledgers', () => {
  it('a database the former runners migrated is up to date: nothing runs again', async () => {
    const { schema, pool } = await freshSchema()
    await migratedBefore(pool, 'riskcheck_migrations', POSTGRES_MIGRATIONS)
    await migratedBefore(pool, 'dashboard_migrations', PG_DASHBOARD_MIGRATIONS)
    const status = await postgresServerStatus({ connectionString: url!, schema })
    expect(status).toEqual({ core: { current: CORE, expected: CORE }, dashboard: { current: DASHBOARD, expected: DASHBOARD } })
    expect(isCurrent(status)).toBe(true)
    expect(await migratePostgresServer({ connectionString: url!, schema }, 9)).toEqual({ core: [], dashboard: [] })
    // the ledgers keep the former rows only
    expect((await pool.query('SELECT DISTINCT applied_at FROM riskcheck_migrations')).rows).toEqual([{ applied_at: '1' }])
    expect((await pool.query('SELECT DISTINCT applied_at FROM dashboard_migrations')).rows).toEqual([{ applied_at: '1' }])
  })

  it('a dashboard ledger left behind moves forward alone, its rows kept', async () => {
    const { schema, pool } = await freshSchema()
    await migratedBefore(pool, 'riskcheck_migrations', POSTGRES_MIGRATIONS)
    await migratedBefore(pool, 'dashboard_migrations', PG_DASHBOARD_MIGRATIONS.slice(0, 1))
    await pool.query("INSERT INTO dashboard_users (id, email, password_hash, created_at) VALUES ('u', 'a@x.test', 'h', 1)")
    expect((await postgresServerStatus({ connectionString: url!, schema })).dashboard).toEqual({ current: 1, expected: DASHBOARD })
    expect(await migratePostgresServer({ connectionString: url!, schema }, 9)).toEqual({ core: [], dashboard: PG_DASHBOARD_MIGRATIONS.slice(1).map((m) => m.version) })
    expect((await pool.query('SELECT version, applied_at FROM dashboard_migrations ORDER BY version')).rows).toEqual(
      PG_DASHBOARD_MIGRATIONS.map((m) => ({ version: m.version, applied_at: m.version === 1 ? '1' : '9' })),
    )
    expect((await pool.query('SELECT email FROM dashboard_users')).rows).toEqual([{ email: 'a@x.test' }])
  })

  it('four servers migrating a fresh schema at once apply every version of both ledgers once', async () => {
    const { schema } = await freshSchema()
    const at = { connectionString: url!, schema }
    const results = await Promise.all(Array.from({ length: 4 }, () => migratePostgresServer(at, 5)))
    expect(results.flatMap((r) => r.core).sort((a, b) => a - b)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version))
    expect(results.flatMap((r) => r.dashboard).sort((a, b) => a - b)).toEqual(PG_DASHBOARD_MIGRATIONS.map((m) => m.version))
    expect(isCurrent(await postgresServerStatus(at))).toBe(true)
  })

  it('the dashboard ledger is refused when it is newer than this code, as the service ledger is', async () => {
    const { pool } = await freshSchema()
    await migratedBefore(pool, 'dashboard_migrations', PG_DASHBOARD_MIGRATIONS)
    const ahead = [...PG_DASHBOARD_MIGRATIONS, { version: DASHBOARD + 1, name: 'later', sql: 'CREATE TABLE dashboard_later (id TEXT)' }]
    expect(await migratePostgres(pool, { migrations: ahead, ledger: DASHBOARD_LEDGER })).toEqual([DASHBOARD + 1])
    await expect(migratePostgres(pool, { migrations: PG_DASHBOARD_MIGRATIONS, ledger: DASHBOARD_LEDGER })).rejects.toThrow(/newer than this server/)
  })
})

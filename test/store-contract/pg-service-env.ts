/**
 * A fresh PostgreSQL schema for the bulk and delivery storage suites: the core store (`createPostgresStore`, which
 * applies `POSTGRES_MIGRATIONS`: orgs, credit transactions, the `events` outbox, …), then
 * {@link POSTGRES_BULK_MIGRATIONS} on top. The storages are the ones a server picks for that store
 * (`postgresStorage`), so they run against the core tables and the core store's settlement.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { postgresStorage } from '../../src/server/store/open-storage.js'
import { createPostgresStore, type PostgresStore } from '../../src/server/store/postgres.js'
import { NOW, storedInTables, type ServiceHarness } from './service-harness.js'

export const url = process.env.RISKCHECK_TEST_DATABASE_URL

/** A schema of its own: its name, a pool factory (each pool is "a server process"), and its drop. */
export async function freshSchema() {
  const schema = `rc_svc_${randomBytes(6).toString('hex')}`
  const pools: pg.Pool[] = []
  const poolIn = (max = 10) => {
    const p = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max })
    pools.push(p)
    return p
  }
  const admin = new pg.Pool({ connectionString: url, max: 1 })
  const store = await createPostgresStore({ connectionString: url!, schema })
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
 * The harness of the contract suites on `store` — or, for a second "process" on the same schema, on its own `pool`
 * (its storage then settles through `store` as well, as the core store of that process would).
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

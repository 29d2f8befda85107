/**
 * A fresh PostgreSQL schema for the bulk and delivery storage suites: the core tables those storages refer to
 * (`orgs`, `credit_transactions`, `events`, `meta`, with the columns of the SQLite store's migration 001 and BIGINT
 * times), then {@link POSTGRES_BULK_MIGRATIONS}. The core PostgreSQL store's own migration list holds the same core
 * tables; these suites create them here so that they run without it.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createPostgresBulkStorage } from '../../src/server/store/postgres-bulk.js'
import { createPostgresDeliveryStorage } from '../../src/server/store/postgres-deliveries.js'
import { POSTGRES_BULK_MIGRATIONS } from '../../src/server/store/postgres-service-schema.js'
import { NOW, type ServiceHarness } from './service-harness.js'

export const url = process.env.RISKCHECK_TEST_DATABASE_URL

const CORE_TABLES = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE orgs (
  id                   TEXT PRIMARY KEY,
  name                 TEXT NOT NULL,
  plan_id              TEXT NOT NULL,
  monthly_credits      BIGINT NOT NULL CHECK (monthly_credits >= 0),
  rate_per_second      INTEGER NOT NULL,
  created_at           BIGINT NOT NULL,
  period_anchor        BIGINT NOT NULL,
  period_start         BIGINT NOT NULL,
  period_end           BIGINT NOT NULL,
  subscription_credits BIGINT NOT NULL CHECK (subscription_credits >= 0),
  purchased_credits    BIGINT NOT NULL CHECK (purchased_credits >= 0),
  alert_level          SMALLINT NOT NULL DEFAULT 0,
  period_lookups       BIGINT NOT NULL DEFAULT 0,
  period_credits       BIGINT NOT NULL DEFAULT 0,
  total_lookups        BIGINT NOT NULL DEFAULT 0,
  total_credits        BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE credit_transactions (
  id            BIGSERIAL PRIMARY KEY,
  org_id        TEXT NOT NULL REFERENCES orgs(id),
  amount        BIGINT NOT NULL,
  reason        TEXT NOT NULL,
  balance_after BIGINT NOT NULL,
  created_at    BIGINT NOT NULL
);
CREATE TABLE events (
  seq     BIGSERIAL PRIMARY KEY,
  id      TEXT NOT NULL UNIQUE,
  org_id  TEXT NOT NULL REFERENCES orgs(id),
  type    TEXT NOT NULL,
  created BIGINT NOT NULL,
  payload TEXT NOT NULL
);`

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
  await admin.query(`CREATE SCHEMA ${schema}`)
  const first = poolIn()
  await first.query(CORE_TABLES)
  for (const m of POSTGRES_BULK_MIGRATIONS) await first.query(m.sql)
  return {
    schema,
    pool: first,
    poolIn,
    async drop() {
      await Promise.all(pools.map((p) => p.end()))
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    },
  }
}

let orgs = 0

/** The harness of the contract suites on `pool` (a store's settlement counts lookups like the core store). */
export function pgHarness(pool: pg.Pool, drop: () => Promise<void>): ServiceHarness {
  return {
    bulk: createPostgresBulkStorage({
      pool,
      async settleCredits(orgId, lookups) {
        await pool.query('UPDATE orgs SET period_lookups = period_lookups + $2, total_lookups = total_lookups + $2 WHERE id = $1', [orgId, lookups])
      },
    }),
    webhooks: createPostgresDeliveryStorage({ pool, now: () => NOW }),
    async createOrg({ subscription, purchased }) {
      const id = `org_contract_${++orgs}_${randomBytes(4).toString('hex')}`
      await pool.query(
        `INSERT INTO orgs (id, name, plan_id, monthly_credits, rate_per_second, created_at, period_anchor, period_start, period_end,
           subscription_credits, purchased_credits) VALUES ($1, 'Contract', 'starter', $2, 10, $3, $3, $3, $4, $2, $5)`,
        [id, subscription, NOW - 86_400_000, NOW + 29 * 86_400_000, purchased],
      )
      return id
    },
    async balance(orgId) {
      return Number((await pool.query('SELECT subscription_credits + purchased_credits AS b FROM orgs WHERE id = $1', [orgId])).rows[0].b)
    },
    async count(table, where) {
      return Number((await pool.query(`SELECT count(*) AS n FROM ${table}${where ? ` WHERE ${where}` : ''}`)).rows[0].n)
    },
    done: drop,
  }
}

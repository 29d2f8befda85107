/**
 * Versioned schema migrations of the PostgreSQL store. Every instance of the server (and `riskcheck admin migrate`)
 * calls {@link migratePostgres} on start; it applies the pending versions in one transaction under a
 * transaction-scoped advisory lock, so several instances starting at once migrate exactly once and none of them sees
 * a half-migrated schema. The versions applied are recorded in `riskcheck_migrations`.
 *
 * Append only: never edit a version that has shipped; add the next one. Modules that keep their own tables on
 * PostgreSQL (bulk jobs, webhook deliveries) add their versions at the end of {@link POSTGRES_MIGRATIONS}, numbered
 * on from the last one; {@link migratePostgres} refuses a list whose versions are not 1, 2, 3, … in order.
 *
 * The tables are those of the SQLite store (../migrations.ts) column for column, with times and credit counters as
 * BIGINT (unix ms; `pg` hands them back as strings, which the store converts).
 */
import type pg from 'pg'
import { ORG_POLICY_POSTGRES_SCHEMA } from '../org-policy-postgres.js'
import { POSTGRES_BULK_MIGRATIONS } from '../postgres-service-schema.js'
import { OUTCOMES_POSTGRES_SCHEMA } from './outcomes.js'

/** One PostgreSQL migration: its version (1, 2, 3, …), a name for messages and the ledger, and its SQL. */
export interface PostgresMigration {
  version: number
  name: string
  sql: string
}

/** The migrations, in order. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'core: meta, plans, orgs, keys, credit transactions, events outbox, idempotency, result cache',
    sql: `
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE plans (
  id              TEXT PRIMARY KEY,
  name            TEXT NOT NULL,
  monthly_price   DOUBLE PRECISION NOT NULL CHECK (monthly_price >= 0),
  monthly_credits BIGINT NOT NULL CHECK (monthly_credits >= 0),
  rate_per_second INTEGER NOT NULL CHECK (rate_per_second >= 1),
  position        INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE orgs (
  id                       TEXT PRIMARY KEY,
  name                     TEXT NOT NULL,
  plan_id                  TEXT NOT NULL,
  monthly_credits_override BIGINT CHECK (monthly_credits_override >= 0),
  rate_override            INTEGER CHECK (rate_override >= 1),
  monthly_credits          BIGINT NOT NULL CHECK (monthly_credits >= 0),
  rate_per_second          INTEGER NOT NULL CHECK (rate_per_second >= 1),
  plan_status              TEXT NOT NULL DEFAULT 'active',
  suspended                BOOLEAN NOT NULL DEFAULT FALSE,
  created_at               BIGINT NOT NULL,
  period_anchor            BIGINT NOT NULL,
  period_start             BIGINT NOT NULL,
  period_end               BIGINT NOT NULL,
  subscription_credits     BIGINT NOT NULL CHECK (subscription_credits >= 0),
  purchased_credits        BIGINT NOT NULL CHECK (purchased_credits >= 0),
  alert_level              SMALLINT NOT NULL DEFAULT 0,
  period_lookups           BIGINT NOT NULL DEFAULT 0,
  period_credits           BIGINT NOT NULL DEFAULT 0,
  total_lookups            BIGINT NOT NULL DEFAULT 0,
  total_credits            BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  org_id       TEXT NOT NULL REFERENCES orgs(id),
  name         TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
  scopes       TEXT NOT NULL,
  hash         TEXT NOT NULL,
  last4        TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  revoked_at   BIGINT,
  last_used_at BIGINT
);
CREATE INDEX api_keys_org ON api_keys(org_id);

CREATE TABLE credit_transactions (
  id            BIGSERIAL PRIMARY KEY,
  org_id        TEXT NOT NULL REFERENCES orgs(id),
  amount        BIGINT NOT NULL,
  reason        TEXT NOT NULL,
  balance_after BIGINT NOT NULL,
  created_at    BIGINT NOT NULL
);
CREATE INDEX credit_transactions_org ON credit_transactions(org_id, id);

-- The outbox. seq orders the events of one writer; with several writers a lower seq can commit after a higher one,
-- so a reader that pages by seq must not treat its cursor as "everything before is delivered" without allowing
-- for transactions still in flight.
CREATE TABLE events (
  seq     BIGSERIAL PRIMARY KEY,
  id      TEXT NOT NULL UNIQUE,
  org_id  TEXT NOT NULL REFERENCES orgs(id),
  type    TEXT NOT NULL,
  created BIGINT NOT NULL,
  payload TEXT NOT NULL
);
CREATE INDEX events_org ON events(org_id, seq);

CREATE TABLE idempotency (
  scope       TEXT NOT NULL,
  idem_key    TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status      INTEGER,
  body        TEXT,
  created_at  BIGINT NOT NULL,
  expires_at  BIGINT NOT NULL,
  PRIMARY KEY (scope, idem_key)
);
CREATE INDEX idempotency_expires ON idempotency(expires_at);

CREATE TABLE result_cache (
  key        TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  stored_at  BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX result_cache_expires ON result_cache(expires_at);
`,
  },
  {
    version: 2,
    name: 'per-org scoring policies and the answer log',
    sql: ORG_POLICY_POSTGRES_SCHEMA,
  },
  // bulk jobs and webhooks (../postgres-service-schema.ts)
  ...POSTGRES_BULK_MIGRATIONS,
  {
    // Server instances renew a lease; a billed request's credits are a hold of its instance until its settlement
    // closes it; an instance whose lease ended has its holds refunded and its in-progress Idempotency-Keys taken over
    // (./leases.ts). Records written before keep a null owner and the 2-minute takeover.
    version: 5,
    name: 'instance leases, credit holds of requests in flight, idempotency owners',
    sql: `
CREATE TABLE instances (
  id          TEXT PRIMARY KEY,
  started_at  BIGINT NOT NULL,
  lease_until BIGINT NOT NULL
);

CREATE TABLE credit_holds (
  id           TEXT PRIMARY KEY,
  instance_id  TEXT NOT NULL,
  org_id       TEXT NOT NULL REFERENCES orgs(id),
  from_sub     BIGINT NOT NULL CHECK (from_sub >= 0),
  from_pur     BIGINT NOT NULL CHECK (from_pur >= 0),
  period_start BIGINT NOT NULL,
  created_at   BIGINT NOT NULL
);
CREATE INDEX credit_holds_instance ON credit_holds(instance_id);

ALTER TABLE idempotency ADD COLUMN owner TEXT;
`,
  },
  {
    version: 6,
    name: 'outcomes and the input hashes of answered requests',
    sql: OUTCOMES_POSTGRES_SCHEMA,
  },
]

/** A plain lower-case identifier: what `schema` may be (it is written into SQL, never quoted from user input). */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/** Throws unless `schema` is a plain lower-case identifier. */
export function checkSchemaName(schema: string | undefined): void {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TypeError(`riskcheck store: schema must be a plain lower-case identifier (${SCHEMA_NAME}), got ${JSON.stringify(schema)}`)
  }
}

/** Throws unless the versions are 1, 2, 3, … in order (a module appending a version out of turn is a bug). */
function checkVersions(migrations: readonly PostgresMigration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`riskcheck store: PostgreSQL migration "${m.name}" has version ${m.version}, expected ${i + 1}`)
  })
}

/** The first key of the migration advisory lock ("rcmg"); the second is a hash of the schema name. */
const MIGRATION_LOCK = 0x72636d67

/** Options of {@link migratePostgres} and {@link postgresSchemaStatus}. */
export interface PostgresMigrateOptions {
  /** The schema to migrate (created if missing); default: the connection's current schema (usually `public`). */
  schema?: string
  /** The list to apply (default {@link POSTGRES_MIGRATIONS}). */
  migrations?: readonly PostgresMigration[]
  /** When the versions are recorded as applied (unix ms; default now). */
  nowMs?: number
}

/**
 * Applies the pending migrations in one transaction under `pg_advisory_xact_lock`, so of several instances starting
 * at once one migrates and the others wait and then find nothing to do. Returns the versions it applied. Throws when
 * the database holds a newer schema than this code knows.
 *
 * @example
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
 * const applied = await migratePostgres(pool) // [1, 2] the first time, [] after
 */
export async function migratePostgres(pool: pg.Pool, options: PostgresMigrateOptions = {}): Promise<number[]> {
  const migrations = options.migrations ?? POSTGRES_MIGRATIONS
  checkSchemaName(options.schema)
  checkVersions(migrations)
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    const schema = options.schema ?? (await client.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK, schema])
    // After the lock: CREATE SCHEMA IF NOT EXISTS is not safe against a concurrent creator.
    if (options.schema) {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
      await client.query(`SET LOCAL search_path TO ${schema}`)
    }
    await client.query('CREATE TABLE IF NOT EXISTS riskcheck_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
    const current = Number((await client.query<{ v: number }>('SELECT COALESCE(MAX(version), 0) AS v FROM riskcheck_migrations')).rows[0]!.v)
    if (current > migrations.length) throw newerError(current, migrations.length)
    const applied: number[] = []
    for (const m of migrations.slice(current)) {
      await client.query(m.sql)
      await client.query('INSERT INTO riskcheck_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, options.nowMs ?? Date.now()])
      applied.push(m.version)
    }
    await client.query('COMMIT')
    return applied
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw e
  } finally {
    client.release()
  }
}

/** The error for a database migrated by a newer riskcheck. */
export function newerError(current: number, expected: number): Error {
  return new Error(`riskcheck store: the PostgreSQL schema (version ${current}) is newer than this server (${expected}); upgrade riskcheck`)
}

/**
 * The schema version the database holds (0 when it was never migrated) and the one this code expects: what
 * `riskcheck admin migrate --check` and GET /readyz compare.
 */
export async function postgresSchemaStatus(pool: pg.Pool, options: Omit<PostgresMigrateOptions, 'nowMs'> = {}): Promise<{ current: number; expected: number }> {
  checkSchemaName(options.schema)
  const expected = (options.migrations ?? POSTGRES_MIGRATIONS).length
  const table = options.schema ? `${options.schema}.riskcheck_migrations` : 'riskcheck_migrations'
  const found = await pool.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table])
  if (!found.rows[0]?.t) return { current: 0, expected }
  const { rows } = await pool.query<{ v: number }>(`SELECT COALESCE(MAX(version), 0) AS v FROM ${table}`)
  return { current: Number(rows[0]!.v), expected }
}

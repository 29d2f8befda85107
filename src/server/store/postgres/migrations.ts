/**
 * Every PostgreSQL migration list — the service's and the dashboard's — and the one runner that applies a list under
 * its ledger (docs/decisions.md "PostgreSQL store"). Append only: never edit a version that has shipped.
 */
import type pg from 'pg'
import type { Migration } from '../common/migration.js'
import { inTransaction } from './client.js'

/** One PostgreSQL migration (the shape every engine shares). */
export type PostgresMigration = Migration

/** The per-org policies and answer log of version 2 (the columns of SQLite migration 003, times unix ms in BIGINT). */
const ORG_POLICY_V2 = `
CREATE TABLE IF NOT EXISTS org_policies (
  org_id      TEXT PRIMARY KEY REFERENCES orgs(id),
  version     TEXT NOT NULL,
  canonical   TEXT NOT NULL,
  description TEXT,
  source      TEXT,
  set_at      BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS org_answers (
  id      BIGSERIAL PRIMARY KEY,
  org_id  TEXT NOT NULL,
  at      BIGINT NOT NULL,
  type    TEXT NOT NULL,
  input   TEXT NOT NULL,
  action  TEXT NOT NULL,
  score   INTEGER,
  factors TEXT NOT NULL,
  context TEXT
);
CREATE INDEX IF NOT EXISTS org_answers_org_at ON org_answers(org_id, at);
CREATE INDEX IF NOT EXISTS org_answers_at ON org_answers(at);
`

const ANSWER_REQUEST_ID = 'ALTER TABLE org_answers ADD COLUMN IF NOT EXISTS request_id TEXT;'
const ANSWER_VELOCITY = 'ALTER TABLE org_answers ADD COLUMN IF NOT EXISTS velocity TEXT;'

/** The per-org policies and answer log as they are now (version 2 and the columns of versions 9 and 12), for a pool of your own. */
export const ORG_POLICY_POSTGRES_SCHEMA = `${ORG_POLICY_V2}${ANSWER_REQUEST_ID}\n${ANSWER_VELOCITY}\n`

/** The bulk and webhook tables: versions 3 and 4 of {@link POSTGRES_MIGRATIONS}. */
export const POSTGRES_BULK_MIGRATIONS: readonly Migration[] = [
  {
    version: 3,
    name: 'bulk jobs, rows and credit reservations',
    sql: `
CREATE TABLE bulk_jobs (
  seq        BIGSERIAL PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  org_id     TEXT NOT NULL,
  mode       TEXT NOT NULL CHECK (mode IN ('live', 'test')),
  status     TEXT NOT NULL,
  job        TEXT NOT NULL,
  reserved   BIGINT NOT NULL,
  options    TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX bulk_jobs_owner ON bulk_jobs(org_id, mode, seq);
CREATE INDEX bulk_jobs_unfinished ON bulk_jobs(status) WHERE status IN ('queued', 'running');
CREATE INDEX bulk_jobs_expires ON bulk_jobs(expires_at);

CREATE TABLE bulk_rows (
  job_seq   BIGINT NOT NULL REFERENCES bulk_jobs(seq) ON DELETE CASCADE,
  idx       INTEGER NOT NULL,
  state     SMALLINT NOT NULL,
  retryable SMALLINT NOT NULL,
  action    TEXT,
  input     TEXT NOT NULL,
  result    TEXT,
  PRIMARY KEY (job_seq, idx)
);

CREATE TABLE bulk_reservations (
  id                BIGSERIAL PRIMARY KEY,
  org_id            TEXT NOT NULL,
  amount            BIGINT NOT NULL CHECK (amount > 0),
  from_subscription BIGINT NOT NULL,
  from_purchased    BIGINT NOT NULL,
  period_start      BIGINT NOT NULL,
  job_id            TEXT
);
CREATE INDEX bulk_reservations_org ON bulk_reservations(org_id, id);
CREATE INDEX bulk_reservations_job ON bulk_reservations(job_id);
`,
  },
  {
    version: 4,
    name: 'webhook endpoints, events, deliveries, attempts, operator notices; outbox pump marks',
    sql: `
CREATE TABLE webhook_endpoints (
  id              TEXT PRIMARY KEY,
  org_id          TEXT NOT NULL,
  url             TEXT NOT NULL,
  description     TEXT,
  events          TEXT NOT NULL,
  format          TEXT NOT NULL,
  secret          TEXT NOT NULL,
  status          TEXT NOT NULL,
  disabled_reason TEXT,
  created_at      BIGINT NOT NULL,
  enabled_at      BIGINT,
  last_success_at BIGINT
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints(org_id, created_at);

CREATE TABLE webhook_events (
  id        TEXT PRIMARY KEY,
  org_id    TEXT NOT NULL,
  type      TEXT NOT NULL,
  created   BIGINT NOT NULL,
  payload   TEXT NOT NULL,
  stored_at BIGINT NOT NULL
);

CREATE TABLE webhook_deliveries (
  seq             BIGSERIAL,
  id              TEXT PRIMARY KEY,
  event_id        TEXT NOT NULL,
  endpoint_id     TEXT NOT NULL,
  org_id          TEXT NOT NULL,
  status          TEXT NOT NULL,
  attempts        INTEGER NOT NULL,
  next_attempt_at BIGINT,
  lease_until     BIGINT,
  created_at      BIGINT NOT NULL,
  last_attempt_at BIGINT,
  last_status     INTEGER,
  last_error      TEXT,
  resend_of       TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
CREATE UNIQUE INDEX webhook_deliveries_fanout ON webhook_deliveries(event_id, endpoint_id) WHERE resend_of IS NULL;

CREATE TABLE webhook_attempts (
  delivery_id   TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  event_id      TEXT NOT NULL,
  endpoint_id   TEXT NOT NULL,
  at            BIGINT NOT NULL,
  ok            BOOLEAN NOT NULL,
  status        INTEGER,
  duration_ms   INTEGER NOT NULL,
  response_body TEXT NOT NULL,
  error         TEXT,
  error_detail  TEXT,
  PRIMARY KEY (delivery_id, attempt)
);
CREATE INDEX webhook_attempts_at ON webhook_attempts(at);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts(endpoint_id, at);

CREATE TABLE operator_notices (
  id      BIGSERIAL PRIMARY KEY,
  at      BIGINT NOT NULL,
  org_id  TEXT,
  subject TEXT NOT NULL,
  kind    TEXT NOT NULL,
  message TEXT NOT NULL
);

ALTER TABLE events ADD COLUMN pumped_at BIGINT;
CREATE INDEX events_unpumped ON events(seq) WHERE pumped_at IS NULL;
`,
  },
]

/** The service's migrations (ledger `riskcheck_migrations`), in order. */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
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
    sql: ORG_POLICY_V2,
  },
  ...POSTGRES_BULK_MIGRATIONS,
  {
    // docs/decisions.md "Instance leases"; records written before keep a null owner and the 2-minute takeover
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
    // Allow/block lists of an org and key mode, their normalised items, and the version every list change bumps in
    // its own transaction (read with the API key, so a change applies from the next request: ./lists.ts).
    version: 6,
    name: 'allow/block lists, their items and versions',
    sql: `
CREATE TABLE lists (
  id         TEXT PRIMARY KEY,
  org_id     TEXT NOT NULL REFERENCES orgs(id),
  mode       TEXT NOT NULL CHECK (mode IN ('live', 'test')),
  name       TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('block', 'allow')),
  item_type  TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX lists_owner ON lists(org_id, mode);

CREATE TABLE list_items (
  list_id    TEXT NOT NULL REFERENCES lists(id) ON DELETE CASCADE,
  value      TEXT COLLATE "C" NOT NULL,
  reason     TEXT,
  expires_at BIGINT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (list_id, value)
);

CREATE TABLE list_versions (
  org_id  TEXT NOT NULL,
  mode    TEXT NOT NULL,
  version BIGINT NOT NULL,
  PRIMARY KEY (org_id, mode)
);
`,
  },
  {
    version: 7,
    name: 'outcomes and the input hashes of answered requests',
    sql: `
CREATE TABLE answer_inputs (
  request_id TEXT PRIMARY KEY,
  org_id     TEXT NOT NULL,
  mode       TEXT NOT NULL,
  at         BIGINT NOT NULL,
  email_hash TEXT,
  phone_hash TEXT,
  ip_hash    TEXT
);
CREATE INDEX answer_inputs_at ON answer_inputs(at);

CREATE TABLE outcomes (
  seq           BIGSERIAL PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  org_id        TEXT NOT NULL,
  mode          TEXT NOT NULL,
  request_id    TEXT,
  subject       TEXT NOT NULL,
  outcome       TEXT NOT NULL,
  note          TEXT,
  email_hash    TEXT,
  phone_hash    TEXT,
  ip_hash       TEXT,
  created_at    BIGINT NOT NULL,
  superseded_at BIGINT
);
CREATE UNIQUE INDEX outcomes_current ON outcomes(org_id, mode, subject) WHERE superseded_at IS NULL;
CREATE INDEX outcomes_org ON outcomes(org_id, mode, seq);
CREATE INDEX outcomes_created ON outcomes(created_at);
`,
  },
  {
    version: 8,
    name: 'the review queue',
    sql: `
CREATE TABLE reviews (
  seq          BIGSERIAL PRIMARY KEY,
  id           TEXT NOT NULL UNIQUE,
  org_id       TEXT NOT NULL,
  mode         TEXT NOT NULL,
  request_id   TEXT NOT NULL UNIQUE,
  type         TEXT NOT NULL,
  input        TEXT NOT NULL,
  score        INTEGER NOT NULL,
  factors      TEXT NOT NULL,
  factor_codes TEXT NOT NULL,
  action       TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  decision     TEXT,
  decided_by   TEXT,
  decided_at   BIGINT,
  note         TEXT,
  list_id      TEXT,
  outcome_id   TEXT,
  completed_at BIGINT
);
CREATE INDEX reviews_org ON reviews(org_id, mode, seq);
CREATE INDEX reviews_created ON reviews(created_at);
`,
  },
  {
    version: 9,
    name: 'the request id of each answer in the answer log',
    sql: ANSWER_REQUEST_ID,
  },
  {
    // Rechecks of email answers a mail server deferred (./rechecks.ts, docs/rechecks.md); the columns of SQLite
    // migration 011.
    version: 10,
    name: 'pending rechecks of deferred email answers',
    sql: `
CREATE TABLE email_rechecks (
  id           TEXT PRIMARY KEY,
  org_id       TEXT NOT NULL,
  mode         TEXT NOT NULL,
  request_id   TEXT,
  bulk_job_id  TEXT,
  row_index    INTEGER,
  address      TEXT NOT NULL,
  answered_at  BIGINT NOT NULL,
  due_at       BIGINT NOT NULL,
  attempt      INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL
);
CREATE INDEX email_rechecks_due ON email_rechecks(due_at);
CREATE INDEX email_rechecks_job ON email_rechecks(bulk_job_id) WHERE bulk_job_id IS NOT NULL;
`,
  },
  {
    version: 11,
    name: 'outcome versions, read with the API key',
    sql: `
CREATE TABLE outcome_versions (
  org_id  TEXT NOT NULL,
  mode    TEXT NOT NULL,
  version BIGINT NOT NULL,
  PRIMARY KEY (org_id, mode)
);
INSERT INTO outcome_versions (org_id, mode, version) SELECT DISTINCT org_id, mode, 1 FROM outcomes;
`,
  },
  {
    version: 12,
    name: 'the velocity counts of logged answers (numbers only: the backtest derives the velocity factors again)',
    sql: ANSWER_VELOCITY,
  },
  {
    // the columns of SQLite migration 016: each list's item count, kept by the transactions that change its items
    version: 13,
    name: 'the item count of each list',
    sql: `
ALTER TABLE lists ADD COLUMN item_count BIGINT NOT NULL DEFAULT 0;
UPDATE lists SET item_count = (SELECT COUNT(*) FROM list_items WHERE list_id = lists.id);
`,
  },
  {
    // the column of SQLite migration 018: the E.164 form of a review entry's phone number
    version: 14,
    name: 'the E.164 form of the phone number of a review entry',
    sql: `ALTER TABLE reviews ADD COLUMN phone_e164 TEXT;`,
  },
]

/** The dashboard's migrations (ledger `dashboard_migrations`), in order. */
export const PG_DASHBOARD_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'users, members, sessions, tokens, login failures, usage, key creators, cursors',
    sql: `
CREATE TABLE dashboard_users (
  id                TEXT PRIMARY KEY,
  email             TEXT NOT NULL UNIQUE,
  password_hash     TEXT NOT NULL,
  email_verified_at BIGINT,
  created_at        BIGINT NOT NULL
);
CREATE TABLE dashboard_members (
  org_id     TEXT NOT NULL,
  user_id    TEXT NOT NULL REFERENCES dashboard_users(id),
  role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'developer')),
  created_at BIGINT NOT NULL,
  seq        BIGSERIAL,
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX dashboard_members_user ON dashboard_members(user_id);
CREATE TABLE dashboard_sessions (
  id_hash    TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES dashboard_users(id),
  csrf       TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE TABLE dashboard_tokens (
  hash       TEXT PRIMARY KEY,
  kind       TEXT NOT NULL CHECK (kind IN ('verify', 'invite')),
  user_id    TEXT NOT NULL,
  org_id     TEXT,
  email      TEXT NOT NULL,
  role       TEXT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX dashboard_tokens_org ON dashboard_tokens(org_id, kind);
CREATE TABLE dashboard_login_failures (
  key TEXT NOT NULL,
  at  BIGINT NOT NULL
);
CREATE INDEX dashboard_login_failures_key ON dashboard_login_failures(key, at);
CREATE TABLE dashboard_usage (
  org_id  TEXT NOT NULL,
  day     TEXT NOT NULL,
  type    TEXT NOT NULL,
  lookups BIGINT NOT NULL,
  credits BIGINT NOT NULL,
  PRIMARY KEY (org_id, day, type)
);
CREATE TABLE dashboard_key_creators (
  org_id  TEXT NOT NULL,
  key_id  TEXT PRIMARY KEY,
  user_id TEXT NOT NULL
);
CREATE INDEX dashboard_key_creators_org ON dashboard_key_creators(org_id);
CREATE TABLE dashboard_cursors (
  name  TEXT PRIMARY KEY,
  value BIGINT NOT NULL
);`,
  },
  {
    version: 2,
    name: 'password reset and pending two-factor tokens, TOTP, recovery codes, team settings, sign-in attempts',
    sql: `
ALTER TABLE dashboard_users ADD COLUMN totp_secret TEXT, ADD COLUMN totp_enabled_at BIGINT, ADD COLUMN totp_last_step BIGINT;
CREATE TABLE dashboard_recovery_codes (
  user_id TEXT NOT NULL REFERENCES dashboard_users(id),
  hash    TEXT NOT NULL,
  PRIMARY KEY (user_id, hash)
);
CREATE TABLE dashboard_team_settings (
  org_id             TEXT PRIMARY KEY,
  require_two_factor BOOLEAN NOT NULL
);
ALTER TABLE dashboard_login_failures ADD COLUMN attempt TEXT;
CREATE INDEX dashboard_login_failures_attempt ON dashboard_login_failures(attempt);
ALTER TABLE dashboard_tokens DROP CONSTRAINT dashboard_tokens_kind_check,
  ADD CONSTRAINT dashboard_tokens_kind_check CHECK (kind IN ('verify', 'invite', 'reset', 'mfa'));
CREATE INDEX dashboard_tokens_user ON dashboard_tokens(user_id, kind);`,
  },
  {
    version: 3,
    name: 'mail log (the mail throttle)',
    sql: `
CREATE TABLE dashboard_mail_log (
  key TEXT NOT NULL,
  at  BIGINT NOT NULL
);
CREATE INDEX dashboard_mail_log_key ON dashboard_mail_log(key, at);`,
  },
]

/** Where a list's applied versions are recorded, and the advisory lock that serialises the runs applying it. */
export interface PostgresLedger {
  /** The table of applied versions (`version`, `name`, `applied_at`). */
  table: string
  /** The lock's key: with `perSchema`, the first of two int4 keys, the second a hash of the schema name; else one bigint key. */
  lock: number
  perSchema: boolean
}

/** The service's ledger; its lock is per schema ("rcmg"). */
export const SERVICE_LEDGER: PostgresLedger = { table: 'riskcheck_migrations', lock: 0x72636d67, perSchema: true }
/** The dashboard's ledger, in the service's schema; one lock for every schema ("rcdash"). */
export const DASHBOARD_LEDGER: PostgresLedger = { table: 'dashboard_migrations', lock: 0x7263_6461_7368, perSchema: false }

/** A plain lower-case identifier: what `schema` may be (it is written into SQL, never quoted from user input). */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/** Throws unless `schema` is a plain lower-case identifier. */
export function checkSchemaName(schema: string | undefined): void {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TypeError(`riskcheck store: schema must be a plain lower-case identifier (${SCHEMA_NAME}), got ${JSON.stringify(schema)}`)
  }
}

/** Throws unless the versions are 1, 2, 3, … in order (a version appended out of turn is a bug). */
function checkVersions(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`riskcheck store: PostgreSQL migration "${m.name}" has version ${m.version}, expected ${i + 1}`)
  })
}

/** Options of {@link migratePostgres} and {@link postgresSchemaStatus}. */
export interface PostgresMigrateOptions {
  /** The schema to migrate (created if missing); default: the connection's current schema (usually `public`). */
  schema?: string
  /** The list to apply (default {@link POSTGRES_MIGRATIONS}). */
  migrations?: readonly Migration[]
  /** Where the list's versions are recorded (default {@link SERVICE_LEDGER}; the dashboard's list: {@link DASHBOARD_LEDGER}). */
  ledger?: PostgresLedger
  /** When the versions are recorded as applied (unix ms; default now). */
  nowMs?: number
}

/**
 * Applies the pending migrations of a list in one transaction under `pg_advisory_xact_lock`, so of several instances
 * starting at once one migrates and the others wait and then find nothing to do. Returns the versions it applied.
 * Throws when the ledger holds a newer version than the list knows.
 *
 * @example
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
 * const applied = await migratePostgres(pool) // [1, 2, …] the first time, [] after
 */
export async function migratePostgres(pool: pg.Pool, options: PostgresMigrateOptions = {}): Promise<number[]> {
  const migrations = options.migrations ?? POSTGRES_MIGRATIONS
  const ledger = options.ledger ?? SERVICE_LEDGER
  checkSchemaName(options.schema)
  checkVersions(migrations)
  return inTransaction(pool, async (client) => {
    const schema = options.schema ?? (await client.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s
    if (ledger.perSchema) await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ledger.lock, schema])
    else await client.query('SELECT pg_advisory_xact_lock($1)', [ledger.lock])
    // After the lock: CREATE SCHEMA IF NOT EXISTS is not safe against a concurrent creator.
    if (options.schema) {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
      await client.query(`SET LOCAL search_path TO ${schema}`)
    }
    await client.query(`CREATE TABLE IF NOT EXISTS ${ledger.table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
    const current = Number((await client.query<{ v: number }>(`SELECT COALESCE(MAX(version), 0) AS v FROM ${ledger.table}`)).rows[0]!.v)
    if (current > migrations.length) throw newerError(current, migrations.length)
    const applied: number[] = []
    for (const m of migrations.slice(current)) {
      await client.query(m.sql)
      await client.query(`INSERT INTO ${ledger.table} (version, name, applied_at) VALUES ($1, $2, $3)`, [m.version, m.name, options.nowMs ?? Date.now()])
      applied.push(m.version)
    }
    return applied
  })
}

/** The error for a database migrated by a newer riskcheck. */
export function newerError(current: number, expected: number): Error {
  return new Error(`riskcheck store: the PostgreSQL schema (version ${current}) is newer than this server (${expected}); upgrade riskcheck`)
}

/**
 * The version a ledger holds (0 when it was never migrated) and the one this code expects: what
 * `riskcheck admin migrate --check` and GET /readyz compare.
 */
export async function postgresSchemaStatus(pool: pg.Pool, options: Omit<PostgresMigrateOptions, 'nowMs'> = {}): Promise<{ current: number; expected: number }> {
  checkSchemaName(options.schema)
  const expected = (options.migrations ?? POSTGRES_MIGRATIONS).length
  const name = (options.ledger ?? SERVICE_LEDGER).table
  const table = options.schema ? `${options.schema}.${name}` : name
  const found = await pool.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table])
  if (!found.rows[0]?.t) return { current: 0, expected }
  const { rows } = await pool.query<{ v: number }>(`SELECT COALESCE(MAX(version), 0) AS v FROM ${table}`)
  return { current: Number(rows[0]!.v), expected }
}

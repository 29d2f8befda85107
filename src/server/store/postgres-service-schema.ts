/**
 * The PostgreSQL tables of bulk jobs and webhooks (./postgres-bulk.ts, ./postgres-deliveries.ts): the SQLite tables
 * of migrations 002 and 004 (./sqlite/migrations.ts) column for column, with times as BIGINT unix ms. They are versions 3 and
 * 4 of the store's one migration list (./postgres/migrations.ts), after the core tables (orgs, credit transactions,
 * the `events` outbox, `meta`) they refer to. Append only, as every migration list.
 *
 * Differences from SQLite, all for many processes on one database:
 * - `bulk_rows` cascades from `bulk_jobs`, so the retention sweep is one DELETE.
 * - `events.pumped_at` marks the outbox events already fanned out to webhook deliveries. SQLite's pump keeps a cursor
 *   (the last `seq` it took); on PostgreSQL a sequence value is taken when a row is inserted, not when its transaction
 *   commits, so an event may become visible after a higher one — a cursor would skip it. Pumps instead take the
 *   events not pumped yet with `FOR UPDATE SKIP LOCKED`: several pumps share the work and each event is taken once.
 * - Due deliveries have a partial index of their own (the claim query reads only pending rows).
 */
import type pg from 'pg'

/** One migration of this module (the shape of the core store's list, so it can append to it). */
export interface PostgresServiceMigration {
  version: number
  name: string
  sql: string
}

/** The bulk and webhook migrations, in order: versions 3 and 4 of POSTGRES_MIGRATIONS (./postgres/migrations.ts). */
export const POSTGRES_BULK_MIGRATIONS: readonly PostgresServiceMigration[] = [
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

/** What a statement runs on: a `pg` Pool, or a client inside a transaction. */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>
}

/** Runs `fn` in a transaction on one client of `pool` (rolled back when it throws). */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw e
  } finally {
    client.release()
  }
}

/** BIGINT columns come back as strings. */
export const num = (v: string | number): number => Number(v)

/**
 * Schema migrations of the SQLite store, applied in order on start. `PRAGMA user_version` holds how many have run.
 * Append only: never edit a migration that has shipped; add the next one (bulk jobs, webhook endpoints and
 * deliveries come as migrations 2+ in the next issue).
 */

/** One migration: a name (for messages) and its SQL (several statements allowed). */
export interface Migration {
  name: string
  sql: string
}

/** The migrations, in order. */
export const MIGRATIONS: Migration[] = [
  {
    name: '001_core',
    sql: `
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE plans (
  id              TEXT PRIMARY KEY,
  name            TEXT NOT NULL,
  monthly_price   REAL NOT NULL CHECK (monthly_price >= 0),
  monthly_credits INTEGER NOT NULL CHECK (monthly_credits >= 0),
  rate_per_second INTEGER NOT NULL CHECK (rate_per_second >= 1),
  position        INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE orgs (
  id                       TEXT PRIMARY KEY,
  name                     TEXT NOT NULL,
  plan_id                  TEXT NOT NULL,
  monthly_credits_override INTEGER CHECK (monthly_credits_override >= 0),
  rate_override            INTEGER CHECK (rate_override >= 1),
  monthly_credits          INTEGER NOT NULL CHECK (monthly_credits >= 0),
  rate_per_second          INTEGER NOT NULL CHECK (rate_per_second >= 1),
  plan_status              TEXT NOT NULL DEFAULT 'active',
  suspended                INTEGER NOT NULL DEFAULT 0,
  created_at               INTEGER NOT NULL,
  period_anchor            INTEGER NOT NULL,
  period_start             INTEGER NOT NULL,
  period_end               INTEGER NOT NULL,
  subscription_credits     INTEGER NOT NULL CHECK (subscription_credits >= 0),
  purchased_credits        INTEGER NOT NULL CHECK (purchased_credits >= 0),
  alert_level              INTEGER NOT NULL DEFAULT 0,
  period_lookups           INTEGER NOT NULL DEFAULT 0,
  period_credits           INTEGER NOT NULL DEFAULT 0,
  total_lookups            INTEGER NOT NULL DEFAULT 0,
  total_credits            INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  org_id       TEXT NOT NULL REFERENCES orgs(id),
  name         TEXT NOT NULL,
  mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
  scopes       TEXT NOT NULL,
  hash         TEXT NOT NULL,
  last4        TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  revoked_at   INTEGER,
  last_used_at INTEGER
) STRICT;
CREATE INDEX api_keys_org ON api_keys(org_id);

CREATE TABLE credit_transactions (
  id            INTEGER PRIMARY KEY,
  org_id        TEXT NOT NULL REFERENCES orgs(id),
  amount        INTEGER NOT NULL,
  reason        TEXT NOT NULL,
  balance_after INTEGER NOT NULL,
  created_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX credit_transactions_org ON credit_transactions(org_id, id);

CREATE TABLE events (
  seq     INTEGER PRIMARY KEY,
  id      TEXT NOT NULL UNIQUE,
  org_id  TEXT NOT NULL REFERENCES orgs(id),
  type    TEXT NOT NULL,
  created INTEGER NOT NULL,
  payload TEXT NOT NULL
) STRICT;
CREATE INDEX events_org ON events(org_id, seq);

CREATE TABLE idempotency (
  scope       TEXT NOT NULL,
  idem_key    TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status      INTEGER,
  body        TEXT,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  PRIMARY KEY (scope, idem_key)
) STRICT;
CREATE INDEX idempotency_expires ON idempotency(expires_at);

CREATE TABLE result_cache (
  key        TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  stored_at  INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX result_cache_expires ON result_cache(expires_at);
`,
  },
]

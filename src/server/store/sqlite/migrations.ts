/**
 * Schema migrations of the SQLite store, applied in order on start by ./migrate.ts (`PRAGMA user_version` holds the
 * last version run). Append only: never edit a migration that has shipped; add the next one. Each entry's name
 * says what it adds.
 */
import type { Migration } from '../common/migration.js'

export type { Migration }

/** The migrations, in order. */
export const MIGRATIONS: Migration[] = [
  {
    version: 1,
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
  {
    version: 2,
    name: '002_bulk_webhooks',
    sql: `
CREATE TABLE bulk_jobs (
  seq        INTEGER PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  org_id     TEXT NOT NULL,
  mode       TEXT NOT NULL CHECK (mode IN ('live', 'test')),
  status     TEXT NOT NULL,
  job        TEXT NOT NULL,
  reserved   INTEGER NOT NULL,
  options    TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX bulk_jobs_owner ON bulk_jobs(org_id, mode, seq);
CREATE INDEX bulk_jobs_unfinished ON bulk_jobs(status) WHERE status IN ('queued', 'running');
CREATE INDEX bulk_jobs_expires ON bulk_jobs(expires_at);

CREATE TABLE bulk_rows (
  job_seq   INTEGER NOT NULL,
  idx       INTEGER NOT NULL,
  state     INTEGER NOT NULL,
  retryable INTEGER NOT NULL,
  action    TEXT,
  input     TEXT NOT NULL,
  result    TEXT,
  PRIMARY KEY (job_seq, idx)
) STRICT, WITHOUT ROWID;

CREATE TABLE bulk_reservations (
  id                INTEGER PRIMARY KEY,
  org_id            TEXT NOT NULL,
  amount            INTEGER NOT NULL CHECK (amount > 0),
  from_subscription INTEGER NOT NULL,
  from_purchased    INTEGER NOT NULL,
  period_start      INTEGER NOT NULL
) STRICT;
CREATE INDEX bulk_reservations_org ON bulk_reservations(org_id, id);

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
  created_at      INTEGER NOT NULL,
  enabled_at      INTEGER,
  last_success_at INTEGER
) STRICT;
CREATE INDEX webhook_endpoints_org ON webhook_endpoints(org_id, created_at);

CREATE TABLE webhook_events (
  id        TEXT PRIMARY KEY,
  org_id    TEXT NOT NULL,
  type      TEXT NOT NULL,
  created   INTEGER NOT NULL,
  payload   TEXT NOT NULL,
  stored_at INTEGER NOT NULL
) STRICT;

CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,
  event_id        TEXT NOT NULL,
  endpoint_id     TEXT NOT NULL,
  org_id          TEXT NOT NULL,
  status          TEXT NOT NULL,
  attempts        INTEGER NOT NULL,
  next_attempt_at INTEGER,
  lease_until     INTEGER,
  created_at      INTEGER NOT NULL,
  last_attempt_at INTEGER,
  last_status     INTEGER,
  last_error      TEXT,
  resend_of       TEXT
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt_at);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
CREATE UNIQUE INDEX webhook_deliveries_fanout ON webhook_deliveries(event_id, endpoint_id) WHERE resend_of IS NULL;

CREATE TABLE webhook_attempts (
  delivery_id   TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  event_id      TEXT NOT NULL,
  endpoint_id   TEXT NOT NULL,
  at            INTEGER NOT NULL,
  ok            INTEGER NOT NULL,
  status        INTEGER,
  duration_ms   INTEGER NOT NULL,
  response_body TEXT NOT NULL,
  error         TEXT,
  error_detail  TEXT,
  PRIMARY KEY (delivery_id, attempt)
) STRICT;
CREATE INDEX webhook_attempts_at ON webhook_attempts(at);

CREATE TABLE operator_notices (
  id          INTEGER PRIMARY KEY,
  at          INTEGER NOT NULL,
  org_id      TEXT,
  subject     TEXT NOT NULL,
  kind        TEXT NOT NULL,
  message     TEXT NOT NULL
) STRICT;
`,
  },
  {
    version: 3,
    name: '003_org_policies',
    sql: `
CREATE TABLE org_policies (
  org_id      TEXT PRIMARY KEY REFERENCES orgs(id),
  version     TEXT NOT NULL,
  canonical   TEXT NOT NULL,
  description TEXT,
  source      TEXT,
  set_at      INTEGER NOT NULL
) STRICT;

CREATE TABLE org_answers (
  id      INTEGER PRIMARY KEY,
  org_id  TEXT NOT NULL,
  at      INTEGER NOT NULL,
  type    TEXT NOT NULL,
  input   TEXT NOT NULL,
  action  TEXT NOT NULL,
  score   INTEGER,
  factors TEXT NOT NULL,
  context TEXT
) STRICT;
CREATE INDEX org_answers_org_at ON org_answers(org_id, at);
CREATE INDEX org_answers_at ON org_answers(at);
`,
  },
  {
    // A bulk job's credit reservation belongs to the job: taken in the transaction that inserts the job, and closed
    // (the unused part refunded, the row deleted) in the transaction that writes its final status, so neither a
    // crash at creation nor one at the end can lose or repeat credits. Rows of jobs created before this migration
    // keep a null job id and are settled per org, newest first, as before.
    version: 4,
    name: '004_bulk_reservation_job',
    sql: `
ALTER TABLE bulk_reservations ADD COLUMN job_id TEXT;
CREATE INDEX bulk_reservations_job ON bulk_reservations(job_id);
`,
  },
  {
    // Server instances renew a lease; a billed request's credits are a hold of its instance until its settlement
    // closes it, and an instance whose lease ended has its holds refunded and its in-progress Idempotency-Keys taken
    // over (./leases.ts). Records written before keep a null owner and the 2-minute takeover.
    version: 5,
    name: '005_instance_leases',
    sql: `
CREATE TABLE instances (
  id          TEXT PRIMARY KEY,
  started_at  INTEGER NOT NULL,
  lease_until INTEGER NOT NULL
) STRICT;

CREATE TABLE credit_holds (
  id           TEXT PRIMARY KEY,
  instance_id  TEXT NOT NULL,
  org_id       TEXT NOT NULL REFERENCES orgs(id),
  from_sub     INTEGER NOT NULL CHECK (from_sub >= 0),
  from_pur     INTEGER NOT NULL CHECK (from_pur >= 0),
  period_start INTEGER NOT NULL,
  created_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX credit_holds_instance ON credit_holds(instance_id);

ALTER TABLE idempotency ADD COLUMN owner TEXT;
`,
  },
  {
    // Velocity counts of servers on this file (./velocity.ts): one row per recorded check and value, the value only as
    // a keyed hash, numbered per key; rows older than the day window are deleted as checks arrive.
    version: 6,
    name: '006_velocity',
    sql: `
CREATE TABLE velocity_hits (
  key TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at  INTEGER NOT NULL,
  PRIMARY KEY (key, seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX velocity_hits_key_at ON velocity_hits(key, at, seq);
CREATE INDEX velocity_hits_at ON velocity_hits(at);
`,
  },
  {
    // Allow/block lists of an org and key mode, their normalised items, and the version every list change bumps in
    // its own transaction (read with the API key, so a change applies from the next request: ./lists.ts).
    version: 7,
    name: '007_lists',
    sql: `
CREATE TABLE lists (
  id         TEXT PRIMARY KEY,
  org_id     TEXT NOT NULL REFERENCES orgs(id),
  mode       TEXT NOT NULL CHECK (mode IN ('live', 'test')),
  name       TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('block', 'allow')),
  item_type  TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX lists_owner ON lists(org_id, mode);

CREATE TABLE list_items (
  list_id    TEXT NOT NULL REFERENCES lists(id) ON DELETE CASCADE,
  value      TEXT NOT NULL,
  reason     TEXT,
  expires_at INTEGER,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (list_id, value)
) STRICT, WITHOUT ROWID;

CREATE TABLE list_versions (
  org_id  TEXT NOT NULL,
  mode    TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (org_id, mode)
) STRICT;
`,
  },
  {
    // Outcomes (./outcomes.ts, docs/outcomes.md): labels of what happened after an answer, with history (a later
    // different outcome of the same subject supersedes the current one), and the keyed hashes of each answered
    // request's inputs, kept as long as the outcomes so a label given by request id reaches them.
    version: 8,
    name: '008_outcomes',
    sql: `
CREATE TABLE answer_inputs (
  request_id TEXT PRIMARY KEY,
  org_id     TEXT NOT NULL,
  mode       TEXT NOT NULL,
  at         INTEGER NOT NULL,
  email_hash TEXT,
  phone_hash TEXT,
  ip_hash    TEXT
) STRICT;
CREATE INDEX answer_inputs_at ON answer_inputs(at);

CREATE TABLE outcomes (
  seq           INTEGER PRIMARY KEY,
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
  created_at    INTEGER NOT NULL,
  superseded_at INTEGER
) STRICT;
CREATE UNIQUE INDEX outcomes_current ON outcomes(org_id, mode, subject) WHERE superseded_at IS NULL;
CREATE INDEX outcomes_org ON outcomes(org_id, mode, seq);
CREATE INDEX outcomes_created ON outcomes(created_at);
`,
  },
  {
    // The review queue (./reviews.ts, docs/reviews.md): answers whose action was review, with the input a reviewer
    // needs, and the decision taken on each; deleted a retention after the decision.
    version: 9,
    name: '009_reviews',
    sql: `
CREATE TABLE reviews (
  seq          INTEGER PRIMARY KEY,
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
  created_at   INTEGER NOT NULL,
  decision     TEXT,
  decided_by   TEXT,
  decided_at   INTEGER,
  note         TEXT,
  list_id      TEXT,
  outcome_id   TEXT,
  completed_at INTEGER
) STRICT;
CREATE INDEX reviews_org ON reviews(org_id, mode, seq);
CREATE INDEX reviews_created ON reviews(created_at);
`,
  },
  {
    // The answer log keeps each answer's request id, so a backtest finds the outcomes about it (by request id, or
    // by the keyed hashes of its inputs in answer_inputs): docs/decisions.md "Policies measured on outcomes".
    version: 10,
    name: '010_answer_log_request_ids',
    sql: `ALTER TABLE org_answers ADD COLUMN request_id TEXT;`,
  },
  {
    // Rechecks of email answers a mail server deferred (./rechecks.ts, docs/rechecks.md): one row per answer until
    // it is done; `due_at` is also the claim (a taken recheck is due again when its instance's claim runs out).
    version: 11,
    name: '011_email_rechecks',
    sql: `
CREATE TABLE email_rechecks (
  id           TEXT PRIMARY KEY,
  org_id       TEXT NOT NULL,
  mode         TEXT NOT NULL,
  request_id   TEXT,
  bulk_job_id  TEXT,
  row_index    INTEGER,
  address      TEXT NOT NULL,
  answered_at  INTEGER NOT NULL,
  due_at       INTEGER NOT NULL,
  attempt      INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL
) STRICT;
CREATE INDEX email_rechecks_due ON email_rechecks(due_at);
CREATE INDEX email_rechecks_job ON email_rechecks(bulk_job_id) WHERE bulk_job_id IS NOT NULL;
`,
  },
  {
    // The outcome version of each org and mode (./outcomes.ts): bumped in the same write as each recorded outcome,
    // returned with the API key, so every instance reads an org's labels again on its next request after a change.
    version: 12,
    name: '012_outcome_versions',
    sql: `
CREATE TABLE outcome_versions (
  org_id  TEXT NOT NULL,
  mode    TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (org_id, mode)
) STRICT;
INSERT INTO outcome_versions (org_id, mode, version) SELECT DISTINCT org_id, mode, 1 FROM outcomes;
`,
  },
  {
    // The velocity counts of each logged answer (numbers only, ../common/answer-log.ts encodeVelocity), so the
    // backtest of `admin policy set` derives the velocity factors again under a candidate's thresholds.
    version: 13,
    name: '013_answer_velocity',
    sql: `ALTER TABLE org_answers ADD COLUMN velocity TEXT;`,
  },
  {
    // The id of a velocity count's check (a keyed hash of the request's Idempotency-Key, else null), so a retry of one
    // request is counted once (./velocity.ts).
    version: 14,
    name: '014_velocity_check_id',
    sql: `ALTER TABLE velocity_hits ADD COLUMN check_id TEXT;
CREATE INDEX velocity_hits_check ON velocity_hits(key, check_id) WHERE check_id IS NOT NULL;`,
  },
  {
    // Velocity rows keyed by (key, at, seq): a key's times never go back as its numbers grow, so that one B-tree
    // orders both and the index on (key, at, seq) goes — a hit writes two B-trees, not three (./velocity.ts).
    version: 15,
    name: '015_velocity_hits_by_time',
    sql: `
CREATE TABLE velocity_hits_by_time (
  key      TEXT NOT NULL,
  seq      INTEGER NOT NULL,
  at       INTEGER NOT NULL,
  check_id TEXT,
  PRIMARY KEY (key, at, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO velocity_hits_by_time (key, seq, at, check_id) SELECT key, seq, at, check_id FROM velocity_hits;
DROP TABLE velocity_hits;
ALTER TABLE velocity_hits_by_time RENAME TO velocity_hits;
CREATE INDEX velocity_hits_at ON velocity_hits(at);
CREATE INDEX velocity_hits_check ON velocity_hits(key, check_id) WHERE check_id IS NOT NULL;
`,
  },
  {
    // Each list's item count, kept by the transactions that add and remove its items (./lists.ts): the limits and the
    // list pages read it instead of counting up to a million rows inside the adding transaction.
    version: 16,
    name: '016_list_item_counts',
    sql: `
ALTER TABLE lists ADD COLUMN item_count INTEGER NOT NULL DEFAULT 0;
UPDATE lists SET item_count = (SELECT COUNT(*) FROM list_items WHERE list_id = lists.id);
`,
  },
  {
    // A large list is deleted in two steps (./lists.ts): marked deleted — gone for every reader — in one short
    // transaction, then its items removed a few thousand per transaction, so no deletion holds the file's only write
    // lock for long; the mark lets a restart finish what a stopped process left.
    version: 17,
    name: '017_list_deletion_marks',
    sql: `
ALTER TABLE lists ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1));
CREATE INDEX lists_deleted ON lists(id) WHERE deleted = 1;
`,
  },
  {
    // A review entry keeps the E.164 form of the phone number its answer read (src/server/reviews.ts): a number sent in
    // national form with a country cannot be added to a list or labelled from the input alone.
    version: 18,
    name: '018_review_phone_e164',
    sql: `ALTER TABLE reviews ADD COLUMN phone_e164 TEXT;`,
  },
]

/**
 * The dashboard's store on PostgreSQL (`pg`), for servers whose service store is PostgreSQL: the same tables as the
 * SQLite store (../../server/store/sqlite/dashboard.ts), in a schema of their own choosing (default `public`), with their own migration ledger
 * `dashboard_migrations`; migrations run under a transaction-scoped advisory lock, so several servers starting at
 * once migrate once. Every operation is a single atomic SQL statement (no read-modify-write in JavaScript), except the
 * checks-and-counts of sign-in attempts (./postgres-account.ts) and of the mail throttle: one transaction each, under
 * a transaction-scoped advisory lock per key.
 * See ../../server/store/contracts/team-store.ts for the contract.
 */
import pg from 'pg'
import { pgAccountMethods } from './postgres-account.js'
import type { MailQuota, MailReservation, MembershipRecord, Role, TeamStore, TokenKind, TokenRecord, UsageDay, UserRecord } from '../../server/store/contracts/team-store.js'

/** The dashboard's PostgreSQL migrations, in order. */
export const PG_DASHBOARD_MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
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

/** An arbitrary fixed key of the migration advisory lock ("rcdash"). */
const MIGRATION_LOCK = 0x7263_6461_7368
/** The class (first of the two int4 keys) of the mail throttle's advisory locks ("rcml"); the second is the key's hash. */
const MAIL_LOCK_CLASS = 0x7263_6d6c

/**
 * The mail throttle's check-and-count in one transaction: every key of `quotas` locked, each quota's `limit`-th newest mail in its window read, and one
 * row per key written only when all have room. Two instances reserving at once are serialised by the locks.
 */
async function reservePg(pool: pg.Pool, quotas: readonly MailQuota[], nowMs: number): Promise<MailReservation> {
  const client = await pool.connect()
  const fullUntil = async (quota: MailQuota): Promise<number | null> => {
    const r = await client.query<{ at: string }>('SELECT at FROM dashboard_mail_log WHERE key = $1 AND at > $2 ORDER BY at DESC LIMIT 1 OFFSET $3', [
      quota.key,
      nowMs - quota.windowMs,
      quota.limit - 1,
    ])
    return r.rows[0] ? Number(r.rows[0].at) + quota.windowMs : null
  }
  const keys = [...new Set(quotas.map((x) => x.key))]
  try {
    await client.query('BEGIN')
    // locked in the order of the lock keys themselves (the hashes), so two reservations never wait in a cycle
    await client.query('SELECT pg_advisory_xact_lock($1, h) FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS t(k) ORDER BY h) AS l', [
      MAIL_LOCK_CLASS,
      keys,
    ])
    const full: number[] = []
    for (const quota of quotas) {
      const t = await fullUntil(quota)
      if (t !== null) full.push(t)
    }
    if (full.length > 0) {
      await client.query('ROLLBACK')
      return { ok: false, retryAt: Math.max(...full) }
    }
    await client.query('INSERT INTO dashboard_mail_log (key, at) SELECT k, $2 FROM unnest($1::text[]) AS t(k)', [keys, nowMs])
    let nextAt = nowMs
    for (const quota of quotas) nextAt = Math.max(nextAt, (await fullUntil(quota)) ?? nowMs)
    await client.query('COMMIT')
    return { ok: true, nextAt }
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw e
  } finally {
    client.release()
  }
}

/** Applies pending migrations (in one transaction under the advisory lock). Returns the versions applied. */
export async function migratePgDashboard(pool: pg.Pool, nowMs: number = Date.now()): Promise<number[]> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await client.query('CREATE TABLE IF NOT EXISTS dashboard_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
    const applied = new Set((await client.query<{ version: number }>('SELECT version FROM dashboard_migrations')).rows.map((r) => r.version))
    const done: number[] = []
    for (const m of PG_DASHBOARD_MIGRATIONS) {
      if (applied.has(m.version)) continue
      await client.query(m.sql)
      await client.query('INSERT INTO dashboard_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, nowMs])
      done.push(m.version)
    }
    await client.query('COMMIT')
    return done
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw e
  } finally {
    client.release()
  }
}

/** Options of {@link createPgTeamStore}. */
export interface PgTeamStoreOptions {
  /** A connection string (`postgres://user@host:5432/db`), or give `pool`. */
  connectionString?: string
  /** An existing pool (not closed by the store). */
  pool?: pg.Pool
  /** The schema of the tables (default: the connection's search_path, usually `public`); created if missing. */
  schema?: string
}

interface UserRow {
  id: string
  email: string
  password_hash: string
  email_verified_at: string | number | null
  created_at: string | number
  totp_secret: string | null
  totp_enabled_at: string | number | null
}
interface TokenRow { hash: string; kind: TokenKind; user_id: string; org_id: string | null; email: string; role: Role | null; created_at: string | number; expires_at: string | number }
interface MemberRow { org_id: string; user_id: string; role: Role; created_at: string | number }

const num = (v: string | number) => Number(v)
const numOrNull = (v: string | number | null) => (v === null ? null : Number(v))
const toUser = (r: UserRow | undefined): UserRecord | null =>
  r
    ? {
        id: r.id,
        email: r.email,
        passwordHash: r.password_hash,
        emailVerifiedAt: numOrNull(r.email_verified_at),
        createdAt: num(r.created_at),
        totpSecret: r.totp_secret,
        totpEnabledAt: numOrNull(r.totp_enabled_at),
      }
    : null
const toToken = (r: TokenRow): TokenRecord => ({
  hash: r.hash,
  kind: r.kind,
  userId: r.user_id,
  orgId: r.org_id,
  email: r.email,
  role: r.role,
  createdAt: num(r.created_at),
  expiresAt: num(r.expires_at),
})
const toMember = (r: MemberRow): MembershipRecord => ({ orgId: r.org_id, userId: r.user_id, role: r.role, createdAt: num(r.created_at) })

/**
 * A user and their first membership in one statement, so both rows or neither (a data-modifying WITH runs whether or
 * not it is read); the membership only for a user row this statement wrote. No row when the address is taken.
 */
const CREATE_ACCOUNT = `WITH u AS (INSERT INTO dashboard_users (id, email, password_hash, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (email) DO NOTHING RETURNING *),
     m AS (INSERT INTO dashboard_members (org_id, user_id, role, created_at) SELECT $5, u.id, $6, $4 FROM u)
SELECT * FROM u`

/** Opens the store (connects and migrates). `close()` ends the pool it created. */
export async function createPgTeamStore(options: PgTeamStoreOptions): Promise<TeamStore> {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) throw new TypeError('schema must be a plain lower-case identifier')
  const own = !options.pool
  const pool =
    options.pool ??
    new pg.Pool({
      connectionString: options.connectionString,
      ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    })
  try {
    if (options.schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`)
    await migratePgDashboard(pool)
  } catch (e) {
    if (own) await pool.end().catch(() => undefined)
    throw e
  }
  const q = async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = []) => (await pool.query<R>(sql, params)).rows

  return {
    ...pgAccountMethods(pool),
    async createUser(input, nowMs) {
      const rows = await q<UserRow>(
        'INSERT INTO dashboard_users (id, email, password_hash, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (email) DO NOTHING RETURNING *',
        [input.id, input.email, input.passwordHash, nowMs],
      )
      return toUser(rows[0])
    },
    createAccount: async (input, m, nowMs) =>
      toUser((await q<UserRow>(CREATE_ACCOUNT, [input.id, input.email, input.passwordHash, nowMs, m.orgId, m.role]))[0]),
    getUser: async (id) => toUser((await q<UserRow>('SELECT * FROM dashboard_users WHERE id = $1', [id]))[0]),
    getUserByEmail: async (email) => toUser((await q<UserRow>('SELECT * FROM dashboard_users WHERE email = $1', [email]))[0]),
    listUsers: async () => (await q<UserRow>('SELECT * FROM dashboard_users ORDER BY created_at, id')).map((r) => toUser(r)!),
    async setEmailVerified(userId, nowMs) {
      await q('UPDATE dashboard_users SET email_verified_at = $1 WHERE id = $2 AND email_verified_at IS NULL', [nowMs, userId])
    },
    async putMember(m) {
      await q(
        'INSERT INTO dashboard_members (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (org_id, user_id) DO UPDATE SET role = excluded.role',
        [m.orgId, m.userId, m.role, m.createdAt],
      )
    },
    async getMember(orgId, userId) {
      const r = (await q<MemberRow>('SELECT * FROM dashboard_members WHERE org_id = $1 AND user_id = $2', [orgId, userId]))[0]
      return r ? toMember(r) : null
    },
    listMembers: async (orgId) =>
      (
        await q<MemberRow & { email: string }>(
          'SELECT m.*, u.email FROM dashboard_members m JOIN dashboard_users u ON u.id = m.user_id WHERE m.org_id = $1 ORDER BY m.created_at, m.seq',
          [orgId],
        )
      ).map((r) => ({ ...toMember(r), email: r.email })),
    listMemberships: async (userId) => (await q<MemberRow>('SELECT * FROM dashboard_members WHERE user_id = $1 ORDER BY created_at, seq', [userId])).map(toMember),
    removeMember: async (orgId, userId) => (await pool.query('DELETE FROM dashboard_members WHERE org_id = $1 AND user_id = $2', [orgId, userId])).rowCount! > 0,
    async createSession(s) {
      await q('INSERT INTO dashboard_sessions (id_hash, user_id, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)', [s.idHash, s.userId, s.csrf, s.createdAt, s.expiresAt])
    },
    async getSession(idHash, nowMs) {
      const r = (await q<{ id_hash: string; user_id: string; csrf: string; created_at: string; expires_at: string }>('SELECT * FROM dashboard_sessions WHERE id_hash = $1 AND expires_at > $2', [idHash, nowMs]))[0]
      return r ? { idHash: r.id_hash, userId: r.user_id, csrf: r.csrf, createdAt: num(r.created_at), expiresAt: num(r.expires_at) } : null
    },
    async deleteSession(idHash) {
      await q('DELETE FROM dashboard_sessions WHERE id_hash = $1', [idHash])
    },
    async createToken(t) {
      await q('INSERT INTO dashboard_tokens (hash, kind, user_id, org_id, email, role, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
        t.hash,
        t.kind,
        t.userId,
        t.orgId,
        t.email,
        t.role,
        t.createdAt,
        t.expiresAt,
      ])
    },
    async getToken(hash, kind, nowMs) {
      const r = (await q<TokenRow>('SELECT * FROM dashboard_tokens WHERE hash = $1 AND kind = $2 AND expires_at > $3', [hash, kind, nowMs]))[0]
      return r ? toToken(r) : null
    },
    async consumeToken(hash, kind, nowMs) {
      // DELETE … RETURNING: of two concurrent takers exactly one gets the row
      const r = (await q<TokenRow>('DELETE FROM dashboard_tokens WHERE hash = $1 AND kind = $2 RETURNING *', [hash, kind]))[0]
      return r && num(r.expires_at) > nowMs ? toToken(r) : null
    },
    listInvites: async (orgId, nowMs) =>
      (await q<TokenRow>("SELECT * FROM dashboard_tokens WHERE kind = 'invite' AND org_id = $1 AND expires_at > $2 ORDER BY created_at", [orgId, nowMs])).map(toToken),
    deleteInvite: async (orgId, hash) => (await pool.query("DELETE FROM dashboard_tokens WHERE kind = 'invite' AND org_id = $1 AND hash = $2", [orgId, hash])).rowCount! > 0,
    reserveMail: (quotas, nowMs) => reservePg(pool, quotas, nowMs),
    async addUsage(orgId, day, type, lookups, credits) {
      await q(
        `INSERT INTO dashboard_usage (org_id, day, type, lookups, credits) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (org_id, day, type) DO UPDATE SET lookups = dashboard_usage.lookups + excluded.lookups, credits = dashboard_usage.credits + excluded.credits`,
        [orgId, day, type, lookups, credits],
      )
    },
    listUsage: async (orgId, fromDay, toDay) =>
      (
        await q<{ day: string; type: string; lookups: string; credits: string }>(
          'SELECT day, type, lookups, credits FROM dashboard_usage WHERE org_id = $1 AND day >= $2 AND day <= $3 ORDER BY day, type',
          [orgId, fromDay, toDay],
        )
      ).map((r): UsageDay => ({ day: r.day, type: r.type, lookups: num(r.lookups), credits: num(r.credits) })),
    async recordKeyCreator(orgId, keyId, userId) {
      await q('INSERT INTO dashboard_key_creators (org_id, key_id, user_id) VALUES ($1, $2, $3) ON CONFLICT (key_id) DO UPDATE SET user_id = excluded.user_id, org_id = excluded.org_id', [
        orgId,
        keyId,
        userId,
      ])
    },
    keyCreators: async (orgId) =>
      new Map((await q<{ key_id: string; user_id: string }>('SELECT key_id, user_id FROM dashboard_key_creators WHERE org_id = $1', [orgId])).map((r) => [r.key_id, r.user_id])),
    getCursor: async (name) => {
      const r = (await q<{ value: string }>('SELECT value FROM dashboard_cursors WHERE name = $1', [name]))[0]
      return r ? num(r.value) : 0
    },
    async setCursor(name, value) {
      await q('INSERT INTO dashboard_cursors (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [name, value])
    },
    async purgeExpired(nowMs, failuresBeforeMs) {
      const rows = await q<{ n: string }>(
        `WITH s AS (DELETE FROM dashboard_sessions WHERE expires_at <= $1 RETURNING 1),
              t AS (DELETE FROM dashboard_tokens WHERE expires_at <= $1 RETURNING 1),
              f AS (DELETE FROM dashboard_login_failures WHERE at < $2 RETURNING 1),
              l AS (DELETE FROM dashboard_mail_log WHERE at < $2 RETURNING 1)
         SELECT (SELECT COUNT(*) FROM s) + (SELECT COUNT(*) FROM t) + (SELECT COUNT(*) FROM f) + (SELECT COUNT(*) FROM l) AS n`,
        [nowMs, failuresBeforeMs],
      )
      return num(rows[0]!.n)
    },
    async close() {
      if (own) await pool.end()
    },
  }
}

/**
 * The dashboard's {@link TeamStore} on PostgreSQL: the SQLite store's tables, in the service's schema, with a migration
 * ledger of their own (docs/decisions.md "PostgreSQL store" → the dashboard).
 */
import type pg from 'pg'
import { pgModule } from '../../lazy-packages.js'
import { inTransaction, num } from './client.js'
import { pgAccountMethods } from './dashboard-accounts.js'
import { checkSchemaName, DASHBOARD_LEDGER, migratePostgres, PG_DASHBOARD_MIGRATIONS } from './migrations.js'
import type { MailQuota, MailReservation, MembershipRecord, Role, TeamStore, TokenKind, TokenRecord, UsageDay, UserRecord } from '../contracts/team-store.js'
/** The class (first of the two int4 keys) of the mail throttle's advisory locks ("rcml"); the second is the key's hash. */
const MAIL_LOCK_CLASS = 0x7263_6d6c

/**
 * The mail throttle's check-and-count in one transaction: every key of `quotas` locked, each quota's `limit`-th newest
 * mail in its window read, and one row per key written only when all have room. Two instances reserving at once are
 * serialised by the locks.
 */
function reservePg(pool: pg.Pool, quotas: readonly MailQuota[], nowMs: number): Promise<MailReservation> {
  const keys = [...new Set(quotas.map((x) => x.key))]
  return inTransaction(pool, async (client) => {
    const fullUntil = async (quota: MailQuota): Promise<number | null> => {
      const r = await client.query<{ at: string }>('SELECT at FROM dashboard_mail_log WHERE key = $1 AND at > $2 ORDER BY at DESC LIMIT 1 OFFSET $3', [
        quota.key,
        nowMs - quota.windowMs,
        quota.limit - 1,
      ])
      return r.rows[0] ? Number(r.rows[0].at) + quota.windowMs : null
    }
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
    // nothing written: the transaction commits only the locks' release
    if (full.length > 0) return { ok: false, retryAt: Math.max(...full) }
    await client.query('INSERT INTO dashboard_mail_log (key, at) SELECT k, $2 FROM unnest($1::text[]) AS t(k)', [keys, nowMs])
    let nextAt = nowMs
    for (const quota of quotas) nextAt = Math.max(nextAt, (await fullUntil(quota)) ?? nowMs)
    return { ok: true, nextAt }
  })
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
  checkSchemaName(options.schema)
  const own = !options.pool
  const pool =
    options.pool ??
    new (pgModule().Pool)({
      connectionString: options.connectionString,
      ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    })
  try {
    if (options.schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`)
    await migratePostgres(pool, { migrations: PG_DASHBOARD_MIGRATIONS, ledger: DASHBOARD_LEDGER })
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

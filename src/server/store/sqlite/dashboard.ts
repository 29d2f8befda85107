/**
 * The dashboard's store in the service's SQLite database (same file, its own tables prefixed `dashboard_` and its
 * own migration ledger `dashboard_migrations`, so the service's migrations and these never share a number).
 * The contract: ../contracts/team-store.ts.
 */
import type Database from 'better-sqlite3'
import type { Migration } from '../common/migration.js'
import { migrateSqlite } from './migrate.js'
import type { MailQuota, MailReservation, MembershipRecord, Role, SessionRecord, TeamStore, TokenKind, TokenRecord, UsageDay, UserRecord } from '../contracts/team-store.js'

/** The dashboard's migrations, in order; each runs once, in a transaction with its ledger row. */
export const DASHBOARD_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'users, members, sessions, tokens, login failures, usage, key creators, cursors',
    sql: `
CREATE TABLE dashboard_users (
  id                TEXT PRIMARY KEY,
  email             TEXT NOT NULL UNIQUE,
  password_hash     TEXT NOT NULL,
  email_verified_at INTEGER,
  created_at        INTEGER NOT NULL
) STRICT;
CREATE TABLE dashboard_members (
  org_id     TEXT NOT NULL,
  user_id    TEXT NOT NULL REFERENCES dashboard_users(id),
  role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'developer')),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, user_id)
) STRICT;
CREATE INDEX dashboard_members_user ON dashboard_members(user_id);
CREATE TABLE dashboard_sessions (
  id_hash    TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES dashboard_users(id),
  csrf       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT;
CREATE TABLE dashboard_tokens (
  hash       TEXT PRIMARY KEY,
  kind       TEXT NOT NULL CHECK (kind IN ('verify', 'invite')),
  user_id    TEXT NOT NULL,
  org_id     TEXT,
  email      TEXT NOT NULL,
  role       TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX dashboard_tokens_org ON dashboard_tokens(org_id, kind);
CREATE TABLE dashboard_login_failures (
  key TEXT NOT NULL,
  at  INTEGER NOT NULL
) STRICT;
CREATE INDEX dashboard_login_failures_key ON dashboard_login_failures(key, at);
CREATE TABLE dashboard_usage (
  org_id  TEXT NOT NULL,
  day     TEXT NOT NULL,
  type    TEXT NOT NULL,
  lookups INTEGER NOT NULL,
  credits INTEGER NOT NULL,
  PRIMARY KEY (org_id, day, type)
) STRICT;
CREATE TABLE dashboard_key_creators (
  org_id  TEXT NOT NULL,
  key_id  TEXT PRIMARY KEY,
  user_id TEXT NOT NULL
) STRICT;
CREATE INDEX dashboard_key_creators_org ON dashboard_key_creators(org_id);
CREATE TABLE dashboard_cursors (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) STRICT;`,
  },
  {
    version: 2,
    name: 'password reset and pending two-factor tokens, TOTP, recovery codes, team settings, sign-in attempts',
    // SQLite cannot change a CHECK constraint: the tokens table is rebuilt with the new kinds
    sql: `
ALTER TABLE dashboard_users ADD COLUMN totp_secret TEXT;
ALTER TABLE dashboard_users ADD COLUMN totp_enabled_at INTEGER;
ALTER TABLE dashboard_users ADD COLUMN totp_last_step INTEGER;
CREATE TABLE dashboard_recovery_codes (
  user_id TEXT NOT NULL REFERENCES dashboard_users(id),
  hash    TEXT NOT NULL,
  PRIMARY KEY (user_id, hash)
) STRICT;
CREATE TABLE dashboard_team_settings (
  org_id             TEXT PRIMARY KEY,
  require_two_factor INTEGER NOT NULL
) STRICT;
ALTER TABLE dashboard_login_failures ADD COLUMN attempt TEXT;
CREATE INDEX dashboard_login_failures_attempt ON dashboard_login_failures(attempt);
CREATE TABLE dashboard_tokens_v2 (
  hash       TEXT PRIMARY KEY,
  kind       TEXT NOT NULL CHECK (kind IN ('verify', 'invite', 'reset', 'mfa')),
  user_id    TEXT NOT NULL,
  org_id     TEXT,
  email      TEXT NOT NULL,
  role       TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT;
INSERT INTO dashboard_tokens_v2 SELECT hash, kind, user_id, org_id, email, role, created_at, expires_at FROM dashboard_tokens;
DROP TABLE dashboard_tokens;
ALTER TABLE dashboard_tokens_v2 RENAME TO dashboard_tokens;
CREATE INDEX dashboard_tokens_org ON dashboard_tokens(org_id, kind);
CREATE INDEX dashboard_tokens_user ON dashboard_tokens(user_id, kind);`,
  },
  {
    version: 3,
    name: 'mail log (the mail throttle)',
    sql: `
CREATE TABLE dashboard_mail_log (
  key TEXT NOT NULL,
  at  INTEGER NOT NULL
) STRICT;
CREATE INDEX dashboard_mail_log_key ON dashboard_mail_log(key, at);`,
  },
]

/** Applies the dashboard's pending migrations to `db` (ledger: the `dashboard_migrations` table). Returns the versions applied. */
export function migrateDashboard(db: Database.Database, nowMs: number = Date.now()): number[] {
  return migrateSqlite(db, DASHBOARD_MIGRATIONS, { table: 'dashboard_migrations' }, { nowMs })
}

interface UserRow {
  id: string
  email: string
  password_hash: string
  email_verified_at: number | null
  created_at: number
  totp_secret: string | null
  totp_enabled_at: number | null
}
interface TokenRow { hash: string; kind: TokenKind; user_id: string; org_id: string | null; email: string; role: Role | null; created_at: number; expires_at: number }

const toUser = (r: UserRow | undefined): UserRecord | null =>
  r
    ? {
        id: r.id,
        email: r.email,
        passwordHash: r.password_hash,
        emailVerifiedAt: r.email_verified_at,
        createdAt: r.created_at,
        totpSecret: r.totp_secret,
        totpEnabledAt: r.totp_enabled_at,
      }
    : null
const toToken = (r: TokenRow): TokenRecord => ({
  hash: r.hash,
  kind: r.kind,
  userId: r.user_id,
  orgId: r.org_id,
  email: r.email,
  role: r.role,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
})
const toMember = (r: { org_id: string; user_id: string; role: Role; created_at: number }): MembershipRecord => ({
  orgId: r.org_id,
  userId: r.user_id,
  role: r.role,
  createdAt: r.created_at,
})

/** The SQLite store over an open database (migrated on creation). Closing it leaves the database open. */
export function createSqliteTeamStore(db: Database.Database): TeamStore {
  migrateDashboard(db)
  const q = {
    insertUser: db.prepare('INSERT INTO dashboard_users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(email) DO NOTHING'),
    user: db.prepare('SELECT * FROM dashboard_users WHERE id = ?'),
    userByEmail: db.prepare('SELECT * FROM dashboard_users WHERE email = ?'),
    users: db.prepare('SELECT * FROM dashboard_users ORDER BY created_at, rowid'),
    verify: db.prepare('UPDATE dashboard_users SET email_verified_at = ? WHERE id = ? AND email_verified_at IS NULL'),
    setPassword: db.prepare('UPDATE dashboard_users SET password_hash = ? WHERE id = ?'),
    setTotp: db.prepare('UPDATE dashboard_users SET totp_secret = ?, totp_enabled_at = ?, totp_last_step = NULL WHERE id = ?'),
    useStep: db.prepare('UPDATE dashboard_users SET totp_last_step = ? WHERE id = ? AND (totp_last_step IS NULL OR totp_last_step < ?)'),
    clearCodes: db.prepare('DELETE FROM dashboard_recovery_codes WHERE user_id = ?'),
    addCode: db.prepare('INSERT OR IGNORE INTO dashboard_recovery_codes (user_id, hash) VALUES (?, ?)'),
    useCode: db.prepare('DELETE FROM dashboard_recovery_codes WHERE user_id = ? AND hash = ?'),
    countCodes: db.prepare('SELECT COUNT(*) AS n FROM dashboard_recovery_codes WHERE user_id = ?'),
    teamTwoFactor: db.prepare('SELECT require_two_factor FROM dashboard_team_settings WHERE org_id = ?'),
    setTeamTwoFactor: db.prepare(
      'INSERT INTO dashboard_team_settings (org_id, require_two_factor) VALUES (?, ?) ON CONFLICT(org_id) DO UPDATE SET require_two_factor = excluded.require_two_factor',
    ),
    putMember: db.prepare(
      'INSERT INTO dashboard_members (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(org_id, user_id) DO UPDATE SET role = excluded.role',
    ),
    member: db.prepare('SELECT * FROM dashboard_members WHERE org_id = ? AND user_id = ?'),
    members: db.prepare(
      'SELECT m.*, u.email FROM dashboard_members m JOIN dashboard_users u ON u.id = m.user_id WHERE m.org_id = ? ORDER BY m.created_at, m.rowid',
    ),
    memberships: db.prepare('SELECT * FROM dashboard_members WHERE user_id = ? ORDER BY created_at, rowid'),
    removeMember: db.prepare('DELETE FROM dashboard_members WHERE org_id = ? AND user_id = ?'),
    insertSession: db.prepare('INSERT INTO dashboard_sessions (id_hash, user_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)'),
    session: db.prepare('SELECT * FROM dashboard_sessions WHERE id_hash = ? AND expires_at > ?'),
    deleteSession: db.prepare('DELETE FROM dashboard_sessions WHERE id_hash = ?'),
    deleteSessionsOf: db.prepare('DELETE FROM dashboard_sessions WHERE user_id = ? AND id_hash IS NOT ?'),
    insertToken: db.prepare(
      'INSERT INTO dashboard_tokens (hash, kind, user_id, org_id, email, role, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    token: db.prepare('SELECT * FROM dashboard_tokens WHERE hash = ? AND kind = ? AND expires_at > ?'),
    takeToken: db.prepare('DELETE FROM dashboard_tokens WHERE hash = ? AND kind = ? RETURNING *'),
    invites: db.prepare("SELECT * FROM dashboard_tokens WHERE kind = 'invite' AND org_id = ? AND expires_at > ? ORDER BY created_at"),
    deleteInvite: db.prepare("DELETE FROM dashboard_tokens WHERE kind = 'invite' AND org_id = ? AND hash = ?"),
    deleteTokensOf: db.prepare('DELETE FROM dashboard_tokens WHERE user_id = ? AND kind = ?'),
    addAttempt: db.prepare('INSERT INTO dashboard_login_failures (key, at, attempt) VALUES (?, ?, ?)'),
    forgetAttempt: db.prepare('DELETE FROM dashboard_login_failures WHERE attempt = ?'),
    failures: db.prepare('SELECT COUNT(*) AS n FROM dashboard_login_failures WHERE key = ? AND at >= ?'),
    pruneFailures: db.prepare('DELETE FROM dashboard_login_failures WHERE key = ? AND at < ?'),
    clearFailures: db.prepare('DELETE FROM dashboard_login_failures WHERE key = ?'),
    addUsage: db.prepare(
      `INSERT INTO dashboard_usage (org_id, day, type, lookups, credits) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(org_id, day, type) DO UPDATE SET lookups = lookups + excluded.lookups, credits = credits + excluded.credits`,
    ),
    usage: db.prepare('SELECT day, type, lookups, credits FROM dashboard_usage WHERE org_id = ? AND day >= ? AND day <= ? ORDER BY day, type'),
    putCreator: db.prepare('INSERT OR REPLACE INTO dashboard_key_creators (org_id, key_id, user_id) VALUES (?, ?, ?)'),
    creators: db.prepare('SELECT key_id, user_id FROM dashboard_key_creators WHERE org_id = ?'),
    purgeSessions: db.prepare('DELETE FROM dashboard_sessions WHERE expires_at <= ?'),
    purgeTokens: db.prepare('DELETE FROM dashboard_tokens WHERE expires_at <= ?'),
    purgeFailures: db.prepare('DELETE FROM dashboard_login_failures WHERE at < ?'),
    cursor: db.prepare('SELECT value FROM dashboard_cursors WHERE name = ?'),
    setCursor: db.prepare('INSERT INTO dashboard_cursors (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value'),
  }
  const mailLog = sqliteMailLog(db)
  const accountTx = db.transaction((input: { id: string; email: string; passwordHash: string }, m: { orgId: string; role: Role }, nowMs: number) => {
    if (q.insertUser.run(input.id, input.email, input.passwordHash, nowMs).changes === 0) return null
    q.putMember.run(m.orgId, input.id, m.role, nowMs)
    return toUser(q.user.get(input.id) as UserRow)
  })
  const attemptTx = db.transaction((attempt: string, keys: ReadonlyArray<{ key: string; limit: number }>, nowMs: number, sinceMs: number) => {
    for (const k of keys) {
      q.pruneFailures.run(k.key, sinceMs)
      if ((q.failures.get(k.key, sinceMs) as { n: number }).n >= k.limit) return false
    }
    for (const k of keys) q.addAttempt.run(k.key, nowMs, attempt)
    return true
  })
  const codesTx = db.transaction((userId: string, hashes: readonly string[]) => {
    q.clearCodes.run(userId)
    for (const h of hashes) q.addCode.run(userId, h)
  })

  return {
    createUser(input, nowMs) {
      if (q.insertUser.run(input.id, input.email, input.passwordHash, nowMs).changes === 0) return null
      return toUser(q.user.get(input.id) as UserRow)
    },
    createAccount: (input, membership, nowMs) => accountTx.immediate(input, membership, nowMs),
    getUser: (id) => toUser(q.user.get(id) as UserRow | undefined),
    getUserByEmail: (email) => toUser(q.userByEmail.get(email) as UserRow | undefined),
    listUsers: () => (q.users.all() as UserRow[]).map((r) => toUser(r)!),
    setEmailVerified: (userId, nowMs) => void q.verify.run(nowMs, userId),
    setPasswordHash: (userId, hash) => void q.setPassword.run(hash, userId),
    setTotp: (userId, secret, enabledAt) => void q.setTotp.run(secret, enabledAt, userId),
    useTotpStep: (userId, step) => q.useStep.run(step, userId, step).changes > 0,
    setRecoveryCodes: (userId, hashes) => codesTx(userId, hashes),
    useRecoveryCode: (userId, hash) => q.useCode.run(userId, hash).changes > 0,
    countRecoveryCodes: (userId) => (q.countCodes.get(userId) as { n: number }).n,
    putMember: (m) => void q.putMember.run(m.orgId, m.userId, m.role, m.createdAt),
    getMember(orgId, userId) {
      const r = q.member.get(orgId, userId) as Parameters<typeof toMember>[0] | undefined
      return r ? toMember(r) : null
    },
    listMembers: (orgId) => (q.members.all(orgId) as Array<Parameters<typeof toMember>[0] & { email: string }>).map((r) => ({ ...toMember(r), email: r.email })),
    listMemberships: (userId) => (q.memberships.all(userId) as Array<Parameters<typeof toMember>[0]>).map(toMember),
    removeMember: (orgId, userId) => q.removeMember.run(orgId, userId).changes > 0,
    createSession: (s: SessionRecord) => void q.insertSession.run(s.idHash, s.userId, s.csrf, s.createdAt, s.expiresAt),
    getSession(idHash, nowMs) {
      const r = q.session.get(idHash, nowMs) as { id_hash: string; user_id: string; csrf: string; created_at: number; expires_at: number } | undefined
      return r ? { idHash: r.id_hash, userId: r.user_id, csrf: r.csrf, createdAt: r.created_at, expiresAt: r.expires_at } : null
    },
    deleteSession: (idHash) => void q.deleteSession.run(idHash),
    deleteSessionsOf: (userId, exceptIdHash) => q.deleteSessionsOf.run(userId, exceptIdHash ?? null).changes,
    createToken: (t: TokenRecord) => void q.insertToken.run(t.hash, t.kind, t.userId, t.orgId, t.email, t.role, t.createdAt, t.expiresAt),
    getToken(hash, kind, nowMs) {
      const r = q.token.get(hash, kind, nowMs) as TokenRow | undefined
      return r ? toToken(r) : null
    },
    consumeToken(hash, kind, nowMs) {
      const r = q.takeToken.get(hash, kind) as TokenRow | undefined
      return r && r.expires_at > nowMs ? toToken(r) : null
    },
    listInvites: (orgId, nowMs) => (q.invites.all(orgId, nowMs) as TokenRow[]).map(toToken),
    deleteInvite: (orgId, hash) => q.deleteInvite.run(orgId, hash).changes > 0,
    deleteTokensOf: (userId, kind) => void q.deleteTokensOf.run(userId, kind),
    // IMMEDIATE: the write lock is taken before the count, so processes sharing the file count one after another
    takeLoginAttempt: (attempt, keys, nowMs, sinceMs) => attemptTx.immediate(attempt, keys, nowMs, sinceMs),
    forgetLoginAttempt: (attempt) => void q.forgetAttempt.run(attempt),
    loginFailures: (key, sinceMs) => (q.failures.get(key, sinceMs) as { n: number }).n,
    clearLoginFailures: (key) => void q.clearFailures.run(key),
    teamRequiresTwoFactor: (orgId) => (q.teamTwoFactor.get(orgId) as { require_two_factor: number } | undefined)?.require_two_factor === 1,
    setTeamRequiresTwoFactor: (orgId, required) => void q.setTeamTwoFactor.run(orgId, required ? 1 : 0),
    reserveMail: mailLog.reserveMail,
    addUsage: (orgId, day, type, lookups, credits) => void q.addUsage.run(orgId, day, type, lookups, credits),
    listUsage: (orgId, fromDay, toDay) => q.usage.all(orgId, fromDay, toDay) as UsageDay[],
    recordKeyCreator: (orgId, keyId, userId) => void q.putCreator.run(orgId, keyId, userId),
    keyCreators: (orgId) => new Map((q.creators.all(orgId) as Array<{ key_id: string; user_id: string }>).map((r) => [r.key_id, r.user_id])),
    getCursor: (name) => (q.cursor.get(name) as { value: number } | undefined)?.value ?? 0,
    setCursor: (name, value) => void q.setCursor.run(name, value),
    purgeExpired: (nowMs, failuresBeforeMs) =>
      db.transaction(
        () =>
          q.purgeSessions.run(nowMs).changes +
          q.purgeTokens.run(nowMs).changes +
          q.purgeFailures.run(failuresBeforeMs).changes +
          mailLog.purge(failuresBeforeMs),
      )(),
    close: () => undefined,
  }
}

/**
 * The mail log on SQLite: the mail throttle's check-and-count in one IMMEDIATE transaction (the write lock is taken
 * before the count, so processes sharing the file count one after another), and the purge of mails older than
 * `beforeMs`.
 */
function sqliteMailLog(db: Database.Database): Pick<TeamStore, 'reserveMail'> & { purge(beforeMs: number): number } {
  const nth = db.prepare('SELECT at FROM dashboard_mail_log WHERE key = ? AND at > ? ORDER BY at DESC LIMIT 1 OFFSET ?')
  const add = db.prepare('INSERT INTO dashboard_mail_log (key, at) VALUES (?, ?)')
  const purge = db.prepare('DELETE FROM dashboard_mail_log WHERE at < ?')
  /** When `quota` has room again (its `limit`-th newest mail in the window leaves it), or null when it has room now. */
  const fullUntil = (quota: MailQuota, nowMs: number): number | null => {
    const r = nth.get(quota.key, nowMs - quota.windowMs, quota.limit - 1) as { at: number } | undefined
    return r ? r.at + quota.windowMs : null
  }
  const reserveTx = db.transaction((quotas: readonly MailQuota[], nowMs: number): MailReservation => {
    const full = quotas.map((x) => fullUntil(x, nowMs)).filter((t): t is number => t !== null)
    if (full.length > 0) return { ok: false, retryAt: Math.max(...full) }
    for (const key of new Set(quotas.map((x) => x.key))) add.run(key, nowMs)
    return { ok: true, nextAt: Math.max(nowMs, ...quotas.map((x) => fullUntil(x, nowMs) ?? nowMs)) }
  })
  return { reserveMail: (quotas, nowMs) => reserveTx.immediate(quotas, nowMs), purge: (beforeMs) => purge.run(beforeMs).changes }
}

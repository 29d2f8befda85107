/**
 * The account-security part of the PostgreSQL dashboard store (./dashboard.ts): passwords, sessions of a user, TOTP
 * and recovery codes, sign-in attempts and team settings; one statement each, or one transaction where it counts first.
 */
import type pg from 'pg'
import { inTransaction } from './client.js'
import type { TeamStore } from '../contracts/team-store.js'
/** The methods of {@link TeamStore} about account security, over `pool`. */
export type PgAccountMethods = Pick<
  TeamStore,
  | 'setPasswordHash'
  | 'setTotp'
  | 'useTotpStep'
  | 'setRecoveryCodes'
  | 'useRecoveryCode'
  | 'countRecoveryCodes'
  | 'deleteSessionsOf'
  | 'deleteTokensOf'
  | 'takeLoginAttempt'
  | 'forgetLoginAttempt'
  | 'loginFailures'
  | 'clearLoginFailures'
  | 'teamRequiresTwoFactor'
  | 'setTeamRequiresTwoFactor'
>

export function pgAccountMethods(pool: pg.Pool): PgAccountMethods {
  const run = async (sql: string, params: unknown[]) => (await pool.query(sql, params)).rowCount ?? 0
  return {
    async setPasswordHash(userId, hash) {
      await run('UPDATE dashboard_users SET password_hash = $1 WHERE id = $2', [hash, userId])
    },
    async setTotp(userId, secret, enabledAt) {
      await run('UPDATE dashboard_users SET totp_secret = $1, totp_enabled_at = $2, totp_last_step = NULL WHERE id = $3', [secret, enabledAt, userId])
    },
    // one UPDATE: of two requests with the same code, the second finds the step taken
    useTotpStep: async (userId, step) =>
      (await run('UPDATE dashboard_users SET totp_last_step = $1 WHERE id = $2 AND (totp_last_step IS NULL OR totp_last_step < $1)', [step, userId])) > 0,
    async setRecoveryCodes(userId, hashes) {
      await inTransaction(pool, async (c) => {
        await c.query('DELETE FROM dashboard_recovery_codes WHERE user_id = $1', [userId])
        await c.query('INSERT INTO dashboard_recovery_codes (user_id, hash) SELECT $1, h FROM unnest($2::text[]) h ON CONFLICT DO NOTHING', [userId, [...hashes]])
      })
    },
    useRecoveryCode: async (userId, hash) => (await run('DELETE FROM dashboard_recovery_codes WHERE user_id = $1 AND hash = $2', [userId, hash])) > 0,
    countRecoveryCodes: async (userId) => Number((await pool.query<{ n: string }>('SELECT COUNT(*) AS n FROM dashboard_recovery_codes WHERE user_id = $1', [userId])).rows[0]!.n),
    deleteSessionsOf: (userId, exceptIdHash) => run('DELETE FROM dashboard_sessions WHERE user_id = $1 AND id_hash IS DISTINCT FROM $2', [userId, exceptIdHash ?? null]),
    async deleteTokensOf(userId, kind) {
      await run('DELETE FROM dashboard_tokens WHERE user_id = $1 AND kind = $2', [userId, kind])
    },
    takeLoginAttempt: (attempt, keys, nowMs, sinceMs) =>
      inTransaction(pool, async (c) => {
        // A lock per key (held to the end of the transaction) makes concurrent attempts on every server sharing
        // this database count one after another; taken in one order, so two attempts never wait on each other.
        const names = [...new Set(keys.map((k) => k.key))].sort()
        for (const name of names) await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [name])
        const over = await c.query(
          `SELECT 1 FROM unnest($1::text[], $2::int[]) AS k(key, lim)
           WHERE (SELECT COUNT(*) FROM dashboard_login_failures f WHERE f.key = k.key AND f.at >= $3) >= k.lim`,
          [keys.map((k) => k.key), keys.map((k) => k.limit), sinceMs],
        )
        if ((over.rowCount ?? 0) > 0) return false
        await c.query(
          `WITH pruned AS (DELETE FROM dashboard_login_failures WHERE key = ANY($1) AND at < $3)
           INSERT INTO dashboard_login_failures (key, at, attempt) SELECT k, $2, $4 FROM unnest($1::text[]) k`,
          [keys.map((k) => k.key), nowMs, sinceMs, attempt],
        )
        return true
      }),
    async forgetLoginAttempt(attempt) {
      await run('DELETE FROM dashboard_login_failures WHERE attempt = $1', [attempt])
    },
    loginFailures: async (key, sinceMs) =>
      Number((await pool.query<{ n: string }>('SELECT COUNT(*) AS n FROM dashboard_login_failures WHERE key = $1 AND at >= $2', [key, sinceMs])).rows[0]!.n),
    async clearLoginFailures(key) {
      await run('DELETE FROM dashboard_login_failures WHERE key = $1', [key])
    },
    teamRequiresTwoFactor: async (orgId) =>
      (await pool.query<{ require_two_factor: boolean }>('SELECT require_two_factor FROM dashboard_team_settings WHERE org_id = $1', [orgId])).rows[0]?.require_two_factor === true,
    async setTeamRequiresTwoFactor(orgId, required) {
      await run(
        'INSERT INTO dashboard_team_settings (org_id, require_two_factor) VALUES ($1, $2) ON CONFLICT (org_id) DO UPDATE SET require_two_factor = excluded.require_two_factor',
        [orgId, required],
      )
    },
  }
}

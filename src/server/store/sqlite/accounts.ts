/**
 * Accounts of the SQLite store: the plan catalogue, orgs and their API keys, and the auth read every request makes
 * (one indexed join: the key, its org's suspension and rate, its policy version). An org read that may roll the
 * period over belongs to the credits (./credits.ts) and is passed in.
 */
import { randomBytes } from 'node:crypto'
import type Database from 'better-sqlite3'
import { periodAt } from '../../../accounts/ledger.js'
import type { Plan } from '../../../accounts/plans.js'
import type { AuthRecord } from '../../../accounts/types.js'
import type { Store, Synchronous } from '../contracts/store.js'
import { toKey, type KeyRow } from '../common/record-rows.js'
import { toOrg, type OrgRow } from './rows.js'

/** Plans, orgs (apart from their credits) and API keys. */
export type SqliteAccounts = Pick<
  Synchronous<Store>,
  | 'listPlans'
  | 'upsertPlans'
  | 'createOrg'
  | 'listOrgs'
  | 'setOrgSuspended'
  | 'insertKey'
  | 'getAuth'
  | 'getKey'
  | 'listKeys'
  | 'revokeKey'
  | 'setKeyScopes'
  | 'touchKey'
>

/** Inserts or updates `plans`, their order in the catalogue being their order here. Call it inside a transaction. */
export function insertPlans(db: Database.Database, plans: readonly Plan[]): void {
  const stmt = db.prepare(
    `INSERT INTO plans (id, name, monthly_price, monthly_credits, rate_per_second, position) VALUES (@id, @name, @monthly_price, @monthly_credits, @rate_per_second, @position)
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, monthly_price = excluded.monthly_price,
       monthly_credits = excluded.monthly_credits, rate_per_second = excluded.rate_per_second, position = excluded.position`,
  )
  plans.forEach((p, position) => stmt.run({ ...p, position }))
}

function orgs(db: Database.Database, readOrg: Synchronous<Store>['getOrg']) {
  const org = db.prepare('SELECT * FROM orgs WHERE id = ?')
  const all = db.prepare('SELECT * FROM orgs ORDER BY created_at, id')
  const plan = db.prepare('SELECT * FROM plans WHERE id = ?')
  const plans = db.prepare('SELECT id, name, monthly_price, monthly_credits, rate_per_second FROM plans ORDER BY position, id')
  const insert = db.prepare(
    `INSERT INTO orgs (id, name, plan_id, monthly_credits, rate_per_second, created_at, period_anchor, period_start, period_end,
       subscription_credits, purchased_credits)
     VALUES (@id, @name, @plan_id, @monthly_credits, @rate_per_second, @created_at, @created_at, @period_start, @period_end,
       @monthly_credits, 0)`,
  )
  const suspend = db.prepare('UPDATE orgs SET suspended = ?, plan_status = ? WHERE id = ?')
  return {
    listPlans: () => plans.all() as Plan[],
    upsertPlans(list) {
      db.transaction(() => insertPlans(db, list)).immediate()
    },
    createOrg(input, nowMs) {
      const p = plan.get(input.planId) as Plan | undefined
      if (!p) throw new RangeError(`unknown plan ${input.planId}`)
      const id = `org_${randomBytes(8).toString('hex')}`
      const { start, end } = periodAt(nowMs, nowMs)
      insert.run({
        id,
        name: input.name,
        plan_id: p.id,
        monthly_credits: p.monthly_credits,
        rate_per_second: p.rate_per_second,
        created_at: nowMs,
        period_start: start,
        period_end: end,
      })
      return toOrg(org.get(id) as OrgRow)
    },
    listOrgs(nowMs) {
      return (all.all() as OrgRow[]).map((r) => readOrg(r.id, nowMs)!).filter(Boolean)
    },
    setOrgSuspended(orgId, suspended, nowMs) {
      const r = suspend.run(suspended ? 1 : 0, suspended ? 'suspended' : 'active', orgId)
      return r.changes === 1 ? readOrg(orgId, nowMs) : null
    },
  } satisfies Partial<SqliteAccounts>
}

function keys(db: Database.Database) {
  const insert = db.prepare(
    `INSERT INTO api_keys (id, org_id, name, mode, scopes, hash, last4, created_at, revoked_at, last_used_at)
     VALUES (@id, @org_id, @name, @mode, @scopes, @hash, @last4, @created_at, @revoked_at, @last_used_at)`,
  )
  const key = db.prepare('SELECT * FROM api_keys WHERE id = ?')
  const auth = db.prepare(
    `SELECT k.*, o.suspended AS org_suspended, o.rate_per_second AS org_rate, p.version AS org_policy,
       o.subscription_credits + o.purchased_credits AS org_balance, o.period_end AS org_period_end, v.version AS lists_version,
       ov.version AS outcomes_version
     FROM api_keys k JOIN orgs o ON o.id = k.org_id LEFT JOIN org_policies p ON p.org_id = k.org_id
       LEFT JOIN list_versions v ON v.org_id = k.org_id AND v.mode = k.mode
       LEFT JOIN outcome_versions ov ON ov.org_id = k.org_id AND ov.mode = k.mode WHERE k.id = ?`,
  )
  const ofOrg = db.prepare('SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, id')
  const revoke = db.prepare('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?')
  const scopes = db.prepare('UPDATE api_keys SET scopes = ? WHERE id = ?')
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')
  const read = (keyId: string) => {
    const row = key.get(keyId) as KeyRow | undefined
    return row ? toKey(row) : null
  }
  return {
    insertKey(k) {
      insert.run({
        id: k.id,
        org_id: k.orgId,
        name: k.name,
        mode: k.mode,
        scopes: k.scopes.join(' '),
        hash: k.hash,
        last4: k.last4,
        created_at: k.createdAt,
        revoked_at: k.revokedAt,
        last_used_at: k.lastUsedAt,
      })
    },
    getAuth(keyId) {
      const row = auth.get(keyId) as
        | (KeyRow & { org_suspended: number; org_rate: number; org_policy: string | null; org_balance: number; org_period_end: number; lists_version: number | null; outcomes_version: number | null })
        | undefined
      if (!row) return null
      const rec: AuthRecord = {
        key: toKey(row),
        org: {
          id: row.org_id,
          suspended: row.org_suspended === 1,
          ratePerSecond: row.org_rate,
          policyVersion: row.org_policy,
          balance: row.org_balance,
          periodEnd: row.org_period_end,
          listsVersion: row.lists_version,
          outcomesVersion: row.outcomes_version,
        },
      }
      return rec
    },
    getKey: read,
    listKeys: (orgId) => (ofOrg.all(orgId) as KeyRow[]).map(toKey),
    revokeKey(keyId, nowMs) {
      revoke.run(nowMs, keyId)
      return read(keyId)
    },
    setKeyScopes(keyId, list) {
      scopes.run(list.join(' '), keyId)
      return read(keyId)
    },
    touchKey(keyId, nowMs) {
      touch.run(nowMs, keyId, nowMs - 60_000)
    },
  } satisfies Partial<SqliteAccounts>
}

/** `readOrg` is the credits' org read (it renews a period that has ended). */
export function createSqliteAccounts(db: Database.Database, readOrg: Synchronous<Store>['getOrg']): SqliteAccounts {
  return { ...orgs(db, readOrg), ...keys(db) }
}

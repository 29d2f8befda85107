/**
 * The embedded store: SQLite through better-sqlite3 (synchronous, one connection per process), WAL mode, migrations
 * on open. Every credit change is one IMMEDIATE transaction holding a conditional UPDATE, so concurrent requests —
 * and other processes such as `riskcheck admin` on the same file — can never take a balance below zero or spend a
 * credit twice.
 */
import { randomBytes } from 'node:crypto'
import Database from 'better-sqlite3'
import type { CacheEntry, ResultCache } from '../../cache.js'
import type { EventPayload, EventType, PlanStatus, Scope } from '../../schema.js'
import {
  alertLevelOf,
  buildEvent,
  creditsAddedEvent,
  dueAlerts,
  periodAt,
  planChangeOf,
  refundSplit,
  renewal,
  reserveSplit,
  type AlertLevel,
  type CreditState,
  type PendingEvent,
} from '../ledger.js'
import { DEFAULT_PLANS, type Plan } from '../plans.js'
import { MIGRATIONS, type Migration } from './migrations.js'
import {
  IDEMPOTENCY_STALE_MS,
  type ApiKeyRecord,
  type CacheWrite,
  type AuthRecord,
  type CreditReason,
  type CreditReservation,
  type IdempotencyBegin,
  type OrgRecord,
  type PlanChange,
  type StoredEvent,
  type Store,
  type Synchronous,
} from './types.js'

export { IDEMPOTENCY_STALE_MS, type Synchronous }

/** The SQLite store; `db` is exposed so later modules (bulk, webhooks) can add their tables and statements. */
export interface SqliteStore extends Synchronous<Store> {
  readonly db: Database.Database
  /** The file path (or `:memory:`). */
  readonly path: string
}

/**
 * Group commit: the writes queued in one turn of the event loop run in one IMMEDIATE transaction, each in a savepoint
 * of its own (a transaction function called inside a transaction is one), so a write that throws rolls back alone.
 * Every promise settles after the commit — an answer never goes out before its credits are written. Under load, one
 * commit then serves many requests; alone, a write waits for nothing but the current turn to end.
 */
export function groupCommit(db: Database.Database): <T>(write: () => T) => Promise<T> {
  type Item = { write: () => unknown; resolve: (v: any) => void; reject: (e: unknown) => void; ok?: boolean; value?: unknown }
  let queue: Item[] = []
  const flush = () => {
    const items = queue
    queue = []
    try {
      db.transaction(() => {
        for (const it of items) {
          try {
            it.value = it.write()
            it.ok = true
          } catch (e) {
            it.value = e
            it.ok = false
          }
        }
      }).immediate()
    } catch (e) {
      for (const it of items) it.reject(e)
      return
    }
    for (const it of items) (it.ok ? it.resolve : it.reject)(it.value)
  }
  return <T>(write: () => T) =>
    new Promise<T>((resolve, reject) => {
      if (queue.push({ write, resolve, reject }) === 1) setImmediate(flush)
    })
}

/** Options of {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /** Extra migrations applied after the core ones (for modules built on this store). */
  migrations?: Migration[]
  /** Milliseconds to wait for a lock held by another process (default 5000). */
  busyTimeoutMs?: number
}

interface OrgRow {
  id: string
  name: string
  plan_id: string
  monthly_credits_override: number | null
  rate_override: number | null
  monthly_credits: number
  rate_per_second: number
  plan_status: string
  suspended: number
  created_at: number
  period_anchor: number
  period_start: number
  period_end: number
  subscription_credits: number
  purchased_credits: number
  alert_level: number
  period_lookups: number
  period_credits: number
  total_lookups: number
  total_credits: number
}

/** The credit fields of an org (what every billed request reads). */
type CreditRow = Pick<
  OrgRow,
  'period_anchor' | 'period_start' | 'period_end' | 'monthly_credits' | 'subscription_credits' | 'purchased_credits' | 'alert_level'
>

interface KeyRow {
  id: string
  org_id: string
  name: string
  mode: string
  scopes: string
  hash: string
  last4: string
  created_at: number
  revoked_at: number | null
  last_used_at: number | null
}

function toOrg(r: OrgRow): OrgRecord {
  return {
    id: r.id,
    name: r.name,
    planId: r.plan_id,
    monthlyCredits: r.monthly_credits,
    ratePerSecond: r.rate_per_second,
    planStatus: r.plan_status as PlanStatus,
    suspended: r.suspended === 1,
    createdAt: r.created_at,
    periodStart: r.period_start,
    periodEnd: r.period_end,
    subscriptionCredits: r.subscription_credits,
    purchasedCredits: r.purchased_credits,
    usage: {
      periodLookups: r.period_lookups,
      periodCredits: r.period_credits,
      totalLookups: r.total_lookups,
      totalCredits: r.total_credits,
    },
  }
}

const creditState = (r: CreditRow): CreditState => ({
  monthlyCredits: r.monthly_credits,
  subscriptionCredits: r.subscription_credits,
  purchasedCredits: r.purchased_credits,
  alertLevel: r.alert_level as AlertLevel,
})

function toKey(r: KeyRow): ApiKeyRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    name: r.name,
    mode: r.mode as 'live' | 'test',
    scopes: r.scopes === '' ? [] : (r.scopes.split(' ') as Scope[]),
    hash: r.hash,
    last4: r.last4,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
    lastUsedAt: r.last_used_at,
  }
}

function applyMigrations(db: Database.Database, migrations: Migration[]): void {
  const version = db.pragma('user_version', { simple: true }) as number
  if (version > migrations.length) {
    throw new Error(`riskcheck store: the database schema (version ${version}) is newer than this server (${migrations.length}); upgrade riskcheck`)
  }
  for (let i = version; i < migrations.length; i++) {
    const m = migrations[i]!
    db.transaction(() => {
      db.exec(m.sql)
      db.pragma(`user_version = ${i + 1}`)
    }).immediate()
  }
}

/**
 * Opens (creating if needed) the SQLite store at `path` (`:memory:` for a throw-away one): WAL journal, foreign keys,
 * busy timeout, migrations, the default plan catalogue and the key-hash secret on first start.
 *
 * @example
 * const store = createSqliteStore('./riskcheck.sqlite')
 * const org = store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
 */
export function createSqliteStore(path: string, options: SqliteStoreOptions = {}): SqliteStore {
  const db = new Database(path)
  const migrations = [...MIGRATIONS, ...(options.migrations ?? [])]
  try {
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    db.pragma('foreign_keys = ON')
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`)
    applyMigrations(db, migrations)
    db.transaction(() => {
      db.prepare(`INSERT OR IGNORE INTO meta (key, value) VALUES ('key_hash_secret', ?)`).run(randomBytes(32).toString('hex'))
      const plans = db.prepare('SELECT COUNT(*) AS n FROM plans').get() as { n: number }
      if (plans.n === 0) insertPlans(db, DEFAULT_PLANS)
    }).immediate()
  } catch (e) {
    db.close()
    throw e
  }
  return buildStore(db, path, migrations.length)
}

function insertPlans(db: Database.Database, plans: readonly Plan[]): void {
  const stmt = db.prepare(
    `INSERT INTO plans (id, name, monthly_price, monthly_credits, rate_per_second, position) VALUES (@id, @name, @monthly_price, @monthly_credits, @rate_per_second, @position)
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, monthly_price = excluded.monthly_price,
       monthly_credits = excluded.monthly_credits, rate_per_second = excluded.rate_per_second, position = excluded.position`,
  )
  plans.forEach((p, position) => stmt.run({ ...p, position }))
}

function buildStore(db: Database.Database, path: string, expectedVersion: number): SqliteStore {
  const secret = (db.prepare(`SELECT value FROM meta WHERE key = 'key_hash_secret'`).get() as { value: string }).value
  const q = {
    org: db.prepare('SELECT * FROM orgs WHERE id = ?'),
    balance: db.prepare('SELECT subscription_credits + purchased_credits AS balance, period_end FROM orgs WHERE id = ?'),
    credits: db.prepare(
      `SELECT period_anchor, period_start, period_end, monthly_credits, subscription_credits, purchased_credits, alert_level
       FROM orgs WHERE id = ?`,
    ),
    orgs: db.prepare('SELECT * FROM orgs ORDER BY created_at, id'),
    plan: db.prepare('SELECT * FROM plans WHERE id = ?'),
    plans: db.prepare('SELECT id, name, monthly_price, monthly_credits, rate_per_second FROM plans ORDER BY position, id'),
    insertOrg: db.prepare(
      `INSERT INTO orgs (id, name, plan_id, monthly_credits, rate_per_second, created_at, period_anchor, period_start, period_end,
         subscription_credits, purchased_credits)
       VALUES (@id, @name, @plan_id, @monthly_credits, @rate_per_second, @created_at, @created_at, @period_start, @period_end,
         @monthly_credits, 0)`,
    ),
    renew: db.prepare(
      `UPDATE orgs SET period_start = ?, period_end = ?, subscription_credits = monthly_credits, period_lookups = 0,
         period_credits = 0, alert_level = ? WHERE id = ?`,
    ),
    take: db.prepare(
      `UPDATE orgs SET subscription_credits = subscription_credits - @sub, purchased_credits = purchased_credits - @pur,
         period_credits = period_credits + @amount, total_credits = total_credits + @amount
       WHERE id = @id AND subscription_credits >= @sub AND purchased_credits >= @pur`,
    ),
    giveBack: db.prepare(
      `UPDATE orgs SET subscription_credits = subscription_credits + @sub, purchased_credits = purchased_credits + @pur,
         period_credits = MAX(0, period_credits - @period), total_credits = MAX(0, total_credits - @amount)
       WHERE id = @id`,
    ),
    countLookups: db.prepare(
      'UPDATE orgs SET period_lookups = period_lookups + ?, total_lookups = total_lookups + ? WHERE id = ?',
    ),
    setAlert: db.prepare('UPDATE orgs SET alert_level = ? WHERE id = ?'),
    addPurchased: db.prepare('UPDATE orgs SET purchased_credits = purchased_credits + ?, alert_level = ? WHERE id = ?'),
    setPlan: db.prepare(
      `UPDATE orgs SET plan_id = @plan_id, monthly_credits_override = @mco, rate_override = @ro, monthly_credits = @monthly,
         rate_per_second = @rate, subscription_credits = @sub, alert_level = @alert WHERE id = @id`,
    ),
    suspend: db.prepare('UPDATE orgs SET suspended = ?, plan_status = ? WHERE id = ?'),
    insertTx: db.prepare('INSERT INTO credit_transactions (org_id, amount, reason, balance_after, created_at) VALUES (?, ?, ?, ?, ?)'),
    insertEvent: db.prepare('INSERT INTO events (id, org_id, type, created, payload) VALUES (?, ?, ?, ?, ?)'),
    insertKey: db.prepare(
      `INSERT INTO api_keys (id, org_id, name, mode, scopes, hash, last4, created_at, revoked_at, last_used_at)
       VALUES (@id, @org_id, @name, @mode, @scopes, @hash, @last4, @created_at, @revoked_at, @last_used_at)`,
    ),
    key: db.prepare('SELECT * FROM api_keys WHERE id = ?'),
    auth: db.prepare(
      `SELECT k.*, o.suspended AS org_suspended, o.rate_per_second AS org_rate, p.version AS org_policy
       FROM api_keys k JOIN orgs o ON o.id = k.org_id LEFT JOIN org_policies p ON p.org_id = k.org_id WHERE k.id = ?`,
    ),
    keys: db.prepare('SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, id'),
    revoke: db.prepare('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?'),
    scopes: db.prepare('UPDATE api_keys SET scopes = ? WHERE id = ?'),
    touch: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)'),
    idemDeleteExpired: db.prepare('DELETE FROM idempotency WHERE scope = ? AND idem_key = ? AND expires_at <= ?'),
    idemInsert: db.prepare(
      'INSERT OR IGNORE INTO idempotency (scope, idem_key, fingerprint, status, body, created_at, expires_at) VALUES (?, ?, ?, NULL, NULL, ?, ?)',
    ),
    idemGet: db.prepare('SELECT fingerprint, status, body, created_at FROM idempotency WHERE scope = ? AND idem_key = ?'),
    idemRestart: db.prepare('UPDATE idempotency SET created_at = ?, expires_at = ? WHERE scope = ? AND idem_key = ? AND status IS NULL'),
    idemComplete: db.prepare('UPDATE idempotency SET status = ?, body = ? WHERE scope = ? AND idem_key = ?'),
    idemDelete: db.prepare('DELETE FROM idempotency WHERE scope = ? AND idem_key = ? AND status IS NULL'),
    purgeIdem: db.prepare('DELETE FROM idempotency WHERE expires_at <= ?'),
    purgeCache: db.prepare('DELETE FROM result_cache WHERE expires_at <= ?'),
    cacheGet: db.prepare('SELECT value, stored_at FROM result_cache WHERE key = ? AND expires_at > ?'),
    cacheSet: db.prepare(
      `INSERT INTO result_cache (key, value, stored_at, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, stored_at = excluded.stored_at, expires_at = excluded.expires_at`,
    ),
    cacheClear: db.prepare('DELETE FROM result_cache'),
    eventSeq: db.prepare('SELECT seq FROM events WHERE id = ?'),
  }

  const emit = (orgId: string, events: PendingEvent[], nowMs: number) => {
    for (const e of events) {
      const payload = buildEvent(orgId, e, nowMs)
      q.insertEvent.run(payload.id, orgId, payload.type, payload.created, JSON.stringify(payload))
    }
  }

  /**
   * Reads the credit fields of an org inside a transaction, renewing its period first when due. (A narrow row: this
   * runs on every billed request.)
   */
  const load = (orgId: string, nowMs: number): CreditRow | null => {
    const row = q.credits.get(orgId) as CreditRow | undefined
    if (!row) return null
    if (nowMs < row.period_end) return row
    const r = renewal(row.period_anchor, row.monthly_credits, row.purchased_credits, nowMs)
    q.renew.run(r.start, r.end, r.alertLevel, orgId)
    if (r.granted > 0) {
      q.insertTx.run(orgId, r.granted, 'period_renewal', r.balance, nowMs)
      emit(orgId, [creditsAddedEvent(r.granted, r.balance, 'period_renewal')], nowMs)
    }
    return q.credits.get(orgId) as CreditRow
  }

  const readOrg = (orgId: string, nowMs: number): OrgRecord | null => {
    const row = q.org.get(orgId) as OrgRow | undefined
    if (!row) return null
    // Only write (take the lock) when a roll-over is due.
    if (nowMs < row.period_end) return toOrg(row)
    return db.transaction(() => {
      if (!load(orgId, nowMs)) return null
      return toOrg(q.org.get(orgId) as OrgRow)
    }).immediate()
  }

  const reserveTx = db.transaction((orgId: string, amount: number, nowMs: number): CreditReservation | null => {
    const row = load(orgId, nowMs)
    if (!row) return null
    const split = reserveSplit(row.subscription_credits, row.purchased_credits, amount)
    if (!split) return null
    const r = q.take.run({ id: orgId, sub: split.fromSubscription, pur: split.fromPurchased, amount })
    if (r.changes !== 1) return null
    return { amount, ...split, periodStart: row.period_start, balanceAfter: row.subscription_credits + row.purchased_credits - amount }
  })

  const refundTx = db.transaction((orgId: string, res: CreditReservation, amount: number, nowMs: number) => {
    const row = load(orgId, nowMs)
    if (!row) return
    const { fromPurchased: pur, fromSubscription: sub } = refundSplit(res, amount)
    const samePeriod = row.period_start === res.periodStart
    q.giveBack.run({ id: orgId, sub: samePeriod ? sub : 0, pur, period: samePeriod ? pur + sub : 0, amount: pur + sub })
  })

  const settleTx = db.transaction((orgId: string, lookups: number, nowMs: number, cacheWrites: readonly CacheWrite[] | undefined) => {
    for (const w of cacheWrites ?? []) resultCache.set(w.key, w.entry, w.ttlMs)
    const row = load(orgId, nowMs)
    if (!row) return
    if (lookups > 0) q.countLookups.run(lookups, lookups, orgId)
    const due = dueAlerts(row.subscription_credits + row.purchased_credits, row.monthly_credits, row.alert_level as AlertLevel)
    if (due.level !== row.alert_level) q.setAlert.run(due.level, orgId)
    emit(orgId, due.events, nowMs)
  })

  const addTx = db.transaction((orgId: string, amount: number, reason: CreditReason, nowMs: number): OrgRecord | null => {
    const row = load(orgId, nowMs)
    if (!row) return null
    const balance = row.subscription_credits + row.purchased_credits + amount
    q.addPurchased.run(amount, alertLevelOf(balance, row.monthly_credits), orgId)
    q.insertTx.run(orgId, amount, reason, balance, nowMs)
    emit(orgId, [creditsAddedEvent(amount, balance, reason)], nowMs)
    return toOrg(q.org.get(orgId) as OrgRow)
  })

  const planTx = db.transaction((orgId: string, change: PlanChange, nowMs: number): OrgRecord | null => {
    const row = load(orgId, nowMs)
    if (!row) return null
    const plan = q.plan.get(change.planId) as Plan | undefined
    if (!plan) throw new RangeError(`unknown plan ${change.planId}`)
    const c = planChangeOf(creditState(row), plan, change)
    q.setPlan.run({
      id: orgId,
      plan_id: plan.id,
      mco: c.monthlyOverride,
      ro: c.rateOverride,
      monthly: c.monthlyCredits,
      rate: c.ratePerSecond,
      sub: c.subscriptionCredits,
      alert: c.alertLevel,
    })
    if (c.granted > 0) {
      q.insertTx.run(orgId, c.granted, 'upgrade', c.balance, nowMs)
      emit(orgId, [creditsAddedEvent(c.granted, c.balance, 'upgrade')], nowMs)
    }
    return toOrg(q.org.get(orgId) as OrgRow)
  })

  const idemBeginTx = db.transaction(
    (scope: string, key: string, fingerprint: string, nowMs: number, ttlMs: number): IdempotencyBegin => {
      q.idemDeleteExpired.run(scope, key, nowMs)
      if (q.idemInsert.run(scope, key, fingerprint, nowMs, nowMs + ttlMs).changes === 1) return { state: 'new' }
      const row = q.idemGet.get(scope, key) as { fingerprint: string; status: number | null; body: string | null; created_at: number }
      if (row.fingerprint !== fingerprint) return { state: 'mismatch' }
      if (row.status === null || row.body === null) {
        // No request runs this long: the one that started this record died with its process. Let the retry run
        // instead of answering 409 until the record expires a day later.
        if (nowMs - row.created_at >= IDEMPOTENCY_STALE_MS) {
          q.idemRestart.run(nowMs, nowMs + ttlMs, scope, key)
          return { state: 'new' }
        }
        return { state: 'in_progress' }
      }
      return { state: 'replay', status: row.status, body: row.body }
    },
  )

  const resultCache: ResultCache = {
    get(key, nowMs) {
      const row = q.cacheGet.get(key, nowMs) as { value: string; stored_at: number } | undefined
      if (!row) return undefined
      try {
        const outcome = JSON.parse(row.value) as CacheEntry['outcome']
        return { outcome, storedAt: row.stored_at }
      } catch {
        return undefined
      }
    },
    set(key, entry, ttlMs) {
      q.cacheSet.run(key, JSON.stringify(entry.outcome), entry.storedAt, entry.storedAt + ttlMs)
    },
    clear() {
      q.cacheClear.run()
    },
    // The store owns the database; closing the riskcheck instance must not close it.
    close() {},
  }

  const group = groupCommit(db)
  let closed = false
  return {
    db,
    path,
    resultCache,
    grouped: {
      reserveCredits: (orgId, amount, nowMs) => group(() => reserveTx.immediate(orgId, amount, nowMs)),
      refundCredits: (orgId, res, amount, nowMs) => group(() => refundTx.immediate(orgId, res, amount, nowMs)),
      settleCredits: (orgId, lookups, nowMs, cacheWrites) => group(() => settleTx.immediate(orgId, lookups, nowMs, cacheWrites)),
    },
    keyHashSecret: () => secret,
    listPlans: () => q.plans.all() as Plan[],
    upsertPlans(plans) {
      db.transaction(() => insertPlans(db, plans)).immediate()
    },
    createOrg(input, nowMs) {
      const plan = q.plan.get(input.planId) as Plan | undefined
      if (!plan) throw new RangeError(`unknown plan ${input.planId}`)
      const id = `org_${randomBytes(8).toString('hex')}`
      const { start, end } = periodAt(nowMs, nowMs)
      q.insertOrg.run({
        id,
        name: input.name,
        plan_id: plan.id,
        monthly_credits: plan.monthly_credits,
        rate_per_second: plan.rate_per_second,
        created_at: nowMs,
        period_start: start,
        period_end: end,
      })
      return toOrg(q.org.get(id) as OrgRow)
    },
    getOrg: readOrg,
    listOrgs(nowMs) {
      return (q.orgs.all() as OrgRow[]).map((r) => readOrg(r.id, nowMs)!).filter(Boolean)
    },
    setOrgPlan: (orgId, change, nowMs) => planTx.immediate(orgId, change, nowMs),
    setOrgSuspended(orgId, suspended, nowMs) {
      const r = q.suspend.run(suspended ? 1 : 0, suspended ? 'suspended' : 'active', orgId)
      return r.changes === 1 ? readOrg(orgId, nowMs) : null
    },
    insertKey(k) {
      q.insertKey.run({
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
      const row = q.auth.get(keyId) as (KeyRow & { org_suspended: number; org_rate: number; org_policy: string | null }) | undefined
      if (!row) return null
      const rec: AuthRecord = {
        key: toKey(row),
        org: { id: row.org_id, suspended: row.org_suspended === 1, ratePerSecond: row.org_rate, policyVersion: row.org_policy },
      }
      return rec
    },
    getKey(keyId) {
      const row = q.key.get(keyId) as KeyRow | undefined
      return row ? toKey(row) : null
    },
    listKeys: (orgId) => (q.keys.all(orgId) as KeyRow[]).map(toKey),
    revokeKey(keyId, nowMs) {
      q.revoke.run(nowMs, keyId)
      const row = q.key.get(keyId) as KeyRow | undefined
      return row ? toKey(row) : null
    },
    setKeyScopes(keyId, scopes) {
      q.scopes.run(scopes.join(' '), keyId)
      const row = q.key.get(keyId) as KeyRow | undefined
      return row ? toKey(row) : null
    },
    touchKey(keyId, nowMs) {
      q.touch.run(nowMs, keyId, nowMs - 60_000)
    },
    reserveCredits: (orgId, amount, nowMs) => reserveTx.immediate(orgId, amount, nowMs),
    refundCredits: (orgId, res, amount, nowMs) => refundTx.immediate(orgId, res, amount, nowMs),
    balance(orgId, nowMs) {
      const row = q.balance.get(orgId) as { balance: number; period_end: number } | undefined
      if (!row) return 0
      if (nowMs < row.period_end) return row.balance
      const org = readOrg(orgId, nowMs)
      return org ? org.subscriptionCredits + org.purchasedCredits : 0
    },
    settleCredits: (orgId, lookups, nowMs, cacheWrites) => settleTx.immediate(orgId, lookups, nowMs, cacheWrites),
    addCredits: (orgId, amount, reason, nowMs) => addTx.immediate(orgId, amount, reason, nowMs),
    listEvents({ orgId, afterId, limit = 100 }) {
      const after = afterId ? ((q.eventSeq.get(afterId) as { seq: number } | undefined)?.seq ?? 0) : 0
      const rows = (
        orgId
          ? db.prepare('SELECT * FROM events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?').all(orgId, after, limit)
          : db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?').all(after, limit)
      ) as Array<{ id: string; org_id: string; type: string; created: number; payload: string }>
      return rows.map(
        (r): StoredEvent => ({
          id: r.id,
          orgId: r.org_id,
          type: r.type as EventType,
          created: r.created,
          payload: JSON.parse(r.payload) as EventPayload,
        }),
      )
    },
    beginIdempotent: (scope, key, fingerprint, nowMs, ttlMs) => idemBeginTx.immediate(scope, key, fingerprint, nowMs, ttlMs),
    completeIdempotent(scope, key, status, body) {
      q.idemComplete.run(status, body, scope, key)
    },
    abandonIdempotent(scope, key) {
      q.idemDelete.run(scope, key)
    },
    purgeExpired(nowMs) {
      return db.transaction(() => q.purgeCache.run(nowMs).changes + q.purgeIdem.run(nowMs).changes).immediate()
    },
    probe() {
      // a real read of the file (not a cached value): throws when the store is closed or the file is unreadable
      const schemaVersion = db.pragma('user_version', { simple: true }) as number
      return { schemaVersion, expectedVersion }
    },
    close() {
      if (closed) return
      closed = true
      db.close()
    },
  }
}

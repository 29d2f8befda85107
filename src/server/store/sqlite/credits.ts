/**
 * Credits of the SQLite store. Every credit change is one IMMEDIATE transaction holding a conditional UPDATE, so
 * concurrent requests — and other processes such as `riskcheck admin` on the same file — can never take a balance
 * below zero or spend a credit twice. Each transaction first renews the org's period when it has ended (rules of
 * ../../../accounts/ledger.ts), and writes the credit events it causes to the outbox (./events.ts) before it commits.
 */
import type Database from 'better-sqlite3'
import type { ResultCache } from '../../../cache.js'
import {
  alertLevelOf,
  creditsAddedEvent,
  dueAlerts,
  planChangeOf,
  refundSplit,
  renewal,
  reserveSplit,
  type AlertLevel,
} from '../../../accounts/ledger.js'
import type { Plan } from '../../../accounts/plans.js'
import type { CacheWrite, CreditReason, CreditReservation, OrgRecord, PlanChange } from '../../../accounts/types.js'
import type { Store, Synchronous } from '../contracts/store.js'
import type { SqliteEvents } from './events.js'
import { creditState, toOrg, type CreditRow, type OrgRow } from './rows.js'

/**
 * The credit operations of the store, and the org read (which may roll the period over); `within`: the reservation,
 * refund and settlement as plain steps for a transaction that is already open (no savepoint of their own).
 */
export type SqliteCredits = Pick<
  Synchronous<Store>,
  'getOrg' | 'balance' | 'reserveCredits' | 'refundCredits' | 'settleCredits' | 'addCredits' | 'setOrgPlan'
> & { within: Pick<Synchronous<Store>, 'reserveCredits' | 'refundCredits' | 'settleCredits'> }

function statements(db: Database.Database) {
  return {
    org: db.prepare('SELECT * FROM orgs WHERE id = ?'),
    plan: db.prepare('SELECT * FROM plans WHERE id = ?'),
    balance: db.prepare('SELECT subscription_credits + purchased_credits AS balance, period_end FROM orgs WHERE id = ?'),
    credits: db.prepare(
      `SELECT period_anchor, period_start, period_end, monthly_credits, subscription_credits, purchased_credits, alert_level
       FROM orgs WHERE id = ?`,
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
    countLookups: db.prepare('UPDATE orgs SET period_lookups = period_lookups + ?, total_lookups = total_lookups + ? WHERE id = ?'),
    setAlert: db.prepare('UPDATE orgs SET alert_level = ? WHERE id = ?'),
    addPurchased: db.prepare('UPDATE orgs SET purchased_credits = purchased_credits + ?, alert_level = ? WHERE id = ?'),
    setPlan: db.prepare(
      `UPDATE orgs SET plan_id = @plan_id, monthly_credits_override = @mco, rate_override = @ro, monthly_credits = @monthly,
         rate_per_second = @rate, subscription_credits = @sub, alert_level = @alert WHERE id = @id`,
    ),
    insertTx: db.prepare('INSERT INTO credit_transactions (org_id, amount, reason, balance_after, created_at) VALUES (?, ?, ?, ?, ?)'),
  }
}

/** `resultCache` takes a settlement's cache writes inside its transaction; `events.emit` its credit events. */
export function createSqliteCredits(db: Database.Database, resultCache: ResultCache, events: Pick<SqliteEvents, 'emit'>): SqliteCredits {
  const q = statements(db)
  const { emit } = events
  const orgRecord = (orgId: string) => toOrg(q.org.get(orgId) as OrgRow)

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
    return db.transaction(() => (load(orgId, nowMs) ? orgRecord(orgId) : null)).immediate()
  }

  const reserveStep = (orgId: string, amount: number, nowMs: number): CreditReservation | null => {
    const row = load(orgId, nowMs)
    if (!row) return null
    const split = reserveSplit(row.subscription_credits, row.purchased_credits, amount)
    if (!split) return null
    const r = q.take.run({ id: orgId, sub: split.fromSubscription, pur: split.fromPurchased, amount })
    if (r.changes !== 1) return null
    return { amount, ...split, periodStart: row.period_start, balanceAfter: row.subscription_credits + row.purchased_credits - amount }
  }

  const refundStep = (orgId: string, res: CreditReservation, amount: number, nowMs: number) => {
    const row = load(orgId, nowMs)
    if (!row) return
    const { fromPurchased: pur, fromSubscription: sub } = refundSplit(res, amount)
    const samePeriod = row.period_start === res.periodStart
    q.giveBack.run({ id: orgId, sub: samePeriod ? sub : 0, pur, period: samePeriod ? pur + sub : 0, amount: pur + sub })
    return row.subscription_credits + row.purchased_credits + (samePeriod ? sub : 0) + pur
  }

  const settleStep = (orgId: string, lookups: number, nowMs: number, cacheWrites: readonly CacheWrite[] | undefined) => {
    for (const w of cacheWrites ?? []) resultCache.set(w.key, w.entry, w.ttlMs)
    const row = load(orgId, nowMs)
    if (!row) return
    if (lookups > 0) q.countLookups.run(lookups, lookups, orgId)
    const due = dueAlerts(row.subscription_credits + row.purchased_credits, row.monthly_credits, row.alert_level as AlertLevel)
    if (due.level !== row.alert_level) q.setAlert.run(due.level, orgId)
    emit(orgId, due.events, nowMs)
  }
  const reserveTx = db.transaction(reserveStep)
  const refundTx = db.transaction(refundStep)
  const settleTx = db.transaction(settleStep)

  const addTx = db.transaction((orgId: string, amount: number, reason: CreditReason, nowMs: number): OrgRecord | null => {
    const row = load(orgId, nowMs)
    if (!row) return null
    const balance = row.subscription_credits + row.purchased_credits + amount
    q.addPurchased.run(amount, alertLevelOf(balance, row.monthly_credits), orgId)
    q.insertTx.run(orgId, amount, reason, balance, nowMs)
    emit(orgId, [creditsAddedEvent(amount, balance, reason)], nowMs)
    return orgRecord(orgId)
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
    return orgRecord(orgId)
  })

  return {
    getOrg: readOrg,
    balance(orgId, nowMs) {
      const row = q.balance.get(orgId) as { balance: number; period_end: number } | undefined
      if (!row) return 0
      if (nowMs < row.period_end) return row.balance
      const org = readOrg(orgId, nowMs)
      return org ? org.subscriptionCredits + org.purchasedCredits : 0
    },
    reserveCredits: (orgId, amount, nowMs) => reserveTx.immediate(orgId, amount, nowMs),
    refundCredits: (orgId, res, amount, nowMs) => refundTx.immediate(orgId, res, amount, nowMs),
    settleCredits: (orgId, lookups, nowMs, cacheWrites) => settleTx.immediate(orgId, lookups, nowMs, cacheWrites),
    addCredits: (orgId, amount, reason, nowMs) => addTx.immediate(orgId, amount, reason, nowMs),
    setOrgPlan: (orgId, change, nowMs) => planTx.immediate(orgId, change, nowMs),
    within: { reserveCredits: reserveStep, refundCredits: refundStep, settleCredits: settleStep },
  }
}

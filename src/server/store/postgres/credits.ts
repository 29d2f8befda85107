/**
 * Credits of the PostgreSQL store. Every billed request runs a reservation, perhaps a refund, and a settlement; each
 * is ONE statement (one round trip) holding the whole decision — a conditional UPDATE whose WHERE refuses to take a
 * balance below zero — so any number of server processes can share one org's credits without overspending and
 * without a BEGIN/SELECT/UPDATE/COMMIT dance. Only what is rare takes a transaction: the month's roll-over (the
 * statements above refuse to run past the period end and the transaction renews first, rules of
 * ../../../accounts/ledger.ts), an alert (its level change and its outbox events are one statement, so an alert is
 * written once), and an operator's top-up or plan change.
 */
import type pg from 'pg'
import { perTurn } from './per-turn.js'
import {
  alertLevelOf,
  buildEvent,
  creditsAddedEvent,
  dueAlerts,
  planChangeOf,
  refundSplit,
  renewal,
  type AlertLevel,
  type PendingEvent,
} from '../../../accounts/ledger.js'
import type { CacheWrite, CreditReason, CreditReservation, HoldRef, OrgRecord, PlanChange } from '../../../accounts/types.js'
import { inTransaction, toOrg, toPlan, type Num, type OrgRow, type PlanRow, type Queryable } from './rows.js'

interface CreditRow {
  period_anchor: Num
  period_start: Num
  period_end: Num
  monthly_credits: Num
  subscription_credits: Num
  purchased_credits: Num
  alert_level: number
}

const CREDIT_COLUMNS = 'period_anchor, period_start, period_end, monthly_credits, subscription_credits, purchased_credits, alert_level'

/**
 * Takes `$2` credits, subscription first. The CTE locks the row and reads it as it is now (after any update that
 * committed while it waited); the UPDATE then writes values computed from that locked row only. (Computing them from
 * the updated row itself would be wrong here: PostgreSQL evaluates the CHECK constraints on a version computed from
 * the statement's snapshot before it notices a concurrent update and recomputes, so a row renewed meanwhile would
 * fail `subscription_credits >= 0` spuriously.) No row: no org. A null `from_sub`: the balance is short or the period
 * has ended (told by `period_end`).
 */
const RESERVE = {
  name: 'riskcheck_reserve',
  text: `WITH cur AS (
  SELECT id, subscription_credits AS sub, purchased_credits AS pur, period_credits, total_credits, period_start, period_end,
    LEAST(subscription_credits, $2::bigint) AS take_sub
  FROM orgs WHERE id = $1 FOR UPDATE
), took AS (
  UPDATE orgs o SET subscription_credits = cur.sub - cur.take_sub, purchased_credits = cur.pur - ($2::bigint - cur.take_sub),
    period_credits = cur.period_credits + $2::bigint, total_credits = cur.total_credits + $2::bigint
  FROM cur WHERE o.id = cur.id AND cur.period_end > $3::bigint AND cur.sub + cur.pur >= $2::bigint
  RETURNING cur.take_sub AS from_sub
)
SELECT cur.period_start, cur.period_end, took.from_sub, cur.sub + cur.pur - $2::bigint AS balance_after FROM cur LEFT JOIN took ON TRUE`,
}

/**
 * The reservations of many requests in one statement: `$1`/`$2` each request's org and amount, in order, `$3` the
 * time, `$4`/`$5` each request's hold and instance (null: none). Per org, requests are granted in order while the
 * balance covers them (a prefix: once one is refused, so are the later ones of that org in this statement); every
 * value is computed from the locked row, as {@link RESERVE}'s. A granted request with a hold has what it took
 * recorded there (../contracts/store.ts `InstanceLeases`). Returns one row per request whose org exists, with whether
 * it was granted and its share of subscription credits.
 */
export const RESERVE_MANY = {
  name: 'riskcheck_reserve_many',
  text: `WITH req AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $4::text[], $5::text[]) WITH ORDINALITY AS r(org_id, amount, hold_id, instance_id, n)
), cur AS (
  SELECT id, subscription_credits AS sub, purchased_credits AS pur, period_credits, total_credits, period_start, period_end
  FROM orgs WHERE id IN (SELECT org_id FROM req) FOR UPDATE
), run AS (
  SELECT req.n, req.org_id, req.amount, req.hold_id, req.instance_id, cur.sub, cur.pur, cur.period_start, cur.period_end,
    SUM(req.amount) OVER (PARTITION BY req.org_id ORDER BY req.n) AS cum
  FROM req JOIN cur ON cur.id = req.org_id
), dec AS (
  SELECT run.*, period_end > $3::bigint AND cum <= sub + pur AS granted, GREATEST(0, LEAST(sub, cum) - (cum - amount)) AS from_sub
  FROM run
), tot AS (
  SELECT org_id, SUM(amount) AS total FROM dec WHERE granted GROUP BY org_id
), took AS (
  UPDATE orgs o SET subscription_credits = cur.sub - LEAST(cur.sub, tot.total),
    purchased_credits = cur.pur - (tot.total - LEAST(cur.sub, tot.total)),
    period_credits = cur.period_credits + tot.total, total_credits = cur.total_credits + tot.total
  FROM tot JOIN cur ON cur.id = tot.org_id WHERE o.id = tot.org_id
  RETURNING o.id
), held AS (
  INSERT INTO credit_holds (id, instance_id, org_id, from_sub, from_pur, period_start, created_at)
  SELECT hold_id, instance_id, org_id, from_sub, amount - from_sub, period_start, $3::bigint FROM dec WHERE granted AND hold_id IS NOT NULL
  ON CONFLICT (id) DO UPDATE SET from_sub = credit_holds.from_sub + EXCLUDED.from_sub, from_pur = credit_holds.from_pur + EXCLUDED.from_pur,
    period_start = EXCLUDED.period_start
)
SELECT n, org_id, amount, cum, sub, pur, period_start, period_end, granted, from_sub FROM dec ORDER BY n`,
}

/** Gives back `$4` subscription (only to the period they were taken in, `$3`) and `$5` purchased credits. */
const REFUND = {
  name: 'riskcheck_refund',
  text: `UPDATE orgs SET
  subscription_credits = subscription_credits + CASE WHEN period_start = $3::bigint THEN $4::bigint ELSE 0 END,
  purchased_credits = purchased_credits + $5::bigint,
  period_credits = GREATEST(0, period_credits - CASE WHEN period_start = $3::bigint THEN $4::bigint + $5::bigint ELSE 0 END),
  total_credits = GREATEST(0, total_credits - ($4::bigint + $5::bigint))
WHERE id = $1 AND period_end > $2::bigint RETURNING subscription_credits + purchased_credits AS balance`,
}

/**
 * The refunds of many requests in one statement: `$1…$4` each refund's org, the period its reservation was taken in,
 * and its subscription and purchased parts; `$5` the time. Per org, summed from the locked row as {@link REFUND}
 * decides for one (subscription credits only back into the period they came from). Returns each org's balance after.
 */
export const REFUND_MANY = {
  name: 'riskcheck_refund_many',
  text: `WITH req AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) AS r(org_id, period_start, sub, pur)
), cur AS (
  SELECT id, period_start, period_end FROM orgs WHERE id IN (SELECT org_id FROM req) FOR UPDATE
), agg AS (
  SELECT req.org_id,
    SUM(CASE WHEN cur.period_start = req.period_start THEN req.sub ELSE 0 END) AS sub,
    SUM(req.pur) AS pur,
    SUM(CASE WHEN cur.period_start = req.period_start THEN req.sub + req.pur ELSE 0 END) AS period_part,
    SUM(req.sub + req.pur) AS total
  FROM req JOIN cur ON cur.id = req.org_id WHERE cur.period_end > $5::bigint GROUP BY req.org_id
)
UPDATE orgs o SET subscription_credits = o.subscription_credits + agg.sub, purchased_credits = o.purchased_credits + agg.pur,
  period_credits = GREATEST(0, o.period_credits - agg.period_part), total_credits = GREATEST(0, o.total_credits - agg.total)
FROM agg WHERE o.id = agg.org_id
RETURNING o.id, o.subscription_credits + o.purchased_credits AS balance`,
}

/** Counts the lookups and returns what the alert decision needs. */
const SETTLE = {
  name: 'riskcheck_settle',
  text: `UPDATE orgs SET period_lookups = period_lookups + $2::bigint, total_lookups = total_lookups + $2::bigint
WHERE id = $1 AND period_end > $3::bigint
RETURNING subscription_credits + purchased_credits AS balance, monthly_credits, alert_level`,
}

/** {@link SETTLE} plus the request's result-cache entries ($4…$7, one array each), still one statement. */
const SETTLE_AND_CACHE = {
  name: 'riskcheck_settle_cache',
  text: `WITH cached AS (
  INSERT INTO result_cache (key, value, stored_at, expires_at)
  SELECT * FROM unnest($4::text[], $5::text[], $6::bigint[], $7::bigint[])
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at
)
${SETTLE.text}`,
}

/**
 * The settlements of many requests (of any orgs) and their result-cache entries in one statement: `$1`/`$2` the orgs
 * and their lookups, `$3` the time, `$4…$7` the cache columns. Returns the orgs it settled (an org whose period has
 * ended is left out, to be renewed and settled on its own).
 */
const SETTLE_MANY = {
  name: 'riskcheck_settle_many',
  text: `WITH cached AS (
  INSERT INTO result_cache (key, value, stored_at, expires_at)
  SELECT * FROM unnest($4::text[], $5::text[], $6::bigint[], $7::bigint[])
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at
)
UPDATE orgs o SET period_lookups = o.period_lookups + u.n, total_lookups = o.total_lookups + u.n
FROM unnest($1::text[], $2::bigint[]) AS u(id, n)
WHERE o.id = u.id AND o.period_end > $3::bigint
RETURNING o.id, o.subscription_credits + o.purchased_credits AS balance, o.monthly_credits, o.alert_level`,
}

/** The values of {@link SETTLE_AND_CACHE}'s arrays; one entry per key (the last wins), as ON CONFLICT requires. */
export function cacheColumns(writes: readonly CacheWrite[]): [string[], string[], number[], number[]] {
  const byKey = new Map(writes.map((w) => [w.key, w]))
  const cols: [string[], string[], number[], number[]] = [[], [], [], []]
  for (const w of byKey.values()) {
    cols[0].push(w.key)
    cols[1].push(JSON.stringify(w.entry.outcome))
    cols[2].push(w.entry.storedAt)
    cols[3].push(w.entry.storedAt + w.ttlMs)
  }
  return cols
}

/** Moves the alert level from `$2` to `$3` and writes the alerts it calls for; nothing when another request moved it first. */
const MOVE_ALERT = {
  name: 'riskcheck_move_alert',
  text: `WITH moved AS (
  UPDATE orgs SET alert_level = $3 WHERE id = $1 AND alert_level = $2 RETURNING id
), written AS (
  INSERT INTO events (id, org_id, type, created, payload)
  SELECT e.id, moved.id, e.type, e.created, e.payload
  FROM moved, unnest($4::text[], $5::text[], $6::bigint[], $7::text[]) WITH ORDINALITY AS e(id, type, created, payload, n) ORDER BY e.n
)
SELECT COUNT(*)::int AS n FROM moved`,
}

export type AlertState = { balance: Num; monthly_credits: Num; alert_level: number }

/** Writes a credit transaction and its credits.added event (one statement). */
async function recordCredit(q: Queryable, orgId: string, amount: number, reason: CreditReason, balance: number, nowMs: number): Promise<void> {
  const event = buildEvent(orgId, creditsAddedEvent(amount, balance, reason), nowMs)
  await q.query(
    `WITH t AS (INSERT INTO credit_transactions (org_id, amount, reason, balance_after, created_at) VALUES ($1, $2, $3, $4, $5))
     INSERT INTO events (id, org_id, type, created, payload) VALUES ($6, $1, $7, $8, $9)`,
    [orgId, amount, reason, balance, nowMs, event.id, event.type, event.created, JSON.stringify(event)],
  )
}

/** Renews the period of a locked row when due (subscription reset, period usage reset, credits.added). */
async function rollOver(q: Queryable, orgId: string, row: CreditRow, nowMs: number): Promise<CreditRow> {
  if (nowMs < Number(row.period_end)) return row
  const r = renewal(Number(row.period_anchor), Number(row.monthly_credits), Number(row.purchased_credits), nowMs)
  const { rows } = await q.query<CreditRow>(
    `UPDATE orgs SET period_start = $2, period_end = $3, subscription_credits = monthly_credits, period_lookups = 0,
       period_credits = 0, alert_level = $4 WHERE id = $1 RETURNING ${CREDIT_COLUMNS}`,
    [orgId, r.start, r.end, r.alertLevel],
  )
  if (r.granted > 0) await recordCredit(q, orgId, r.granted, 'period_renewal', r.balance, nowMs)
  return rows[0]!
}

/** The credit operations over a pool. */
export function createPostgresCredits(pool: pg.Pool) {
  /** Runs `fn` in a transaction holding the org's row, renewed first when its period has ended; null when there is no org. */
  const withOrg = <T>(orgId: string, nowMs: number, fn: (c: pg.PoolClient, row: CreditRow) => Promise<T>): Promise<T | null> =>
    inTransaction(pool, async (c) => {
      const { rows } = await c.query<CreditRow>(`SELECT ${CREDIT_COLUMNS} FROM orgs WHERE id = $1 FOR UPDATE`, [orgId])
      return rows[0] ? fn(c, await rollOver(c, orgId, rows[0], nowMs)) : null
    })

  const reserveOn = async (q: Queryable, orgId: string, amount: number, nowMs: number): Promise<CreditReservation | null | 'due'> => {
    const { rows } = await q.query<{ period_start: Num; period_end: Num; from_sub: Num | null; balance_after: Num }>({ ...RESERVE, values: [orgId, amount, nowMs] })
    const r = rows[0]
    if (!r) return null
    if (Number(r.period_end) <= nowMs) return 'due'
    if (r.from_sub === null) return null
    const fromSubscription = Number(r.from_sub)
    return { amount, fromSubscription, fromPurchased: amount - fromSubscription, periodStart: Number(r.period_start), balanceAfter: Number(r.balance_after) }
  }

  /** The balance after the refund; null when the org is missing or its period has ended (renew first). */
  const refundOn = async (q: Queryable, orgId: string, res: CreditReservation, amount: number, nowMs: number): Promise<number | null> => {
    const { fromSubscription, fromPurchased } = refundSplit(res, amount)
    const { rows } = await q.query<{ balance: Num }>({ ...REFUND, values: [orgId, nowMs, res.periodStart, fromSubscription, fromPurchased] })
    return rows[0] ? Number(rows[0].balance) : null
  }

  /** Emits the alerts the state calls for; when another request moved the level first, decides again on the fresh row. */
  const alert = async (q: Queryable, orgId: string, state: AlertState, nowMs: number): Promise<void> => {
    for (let s: AlertState | undefined = state; s; ) {
      const level = s.alert_level as AlertLevel
      const due = dueAlerts(Number(s.balance), Number(s.monthly_credits), level)
      if (due.level === level) return
      const events = due.events.map((e: PendingEvent) => buildEvent(orgId, e, nowMs))
      const { rows } = await q.query<{ n: number }>({
        ...MOVE_ALERT,
        values: [orgId, level, due.level, events.map((e) => e.id), events.map((e) => e.type), events.map((e) => e.created), events.map((e) => JSON.stringify(e))],
      })
      if (rows[0]!.n === 1) return
      s = (await q.query<AlertState>('SELECT subscription_credits + purchased_credits AS balance, monthly_credits, alert_level FROM orgs WHERE id = $1', [orgId])).rows[0]
    }
  }

  const settleOn = async (q: Queryable, orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]): Promise<boolean> => {
    const { rows } = await q.query<AlertState>(
      cacheWrites?.length
        ? { ...SETTLE_AND_CACHE, values: [orgId, lookups, nowMs, ...cacheColumns(cacheWrites)] }
        : { ...SETTLE, values: [orgId, lookups, nowMs] },
    )
    if (!rows[0]) return false
    await alert(q, orgId, rows[0], nowMs)
    return true
  }

  /**
   * Group settlement: the settlements asked for in one turn of the event loop go out as one {@link SETTLE_MANY}
   * statement (the lookups of each org summed), each caller answered after it; an org whose period has ended since is
   * settled on its own (renewed first). Under load, many requests then share one round trip for their settlement.
   */
  type SettleAsk = { orgId: string; lookups: number; nowMs: number; cacheWrites: readonly CacheWrite[] | undefined }
  const settleMany = perTurn(async (asks: SettleAsk[]): Promise<void[]> => {
    const byOrg = new Map<string, { n: number; nowMs: number }>()
    for (const a of asks) {
      const o = byOrg.get(a.orgId) ?? { n: 0, nowMs: 0 }
      o.n += a.lookups
      o.nowMs = Math.max(o.nowMs, a.nowMs)
      byOrg.set(a.orgId, o)
    }
    const nowMs = Math.max(...asks.map((a) => a.nowMs))
    const cache = cacheColumns(asks.flatMap((a) => a.cacheWrites ?? []))
    const { rows } = await pool.query<AlertState & { id: string }>({ ...SETTLE_MANY, values: [[...byOrg.keys()], [...byOrg.values()].map((o) => o.n), nowMs, ...cache] })
    const settled = new Set(rows.map((r) => r.id))
    await Promise.all([
      ...rows.map((r) => alert(pool, r.id, r, byOrg.get(r.id)!.nowMs)),
      ...[...byOrg].filter(([id]) => !settled.has(id)).map(([id, o]) => withOrg(id, o.nowMs, (c) => settleOn(c, id, o.n, o.nowMs))),
    ])
    return asks.map(() => undefined)
  })
  const settleGrouped = (orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]): Promise<void> =>
    settleMany({ orgId, lookups, nowMs, cacheWrites })

  const reserveAlone = async (orgId: string, amount: number, nowMs: number): Promise<CreditReservation | null> => {
    const r = await reserveOn(pool, orgId, amount, nowMs)
    if (r !== 'due') return r
    return withOrg(orgId, nowMs, async (c) => {
      const again = await reserveOn(c, orgId, amount, nowMs)
      return again === 'due' ? null : again
    })
  }
  /**
   * Group reservation: the reservations asked for in one turn of the event loop go out as one {@link RESERVE_MANY}
   * statement, each caller answered after it; a request of an org whose period has ended is reserved on its own
   * (renewed first). A request with a hold has it written by the same statement.
   */
  type ReserveAsk = { orgId: string; amount: number; nowMs: number; hold?: HoldRef | undefined }
  type Reserved = CreditReservation | null | Promise<CreditReservation | null>
  const reserveOnMany = async (q: Queryable, asks: ReserveAsk[], nowMs: number, due: (a: ReserveAsk) => Reserved): Promise<Reserved[]> => {
    const { rows } = await q.query<{ n: Num; granted: boolean; from_sub: Num; sub: Num; pur: Num; cum: Num; period_start: Num; period_end: Num }>({
      ...RESERVE_MANY,
      values: [asks.map((a) => a.orgId), asks.map((a) => a.amount), nowMs, asks.map((a) => a.hold?.id ?? null), asks.map((a) => a.hold?.instanceId ?? null)],
    })
    const answers: Reserved[] = asks.map(() => null)
    for (const r of rows) {
      const i = Number(r.n) - 1
      const a = asks[i]!
      if (Number(r.period_end) <= nowMs) answers[i] = due(a)
      else if (r.granted) {
        const fromSubscription = Number(r.from_sub)
        answers[i] = { amount: a.amount, fromSubscription, fromPurchased: a.amount - fromSubscription, periodStart: Number(r.period_start), balanceAfter: Number(r.sub) + Number(r.pur) - Number(r.cum) }
      }
    }
    return answers
  }
  // One time for the statement and for telling 'due' apart, so a request is either granted here or retried alone.
  const reserveMany = perTurn((asks: ReserveAsk[]) =>
    reserveOnMany(pool, asks, Math.max(...asks.map((a) => a.nowMs)), (a) =>
      a.hold
        ? withOrg(a.orgId, a.nowMs, async (c) => (await reserveOnMany(c, [a], a.nowMs, () => null))[0]!)
        : reserveAlone(a.orgId, a.amount, a.nowMs),
    ),
  )
  const reserveGrouped = (orgId: string, amount: number, nowMs: number, hold?: HoldRef): Promise<CreditReservation | null> => reserveMany({ orgId, amount, nowMs, hold })

  /**
   * Group refund: the refunds of one turn as one {@link REFUND_MANY} statement, each caller told its org's balance
   * after them; an org past its period end is refunded alone (renewed first).
   */
  const refundAlone = async (orgId: string, res: CreditReservation, amount: number, nowMs: number): Promise<number | void> => {
    const balance = await refundOn(pool, orgId, res, amount, nowMs)
    if (balance !== null) return balance
    return (await withOrg(orgId, nowMs, (c) => refundOn(c, orgId, res, amount, nowMs))) ?? undefined
  }
  type RefundAsk = { orgId: string; res: CreditReservation; amount: number; nowMs: number }
  const refundGrouped = perTurn(async (asks: RefundAsk[]): Promise<Array<number | void | Promise<number | void>>> => {
    const nowMs = Math.max(...asks.map((a) => a.nowMs))
    const parts = asks.map((a) => refundSplit(a.res, a.amount))
    const { rows } = await pool.query<{ id: string; balance: Num }>({
      ...REFUND_MANY,
      values: [asks.map((a) => a.orgId), asks.map((a) => a.res.periodStart), parts.map((p) => p.fromSubscription), parts.map((p) => p.fromPurchased), nowMs],
    })
    const after = new Map(rows.map((r) => [r.id, Number(r.balance)]))
    // an org left out has ended its period (or is gone): refunded on its own
    return asks.map((a) => (after.has(a.orgId) ? after.get(a.orgId)! : refundAlone(a.orgId, a.res, a.amount, a.nowMs)))
  })

  const readOrg = async (orgId: string, nowMs: number): Promise<OrgRecord | null> => {
    const { rows } = await pool.query<OrgRow>({ name: 'riskcheck_org', text: 'SELECT * FROM orgs WHERE id = $1', values: [orgId] })
    if (!rows[0]) return null
    if (nowMs < Number(rows[0].period_end)) return toOrg(rows[0])
    return withOrg(orgId, nowMs, async (c) => toOrg((await c.query<OrgRow>('SELECT * FROM orgs WHERE id = $1', [orgId])).rows[0]!))
  }

  /** Locks an org's row inside the transaction of `c` and renews its period when due. */
  const renewOn = async (c: Queryable, orgId: string, nowMs: number): Promise<void> => {
    const { rows } = await c.query<CreditRow>(`SELECT ${CREDIT_COLUMNS} FROM orgs WHERE id = $1 FOR UPDATE`, [orgId])
    if (rows[0]) await rollOver(c, orgId, rows[0], nowMs)
  }

  return {
    /** What the request holds (./leases.ts) build on. */
    internals: { alert, withOrg, renewOn },
    readOrg,
    settleGrouped,
    reserveGrouped,
    reserve: reserveAlone,
    refundGrouped: (orgId: string, res: CreditReservation, amount: number, nowMs: number) => refundGrouped({ orgId, res, amount, nowMs }),
    refund: refundAlone,
    async settle(orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]): Promise<void> {
      if (await settleOn(pool, orgId, lookups, nowMs, cacheWrites)) return
      await withOrg(orgId, nowMs, (c) => settleOn(c, orgId, lookups, nowMs, cacheWrites))
    },
    async balance(orgId: string, nowMs: number): Promise<number> {
      const { rows } = await pool.query<{ balance: Num; period_end: Num }>({
        name: 'riskcheck_balance',
        text: 'SELECT subscription_credits + purchased_credits AS balance, period_end FROM orgs WHERE id = $1',
        values: [orgId],
      })
      if (!rows[0]) return 0
      if (nowMs < Number(rows[0].period_end)) return Number(rows[0].balance)
      const org = await readOrg(orgId, nowMs)
      return org ? org.subscriptionCredits + org.purchasedCredits : 0
    },
    add: (orgId: string, amount: number, reason: CreditReason, nowMs: number): Promise<OrgRecord | null> =>
      withOrg(orgId, nowMs, async (c, row) => {
        const balance = Number(row.subscription_credits) + Number(row.purchased_credits) + amount
        const { rows } = await c.query<OrgRow>('UPDATE orgs SET purchased_credits = purchased_credits + $2, alert_level = $3 WHERE id = $1 RETURNING *', [
          orgId,
          amount,
          alertLevelOf(balance, Number(row.monthly_credits)),
        ])
        await recordCredit(c, orgId, amount, reason, balance, nowMs)
        return toOrg(rows[0]!)
      }),
    setPlan: (orgId: string, change: PlanChange, nowMs: number): Promise<OrgRecord | null> =>
      withOrg(orgId, nowMs, async (c, row) => {
        const plan = (await c.query<PlanRow>('SELECT * FROM plans WHERE id = $1', [change.planId])).rows[0]
        if (!plan) throw new RangeError(`unknown plan ${change.planId}`)
        const current = {
          monthlyCredits: Number(row.monthly_credits),
          subscriptionCredits: Number(row.subscription_credits),
          purchasedCredits: Number(row.purchased_credits),
          alertLevel: row.alert_level as AlertLevel,
        }
        const p = planChangeOf(current, toPlan(plan), change)
        const { rows } = await c.query<OrgRow>(
          `UPDATE orgs SET plan_id = $2, monthly_credits_override = $3, rate_override = $4, monthly_credits = $5, rate_per_second = $6,
             subscription_credits = $7, alert_level = $8 WHERE id = $1 RETURNING *`,
          [orgId, plan.id, p.monthlyOverride, p.rateOverride, p.monthlyCredits, p.ratePerSecond, p.subscriptionCredits, p.alertLevel],
        )
        if (p.granted > 0) await recordCredit(c, orgId, p.granted, 'upgrade', p.balance, nowMs)
        return toOrg(rows[0]!)
      }),
  }
}

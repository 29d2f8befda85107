/**
 * Credits of the PostgreSQL store: a reservation, a refund or a settlement is one conditional statement; only the
 * period roll-over, alerts and an operator's changes take a transaction (docs/decisions.md "PostgreSQL store").
 */
import type pg from 'pg'
import { perTurn } from './per-turn.js'
import { authSelect, type AuthRiders, type AuthRow } from './auth-read.js'
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
import { inTransaction, type Num, type Queryable } from './client.js'
import { insertEvents } from './events.js'
import { toOrg, toPlan, type OrgRow, type PlanRow } from './rows.js'

export interface CreditRow {
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
 * Takes `$2` credits, subscription first, with values computed from the row the CTE locks (docs/decisions.md
 * "PostgreSQL store" → credits). No row: no org. A null `from_sub`: the balance is short or the period has ended (told
 * by `period_end`).
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
 * The grant rule of reservations, as CTEs over `run` (per request: org, amount, hold, instance, the org's `sub`, `pur`
 * and period, `cum` its org's running total) at the time `$t`: `dec` (granted, and the part from the subscription),
 * `tot` (granted per org) and `held` (each granted request's hold written). The org's row is the caller's to update.
 */
export const grantReservations = (t: number): string => `dec AS (
  SELECT run.*, period_end > $${t}::bigint AND cum <= sub + pur AS granted, GREATEST(0, LEAST(sub, cum) - (cum - amount)) AS from_sub
  FROM run
), tot AS (
  SELECT org_id, SUM(amount) AS total FROM dec WHERE granted GROUP BY org_id
), held AS (
  INSERT INTO credit_holds (id, instance_id, org_id, from_sub, from_pur, period_start, created_at)
  SELECT hold_id, instance_id, org_id, from_sub, amount - from_sub, period_start, $${t}::bigint FROM dec WHERE granted AND hold_id IS NOT NULL
  ON CONFLICT (id) DO UPDATE SET from_sub = credit_holds.from_sub + EXCLUDED.from_sub, from_pur = credit_holds.from_pur + EXCLUDED.from_pur,
    period_start = EXCLUDED.period_start
)`

/**
 * The reservations of many requests in one statement: `$1`/`$2` each request's org and amount, in order, `$3` the
 * time, `$4`/`$5` each request's hold and instance (null: none). Per org, requests are granted in order while the
 * balance covers them (a prefix: once one is refused, so are the later ones of that org in this statement); every
 * value is computed from the locked row, as {@link RESERVE}'s. A granted request with a hold has what it took
 * recorded there ({@link InstanceLeases}). Returns one row per request whose org exists, with whether
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
), ${grantReservations(3)}, took AS (
  UPDATE orgs o SET subscription_credits = cur.sub - LEAST(cur.sub, tot.total),
    purchased_credits = cur.pur - (tot.total - LEAST(cur.sub, tot.total)),
    period_credits = cur.period_credits + tot.total, total_credits = cur.total_credits + tot.total
  FROM tot JOIN cur ON cur.id = tot.org_id WHERE o.id = tot.org_id
  RETURNING o.id
)
SELECT n, org_id, amount, cum, sub, pur, period_start, period_end, granted, from_sub, NULL::json AS auth FROM dec
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, row_to_json(a) FROM (${authSelect(6)}) a
ORDER BY n`,
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

/**
 * The values of {@link SETTLE_AND_CACHE}'s arrays; one entry per key (the last wins), as ON CONFLICT requires —
 * unless `dedupe` is false: then every write, in order, for a statement that picks the last of a key itself.
 */
export function cacheColumns(writes: readonly CacheWrite[], dedupe = true): [string[], string[], number[], number[]] {
  const cols: [string[], string[], number[], number[]] = [[], [], [], []]
  for (const w of dedupe ? new Map(writes.map((x) => [x.key, x])).values() : writes) {
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
  ${insertEvents(`SELECT e.id, moved.id, e.type, e.created, e.payload
  FROM moved, unnest($4::text[], $5::text[], $6::bigint[], $7::text[]) WITH ORDINALITY AS e(id, type, created, payload, n) ORDER BY e.n`)}
)
SELECT COUNT(*)::int AS n FROM moved`,
}

export type AlertState = { balance: Num; monthly_credits: Num; alert_level: number }

/** Writes a credit transaction and its credits.added event (one statement). */
async function recordCredit(q: Queryable, orgId: string, amount: number, reason: CreditReason, balance: number, nowMs: number): Promise<void> {
  const event = buildEvent(orgId, creditsAddedEvent(amount, balance, reason), nowMs)
  await q.query(
    `WITH t AS (INSERT INTO credit_transactions (org_id, amount, reason, balance_after, created_at) VALUES ($1, $2, $3, $4, $5))
     ${insertEvents('VALUES ($6, $1, $7, $8, $9)')}`,
    [orgId, amount, reason, balance, nowMs, event.id, event.type, event.created, JSON.stringify(event)],
  )
}

/**
 * Locks an org's credit row for the rest of the transaction of `q` and renews its period when it has ended (the
 * subscription reset, the period usage reset, a credits.added event): the one period renewal of the PostgreSQL
 * store, bulk jobs' credits included. Null when there is no org.
 */
export async function lockCredits(q: Queryable, orgId: string, nowMs: number): Promise<CreditRow | null> {
  const row = (await q.query<CreditRow>(`SELECT ${CREDIT_COLUMNS} FROM orgs WHERE id = $1 FOR UPDATE`, [orgId])).rows[0]
  if (!row || nowMs < Number(row.period_end)) return row ?? null
  const r = renewal(Number(row.period_anchor), Number(row.monthly_credits), Number(row.purchased_credits), nowMs)
  const { rows } = await q.query<CreditRow>(
    `UPDATE orgs SET period_start = $2, period_end = $3, subscription_credits = monthly_credits, period_lookups = 0,
       period_credits = 0, alert_level = $4 WHERE id = $1 RETURNING ${CREDIT_COLUMNS}`,
    [orgId, r.start, r.end, r.alertLevel],
  )
  if (r.granted > 0) await recordCredit(q, orgId, r.granted, 'period_renewal', r.balance, nowMs)
  return rows[0]!
}

/** Runs `fn` in a transaction holding the org's row, renewed first when its period has ended; null when there is no org. */
function withOrg<T>(pool: pg.Pool, orgId: string, nowMs: number, fn: (c: pg.PoolClient, row: CreditRow) => Promise<T>): Promise<T | null> {
  return inTransaction(pool, async (c) => {
    const row = await lockCredits(c, orgId, nowMs)
    return row ? fn(c, row) : null
  })
}

/** One reservation ({@link RESERVE}); 'due' when the org's period has ended (renew first). */
async function reserveOn(q: Queryable, orgId: string, amount: number, nowMs: number): Promise<CreditReservation | null | 'due'> {
  const { rows } = await q.query<{ period_start: Num; period_end: Num; from_sub: Num | null; balance_after: Num }>({ ...RESERVE, values: [orgId, amount, nowMs] })
  const r = rows[0]
  if (!r) return null
  if (Number(r.period_end) <= nowMs) return 'due'
  if (r.from_sub === null) return null
  const fromSubscription = Number(r.from_sub)
  return { amount, fromSubscription, fromPurchased: amount - fromSubscription, periodStart: Number(r.period_start), balanceAfter: Number(r.balance_after) }
}

/** The balance after the refund; null when the org is missing or its period has ended (renew first). */
async function refundOn(q: Queryable, orgId: string, res: CreditReservation, amount: number, nowMs: number): Promise<number | null> {
  const { fromSubscription, fromPurchased } = refundSplit(res, amount)
  const { rows } = await q.query<{ balance: Num }>({ ...REFUND, values: [orgId, nowMs, res.periodStart, fromSubscription, fromPurchased] })
  return rows[0] ? Number(rows[0].balance) : null
}

/** Emits the alerts the state calls for; when another request moved the level first, decides again on the fresh row. */
async function alert(q: Queryable, orgId: string, state: AlertState, nowMs: number): Promise<void> {
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

/** One settlement and its alerts; false when the org is missing or its period has ended (renew first). */
async function settleOn(q: Queryable, orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]): Promise<boolean> {
  const { rows } = await q.query<AlertState>(
    cacheWrites?.length ? { ...SETTLE_AND_CACHE, values: [orgId, lookups, nowMs, ...cacheColumns(cacheWrites)] } : { ...SETTLE, values: [orgId, lookups, nowMs] },
  )
  if (!rows[0]) return false
  await alert(q, orgId, rows[0], nowMs)
  return true
}

type ReserveAsk = { orgId: string; amount: number; nowMs: number; hold?: HoldRef | undefined }
type Reserved = CreditReservation | null | Promise<CreditReservation | null>
/** A reservation's row of {@link RESERVE_MANY} (or of the close statement it rode on); `n` null: a row of another part. */
export type ReserveRow = { n: Num | null; granted: boolean | null; from_sub: Num | null; sub: Num | null; pur: Num | null; cum: Num | null; period_start: Num | null; period_end: Num | null }

/** The per-request arrays of {@link RESERVE_MANY} (orgs, amounts, holds, instances). */
function reserveColumns(asks: readonly ReserveAsk[]): [string[], number[], Array<string | null>, Array<string | null>] {
  return [asks.map((a) => a.orgId), asks.map((a) => a.amount), asks.map((a) => a.hold?.id ?? null), asks.map((a) => a.hold?.instanceId ?? null)]
}

/** Each request's answer from the reservation rows at `nowMs`; a request whose org's period has ended is answered by `due`. */
function reserveAnswers(asks: readonly ReserveAsk[], rows: readonly ReserveRow[], nowMs: number, due: (a: ReserveAsk) => Reserved): Reserved[] {
  const answers: Reserved[] = asks.map(() => null)
  for (const r of rows) {
    if (r.n === null) continue
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

/**
 * Many reservations as one {@link RESERVE_MANY}; a request whose org's period has ended is answered by `due`. `riders`:
 * the auth reads the statement carries (./auth-read.ts), answered from its rows.
 */
async function reserveOnMany(q: Queryable, asks: ReserveAsk[], nowMs: number, due: (a: ReserveAsk) => Reserved, riders?: AuthRiders): Promise<Reserved[]> {
  const ride = riders?.take() ?? null
  let rows: Array<ReserveRow & { auth: AuthRow | null }>
  try {
    const [orgs, amounts, holds, instances] = reserveColumns(asks)
    rows = (await q.query<ReserveRow & { auth: AuthRow | null }>({ ...RESERVE_MANY, values: [orgs, amounts, nowMs, holds, instances, ride?.args ?? []] })).rows
  } catch (e) {
    ride?.fail(e)
    throw e
  }
  ride?.answer(rows.flatMap((r) => (r.auth ? [r.auth] : [])))
  return reserveAnswers(asks, rows, nowMs, due)
}

/**
 * Reservations waiting to ride on a close statement (./leases.ts), which then grants them as {@link RESERVE_MANY}
 * would: `columns` its reservation parameters, `answer` reads their rows (at the statement's time).
 */
export interface ReserveRiders {
  take(): { nowMs: number; columns: ReturnType<typeof reserveColumns>; answer(rows: readonly ReserveRow[], nowMs: number): void; fail(error: unknown): void } | null
  /** A statement that can carry reservations: `queued` says whether one is queued and not yet sent. */
  carrier(queued: () => boolean): void
}

/**
 * The operations of the hot path, grouped: the calls of one turn of the event loop go out as one statement
 * ({@link SETTLE_MANY}, {@link RESERVE_MANY}, {@link REFUND_MANY}), each caller answered after it; an org whose period
 * has ended is served on its own (renewed first), as are the calls made alone.
 */
function hotPath(pool: pg.Pool, riders?: AuthRiders) {
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
      ...[...byOrg].filter(([id]) => !settled.has(id)).map(([id, o]) => withOrg(pool, id, o.nowMs, (c) => settleOn(c, id, o.n, o.nowMs))),
    ])
    return asks.map(() => undefined)
  }, { gate: pool })

  const reserveAlone = async (orgId: string, amount: number, nowMs: number): Promise<CreditReservation | null> => {
    const r = await reserveOn(pool, orgId, amount, nowMs)
    if (r !== 'due') return r
    return withOrg(pool, orgId, nowMs, async (c) => {
      const again = await reserveOn(c, orgId, amount, nowMs)
      return again === 'due' ? null : again
    })
  }
  // One time for the statement and for telling 'due' apart, so a request is either granted here or retried alone.
  // A request with a hold has it written by the same statement.
  const due = (a: ReserveAsk): Reserved =>
    a.hold ? withOrg(pool, a.orgId, a.nowMs, async (c) => (await reserveOnMany(c, [a], a.nowMs, () => null))[0]!) : reserveAlone(a.orgId, a.amount, a.nowMs)
  const reserveMany = perTurn((asks: ReserveAsk[]) => reserveOnMany(pool, asks, Math.max(...asks.map((a) => a.nowMs)), due, riders), { gate: pool })
  riders?.carrier(() => reserveMany.queued)
  const reservations: ReserveRiders = {
    take() {
      const ride = reserveMany.ride()
      if (!ride) return null
      const asks = ride.args
      return {
        nowMs: Math.max(...asks.map((a) => a.nowMs)),
        columns: reserveColumns(asks),
        answer: (rows, nowMs) => ride.answer(reserveAnswers(asks, rows, nowMs, due)),
        fail: ride.fail,
      }
    },
    carrier: reserveMany.carrier,
  }

  const refundAlone = async (orgId: string, res: CreditReservation, amount: number, nowMs: number): Promise<number | void> => {
    const balance = await refundOn(pool, orgId, res, amount, nowMs)
    if (balance !== null) return balance
    return (await withOrg(pool, orgId, nowMs, (c) => refundOn(c, orgId, res, amount, nowMs))) ?? undefined
  }
  type RefundAsk = { orgId: string; res: CreditReservation; amount: number; nowMs: number }
  const refundMany = perTurn(async (asks: RefundAsk[]): Promise<Array<number | void | Promise<number | void>>> => {
    const nowMs = Math.max(...asks.map((a) => a.nowMs))
    const parts = asks.map((a) => refundSplit(a.res, a.amount))
    const { rows } = await pool.query<{ id: string; balance: Num }>({
      ...REFUND_MANY,
      values: [asks.map((a) => a.orgId), asks.map((a) => a.res.periodStart), parts.map((p) => p.fromSubscription), parts.map((p) => p.fromPurchased), nowMs],
    })
    const after = new Map(rows.map((r) => [r.id, Number(r.balance)]))
    // an org left out has ended its period (or is gone): refunded on its own
    return asks.map((a) => (after.has(a.orgId) ? after.get(a.orgId)! : refundAlone(a.orgId, a.res, a.amount, a.nowMs)))
  }, { gate: pool })

  return {
    reservations,
    reserve: reserveAlone,
    refund: refundAlone,
    async settle(orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]): Promise<void> {
      if (await settleOn(pool, orgId, lookups, nowMs, cacheWrites)) return
      await withOrg(pool, orgId, nowMs, (c) => settleOn(c, orgId, lookups, nowMs, cacheWrites))
    },
    settleGrouped: (orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]): Promise<void> => settleMany({ orgId, lookups, nowMs, cacheWrites }),
    reserveGrouped: (orgId: string, amount: number, nowMs: number, hold?: HoldRef): Promise<CreditReservation | null> => reserveMany({ orgId, amount, nowMs, hold }),
    refundGrouped: (orgId: string, res: CreditReservation, amount: number, nowMs: number) => refundMany({ orgId, res, amount, nowMs }),
  }
}

/** An operator's changes, one transaction each: a top-up and a plan change. */
function operatorChanges(pool: pg.Pool) {
  return {
    add: (orgId: string, amount: number, reason: CreditReason, nowMs: number): Promise<OrgRecord | null> =>
      withOrg(pool, orgId, nowMs, async (c, row) => {
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
      withOrg(pool, orgId, nowMs, async (c, row) => {
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

/** The credit operations over a pool; the grouped reservations carry the auth reads of `riders` (./auth-read.ts). */
export function createPostgresCredits(pool: pg.Pool, riders?: AuthRiders) {
  const readOrg = async (orgId: string, nowMs: number): Promise<OrgRecord | null> => {
    const { rows } = await pool.query<OrgRow>({ name: 'riskcheck_org', text: 'SELECT * FROM orgs WHERE id = $1', values: [orgId] })
    if (!rows[0]) return null
    if (nowMs < Number(rows[0].period_end)) return toOrg(rows[0])
    return withOrg(pool, orgId, nowMs, async (c) => toOrg((await c.query<OrgRow>('SELECT * FROM orgs WHERE id = $1', [orgId])).rows[0]!))
  }
  return {
    /** What the request holds (./leases.ts) build on. */
    internals: {
      alert,
      withOrg: <T>(orgId: string, nowMs: number, fn: (c: pg.PoolClient, row: CreditRow) => Promise<T>) => withOrg(pool, orgId, nowMs, fn),
      renewOn: lockCredits,
    },
    readOrg,
    ...hotPath(pool, riders),
    ...operatorChanges(pool),
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
  }
}

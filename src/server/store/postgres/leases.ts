/**
 * Instance leases and request holds of the PostgreSQL store (docs/decisions.md "Instance leases"). The hot path adds
 * no round trip: a hold is written by the reservation's statement (./credits.ts `RESERVE_MANY`, or the close
 * statement it rides on), and closed — with the refund of what the request did not use, its usage, its cache entries
 * and its idempotent answer — by one statement per event-loop turn ({@link CLOSE_MANY}). A lease renewal is one
 * statement every few seconds per instance; only when an instance has died does a sweep run (a transaction that
 * refunds its holds exactly once).
 */
import type pg from 'pg'
import type { RequestClose } from '../../../accounts/types.js'
import type { InstanceLeases, LeaseRenewal } from '../contracts/store.js'
import { cacheColumns, grantReservations, REFUND_MANY, type AlertState, type createPostgresCredits, type ReserveRiders, type ReserveRow } from './credits.js'
import { perTurn } from './per-turn.js'
import { inputColumns, insertInputs, type TurnInputs } from './answer-inputs.js'
import type { AnswerInputsRecord } from '../contracts/outcomes.js'
import { inTransaction, type Num, type Queryable } from './client.js'
import { authSelect, type AuthRiders, type AuthRow } from './auth-read.js'

const RENEW = {
  name: 'riskcheck_lease_renew',
  text: `WITH prev AS (
  SELECT lease_until FROM instances WHERE id = $1
), up AS (
  INSERT INTO instances (id, started_at, lease_until) VALUES ($1, $2::bigint, $2::bigint + $3::bigint)
  ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until
)
SELECT COALESCE((SELECT lease_until > $2::bigint FROM prev), false) AS held,
  EXISTS (SELECT 1 FROM instances WHERE lease_until <= $2::bigint AND id <> $1)
  OR EXISTS (SELECT 1 FROM credit_holds h WHERE NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = h.instance_id)) AS expired`,
}

/**
 * Ends many requests in one statement and grants the reservations riding on it (docs/decisions.md "PostgreSQL store",
 * closing requests and statements per turn). Per request: `$1…$5` org, lookups, hold, credits given back; `$6` the time;
 * `$7…$10`, `$25` cache entries and their requests; `$11…$16` idempotency records; `$17…$23` input hashes
 * (./answer-inputs.ts); `$24` carried auth reads (./auth-read.ts); `$26…$29` reservations (org, amount, hold,
 * instance), granted from the balance after the refunds. Each org's row is updated once, by the net. Returns the closed
 * orgs, the fenced requests, the auth rows and the reservation rows.
 */
const CLOSE_MANY = {
  name: 'riskcheck_close_reserve_many',
  text: `WITH req AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[]) WITH ORDINALITY AS r(org_id, lookups, hold_id, sub, pur, n)
), rreq AS (
  SELECT * FROM unnest($26::text[], $27::bigint[], $28::text[], $29::text[]) WITH ORDINALITY AS r(org_id, amount, hold_id, instance_id, n)
), locked AS (
  SELECT id, subscription_credits AS sub, purchased_credits AS pur, period_start, period_end FROM orgs
  WHERE id IN (SELECT org_id FROM req UNION SELECT org_id FROM rreq) ORDER BY id FOR UPDATE
), cur AS (
  SELECT id, period_start FROM locked WHERE period_end > $6::bigint
), owned AS (
  SELECT d.n FROM unnest($11::bigint[], $12::text[], $13::text[], $14::text[]) AS d(n, scope, idem_key, owner)
  JOIN idempotency i ON i.scope = d.scope AND i.idem_key = d.idem_key AND i.owner = d.owner AND i.status IS NULL
  FOR UPDATE OF i
), mine AS (
  SELECT req.*, req.n NOT IN (SELECT n FROM owned) AND req.n = ANY($11::bigint[]) AS lost
  FROM req JOIN cur ON cur.id = req.org_id
), closed AS (
  DELETE FROM credit_holds h USING mine WHERE h.id = mine.hold_id AND NOT mine.lost RETURNING h.id, h.period_start
), ok AS (
  SELECT mine.*, closed.period_start AS hold_period FROM mine LEFT JOIN closed ON closed.id = mine.hold_id
  WHERE NOT mine.lost AND (mine.hold_id IS NULL OR closed.id IS NOT NULL)
), agg AS (
  SELECT ok.org_id, SUM(ok.lookups) AS lookups,
    SUM(CASE WHEN cur.period_start = ok.hold_period THEN ok.sub ELSE 0 END) AS sub,
    SUM(ok.pur) AS pur,
    SUM(CASE WHEN cur.period_start = ok.hold_period THEN ok.sub + ok.pur ELSE 0 END) AS period_part,
    SUM(ok.sub + ok.pur) AS total
  FROM ok JOIN cur ON cur.id = ok.org_id GROUP BY ok.org_id
), cached AS (
  INSERT INTO result_cache (key, value, stored_at, expires_at)
  SELECT DISTINCT ON (c.key) c.key, c.value, c.stored_at, c.expires_at
  FROM unnest($7::text[], $8::text[], $9::bigint[], $10::bigint[], $25::bigint[]) WITH ORDINALITY AS c(key, value, stored_at, expires_at, n, i)
  WHERE c.n IN (SELECT n FROM ok)
  ORDER BY c.key, c.i DESC
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at
), idem AS (
  SELECT d.*, d.n IN (SELECT n FROM ok) AS kept
  FROM unnest($11::bigint[], $12::text[], $13::text[], $14::text[], $15::int[], $16::text[]) AS d(n, scope, idem_key, owner, status, body)
  WHERE d.n IN (SELECT n FROM mine)
), completed AS (
  UPDATE idempotency i SET status = idem.status, body = idem.body FROM idem
  WHERE i.scope = idem.scope AND i.idem_key = idem.idem_key AND i.owner = idem.owner AND idem.kept AND idem.status IS NOT NULL
), forgotten AS (
  DELETE FROM idempotency i USING idem
  WHERE i.scope = idem.scope AND i.idem_key = idem.idem_key AND i.owner = idem.owner AND i.status IS NULL
    AND (NOT idem.kept OR idem.status IS NULL)
), inputs AS (
  ${insertInputs(17)}
), run AS (
  SELECT rreq.n, rreq.org_id, rreq.amount, rreq.hold_id, rreq.instance_id, l.sub + COALESCE(agg.sub, 0) AS sub, l.pur + COALESCE(agg.pur, 0) AS pur,
    l.period_start, l.period_end, SUM(rreq.amount) OVER (PARTITION BY rreq.org_id ORDER BY rreq.n) AS cum
  FROM rreq JOIN locked l ON l.id = rreq.org_id LEFT JOIN agg ON agg.org_id = l.id
), ${grantReservations(6)}, net AS (
  SELECT l.id, agg.org_id IS NOT NULL AS closing, COALESCE(agg.sub, 0) AS back_sub, COALESCE(agg.pur, 0) AS back_pur,
    COALESCE(agg.period_part, 0) AS period_part, COALESCE(agg.total, 0) AS back, COALESCE(agg.lookups, 0) AS lookups,
    COALESCE(tot.total, 0) AS taken, LEAST(l.sub + COALESCE(agg.sub, 0), COALESCE(tot.total, 0)) AS take_sub
  FROM locked l LEFT JOIN tot ON tot.org_id = l.id LEFT JOIN agg ON agg.org_id = l.id WHERE tot.org_id IS NOT NULL OR agg.org_id IS NOT NULL
), settled AS (
  UPDATE orgs o SET subscription_credits = o.subscription_credits + net.back_sub - net.take_sub,
    purchased_credits = o.purchased_credits + net.back_pur - (net.taken - net.take_sub),
    period_credits = GREATEST(0, o.period_credits - net.period_part) + net.taken, total_credits = GREATEST(0, o.total_credits - net.back) + net.taken,
    period_lookups = o.period_lookups + net.lookups, total_lookups = o.total_lookups + net.lookups
  FROM net WHERE o.id = net.id
  RETURNING o.id, o.subscription_credits + o.purchased_credits AS balance, o.monthly_credits, o.alert_level, net.closing
)
SELECT id, balance, monthly_credits, alert_level, NULL::bigint AS fenced, NULL::json AS auth, NULL::bigint AS n, NULL::boolean AS granted,
  NULL::numeric AS from_sub, NULL::bigint AS sub, NULL::bigint AS pur, NULL::numeric AS cum, NULL::bigint AS period_start, NULL::bigint AS period_end
FROM settled WHERE closing
UNION ALL
SELECT NULL, NULL, NULL, NULL, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM mine WHERE (hold_id IS NOT NULL OR lost) AND n NOT IN (SELECT n FROM ok)
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, row_to_json(a), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM (${authSelect(24)}) a
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, n, granted, from_sub, sub, pur, cum, period_start, period_end FROM dec`,
}

interface HoldRow {
  org_id: string
  from_sub: Num
  from_pur: Num
  period_start: Num
}

type CloseAsk = { orgId: string; close: RequestClose; nowMs: number }
type CloseRow = AlertState & ReserveRow & { id: string | null; fenced: Num | null; auth: AuthRow | null }
type Reserving = NonNullable<ReturnType<ReserveRiders['take']>>

function closeValues(asks: CloseAsk[], nowMs: number, inputs: readonly AnswerInputsRecord[], authKeys: readonly string[], reserving: Reserving | null): unknown[] {
  const idem = asks.flatMap((a, i) => (a.close.idempotent ? [{ n: i + 1, ...a.close.idempotent }] : []))
  const writes = asks.flatMap((a, i) => (a.close.cacheWrites ?? []).map((write) => ({ n: i + 1, write })))
  return [
    asks.map((a) => a.orgId),
    asks.map((a) => a.close.lookups),
    asks.map((a) => a.close.holdId ?? null),
    asks.map((a) => a.close.refund.fromSubscription),
    asks.map((a) => a.close.refund.fromPurchased),
    nowMs,
    ...cacheColumns(writes.map((w) => w.write), false),
    idem.map((d) => d.n),
    idem.map((d) => d.scope),
    idem.map((d) => d.key),
    idem.map((d) => d.owner),
    idem.map((d) => d.status ?? null),
    idem.map((d) => (d.status === undefined ? null : (d.body ?? null))),
    ...inputColumns(inputs),
    authKeys,
    writes.map((w) => w.n),
    ...(reserving?.columns ?? [[], [], [], []]),
  ]
}

/**
 * The leases and holds over a pool, on the credit operations of ./credits.ts; the close statement of a turn also
 * writes the answer input hashes `inputs` holds for that turn and carries the auth reads of `riders`.
 */
export function createPostgresLeases(pool: pg.Pool, credits: ReturnType<typeof createPostgresCredits>, inputs?: TurnInputs, riders?: AuthRiders): InstanceLeases {
  const { alert, withOrg, renewOn } = credits.internals

  /**
   * Runs {@link CLOSE_MANY} (with the reservations of `reserving`), then the alerts of the orgs it closed; answers per
   * request: closed, fenced, or due.
   */
  const closeOn = async (
    q: Queryable,
    asks: CloseAsk[],
    nowMs: number,
    kept: readonly AnswerInputsRecord[] = [],
    carry?: AuthRiders,
    reserving: Reserving | null = null,
  ): Promise<Array<'closed' | 'fenced' | 'due'>> => {
    const ride = carry?.take() ?? null
    let rows: CloseRow[]
    try {
      rows = (await q.query<CloseRow>({ ...CLOSE_MANY, values: closeValues(asks, nowMs, kept, ride?.args ?? [], reserving) })).rows
    } catch (e) {
      ride?.fail(e)
      reserving?.fail(e)
      throw e
    }
    ride?.answer(rows.flatMap((r) => (r.auth ? [r.auth] : [])))
    reserving?.answer(rows, nowMs)
    const settled = rows.filter((r) => r.id !== null)
    const fenced = new Set(rows.filter((r) => r.fenced !== null).map((r) => Number(r.fenced)))
    await Promise.all(settled.map((r) => alert(q, r.id!, r, nowMs)))
    const orgs = new Set(settled.map((r) => r.id))
    return asks.map((a, i) => (fenced.has(i + 1) ? 'fenced' : orgs.has(a.orgId) ? 'closed' : 'due'))
  }
  // An org whose period has ended: renewed, then closed alone (no org: nothing to close).
  const closeAlone = async (a: CloseAsk): Promise<boolean> =>
    (await withOrg(a.orgId, a.nowMs, async (c) => (await closeOn(c, [a], a.nowMs))[0] !== 'fenced')) ?? true
  const closeMany = perTurn(async (asks: CloseAsk[]): Promise<Array<boolean | Promise<boolean>>> => {
    const batch = inputs?.take() ?? null
    const reserving = credits.reservations.take()
    let outcome: Array<'closed' | 'fenced' | 'due'>
    try {
      outcome = await closeOn(pool, asks, Math.max(reserving?.nowMs ?? 0, ...asks.map((a) => a.nowMs)), batch?.rows, riders, reserving)
    } catch (e) {
      batch?.written(e)
      throw e
    }
    batch?.written(null)
    return asks.map((a, i) => (outcome[i] === 'due' ? closeAlone(a) : outcome[i] === 'closed'))
  }, { gate: pool })
  inputs?.rideOn(() => closeMany.queued)
  riders?.carrier(() => closeMany.queued)
  credits.reservations.carrier(() => closeMany.queued)

  /**
   * Releases the holds `where` selects, inside the transaction of `c`: their orgs locked (in id order, renewed when
   * due) before the holds are deleted, then one refund for all. Returns how many.
   */
  const releaseOn = async (c: Queryable, where: string, values: unknown[], nowMs: number): Promise<number> => {
    const orgs = await c.query<{ org_id: string }>(`SELECT DISTINCT org_id FROM credit_holds h WHERE ${where} ORDER BY org_id`, values)
    for (const { org_id } of orgs.rows) await renewOn(c, org_id, nowMs)
    const { rows } = await c.query<HoldRow>(`DELETE FROM credit_holds h WHERE ${where} RETURNING org_id, from_sub, from_pur, period_start`, values)
    if (rows.length === 0) return 0
    await c.query({
      ...REFUND_MANY,
      values: [rows.map((h) => h.org_id), rows.map((h) => h.period_start), rows.map((h) => h.from_sub), rows.map((h) => h.from_pur), nowMs],
    })
    return rows.length
  }

  return {
    async renewLease(instanceId, nowMs, leaseMs): Promise<LeaseRenewal> {
      const { rows } = await pool.query<LeaseRenewal>({ ...RENEW, values: [instanceId, nowMs, leaseMs] })
      return { held: rows[0]!.held, expired: rows[0]!.expired }
    },
    releaseExpired: (nowMs, instanceId) =>
      inTransaction(pool, async (c) => {
        const gone =
          instanceId === undefined
            ? (await c.query<{ id: string }>('DELETE FROM instances WHERE lease_until <= $1 RETURNING id', [nowMs])).rows.map((r) => r.id)
            : (await c.query('DELETE FROM instances WHERE id = $1', [instanceId]), [instanceId])
        // the dead instances' holds, and any whose instance row is gone (swept while its requests still ran)
        const where = 'h.instance_id = ANY($1::text[]) OR NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = h.instance_id)'
        return releaseOn(c, where, [gone], nowMs)
      }),
    releaseHolds: (holdIds, nowMs) => inTransaction(pool, (c) => releaseOn(c, 'h.id = ANY($1::text[])', [[...holdIds]], nowMs)),
    remote: true,
    reserveHeld: (orgId, amount, nowMs, hold) => credits.reserveGrouped(orgId, amount, nowMs, hold),
    closeHeld: (orgId, close, nowMs) => closeMany({ orgId, close, nowMs }),
  }
}

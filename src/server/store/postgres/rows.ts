/**
 * Rows of the PostgreSQL store and their conversion to the records of ../contracts/store.ts, plus the transaction helper the
 * store's rare multi-statement operations use. `pg` returns BIGINT columns as strings (they may exceed 2^53); the
 * values here (unix ms, credits) never do, so they are converted with `Number`.
 */
import type pg from 'pg'
import type { EventPayload, EventType, PlanStatus } from '../../../schema.js'
import type { Plan } from '../../../accounts/plans.js'
import type { OrgRecord, StoredEvent } from '../../../accounts/types.js'

/** What the store runs statements on: the pool, or a client inside a transaction. */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(config: string | pg.QueryConfig<unknown[]>, values?: unknown[]): Promise<pg.QueryResult<R>>
}

/** A BIGINT (string) or INTEGER column as a number. */
export type Num = string | number

export interface OrgRow {
  id: string
  name: string
  plan_id: string
  monthly_credits_override: Num | null
  rate_override: number | null
  monthly_credits: Num
  rate_per_second: number
  plan_status: string
  suspended: boolean
  created_at: Num
  period_anchor: Num
  period_start: Num
  period_end: Num
  subscription_credits: Num
  purchased_credits: Num
  alert_level: number
  period_lookups: Num
  period_credits: Num
  total_lookups: Num
  total_credits: Num
}


export interface EventRow {
  id: string
  org_id: string
  type: string
  created: Num
  payload: string
}

export interface PlanRow {
  id: string
  name: string
  monthly_price: number
  monthly_credits: Num
  rate_per_second: number
}

export function toOrg(r: OrgRow): OrgRecord {
  return {
    id: r.id,
    name: r.name,
    planId: r.plan_id,
    monthlyCredits: Number(r.monthly_credits),
    ratePerSecond: r.rate_per_second,
    planStatus: r.plan_status as PlanStatus,
    suspended: r.suspended,
    createdAt: Number(r.created_at),
    periodStart: Number(r.period_start),
    periodEnd: Number(r.period_end),
    subscriptionCredits: Number(r.subscription_credits),
    purchasedCredits: Number(r.purchased_credits),
    usage: {
      periodLookups: Number(r.period_lookups),
      periodCredits: Number(r.period_credits),
      totalLookups: Number(r.total_lookups),
      totalCredits: Number(r.total_credits),
    },
  }
}


export function toEvent(r: EventRow): StoredEvent {
  return { id: r.id, orgId: r.org_id, type: r.type as EventType, created: Number(r.created), payload: JSON.parse(r.payload) as EventPayload }
}

export function toPlan(r: PlanRow): Plan {
  return { id: r.id, name: r.name, monthly_price: r.monthly_price, monthly_credits: Number(r.monthly_credits), rate_per_second: r.rate_per_second }
}

/**
 * Runs `fn` in a transaction on one client of the pool: committed when it resolves, rolled back when it throws.
 * Only the rare operations (a period roll-over, an operator's plan change or top-up) pay its extra round trips.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (e) {
    // A connection that cannot even roll back is dropped from the pool rather than handed to the next caller.
    await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError))
    throw e
  } finally {
    client.release(broken)
  }
}

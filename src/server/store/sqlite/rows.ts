/**
 * Rows of the SQLite store and their conversion to the records of ../contracts/store.ts. SQLite has no boolean: `suspended` is
 * 0 or 1, and a key's scopes are one space-separated string.
 */
import type { EventPayload, EventType, PlanStatus } from '../../../schema.js'
import type { AlertLevel, CreditState } from '../../../accounts/ledger.js'
import type { OrgRecord, StoredEvent } from '../../../accounts/types.js'

export interface OrgRow {
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
export type CreditRow = Pick<
  OrgRow,
  'period_anchor' | 'period_start' | 'period_end' | 'monthly_credits' | 'subscription_credits' | 'purchased_credits' | 'alert_level'
>


export interface EventRow {
  id: string
  org_id: string
  type: string
  created: number
  payload: string
}

export function toOrg(r: OrgRow): OrgRecord {
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

export const creditState = (r: CreditRow): CreditState => ({
  monthlyCredits: r.monthly_credits,
  subscriptionCredits: r.subscription_credits,
  purchasedCredits: r.purchased_credits,
  alertLevel: r.alert_level as AlertLevel,
})


export function toEvent(r: EventRow): StoredEvent {
  return { id: r.id, orgId: r.org_id, type: r.type as EventType, created: r.created, payload: JSON.parse(r.payload) as EventPayload }
}

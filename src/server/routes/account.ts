/**
 * GET /v1/account (scope `account:read`): the org, its plan and period, credits by bucket, usage of the period and
 * of all time, the calling key, and the version id of the org's own scoring policy (null: the service's applies).
 */
import { RiskcheckError } from '../../errors.js'
import { AccountSchema, type Account } from '../../schema.js'
import type { RequestAuth } from '../auth.js'
import type { Plan } from '../../accounts/plans.js'
import type { OrgRecord } from '../../accounts/types.js'
import { defineRoute, type RouteDef } from './types.js'

/** The account object of an org as seen by one key. */
export function accountOf(org: OrgRecord, auth: RequestAuth, plans: readonly Plan[]): Account {
  const plan = plans.find((p) => p.id === org.planId)
  return {
    org: { id: org.id, name: org.name },
    plan: {
      id: org.planId,
      name: plan?.name ?? org.planId,
      credits_per_period: org.monthlyCredits,
      period_start: new Date(org.periodStart).toISOString(),
      period_end: new Date(org.periodEnd).toISOString(),
      status: org.planStatus,
    },
    credits: {
      subscription: org.subscriptionCredits,
      purchased: org.purchasedCredits,
      total_available: org.subscriptionCredits + org.purchasedCredits,
    },
    usage: {
      period: { lookups: org.usage.periodLookups, credits: org.usage.periodCredits },
      all_time: { lookups: org.usage.totalLookups, credits: org.usage.totalCredits },
    },
    key: { id: auth.key.id, name: auth.key.name, mode: auth.key.mode, scopes: auth.key.scopes },
    policy_version: auth.policyVersion ?? null,
  }
}

/** The account route. */
export const accountRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    url: '/v1/account',
    operationId: 'get_account',
    summary: 'Account: plan, credits, usage and the calling key',
    tags: ['Account'],
    scope: 'account:read',
    status: 200,
    response: { name: 'Account', schema: AccountSchema },
    errors: [],
    handler: async ({ auth, ctx }) => {
      const org = await ctx.store.getOrg(auth!.orgId, ctx.nowMs())
      if (!org) throw new RiskcheckError('UNAUTHORIZED', 'Invalid API key.')
      return accountOf(org, auth!, ctx.plans)
    },
  }),
]

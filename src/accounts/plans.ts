/**
 * Plans and products: the price list of `GET /v1/pricing` and the defaults of new orgs. The catalogue is
 * configuration — the defaults below are seeded into the store on its first start, and `createServer({ plans })`
 * replaces them — so a custom deal is a per-org override (`riskcheck admin plan set … --monthly-credits N`), never a
 * code change.
 */
import { MAX_CREDITS } from '../billing.js'
import type { LookupType, Pricing } from '../schema.js'

/** A plan of the catalogue. */
export interface Plan {
  /** Stable id, e.g. `starter`. */
  id: string
  name: string
  /** USD per month. */
  monthly_price: number
  /** Subscription credits granted each period. */
  monthly_credits: number
  /** Requests a second allowed to each live key of an org on this plan. */
  rate_per_second: number
}

/** The default plans (docs/service.md, credits and plans): free, starter, growth, scale. */
export const DEFAULT_PLANS: readonly Plan[] = [
  { id: 'free', name: 'Free', monthly_price: 0, monthly_credits: 100, rate_per_second: 5 },
  { id: 'starter', name: 'Starter', monthly_price: 49, monthly_credits: 10_000, rate_per_second: 20 },
  { id: 'growth', name: 'Growth', monthly_price: 199, monthly_credits: 50_000, rate_per_second: 50 },
  { id: 'scale', name: 'Scale', monthly_price: 499, monthly_credits: 200_000, rate_per_second: 100 },
]

/** The plan a new org gets when none is named. */
export const DEFAULT_PLAN_ID = 'free'

/** Requests a second of a test key (docs/service.md, keys: 10). */
export const TEST_KEY_RATE_PER_SECOND = 10

/** A product of the price list (one per single lookup and the combined check). */
export interface Product {
  id: LookupType
  name: string
  endpoint: string
  credits: number
}

/** The products and their credit costs, from the billing table (src/billing.ts). */
export const PRODUCTS: readonly Product[] = [
  { id: 'email', name: 'Email validation', endpoint: '/v1/email', credits: MAX_CREDITS.email },
  { id: 'phone', name: 'Phone validation', endpoint: '/v1/phone', credits: MAX_CREDITS.phone },
  { id: 'phone_type', name: 'Phone line type', endpoint: '/v1/phone/type', credits: MAX_CREDITS.phone_type },
  { id: 'ip', name: 'IP intelligence', endpoint: '/v1/ip', credits: MAX_CREDITS.ip },
  { id: 'domain_age', name: 'Domain age', endpoint: '/v1/domain/age', credits: MAX_CREDITS.domain_age },
  { id: 'email_auth', name: 'Domain email authentication', endpoint: '/v1/domain/email-auth', credits: MAX_CREDITS.email_auth },
  // The combined check costs the sum of its billed parts: 1 credit per part (email, IP, phone) checked.
  { id: 'check', name: 'Combined risk check (per part checked)', endpoint: '/v1/check', credits: 1 },
]

const PLAN_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/

/**
 * Validates a plan catalogue; throws a TypeError naming the first bad entry. Ids are lower-case
 * (`[a-z0-9][a-z0-9_-]*`, at most 64 characters), unique; credits and rates whole numbers, rates ≥ 1.
 */
export function validatePlans(plans: readonly Plan[]): Plan[] {
  if (!Array.isArray(plans) || plans.length === 0) throw new TypeError('riskcheck server: `plans` must be a non-empty array')
  const seen = new Set<string>()
  return plans.map((p, i) => {
    const where = `plans[${i}]`
    if (!p || typeof p !== 'object') throw new TypeError(`riskcheck server: ${where} must be an object`)
    if (typeof p.id !== 'string' || !PLAN_ID.test(p.id)) throw new TypeError(`riskcheck server: ${where}.id must match ${PLAN_ID}`)
    if (seen.has(p.id)) throw new TypeError(`riskcheck server: ${where}.id ${p.id} is a duplicate`)
    seen.add(p.id)
    if (typeof p.name !== 'string' || p.name.length === 0 || p.name.length > 100) throw new TypeError(`riskcheck server: ${where}.name must be a string of 1–100 characters`)
    if (typeof p.monthly_price !== 'number' || !(p.monthly_price >= 0) || !Number.isFinite(p.monthly_price)) throw new TypeError(`riskcheck server: ${where}.monthly_price must be a number ≥ 0`)
    if (!Number.isSafeInteger(p.monthly_credits) || p.monthly_credits < 0) throw new TypeError(`riskcheck server: ${where}.monthly_credits must be a whole number ≥ 0`)
    if (!Number.isSafeInteger(p.rate_per_second) || p.rate_per_second < 1) throw new TypeError(`riskcheck server: ${where}.rate_per_second must be a whole number ≥ 1`)
    return { id: p.id, name: p.name, monthly_price: p.monthly_price, monthly_credits: p.monthly_credits, rate_per_second: p.rate_per_second }
  })
}

/** The public price list (`GET /v1/pricing`) of a catalogue. */
export function pricingOf(plans: readonly Plan[], products: readonly Product[] = PRODUCTS): Pricing {
  return {
    plans: plans.map((p) => ({ id: p.id, name: p.name, monthly_price: p.monthly_price, monthly_credits: p.monthly_credits })),
    products: products.map((p) => ({ id: p.id, name: p.name, endpoint: p.endpoint, credits: p.credits })),
  }
}

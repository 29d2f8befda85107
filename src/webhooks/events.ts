/**
 * Webhook events: builders for each documented event type (docs/service.md, webhooks) (payload `{ id, type, created, api_version: '1', org_id,
 * test_mode, data }`), the subscription rule, the credit-alert rule (which credits.low / credits.depleted event a balance change
 * triggers) and the ids used by the delivery queue (`evt_…`, `dlv_…`, `whsec_…`).
 *
 * Data fields: {@link EVENT_DATA_FIELDS} (docs/api.md "Event payloads" is written from it; docs/decisions.md "Webhooks").
 *
 * Builders are pure apart from the random id (pass `id` to pin it); the clock is always passed in.
 */
import { randomBytes } from 'node:crypto'
import { EVENT_TYPES, type BulkJob, type EmailRecheckedData, type EventPayload, type EventType } from '../schema.js'

/** The payload's `api_version`. */
export const WEBHOOK_API_VERSION = '1'

/** The credits.low levels, percent of the monthly allowance, highest first (docs/service.md, credits: below 25 %, then below 5 %). */
export const CREDIT_LOW_THRESHOLDS: readonly number[] = [25, 5]

/** Why credits arrived (credits.added `reason`). */
export type CreditsAddedReason = 'period_renewal' | 'upgrade' | 'top_up'

/** Data of credits.low. */
export interface CreditsLowData {
  balance: number
  threshold_percent: number
  monthly_credits: number
}
/** Data of credits.depleted. */
export interface CreditsDepletedData {
  balance: number
  monthly_credits: number
}
/** Data of credits.added. */
export interface CreditsAddedData {
  amount: number
  balance: number
  reason: CreditsAddedReason
}
/** Data of ping. */
export interface PingData {
  endpoint_id: string
  message: string
}

/**
 * The `data` fields of each event type with what they mean: docs/api.md's "Event payloads" is written from this
 * (`npm run docs`).
 */
export const EVENT_DATA_FIELDS: Readonly<Record<EventType, ReadonlyArray<readonly [string, string]>>> = {
  'credits.low': [
    ['balance', 'credits left'],
    ['threshold_percent', 'the level crossed: 25, then 5 (% of the monthly credits)'],
    ['monthly_credits', 'the plan\'s monthly credits'],
  ],
  'credits.depleted': [
    ['balance', 'credits left (0)'],
    ['monthly_credits', 'the plan\'s monthly credits'],
  ],
  'credits.added': [
    ['amount', 'credits added'],
    ['balance', 'the balance after'],
    ['reason', '`period_renewal`, `upgrade` or `top_up`'],
  ],
  'bulk.completed': [['(the job)', 'the bulk job object as it stands at the end: id, name, type, status, counts, credits_used, dates']],
  'review.decided': [
    ['review_id', 'the review (`rev_…`, GET /v1/reviews)'],
    ['request_id', 'the answer it was about'],
    ['type', 'the lookup type of that answer'],
    ['mode', '`live` or `test`: the queue of the key mode'],
    ['decision', '`approve` or `block`'],
    ['decided_by', '`key:<key id>` (the API) or `user:<user id>` (the dashboard)'],
    ['outcome_id', 'the outcome recorded (`legitimate` for approve, `fraud` for block), or null when none could be'],
    ['list_id', 'the list the input was added to, or null'],
  ],
  'email.rechecked': [
    ['request_id', 'the `request.id` of the single lookup or combined check rechecked; null for a bulk row'],
    ['bulk_job_id', 'the bulk job whose row was rechecked (and updated in place); null for a request'],
    ['row_index', 'that row (0-based, input order); null for a request'],
    ['email', 'the address rechecked (normalised)'],
    ['verdict', 'the new verdict status'],
    ['score', 'the new risk score'],
    ['action', 'the new recommended action'],
    ['reason', 'the new verdict\'s reason'],
    ['factors', 'the fired factor codes of the new answer (as `risk.factors`), the org\'s list matches and outcome labels included'],
    ['smtp_check', 'the mailbox check of the last attempt (deliverable, undeliverable, catch_all, unknown, unavailable)'],
    ['attempts', 'rechecks made (the original answer not counted)'],
    ['definite', 'false when the last attempt was still deferred (the verdict stays unknown)'],
  ],
  ping: [
    ['endpoint_id', 'the endpoint pinged (a ping goes to it alone)'],
    ['message', 'the operator\'s message'],
  ],
}

/** The default message of a ping event. */
export const DEFAULT_PING_MESSAGE = 'Test event from riskcheck: this endpoint is reachable.'

/** Common inputs of every builder. */
export interface EventBase {
  /** the org the event belongs to */
  orgId: string
  /** when the event happened (becomes `created`, unix seconds) */
  now: Date
  /** the event id; default a new `evt_…` id */
  id?: string
  /** a test key's activity caused it (becomes `test_mode`; default false) */
  testMode?: boolean
}

function randomId(prefix: string, bytes: number): string {
  return `${prefix}${randomBytes(bytes).toString('hex')}`
}

/** A new event id: `evt_` + 24 hex characters. */
export function createEventId(): string {
  return randomId('evt_', 12)
}

/** A new delivery id: `dlv_` + 24 hex characters. A resend gets a new delivery id and keeps the event id. */
export function createDeliveryId(): string {
  return randomId('dlv_', 12)
}

/**
 * A new endpoint signing secret: `whsec_` + 32 base64url characters (24 random bytes). Used whole as the HMAC key
 * by `signWebhook` (not base64-decoded).
 */
export function createWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64url')}`
}

function unixSeconds(d: Date): number {
  const t = d.getTime()
  if (!Number.isFinite(t)) throw new TypeError('event time must be a valid Date')
  return Math.floor(t / 1000)
}

function nonNegativeInteger(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 0) throw new TypeError(`${name} must be a non-negative integer`)
  return v
}

/**
 * Builds an event payload of any type with the given data. Prefer the typed builders below.
 *
 * @example buildEvent('ping', { endpoint_id: 'we_1', message: 'hi' }, { orgId: 'org_1', now: new Date() })
 */
export function buildEvent(type: EventType, data: Record<string, unknown>, base: EventBase): EventPayload {
  if (!(EVENT_TYPES as readonly string[]).includes(type)) throw new TypeError(`unknown event type ${String(type)}`)
  if (typeof base.orgId !== 'string' || base.orgId.length === 0) throw new TypeError('orgId must be a non-empty string')
  return {
    id: base.id ?? createEventId(),
    type,
    created: unixSeconds(base.now),
    api_version: WEBHOOK_API_VERSION,
    org_id: base.orgId,
    test_mode: base.testMode === true,
    data,
  }
}

/**
 * credits.low: the balance dropped below `thresholdPercent` % of the monthly allowance.
 *
 * @example buildCreditsLowEvent({ orgId: 'org_1', now, balance: 240, thresholdPercent: 25, monthlyCredits: 10000 })
 */
export function buildCreditsLowEvent(
  input: EventBase & { balance: number; thresholdPercent: number; monthlyCredits: number },
): EventPayload {
  const data: CreditsLowData = {
    balance: nonNegativeInteger('balance', input.balance),
    threshold_percent: input.thresholdPercent,
    monthly_credits: nonNegativeInteger('monthlyCredits', input.monthlyCredits),
  }
  return buildEvent('credits.low', { ...data }, input)
}

/** credits.depleted: the balance reached 0; live lookups answer 402 until credits arrive. */
export function buildCreditsDepletedEvent(input: EventBase & { balance: number; monthlyCredits: number }): EventPayload {
  const data: CreditsDepletedData = {
    balance: nonNegativeInteger('balance', input.balance),
    monthly_credits: nonNegativeInteger('monthlyCredits', input.monthlyCredits),
  }
  return buildEvent('credits.depleted', { ...data }, input)
}

/** credits.added: credits arrived (a new period, an upgrade, or a top-up); `balance` is the balance after. */
export function buildCreditsAddedEvent(
  input: EventBase & { amount: number; balance: number; reason: CreditsAddedReason },
): EventPayload {
  if (input.reason !== 'period_renewal' && input.reason !== 'upgrade' && input.reason !== 'top_up') {
    throw new TypeError('reason must be period_renewal, upgrade or top_up')
  }
  const data: CreditsAddedData = {
    amount: nonNegativeInteger('amount', input.amount),
    balance: nonNegativeInteger('balance', input.balance),
    reason: input.reason,
  }
  return buildEvent('credits.added', { ...data }, input)
}

/** bulk.completed: a bulk job finished; data is the documented bulk job object as it stands at the end. */
export function buildBulkCompletedEvent(input: EventBase & { job: BulkJob }): EventPayload {
  return buildEvent('bulk.completed', { ...input.job, results: { ...input.job.results } }, input)
}

/** Data of review.decided (docs/reviews.md). */
export interface ReviewDecidedData {
  review_id: string
  request_id: string
  type: string
  mode: 'live' | 'test'
  decision: 'approve' | 'block'
  /** `key:<key id>` or `user:<dashboard user id>`. */
  decided_by: string
  /** The outcome recorded (`legitimate` for approve, `fraud` for block); null when none could be. */
  outcome_id: string | null
  /** The list the input was added to, or null. */
  list_id: string | null
}

/** review.decided: a reviewer approved or blocked an answer of the review queue. */
export function buildReviewDecidedEvent(input: EventBase & { data: ReviewDecidedData }): EventPayload {
  return buildEvent('review.decided', { ...input.data }, input)
}

/** email.rechecked: a deferred email answer was checked again (a definite verdict, or its last attempt). */
export function buildEmailRecheckedEvent(input: EventBase & { data: EmailRecheckedData }): EventPayload {
  return buildEvent('email.rechecked', { ...input.data }, input)
}

/** ping: a test event requested by an operator for one endpoint (it goes to that endpoint only). */
export function buildPingEvent(input: EventBase & { endpointId: string; message?: string }): EventPayload {
  const data: PingData = { endpoint_id: input.endpointId, message: input.message ?? DEFAULT_PING_MESSAGE }
  return buildEvent('ping', { ...data }, input)
}

/**
 * Whether an endpoint subscribed to `endpointEvents` receives fan-out events of `type`: `'*'` means every type,
 * otherwise the exact type must be listed. `ping` never fans out (it is addressed to one endpoint, whatever that
 * endpoint subscribes to): this returns false for it.
 *
 * @example
 * matchesSubscription(['*'], 'credits.low')            // true
 * matchesSubscription(['bulk.completed'], 'credits.low') // false
 * matchesSubscription(['*'], 'ping')                   // false
 */
export function matchesSubscription(endpointEvents: readonly string[], type: string): boolean {
  if (type === 'ping') return false
  return endpointEvents.includes('*') || endpointEvents.includes(type)
}

/**
 * Validates the `events` list of an endpoint-creation request: a non-empty list of known event types, or exactly
 * `['*']`. Returns the list (deduplicated, in the given order) or an error message. `ping` may be listed (it is
 * harmless: pings are addressed directly).
 *
 * @example parseEventSubscription(['credits.low', 'bulk.completed']) // { ok: true, events: [...] }
 */
export function parseEventSubscription(value: unknown): { ok: true; events: string[] } | { ok: false; message: string } {
  if (!Array.isArray(value) || value.length === 0) return { ok: false, message: 'events must be a non-empty array' }
  if (value.length > EVENT_TYPES.length + 1) return { ok: false, message: 'events lists too many values' }
  const out: string[] = []
  for (const v of value) {
    if (typeof v !== 'string') return { ok: false, message: 'events must be strings' }
    if (v !== '*' && !(EVENT_TYPES as readonly string[]).includes(v)) return { ok: false, message: `unknown event type ${v.slice(0, 40)}` }
    if (!out.includes(v)) out.push(v)
  }
  if (out.includes('*') && out.length > 1) return { ok: false, message: "'*' must be the only value" }
  return { ok: true, events: out }
}

/** Which credit alerts have been sent since credits last arrived (kept per org by the server). */
export interface CreditAlertState {
  /** credits.low levels already sent (subset of {@link CREDIT_LOW_THRESHOLDS}) */
  lowSent: number[]
  /** credits.depleted already sent */
  depletedSent: boolean
}

/** The state after credits arrive: every level re-armed. */
export const CREDIT_ALERTS_RESET: CreditAlertState = Object.freeze({ lowSent: [], depletedSent: false }) as CreditAlertState

/** The alert a balance change triggers (at most one: the most severe newly reached level). */
export type CreditAlert = { type: 'credits.low'; thresholdPercent: number } | { type: 'credits.depleted' } | null

/**
 * The documented alert rule (docs/service.md, credits): credits.low when the balance drops below 25 %, then again below 5 %, of the monthly
 * allowance; credits.depleted when it reaches 0; each level once on the way down; levels reset when credits arrive
 * (use {@link CREDIT_ALERTS_RESET}). Call after every charge with the balance after it. When one charge passes
 * several levels, one event is sent — the most severe — and the levels above it count as sent. With
 * `monthlyCredits` 0 only credits.depleted can fire. Pure.
 *
 * @example
 * computeCreditAlert({ balance: 2400, monthlyCredits: 10000, state: CREDIT_ALERTS_RESET })
 * // { alert: { type: 'credits.low', thresholdPercent: 25 }, state: { lowSent: [25], depletedSent: false } }
 */
export function computeCreditAlert(input: {
  balance: number
  monthlyCredits: number
  state: CreditAlertState
}): { alert: CreditAlert; state: CreditAlertState } {
  const { balance, monthlyCredits, state } = input
  if (balance <= 0) {
    if (state.depletedSent) return { alert: null, state }
    return {
      alert: { type: 'credits.depleted' },
      state: { lowSent: monthlyCredits > 0 ? [...CREDIT_LOW_THRESHOLDS] : [...state.lowSent], depletedSent: true },
    }
  }
  if (monthlyCredits <= 0) return { alert: null, state }
  let lowest: number | null = null
  const lowSent = [...state.lowSent]
  for (const level of CREDIT_LOW_THRESHOLDS) {
    if (balance * 100 < level * monthlyCredits && !lowSent.includes(level)) {
      lowSent.push(level)
      lowest = level
    }
  }
  if (lowest === null) return { alert: null, state }
  return { alert: { type: 'credits.low', thresholdPercent: lowest }, state: { lowSent, depletedSent: state.depletedSent } }
}

/**
 * Credits of an org: the pure rules (billing periods, alert levels, event payloads) every store shares, and the
 * per-request {@link CreditLedger} the library's lookup pipeline reserves and refunds through. The two buckets and when
 * alerts fire: docs/decisions.md, "Billing and caching" → "credit alerts".
 */
import { randomBytes } from 'node:crypto'
import type { CreditLedger } from '../credits.js'
import type { EventPayload, EventType } from '../schema.js'
import type { ResultCache } from '../cache.js'
import type { Plan } from './plans.js'
import { RiskcheckError } from '../errors.js'
import type { AccountStore, CacheWrite, CreditReason, CreditReservation, HeldCredits, HoldRef, PlanChange, RequestClose } from './types.js'

/**
 * How many times over the balance last known must cover a reservation for a lookup to start before it is confirmed
 * (`CreditLedger.covers`): far from zero, a refusal (and the check's work for nothing) needs that many requests at once.
 */
export const COVER_MARGIN = 64

/** Alert thresholds in percent of the monthly allowance, highest first. */
export const LOW_THRESHOLDS = [25, 5] as const

/** Alert level: 0 none sent · 1 below 25 % sent · 2 below 5 % sent · 3 depleted sent. */
export type AlertLevel = 0 | 1 | 2 | 3

function addMonthsUtc(anchorMs: number, months: number): number {
  const a = new Date(anchorMs)
  const y = a.getUTCFullYear()
  const m = a.getUTCMonth() + months
  // Clamp the day to the target month's length (Jan 31 + 1 month → Feb 28/29).
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate()
  return Date.UTC(y, m, Math.min(a.getUTCDate(), lastDay), a.getUTCHours(), a.getUTCMinutes(), a.getUTCSeconds(), a.getUTCMilliseconds())
}

/**
 * The monthly billing period containing `nowMs` for an org whose periods start at `anchorMs` (its creation):
 * `[anchor + k months, anchor + k+1 months)`. Before the anchor, the first period.
 *
 * @example periodAt(Date.parse('2026-01-31T00:00Z'), Date.parse('2026-03-05T00:00Z')) // { start: Feb 28, end: Mar 31 }
 */
export function periodAt(anchorMs: number, nowMs: number): { start: number; end: number } {
  const a = new Date(anchorMs)
  const n = new Date(nowMs)
  let k = Math.max(0, (n.getUTCFullYear() - a.getUTCFullYear()) * 12 + (n.getUTCMonth() - a.getUTCMonth()))
  while (k > 0 && addMonthsUtc(anchorMs, k) > nowMs) k--
  while (addMonthsUtc(anchorMs, k + 1) <= nowMs) k++
  return { start: addMonthsUtc(anchorMs, k), end: addMonthsUtc(anchorMs, k + 1) }
}

/** The alert level a balance sits at (what has been "passed" on the way down). */
export function alertLevelOf(balance: number, monthlyCredits: number): AlertLevel {
  if (balance <= 0) return 3
  if (monthlyCredits > 0 && balance * 100 < monthlyCredits * LOW_THRESHOLDS[1]) return 2
  if (monthlyCredits > 0 && balance * 100 < monthlyCredits * LOW_THRESHOLDS[0]) return 1
  return 0
}

/** An event to write into the outbox: its type and data (the payload is built by {@link buildEvent}). */
export interface PendingEvent {
  type: EventType
  data: Record<string, unknown>
}

/**
 * The alerts due when the balance sits at `balance` and alerts up to `level` were already sent: every level passed
 * since, in order (a fall from 30 % to 0 sends low 25, low 5 and depleted). Returns the new level too.
 */
export function dueAlerts(balance: number, monthlyCredits: number, level: AlertLevel): { events: PendingEvent[]; level: AlertLevel } {
  const target = alertLevelOf(balance, monthlyCredits)
  const events: PendingEvent[] = []
  if (target <= level) return { events, level }
  for (let l = level + 1; l <= target; l++) {
    if (l === 3) {
      events.push({ type: 'credits.depleted', data: { balance, monthly_credits: monthlyCredits } })
    } else if (monthlyCredits > 0) {
      events.push({ type: 'credits.low', data: { balance, threshold_percent: LOW_THRESHOLDS[l - 1], monthly_credits: monthlyCredits } })
    }
  }
  return { events, level: target }
}

/** The credits.added event. */
export function creditsAddedEvent(amount: number, balance: number, reason: CreditReason): PendingEvent {
  return { type: 'credits.added', data: { amount, balance, reason } }
}

/**
 * How a reservation of `amount` splits between the buckets: subscription credits first (they lapse at the period's
 * end), the rest from purchased ones. Null when the two together do not cover it (nothing is taken).
 */
export function reserveSplit(
  subscriptionCredits: number,
  purchasedCredits: number,
  amount: number,
): { fromSubscription: number; fromPurchased: number } | null {
  const fromSubscription = Math.min(subscriptionCredits, amount)
  const fromPurchased = amount - fromSubscription
  return fromPurchased > purchasedCredits ? null : { fromSubscription, fromPurchased }
}

/**
 * How giving back `amount` of a reservation splits between the buckets: the purchased part first (purchased credits
 * never lapse, so they are always given back), then subscription credits.
 */
export function refundSplit(reservation: CreditReservation, amount: number): { fromSubscription: number; fromPurchased: number } {
  const fromPurchased = Math.min(amount, reservation.fromPurchased)
  return { fromPurchased, fromSubscription: Math.min(amount - fromPurchased, reservation.fromSubscription) }
}

/** What a period roll-over writes. */
export interface Renewal {
  /** The new period [start, end). */
  start: number
  end: number
  /** The balance after it: the whole monthly allowance (unused subscription credits lapse) plus the purchased ones. */
  balance: number
  /** The alert level that balance sits at (alerts re-armed without re-sending). */
  alertLevel: AlertLevel
  /** Subscription credits granted (credits.added `period_renewal` when above 0). */
  granted: number
}

/**
 * The roll-over of an org whose period has ended, to the period containing `nowMs` (periods skipped while nobody
 * asked are not granted one by one: one renewal, one credits.added). The store also resets the period's usage.
 */
export function renewal(periodAnchor: number, monthlyCredits: number, purchasedCredits: number, nowMs: number): Renewal {
  const { start, end } = periodAt(periodAnchor, nowMs)
  const balance = monthlyCredits + purchasedCredits
  return { start, end, balance, alertLevel: alertLevelOf(balance, monthlyCredits), granted: monthlyCredits }
}

/** An org's credit fields a plan change starts from. */
export interface CreditState {
  monthlyCredits: number
  subscriptionCredits: number
  purchasedCredits: number
  alertLevel: AlertLevel
}

/** What a plan change writes. */
export interface PlanChangeResult {
  /** The overrides kept with the org (null: the plan's value applies). */
  monthlyOverride: number | null
  rateOverride: number | null
  /** The effective values. */
  monthlyCredits: number
  ratePerSecond: number
  subscriptionCredits: number
  balance: number
  alertLevel: AlertLevel
  /** Subscription credits granted now (credits.added `upgrade` when above 0). */
  granted: number
}

/**
 * A plan change of an org (`change` states the whole deal; `plan` is the catalogue plan it names). An increase of
 * the monthly allowance grants the difference now and re-arms the alerts; a decrease only caps what is left of this
 * period's subscription credits, silently.
 */
export function planChangeOf(current: CreditState, plan: Pick<Plan, 'monthly_credits' | 'rate_per_second'>, change: PlanChange): PlanChangeResult {
  const monthlyOverride = change.monthlyCredits ?? null
  const rateOverride = change.ratePerSecond ?? null
  const monthlyCredits = monthlyOverride ?? plan.monthly_credits
  const diff = monthlyCredits - current.monthlyCredits
  const subscriptionCredits = diff > 0 ? current.subscriptionCredits + diff : Math.min(current.subscriptionCredits, monthlyCredits)
  const balance = subscriptionCredits + current.purchasedCredits
  return {
    monthlyOverride,
    rateOverride,
    monthlyCredits,
    ratePerSecond: rateOverride ?? plan.rate_per_second,
    subscriptionCredits,
    balance,
    alertLevel: diff > 0 ? alertLevelOf(balance, monthlyCredits) : current.alertLevel,
    granted: Math.max(0, diff),
  }
}

/** A new event id: `evt_` + 24 hex characters. */
export function newEventId(): string {
  return `evt_${randomBytes(12).toString('hex')}`
}

/**
 * The documented event payload of a credits event (docs/service.md "Webhook signatures", docs/api.md; id, type,
 * created in unix seconds, api_version "1", org_id, test_mode false: only live keys move credits, data).
 */
export function buildEvent(orgId: string, pending: PendingEvent, nowMs: number, id: string = newEventId()): EventPayload {
  return { id, type: pending.type, created: Math.floor(nowMs / 1000), api_version: '1', org_id: orgId, test_mode: false, data: pending.data }
}

/** A per-request ledger: the library's {@link CreditLedger} plus `settle()` for the end of the request. */
export interface OrgLedger extends CreditLedger {
  /**
   * Counts the request into the usage (`lookups`: 1 for a served lookup, 0 for a failed one) and emits due alerts.
   * On held credits it also closes the request's hold, and writes `idempotent` in the same write: it then resolves
   * true (else false, and the caller writes the idempotency record itself). Rejects with UPSTREAM_UNAVAILABLE when
   * the hold was released meanwhile (the request was taken for dead and refunded).
   */
  settle(lookups: number, idempotent?: RequestClose['idempotent']): Promise<boolean>
  /** Credits reserved and not refunded so far (what this request is charged). */
  readonly charged: number
  /**
   * Whether its credits are held (`held` of {@link createOrgLedger}): a request whose settlement fails is then not
   * charged — its hold is refunded — so it must not be answered as if it were.
   */
  readonly holdsCredits: boolean
  /**
   * `cache` (the store's own result cache) with its writes held until {@link settle}, which stores them in the same
   * write as the settlement: a billed request then costs the database two writes (reserve, settle), not three.
   */
  deferWrites(cache: ResultCache): ResultCache
}

/** Credits held per request (`held` of {@link createOrgLedger}): the store's {@link HeldCredits} and the request's hold. */
export interface HeldOptions {
  credits: HeldCredits
  hold: HoldRef
  /**
   * Told the hold's id when a write of it failed (a reservation whose reply was lost, a settlement that did not
   * commit): the hold may still be open and must be released.
   */
  unsettled(holdId: string): void
}

/**
 * The ledger of one request of one org over the store. It remembers its reservations so a refund gives credits
 * back to the bucket they came from (the last taken first). Create one per request; it is not shared.
 *
 * With `held`, its reservations are a hold of the request's instance, and refunds are given back by the settlement
 * that closes the hold (one write for both): a request that never settles — its process died — is refunded whole
 * when its instance's lease ends.
 *
 * @example
 * const ledger = createOrgLedger(store, org.id, () => Date.now())
 * await runLookup({ ...rc.env, ledger }, CHECKS.ip, '8.8.8.8', {})
 * await ledger.settle(1)
 */
export function createOrgLedger(
  store: AccountStore,
  orgId: string,
  nowMs: () => number,
  known?: { balance?: number | undefined; periodEnd?: number | undefined },
  heldBy?: HeldOptions,
): OrgLedger {
  const credits = store.grouped ?? store
  const held: CreditReservation[] = []
  const cacheWrites: CacheWrite[] = []
  // given back from the hold at the settlement (held credits only)
  const given = { fromSubscription: 0, fromPurchased: 0 }
  let holding = false
  let charged = 0
  let touched = false
  // The balance the last reservation left, while no refund has changed it: credits_remaining without another read.
  // Before any reservation: the balance the auth read found, while its period lasts.
  let knownBalance: number | undefined = known?.balance !== undefined && known.periodEnd !== undefined && nowMs() < known.periodEnd ? known.balance : undefined

  const reserveHeld = async (h: HeldOptions, amount: number): Promise<CreditReservation | null> => {
    try {
      return await h.credits.reserveHeld(orgId, amount, nowMs(), h.hold)
    } catch (e) {
      // it may have committed all the same (its reply lost): released if so
      h.unsettled(h.hold.id)
      throw e
    }
  }

  const settleHeld = async (h: HeldOptions, lookups: number, idempotent: RequestClose['idempotent']): Promise<boolean> => {
    if (!touched && lookups === 0 && cacheWrites.length === 0 && !idempotent) return false
    const close: RequestClose = {
      ...(holding ? { holdId: h.hold.id } : {}),
      lookups,
      refund: { ...given },
      ...(cacheWrites.length > 0 ? { cacheWrites: cacheWrites.splice(0) } : {}),
      ...(idempotent ? { idempotent } : {}),
    }
    let closed: boolean
    const held = holding
    holding = false
    try {
      closed = await h.credits.closeHeld(orgId, close, nowMs())
    } catch (e) {
      if (held) h.unsettled(h.hold.id)
      throw e
    }
    if (!closed) {
      // fenced: its hold was released already, or (its key taken over) is left to the lease's next renewal
      if (held) h.unsettled(h.hold.id)
      throw new RiskcheckError('UPSTREAM_UNAVAILABLE', 'This request was cut off and not charged; retry it.')
    }
    return idempotent !== undefined
  }

  return {
    get charged() {
      return charged
    },
    holdsCredits: heldBy !== undefined,
    async reserve(amount) {
      if (amount <= 0) return true
      touched = true
      const r = heldBy ? await reserveHeld(heldBy, amount) : await credits.reserveCredits(orgId, amount, nowMs())
      if (!r) return false
      if (heldBy) holding = true
      held.push(r)
      charged += amount
      knownBalance = r.balanceAfter
      return true
    },
    async refund(amount) {
      let left = Math.min(amount, charged)
      if (left > 0 && !heldBy) knownBalance = undefined
      while (left > 0) {
        const r = held[held.length - 1]
        if (!r) break
        const part = Math.min(left, r.amount)
        const split = refundSplit(r, part)
        if (heldBy) {
          // given back by the settlement; the balance it will leave is known
          given.fromPurchased += split.fromPurchased
          given.fromSubscription += split.fromSubscription
          if (knownBalance !== undefined) knownBalance += part
        } else {
          const after = await credits.refundCredits(orgId, r, part, nowMs())
          knownBalance = typeof after === 'number' ? after : undefined
        }
        // What is left of the reservation: split as the store split the refund.
        r.fromPurchased -= split.fromPurchased
        r.fromSubscription -= split.fromSubscription
        r.amount -= part
        if (r.amount === 0) held.pop()
        left -= part
        charged -= part
      }
    },
    async balance() {
      return knownBalance ?? store.balance(orgId, nowMs())
    },
    covers(amount) {
      return heldBy?.credits.remote === true && knownBalance !== undefined && knownBalance >= amount * COVER_MARGIN
    },
    async settle(lookups, idempotent) {
      if (heldBy) return settleHeld(heldBy, lookups, idempotent)
      if (!touched && lookups === 0 && cacheWrites.length === 0) return false
      await credits.settleCredits(orgId, lookups, nowMs(), cacheWrites.length > 0 ? cacheWrites.splice(0) : undefined)
      return false
    },
    deferWrites(cache) {
      return {
        get: (key, now) => cache.get(key, now),
        set(key, entry, ttlMs) {
          cacheWrites.push({ key, entry, ttlMs })
        },
      }
    },
  }
}

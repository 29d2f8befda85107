import { describe, expect, it } from 'vitest'
import { alertLevelOf, buildEvent, COVER_MARGIN, createOrgLedger, dueAlerts, periodAt, planChangeOf, refundSplit, renewal, reserveSplit } from './ledger.js'
import type { AccountStore, CreditReservation } from './types.js'

const t = (iso: string) => Date.parse(iso)
const iso = (ms: number) => new Date(ms).toISOString()

describe('billing periods', () => {
  it('are calendar months from the org creation', () => {
    const anchor = t('2026-01-15T10:00:00Z')
    expect(periodAt(anchor, anchor)).toEqual({ start: anchor, end: t('2026-02-15T10:00:00Z') })
    const p = periodAt(anchor, t('2026-03-20T00:00:00Z'))
    expect([iso(p.start), iso(p.end)]).toEqual(['2026-03-15T10:00:00.000Z', '2026-04-15T10:00:00.000Z'])
    const edge = periodAt(anchor, t('2026-04-15T10:00:00Z'))
    expect(iso(edge.start)).toBe('2026-04-15T10:00:00.000Z')
    const justBefore = periodAt(anchor, t('2026-04-15T09:59:59.999Z'))
    expect(iso(justBefore.start)).toBe('2026-03-15T10:00:00.000Z')
  })

  it('clamp the day of month (Jan 31 → Feb 28 → Mar 31)', () => {
    const anchor = t('2026-01-31T00:00:00Z')
    const feb = periodAt(anchor, t('2026-03-05T00:00:00Z'))
    expect([iso(feb.start), iso(feb.end)]).toEqual(['2026-02-28T00:00:00.000Z', '2026-03-31T00:00:00.000Z'])
    const leap = periodAt(t('2028-01-31T00:00:00Z'), t('2028-02-29T12:00:00Z'))
    expect(iso(leap.start)).toBe('2028-02-29T00:00:00.000Z')
  })

  it('roll across years', () => {
    const p = periodAt(t('2025-11-30T00:00:00Z'), t('2027-02-01T00:00:00Z'))
    expect([iso(p.start), iso(p.end)]).toEqual(['2027-01-30T00:00:00.000Z', '2027-02-28T00:00:00.000Z'])
  })
})

describe('credit alerts', () => {
  it('levels: below 25 %, below 5 %, depleted', () => {
    expect(alertLevelOf(100, 100)).toBe(0)
    expect(alertLevelOf(25, 100)).toBe(0)
    expect(alertLevelOf(24, 100)).toBe(1)
    expect(alertLevelOf(5, 100)).toBe(1)
    expect(alertLevelOf(4, 100)).toBe(2)
    expect(alertLevelOf(0, 100)).toBe(3)
    expect(alertLevelOf(3, 0)).toBe(0) // no allowance: only depletion alerts
    expect(alertLevelOf(0, 0)).toBe(3)
  })

  it('sends each level passed since the last one, once', () => {
    expect(dueAlerts(30, 100, 0)).toEqual({ events: [], level: 0 })
    expect(dueAlerts(20, 100, 0)).toEqual({
      events: [{ type: 'credits.low', data: { balance: 20, threshold_percent: 25, monthly_credits: 100 } }],
      level: 1,
    })
    expect(dueAlerts(19, 100, 1)).toEqual({ events: [], level: 1 })
    expect(dueAlerts(0, 100, 0).events.map((e) => [e.type, e.data.threshold_percent])).toEqual([
      ['credits.low', 25],
      ['credits.low', 5],
      ['credits.depleted', undefined],
    ])
    // A refund that lifts the balance does not take the level back.
    expect(dueAlerts(50, 100, 3)).toEqual({ events: [], level: 3 })
    expect(dueAlerts(0, 0, 0).events).toEqual([{ type: 'credits.depleted', data: { balance: 0, monthly_credits: 0 } }])
  })

  it('builds the documented event payload', () => {
    const e = buildEvent('org_1', { type: 'credits.depleted', data: { balance: 0, monthly_credits: 5 } }, 1_700_000_000_999)
    expect(e).toEqual({ id: e.id, type: 'credits.depleted', created: 1_700_000_000, api_version: '1', org_id: 'org_1', test_mode: false, data: { balance: 0, monthly_credits: 5 } })
    expect(e.id).toMatch(/^evt_[0-9a-f]{24}$/)
  })
})

describe('credit arithmetic every store shares', () => {
  it('reserves subscription credits first and refuses when both buckets together are short', () => {
    expect(reserveSplit(10, 5, 8)).toEqual({ fromSubscription: 8, fromPurchased: 0 })
    expect(reserveSplit(10, 5, 15)).toEqual({ fromSubscription: 10, fromPurchased: 5 })
    expect(reserveSplit(10, 5, 16)).toBeNull()
    expect(reserveSplit(0, 0, 0)).toEqual({ fromSubscription: 0, fromPurchased: 0 })
  })

  it('gives back the purchased part of a reservation first', () => {
    const r = { amount: 10, fromSubscription: 6, fromPurchased: 4, periodStart: 0 }
    expect(refundSplit(r, 3)).toEqual({ fromPurchased: 3, fromSubscription: 0 })
    expect(refundSplit(r, 7)).toEqual({ fromPurchased: 4, fromSubscription: 3 })
    expect(refundSplit(r, 10)).toEqual({ fromPurchased: 4, fromSubscription: 6 })
  })

  it('renews to the period containing now: the whole allowance, purchased kept, alerts re-armed', () => {
    const anchor = t('2026-01-15T00:00:00Z')
    const r = renewal(anchor, 100, 7, t('2026-04-20T00:00:00Z'))
    expect([iso(r.start), iso(r.end)]).toEqual(['2026-04-15T00:00:00.000Z', '2026-05-15T00:00:00.000Z'])
    expect(r).toMatchObject({ balance: 107, alertLevel: 0, granted: 100 })
    expect(renewal(anchor, 0, 0, t('2026-02-15T00:00:00Z'))).toMatchObject({ balance: 0, alertLevel: 3, granted: 0 })
  })

  it('a plan change grants an increase (re-arming alerts), caps on a decrease, and overrides win', () => {
    const current = { monthlyCredits: 100, subscriptionCredits: 20, purchasedCredits: 5, alertLevel: 1 as const }
    const starter = { monthly_credits: 10_000, rate_per_second: 20 }
    expect(planChangeOf(current, starter, { planId: 'starter' })).toEqual({
      monthlyOverride: null,
      rateOverride: null,
      monthlyCredits: 10_000,
      ratePerSecond: 20,
      subscriptionCredits: 9_920,
      balance: 9_925,
      alertLevel: 0,
      granted: 9_900,
    })
    const down = planChangeOf(current, starter, { planId: 'starter', monthlyCredits: 10, ratePerSecond: 3 })
    expect(down).toEqual({
      monthlyOverride: 10,
      rateOverride: 3,
      monthlyCredits: 10,
      ratePerSecond: 3,
      subscriptionCredits: 10,
      balance: 15,
      alertLevel: 1, // a decrease sends nothing and leaves the level where it was
      granted: 0,
    })
    expect(planChangeOf(current, starter, { planId: 'starter', monthlyCredits: 100 })).toMatchObject({ subscriptionCredits: 20, granted: 0 })
  })
})

describe("a request's ledger", () => {
  const T = Date.UTC(2026, 0, 1)
  /**
   * The credit part of a store over one org with a balance and a period end (the ledger's own logic is under test
   * here; the stores' credit rules have their contract suite in test/store-contract/). Balance reads are counted.
   */
  const setup = () => {
    const org = { id: 'org_l', periodEnd: T + 1000 }
    let balance = 100
    let reads = 0
    const store = {
      balance: () => (reads++, balance),
      reserveCredits: (_o: string, amount: number): CreditReservation => {
        balance -= amount
        return { amount, fromSubscription: amount, fromPurchased: 0, periodStart: T, balanceAfter: balance }
      },
      refundCredits: (_o: string, _r: CreditReservation, amount: number) => void (balance += amount),
      settleCredits: () => undefined,
    } as unknown as AccountStore
    return { store, org, reads: () => reads, renew: () => (balance = 100) }
  }

  it('reports the balance the auth read found while its period lasts, without another read', async () => {
    const { store, org, reads } = setup()
    const ledger = createOrgLedger(store, org.id, () => T, { balance: 100, periodEnd: org.periodEnd })
    expect(await ledger.balance()).toBe(100)
    expect(reads()).toBe(0)
    // a reservation's own balance takes over; a refund makes the ledger read again
    expect(await ledger.reserve(3)).toBe(true)
    expect(await ledger.balance()).toBe(97)
    await ledger.refund(1)
    expect(await ledger.balance()).toBe(98)
    expect(reads()).toBe(1)
  })

  it("covers a reservation only on a remote store's holds, with a known balance of COVER_MARGIN times it", async () => {
    const { store, org } = setup()
    const hold = { id: 'hold_1' } as never
    const reserveHeld = (_o: string, amount: number): CreditReservation => ({ amount, fromSubscription: amount, fromPurchased: 0, periodStart: T, balanceAfter: 100 - amount })
    const heldOn = (remote: boolean | undefined) => ({
      credits: { reserveHeld, closeHeld: () => true, ...(remote === undefined ? {} : { remote }) },
      hold,
      unsettled: () => undefined,
    })
    const known = (balance: number) => ({ balance, periodEnd: org.periodEnd })
    const ledger = (balance: number, remote?: boolean, nowMs = T) => createOrgLedger(store, org.id, () => nowMs, known(balance), heldOn(remote))
    expect(ledger(COVER_MARGIN * 2, true).covers?.(2)).toBe(true)
    expect(ledger(COVER_MARGIN * 2 - 1, true).covers?.(2)).toBe(false)
    expect(ledger(1_000_000, false).covers?.(1)).toBe(false) // SQLite: no round trip to overlap
    expect(ledger(1_000_000, undefined).covers?.(1)).toBe(false)
    expect(ledger(1_000_000, true, org.periodEnd).covers?.(1)).toBe(false) // the known balance is of a period past
    expect(createOrgLedger(store, org.id, () => T, known(1_000_000)).covers?.(1)).toBe(false) // no hold
    // after a reservation, the balance it left decides
    const l = ledger(COVER_MARGIN * 3, true)
    expect(await l.reserve(2)).toBe(true)
    expect(l.covers?.(2)).toBe(false) // 100 - 2 left, under COVER_MARGIN * 2
  })

  it('reads the balance when the period the auth read saw has ended', async () => {
    const { store, org, reads } = setup()
    const ledger = createOrgLedger(store, org.id, () => org.periodEnd, { balance: 3, periodEnd: org.periodEnd })
    expect(await ledger.balance()).toBe(100)
    expect(reads()).toBe(1)
  })
})

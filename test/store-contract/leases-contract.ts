/**
 * The contract of a store's instance leases and request holds (`InstanceLeases`, src/server/store/contracts/store.ts), run by
 * ./contracts.test.ts on every engine of ./engines.ts that has them: a request's hold is closed by its settlement or
 * released (refunded) once — never both, never twice — and a repeat of an Idempotency-Key is in progress while its
 * owner's lease runs and taken over as soon as it has ended. Times are given, never waited for.
 */
import { describe, expect, it } from 'vitest'
import type { InstanceLeases, Store } from '../../src/server/store/contracts/store.js'
const T0 = Date.parse('2026-11-22T00:00:00Z')
const DAY = 24 * 60 * 60 * 1000
const LEASE = 10_000
const SCOPE = 'key_1 POST /v1/phone/type'
const A = 'inst_a'
const B = 'inst_b'
const none = { fromSubscription: 0, fromPurchased: 0 }

export function leasesContract(name: string, factory: () => Promise<{ store: Store; done(): Promise<void> }>): void {
  const withLeases = (run: (store: Store, leases: InstanceLeases, orgId: string) => Promise<void>) => async () => {
    const { store, done } = await factory()
    try {
      const org = await store.createOrg({ name: 'Acme', planId: 'free' }, T0)
      await store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: 3 }, T0)
      await store.addCredits(org.id, 7, 'top_up', T0)
      await run(store, store.leases!, org.id)
    } finally {
      await done()
    }
  }
  const credits = async (store: Store, orgId: string, at = T0) => {
    const o = (await store.getOrg(orgId, at))!
    return { subscription: o.subscriptionCredits, purchased: o.purchasedCredits, lookups: o.usage.totalLookups, charged: o.usage.totalCredits }
  }

  describe(`instance leases and credit holds (${name})`, () => {
    it(
      'a settlement closes its hold: the unused part given back, the lookups counted and the answer stored, in one write',
      withLeases(async (store, leases, orgId) => {
        expect(await leases.renewLease(A, T0, LEASE)).toEqual({ held: false, expired: false })
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0, DAY, A)).toEqual({ state: 'new' })
        const r = await leases.reserveHeld(orgId, 4, T0, { id: `${A}.1`, instanceId: A })
        expect(r).toMatchObject({ amount: 4, fromSubscription: 3, fromPurchased: 1, balanceAfter: 6 })
        const idempotent = { scope: SCOPE, key: 'k', owner: A, status: 200, body: '{"ok":1}' }
        expect(await leases.closeHeld(orgId, { holdId: `${A}.1`, lookups: 1, refund: { fromSubscription: 2, fromPurchased: 1 }, idempotent }, T0)).toBe(true)
        expect(await credits(store, orgId)).toEqual({ subscription: 2, purchased: 7, lookups: 1, charged: 1 })
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0 + 1, DAY, B)).toEqual({ state: 'replay', status: 200, body: '{"ok":1}' })
        // closed: nothing left to release, even once A is gone
        expect(await leases.releaseExpired(T0 + 60_000)).toBe(0)
        expect(await credits(store, orgId)).toEqual({ subscription: 2, purchased: 7, lookups: 1, charged: 1 })
      }),
    )

    it(
      'a repeat is in progress while the owner renews; once its lease ends the retry takes over and the hold is refunded once; the late settlement is refused',
      withLeases(async (store, leases, orgId) => {
        await leases.renewLease(A, T0, LEASE)
        expect(await leases.renewLease(A, T0 + 3_000, LEASE)).toEqual({ held: true, expired: false })
        await leases.renewLease(B, T0 + 3_000, LEASE)
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0 + 3_000, DAY, A)).toEqual({ state: 'new' })
        await leases.reserveHeld(orgId, 1, T0 + 3_000, { id: `${A}.1`, instanceId: A })
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0 + 5_000, DAY, B)).toEqual({ state: 'in_progress', retryAfterMs: 8_000 })
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0 + 12_999, DAY, B)).toEqual({ state: 'in_progress', retryAfterMs: 1 })
        expect(await store.beginIdempotent(SCOPE, 'k', 'other', T0 + 13_000, DAY, B)).toEqual({ state: 'mismatch' })
        await leases.renewLease(B, T0 + 8_000, LEASE)
        // A's lease ended at T0 + 13 s: B's renewal sees it; a retry takes the key over after A's hold went back
        expect(await leases.renewLease(B, T0 + 13_000, LEASE)).toEqual({ held: true, expired: true })
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0 + 13_000, DAY, B)).toEqual({ state: 'new' })
        expect(await credits(store, orgId, T0 + 13_000)).toEqual({ subscription: 3, purchased: 7, lookups: 0, charged: 0 })
        expect(await leases.releaseExpired(T0 + 13_000)).toBe(0)
        // A was only frozen: its settlement comes late and is refused, and does not touch B's record
        const late = { scope: SCOPE, key: 'k', owner: A, status: 200, body: 'late' }
        expect(await leases.closeHeld(orgId, { holdId: `${A}.1`, lookups: 1, refund: none, idempotent: late }, T0 + 14_000)).toBe(false)
        expect(await credits(store, orgId, T0 + 14_000)).toEqual({ subscription: 3, purchased: 7, lookups: 0, charged: 0 })
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0 + 14_000, DAY, A)).toEqual({ state: 'in_progress', retryAfterMs: 9_000 })
        expect(await leases.renewLease(A, T0 + 14_000, LEASE)).toEqual({ held: false, expired: false })
      }),
    )

    it(
      'releases refund each hold once to the buckets it came from, however often and however many sweep at once',
      withLeases(async (store, leases, orgId) => {
        await leases.renewLease(A, T0, LEASE)
        await leases.reserveHeld(orgId, 2, T0, { id: `${A}.1`, instanceId: A })
        await leases.reserveHeld(orgId, 3, T0, { id: `${A}.2`, instanceId: A })
        // two reservations of one request share its hold
        await leases.reserveHeld(orgId, 1, T0, { id: `${A}.2`, instanceId: A })
        expect(await credits(store, orgId)).toEqual({ subscription: 0, purchased: 4, lookups: 0, charged: 6 })
        expect(await leases.releaseHolds([`${A}.1`, 'inst_x.9'], T0)).toBe(1)
        expect(await leases.releaseHolds([`${A}.1`], T0)).toBe(0)
        expect(await credits(store, orgId)).toEqual({ subscription: 2, purchased: 4, lookups: 0, charged: 4 })
        expect(await leases.releaseExpired(T0 + LEASE - 1)).toBe(0)
        const swept = await Promise.all(Array.from({ length: 6 }, () => leases.releaseExpired(T0 + LEASE)))
        expect(swept.reduce((a, b) => a + b, 0)).toBe(1)
        expect(await credits(store, orgId)).toEqual({ subscription: 3, purchased: 7, lookups: 0, charged: 0 })
        expect(await leases.closeHeld(orgId, { holdId: `${A}.2`, lookups: 1, refund: none }, T0 + LEASE)).toBe(false)
      }),
    )

    it(
      'a hold whose instance holds no lease (its row swept while it ran) is released by the next sweep; a clean stop releases its own',
      withLeases(async (store, leases, orgId) => {
        await leases.renewLease(B, T0, LEASE)
        await leases.reserveHeld(orgId, 1, T0, { id: 'inst_gone.1', instanceId: 'inst_gone' })
        expect(await leases.renewLease(B, T0 + 1, LEASE)).toEqual({ held: true, expired: true })
        expect(await leases.releaseExpired(T0 + 1)).toBe(1)
        await leases.renewLease(A, T0, LEASE)
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0, DAY, A)).toEqual({ state: 'new' })
        await leases.reserveHeld(orgId, 2, T0, { id: `${A}.1`, instanceId: A })
        expect(await leases.releaseExpired(T0 + 2, A)).toBe(1)
        expect(await credits(store, orgId, T0 + 2)).toEqual({ subscription: 3, purchased: 7, lookups: 0, charged: 0 })
        // A gave its lease up: its key is free at once
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0 + 3, DAY, B)).toEqual({ state: 'new' })
      }),
    )

    it(
      'a settlement without a hold (a cache hit) counts its lookup; a forgotten answer frees the key; the settlement of a key another owner holds is fenced',
      withLeases(async (store, leases, orgId) => {
        await leases.renewLease(A, T0, LEASE)
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0, DAY, A)).toEqual({ state: 'new' })
        // B's request lost the key to A (A took it over while B stalled): nothing of B's counted, A's record untouched
        const theirs = { scope: SCOPE, key: 'k', owner: B, status: 200, body: 'x' }
        expect(await leases.closeHeld(orgId, { lookups: 1, refund: none, idempotent: theirs }, T0)).toBe(false)
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp', T0, DAY, A)).toMatchObject({ state: 'in_progress' })
        expect(await leases.closeHeld(orgId, { lookups: 1, refund: none, idempotent: { scope: SCOPE, key: 'k', owner: A } }, T0)).toBe(true)
        expect(await store.beginIdempotent(SCOPE, 'k', 'fp2', T0, DAY, A)).toEqual({ state: 'new' })
        expect(await credits(store, orgId)).toEqual({ subscription: 3, purchased: 7, lookups: 1, charged: 0 })
      }),
    )

    it(
      'after the period ended, a settlement or a release gives back the purchased part only (subscription credits lapsed)',
      withLeases(async (store, leases, orgId) => {
        await leases.renewLease(A, T0, LEASE)
        await leases.reserveHeld(orgId, 4, T0, { id: `${A}.1`, instanceId: A })
        await leases.reserveHeld(orgId, 4, T0, { id: `${A}.2`, instanceId: A })
        const end = (await store.getOrg(orgId, T0))!.periodEnd
        expect(await leases.closeHeld(orgId, { holdId: `${A}.1`, lookups: 1, refund: { fromSubscription: 2, fromPurchased: 1 } }, end)).toBe(true)
        expect(await leases.releaseExpired(end)).toBe(1)
        // renewed: 3 subscription credits; purchased 7 - 1 - 4 + 1 + 4 = 7
        const c = await credits(store, orgId, end)
        expect([c.subscription, c.purchased]).toEqual([3, 7])
      }),
    )
  })
}

/**
 * The contract of the server's {@link Store} (src/server/store/contracts/store.ts), run by ./contracts.test.ts on every engine of
 * ./engines.ts: what the HTTP layer relies on, whatever the engine. Every call is awaited, so synchronous and
 * promise-returning stores run the same cases; "concurrent" cases start all calls before awaiting any, which on a
 * networked store really interleaves them.
 */
import { describe, expect, it } from 'vitest'
import { DEFAULT_PLANS } from '../../src/accounts/plans.js'
import type { OrgPolicyStore } from '../../src/server/store/contracts/org-policies.js'
import type { ApiKeyRecord } from '../../src/accounts/types.js'
import type { Store } from '../../src/server/store/contracts/store.js'
/** A store made for one case, and how to get rid of it. */
export interface ContractStore {
  store: Store
  /** Gives the org a scoring policy of this version (org_policies), as `riskcheck admin policy set` would. */
  setPolicyVersion(orgId: string, version: string): Promise<void>
  done(): Promise<void>
}

/** `setPolicyVersion` over the implementation's org-policy store. */
export const policySetter =
  (policies: OrgPolicyStore) =>
  async (orgId: string, version: string): Promise<void> => {
    await policies.setOrgPolicy({ orgId, version, canonical: '{}', description: null, source: null, setAt: 0 })
  }

const T0 = Date.parse('2026-11-22T00:00:00Z')
const DAY = 24 * 60 * 60 * 1000
const SCOPE = 'key_1 POST /v1/ip'

const key = (orgId: string, id = 'key_abc'): ApiKeyRecord => ({
  id,
  orgId,
  name: 'n',
  mode: 'live',
  scopes: ['lookup'],
  hash: 'ff',
  last4: 'abcd',
  createdAt: T0,
  revokedAt: null,
  lastUsedAt: null,
})

export function storeContract(name: string, factory: () => Promise<ContractStore>): void {
  const withStore = (run: (s: Store, c: ContractStore) => Promise<void>) => async () => {
    const c = await factory()
    try {
      await run(c.store, c)
    } finally {
      await c.done()
    }
  }

  /** An org on the free plan with `monthly` subscription and `purchased` credits. */
  const orgWith = async (store: Store, monthly: number, purchased = 0) => {
    const org = await store.createOrg({ name: 'Acme', planId: 'free' }, T0)
    await store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: monthly }, T0)
    if (purchased > 0) await store.addCredits(org.id, purchased, 'top_up', T0)
    return org.id
  }
  const types = async (store: Store, orgId: string) => (await store.listEvents({ orgId })).map((e) => e.type)

  describe(`Store contract: ${name}`, () => {
    describe('account and ledger', () => {
      it(
        'seeds the default plans and a key-hash secret; upserting plans updates and adds, in catalogue order',
        withStore(async (store) => {
          expect(await store.listPlans()).toEqual(DEFAULT_PLANS)
          expect(await store.keyHashSecret()).toMatch(/^[0-9a-f]{64}$/)
          expect(await store.keyHashSecret()).toBe(await store.keyHashSecret())
          const gold = { id: 'gold', name: 'Gold', monthly_price: 999.5, monthly_credits: 1_000_000, rate_per_second: 500 }
          await store.upsertPlans([gold, { ...DEFAULT_PLANS[0]!, monthly_credits: 150 }])
          const plans = await store.listPlans()
          expect(plans.slice(0, 2)).toEqual([gold, { ...DEFAULT_PLANS[0]!, monthly_credits: 150 }])
          expect(plans).toHaveLength(DEFAULT_PLANS.length + 1)
        }),
      )

      it(
        'creates, reads, lists and suspends orgs',
        withStore(async (store) => {
          const a = await store.createOrg({ name: 'A', planId: 'growth' }, T0)
          expect(a).toEqual({
            id: a.id,
            name: 'A',
            planId: 'growth',
            monthlyCredits: 50_000,
            ratePerSecond: 50,
            planStatus: 'active',
            suspended: false,
            createdAt: T0,
            periodStart: T0,
            periodEnd: Date.parse('2026-12-22T00:00:00Z'),
            subscriptionCredits: 50_000,
            purchasedCredits: 0,
            usage: { periodLookups: 0, periodCredits: 0, totalLookups: 0, totalCredits: 0 },
          })
          expect(a.id).toMatch(/^org_[0-9a-f]{16}$/)
          const b = await store.createOrg({ name: 'B', planId: 'free' }, T0 + 1)
          expect(await store.getOrg(a.id, T0)).toEqual(a)
          expect(await store.getOrg('org_missing', T0)).toBeNull()
          expect((await store.listOrgs(T0 + 1)).map((o) => o.id)).toEqual([a.id, b.id])
          await expect(async () => store.createOrg({ name: 'C', planId: 'gold' }, T0)).rejects.toThrow(RangeError)
          const s = (await store.setOrgSuspended(a.id, true, T0))!
          expect([s.suspended, s.planStatus]).toEqual([true, 'suspended'])
          const back = (await store.setOrgSuspended(a.id, false, T0))!
          expect([back.suspended, back.planStatus]).toEqual([false, 'active'])
          expect(await store.setOrgSuspended('org_missing', true, T0)).toBeNull()
        }),
      )

      it(
        'a plan change: an increase grants the difference (credits.added upgrade), a decrease caps silently, overrides win',
        withStore(async (store) => {
          const org = await store.createOrg({ name: 'P', planId: 'free' }, T0)
          await store.reserveCredits(org.id, 30, T0)
          const up = (await store.setOrgPlan(org.id, { planId: 'starter', ratePerSecond: 7 }, T0))!
          expect([up.planId, up.monthlyCredits, up.ratePerSecond, up.subscriptionCredits]).toEqual(['starter', 10_000, 7, 70 + 9_900])
          const added = (await store.listEvents({ orgId: org.id }))[0]!
          expect(added.payload.data).toEqual({ amount: 9_900, balance: 9_970, reason: 'upgrade' })
          const down = (await store.setOrgPlan(org.id, { planId: 'growth', monthlyCredits: 500 }, T0))!
          expect([down.planId, down.monthlyCredits, down.ratePerSecond, down.subscriptionCredits]).toEqual(['growth', 500, 50, 500])
          expect(await types(store, org.id)).toEqual(['credits.added'])
          await expect(async () => store.setOrgPlan(org.id, { planId: 'gold' }, T0)).rejects.toThrow(/unknown plan/)
          expect((await store.getOrg(org.id, T0))!.planId).toBe('growth')
          expect(await store.setOrgPlan('org_missing', { planId: 'free' }, T0)).toBeNull()
        }),
      )

      it(
        'stores keys; the auth read carries the org fields and its policy version; revoked keys stay readable',
        withStore(async (store, c) => {
          const org = await store.createOrg({ name: 'K', planId: 'scale' }, T0)
          const k = key(org.id)
          await store.insertKey(k)
          const credits = { balance: org.subscriptionCredits + org.purchasedCredits, periodEnd: org.periodEnd }
          expect(credits.balance).toBe(200_000)
          // a store that reads the org's lists and outcome versions with the key says null when the org never had one
          const read = (await store.getAuth(k.id))?.org ?? {}
          const lists = { ...('listsVersion' in read ? { listsVersion: null } : {}), ...('outcomesVersion' in read ? { outcomesVersion: null } : {}) }
          expect(await store.getAuth(k.id)).toEqual({ key: k, org: { id: org.id, suspended: false, ratePerSecond: 100, policyVersion: null, ...credits, ...lists } })
          await c.setPolicyVersion(org.id, 'pol_v1')
          await store.setOrgSuspended(org.id, true, T0)
          await store.reserveCredits(org.id, 7, T0)
          expect((await store.getAuth(k.id))!.org).toEqual({ id: org.id, suspended: true, ratePerSecond: 100, policyVersion: 'pol_v1', ...credits, balance: 199_993, ...lists })
          await store.touchKey(k.id, T0 + 1000)
          await store.touchKey(k.id, T0 + 2000) // within a minute: not written
          expect((await store.getKey(k.id))!.lastUsedAt).toBe(T0 + 1000)
          await store.touchKey(k.id, T0 + 61_001)
          expect((await store.getKey(k.id))!.lastUsedAt).toBe(T0 + 61_001)
          expect((await store.setKeyScopes(k.id, ['lookup', 'webhooks']))!.scopes).toEqual(['lookup', 'webhooks'])
          expect((await store.setKeyScopes(k.id, []))!.scopes).toEqual([])
          expect((await store.revokeKey(k.id, T0 + 5))!.revokedAt).toBe(T0 + 5)
          expect((await store.revokeKey(k.id, T0 + 9))!.revokedAt).toBe(T0 + 5)
          expect((await store.getAuth(k.id))!.key.revokedAt).toBe(T0 + 5)
          await store.insertKey(key(org.id, 'key_def'))
          expect((await store.listKeys(org.id)).map((x) => x.id)).toEqual(['key_abc', 'key_def'])
          expect(await store.getAuth('key_none')).toBeNull()
          expect(await store.getKey('key_none')).toBeNull()
          expect(await store.revokeKey('key_none', T0)).toBeNull()
          expect(await store.setKeyScopes('key_none', [])).toBeNull()
          await expect(async () => store.insertKey(key('org_missing', 'key_x'))).rejects.toThrow(/foreign key/i)
        }),
      )

      it(
        'reserve takes subscription credits first and refuses (taking nothing) when short; a refund returns the purchased part first',
        withStore(async (store) => {
          const orgId = await orgWith(store, 100, 10)
          const r = await store.reserveCredits(orgId, 105, T0)
          expect(r).toEqual({ amount: 105, fromSubscription: 100, fromPurchased: 5, periodStart: T0, balanceAfter: 5 })
          expect(await store.reserveCredits(orgId, 6, T0)).toBeNull()
          expect(await store.balance(orgId, T0)).toBe(5)
          expect(await store.reserveCredits('org_missing', 1, T0)).toBeNull()
          expect(await store.balance('org_missing', T0)).toBe(0)
          expect(await store.refundCredits(orgId, r!, 3, T0)).toBe(8) // the balance after it
          let o = (await store.getOrg(orgId, T0))!
          expect([o.subscriptionCredits, o.purchasedCredits]).toEqual([0, 8])
          expect(o.usage).toEqual({ periodLookups: 0, periodCredits: 102, totalLookups: 0, totalCredits: 102 })
          expect(await store.refundCredits(orgId, { ...r!, amount: 102, fromPurchased: 2 }, 4, T0)).toBe(12)
          o = (await store.getOrg(orgId, T0))!
          expect([o.subscriptionCredits, o.purchasedCredits, o.usage.periodCredits]).toEqual([2, 10, 98])
          await store.settleCredits(orgId, 3, T0)
          expect((await store.getOrg(orgId, T0))!.usage).toEqual({ periodLookups: 3, periodCredits: 98, totalLookups: 3, totalCredits: 98 })
          await store.refundCredits('org_missing', r!, 1, T0) // nothing to give back to: no error
        }),
      )

      it(
        'a refund after the period ended does not give back expired subscription credits',
        withStore(async (store) => {
          const org = await store.createOrg({ name: 'B', planId: 'free' }, T0)
          await store.addCredits(org.id, 5, 'top_up', T0)
          const r = (await store.reserveCredits(org.id, 103, T0))!
          const later = T0 + 31 * DAY
          await store.refundCredits(org.id, r, 103, later)
          const o = (await store.getOrg(org.id, later))!
          expect([o.subscriptionCredits, o.purchasedCredits]).toEqual([100, 5])
          expect(o.usage).toEqual({ periodLookups: 0, periodCredits: 0, totalLookups: 0, totalCredits: 0 })
        }),
      )

      it(
        'roll-over: subscription and period usage reset, purchased kept, one credits.added per renewal, by any read',
        withStore(async (store) => {
          const org = await store.createOrg({ name: 'D', planId: 'free' }, T0)
          await store.addCredits(org.id, 7, 'top_up', T0)
          await store.reserveCredits(org.id, 60, T0)
          await store.settleCredits(org.id, 60, T0)
          const skipped = T0 + 95 * DAY // three periods later
          const o = (await store.getOrg(org.id, skipped))!
          expect(new Date(o.periodStart).toISOString()).toBe('2027-02-22T00:00:00.000Z')
          expect(new Date(o.periodEnd).toISOString()).toBe('2027-03-22T00:00:00.000Z')
          expect([o.subscriptionCredits, o.purchasedCredits]).toEqual([100, 7])
          expect(o.usage).toEqual({ periodLookups: 0, periodCredits: 0, totalLookups: 60, totalCredits: 60 })
          const renewals = async () => (await store.listEvents({ orgId: org.id })).filter((e) => e.payload.data.reason === 'period_renewal')
          expect((await renewals()).map((e) => e.payload.data)).toEqual([{ amount: 100, balance: 107, reason: 'period_renewal' }])
          // each kind of call renews a period that has ended, once
          const next = Date.parse('2027-03-22T00:00:00Z')
          expect(await store.balance(org.id, next)).toBe(107)
          expect(await store.reserveCredits(org.id, 1, next + 31 * DAY)).toMatchObject({ periodStart: Date.parse('2027-04-22T00:00:00Z') })
          await store.settleCredits(org.id, 1, next + 62 * DAY)
          expect((await store.listOrgs(next + 93 * DAY))[0]!.periodStart).toBe(Date.parse('2027-06-22T00:00:00Z'))
          expect(await renewals()).toHaveLength(5)
        }),
      )

      it(
        'alerts go to the outbox once each on the way down, in order; credits arriving re-arm them',
        withStore(async (store) => {
          const orgId = await orgWith(store, 100)
          const spend = async (n: number) => {
            expect(await store.reserveCredits(orgId, n, T0)).not.toBeNull()
            await store.settleCredits(orgId, 1, T0)
          }
          await spend(70)
          expect(await types(store, orgId)).toEqual([])
          await spend(6) // 24 left
          await store.settleCredits(orgId, 0, T0)
          expect(await types(store, orgId)).toEqual(['credits.low'])
          await spend(24) // 24 → 0 at once: the 5 % alert and credits.depleted, in order
          const events = await store.listEvents({ orgId })
          expect(events.map((e) => [e.type, e.payload.data])).toEqual([
            ['credits.low', { balance: 24, threshold_percent: 25, monthly_credits: 100 }],
            ['credits.low', { balance: 0, threshold_percent: 5, monthly_credits: 100 }],
            ['credits.depleted', { balance: 0, monthly_credits: 100 }],
          ])
          expect(events[0]!.id).toMatch(/^evt_[0-9a-f]{24}$/)
          expect(events[0]).toEqual({
            id: events[0]!.id,
            orgId,
            type: 'credits.low',
            created: Math.floor(T0 / 1000),
            payload: { id: events[0]!.id, type: 'credits.low', created: Math.floor(T0 / 1000), api_version: '1', org_id: orgId, test_mode: false, data: events[0]!.payload.data },
          })
          await store.settleCredits(orgId, 0, T0)
          expect(await store.listEvents({ orgId })).toHaveLength(3)
          await store.addCredits(orgId, 50, 'top_up', T0)
          await spend(47) // 3 left of 100 monthly: below 5 %, the 25 % alert having been re-armed too
          expect((await types(store, orgId)).slice(3)).toEqual(['credits.added', 'credits.low', 'credits.low'])
        }),
      )

      it(
        'events page by id, per org or across orgs',
        withStore(async (store) => {
          const a = await store.createOrg({ name: 'F', planId: 'free' }, T0)
          const b = await store.createOrg({ name: 'G', planId: 'free' }, T0)
          for (let i = 1; i <= 5; i++) await store.addCredits(i % 2 ? a.id : b.id, i, 'top_up', T0)
          const first = await store.listEvents({ orgId: a.id, limit: 2 })
          expect(first.map((e) => e.payload.data.amount)).toEqual([1, 3])
          expect((await store.listEvents({ orgId: a.id, afterId: first[1]!.id })).map((e) => e.payload.data.amount)).toEqual([5])
          const all = await store.listEvents({})
          expect(all.map((e) => e.payload.data.amount)).toEqual([1, 2, 3, 4, 5])
          expect((await store.listEvents({ afterId: all[2]!.id, limit: 1 })).map((e) => e.payload.data.amount)).toEqual([4])
          expect(await store.listEvents({ afterId: 'evt_unknown' })).toHaveLength(5)
        }),
      )

      it(
        '200 concurrent reserves of 1 against 50 credits: exactly 50 succeed, each credit from the right bucket',
        withStore(async (store) => {
          const orgId = await orgWith(store, 30, 20)
          const results = await Promise.all(Array.from({ length: 200 }, async () => store.reserveCredits(orgId, 1, T0)))
          const granted = results.filter((r) => r !== null)
          expect(granted).toHaveLength(50)
          expect(granted.filter((r) => r!.fromSubscription === 1)).toHaveLength(30)
          expect(granted.filter((r) => r!.fromPurchased === 1)).toHaveLength(20)
          const o = (await store.getOrg(orgId, T0))!
          expect([o.subscriptionCredits, o.purchasedCredits, o.usage.periodCredits]).toEqual([0, 0, 50])
        }),
      )

      it(
        'concurrent settles send each alert once; concurrent reads of an ended period renew it once',
        withStore(async (store) => {
          const orgId = await orgWith(store, 100)
          await Promise.all(Array.from({ length: 100 }, async () => (await store.reserveCredits(orgId, 1, T0), store.settleCredits(orgId, 1, T0))))
          expect(await types(store, orgId)).toEqual(['credits.low', 'credits.low', 'credits.depleted'])
          const later = T0 + 31 * DAY
          await Promise.all(Array.from({ length: 20 }, async (_, i) => (i % 2 ? store.reserveCredits(orgId, 1, later) : store.getOrg(orgId, later))))
          expect((await types(store, orgId)).slice(3)).toEqual(['credits.added'])
          expect(await store.balance(orgId, later)).toBe(90)
          expect((await store.getOrg(orgId, later))!.usage).toEqual({ periodLookups: 0, periodCredits: 10, totalLookups: 100, totalCredits: 110 })
        }),
      )
    })

    describe('idempotency', () => {
      it(
        'new → in progress; other body → mismatch; complete → replay; expiry → new',
        withStore(async (store) => {
          expect(await store.beginIdempotent(SCOPE, 'x', 'fp1', T0, DAY)).toEqual({ state: 'new' })
          expect(await store.beginIdempotent(SCOPE, 'x', 'fp1', T0, DAY)).toEqual({ state: 'in_progress' })
          expect(await store.beginIdempotent(SCOPE, 'x', 'fp2', T0, DAY)).toEqual({ state: 'mismatch' })
          expect(await store.beginIdempotent('key_2 POST /v1/ip', 'x', 'fp2', T0, DAY)).toEqual({ state: 'new' })
          await store.completeIdempotent(SCOPE, 'x', 200, '{"ok":1}')
          expect(await store.beginIdempotent(SCOPE, 'x', 'fp1', T0 + 1, DAY)).toEqual({ state: 'replay', status: 200, body: '{"ok":1}' })
          expect(await store.beginIdempotent(SCOPE, 'x', 'fp2', T0 + 1, DAY)).toEqual({ state: 'mismatch' })
          expect(await store.beginIdempotent(SCOPE, 'x', 'fp1', T0 + DAY - 1, DAY)).toEqual({ state: 'replay', status: 200, body: '{"ok":1}' })
          expect(await store.beginIdempotent(SCOPE, 'x', 'fp2', T0 + DAY, DAY)).toEqual({ state: 'new' })
          expect(await store.beginIdempotent(SCOPE, 'x', 'fp1', T0 + DAY, DAY)).toEqual({ state: 'mismatch' })
        }),
      )

      it(
        'a record left in progress is taken over (same body only) once it is 2 minutes old',
        withStore(async (store) => {
          expect(await store.beginIdempotent(SCOPE, 'dead', 'fp1', T0, DAY)).toEqual({ state: 'new' })
          expect(await store.beginIdempotent(SCOPE, 'dead', 'fp1', T0 + 119_999, DAY)).toEqual({ state: 'in_progress' })
          expect(await store.beginIdempotent(SCOPE, 'dead', 'fp2', T0 + 120_000, DAY)).toEqual({ state: 'mismatch' })
          expect(await store.beginIdempotent(SCOPE, 'dead', 'fp1', T0 + 120_000, DAY)).toEqual({ state: 'new' })
          expect(await store.beginIdempotent(SCOPE, 'dead', 'fp1', T0 + 120_001, DAY)).toEqual({ state: 'in_progress' })
          // the takeover restarted the record's life: it expires a TTL after the takeover
          expect(await store.beginIdempotent(SCOPE, 'dead', 'fp2', T0 + DAY + 1, DAY)).toEqual({ state: 'mismatch' })
          await store.completeIdempotent(SCOPE, 'dead', 201, 'b')
          expect(await store.beginIdempotent(SCOPE, 'dead', 'fp1', T0 + 10 * 120_000, DAY)).toEqual({ state: 'replay', status: 201, body: 'b' })
        }),
      )

      it(
        'abandon forgets a started request, never a completed one',
        withStore(async (store) => {
          expect(await store.beginIdempotent(SCOPE, 'y', 'fp', T0, DAY)).toEqual({ state: 'new' })
          await store.abandonIdempotent(SCOPE, 'y')
          expect(await store.beginIdempotent(SCOPE, 'y', 'fp2', T0, DAY)).toEqual({ state: 'new' })
          await store.completeIdempotent(SCOPE, 'y', 200, 'done')
          await store.abandonIdempotent(SCOPE, 'y')
          expect(await store.beginIdempotent(SCOPE, 'y', 'fp2', T0, DAY)).toEqual({ state: 'replay', status: 200, body: 'done' })
          await store.abandonIdempotent(SCOPE, 'never-started')
        }),
      )

      it(
        'of many concurrent starts with one key exactly one runs',
        withStore(async (store) => {
          const answers = await Promise.all(Array.from({ length: 30 }, async () => store.beginIdempotent(SCOPE, 'race', 'fp', T0, DAY)))
          expect(answers.filter((a) => a.state === 'new')).toHaveLength(1)
          expect(answers.filter((a) => a.state === 'in_progress')).toHaveLength(29)
        }),
      )
    })

    describe('records and lifecycle', () => {
      it(
        'what a read hands out is a copy: changing it changes nothing stored',
        withStore(async (store) => {
          const org = await store.createOrg({ name: 'Copy', planId: 'free' }, T0)
          await store.insertKey(key(org.id))
          const k = (await store.getKey('key_abc'))!
          k.scopes.push('webhooks')
          k.revokedAt = T0
          const o = (await store.getOrg(org.id, T0))!
          o.subscriptionCredits = 0
          o.usage.totalCredits = 99
          const plans = await store.listPlans()
          plans[0]!.monthly_credits = 1
          await store.addCredits(org.id, 1, 'top_up', T0)
          const [event] = await store.listEvents({ orgId: org.id })
          event!.payload.data.amount = 1000
          expect(await store.getKey('key_abc')).toEqual(key(org.id))
          expect((await store.getOrg(org.id, T0))!).toMatchObject({ subscriptionCredits: 100, usage: { totalCredits: 0 } })
          expect(await store.listPlans()).toEqual(DEFAULT_PLANS)
          expect((await store.listEvents({ orgId: org.id }))[0]!.payload.data.amount).toBe(1)
        }),
      )

      it(
        'the probe finds the schema current; a closed store refuses calls, and closing again is harmless',
        withStore(async (store) => {
          const probe = await store.probe?.()
          if (probe) expect(probe.schemaVersion).toBe(probe.expectedVersion)
          await store.close()
          await expect(async () => store.listPlans()).rejects.toThrow()
          await expect(async () => store.reserveCredits('org_x', 1, T0)).rejects.toThrow()
          if (store.probe) await expect(async () => store.probe!()).rejects.toThrow()
          await store.close()
        }),
      )
    })

    describe('result cache', () => {
      const entry = { outcome: { details: { a: 1, nested: { list: [1, 'two', null] } }, factors: [], partial: false, dataSources: ['x'] }, storedAt: T0 }

      it(
        'keeps entries for their TTL, overwrites, clears',
        withStore(async (store) => {
          const cache = store.resultCache
          expect(await cache.get('ip:1.2.3.4', T0)).toBeUndefined()
          await cache.set('ip:1.2.3.4', entry, DAY)
          expect(await cache.get('ip:1.2.3.4', T0 + DAY - 1)).toEqual(entry)
          expect(await cache.get('ip:1.2.3.4', T0 + DAY)).toBeUndefined()
          const newer = { outcome: { ...entry.outcome, details: { a: 2 } }, storedAt: T0 + 5 }
          await cache.set('ip:1.2.3.4', newer, DAY)
          expect(await cache.get('ip:1.2.3.4', T0 + DAY)).toEqual(newer)
          await cache.clear?.()
          expect(await cache.get('ip:1.2.3.4', T0)).toBeUndefined()
        }),
      )

      it(
        'purgeExpired deletes expired cache entries and idempotency records, and tells how many',
        withStore(async (store) => {
          const cache = store.resultCache
          await cache.set('ip:old', entry, DAY)
          await cache.set('ip:new', { ...entry, storedAt: T0 + DAY }, DAY)
          await store.beginIdempotent(SCOPE, 'old', 'f', T0, DAY)
          await store.beginIdempotent(SCOPE, 'new', 'f', T0 + 1, DAY)
          expect(await store.purgeExpired(T0 + DAY)).toBe(2)
          expect(await store.purgeExpired(T0 + DAY)).toBe(0)
          expect(await cache.get('ip:new', T0 + DAY)).toEqual({ ...entry, storedAt: T0 + DAY })
          expect(await store.beginIdempotent(SCOPE, 'new', 'other', T0 + DAY, DAY)).toEqual({ state: 'mismatch' })
        }),
      )

      it(
        "settleCredits stores the request's cache entries with the settlement (the last of one key wins)",
        withStore(async (store) => {
          const orgId = await orgWith(store, 10, 0)
          const newer = { outcome: { ...entry.outcome, details: { a: 3 } }, storedAt: T0 + 1 }
          await store.settleCredits(orgId, 1, T0, [
            { key: 'ip:a', entry, ttlMs: DAY },
            { key: 'ip:b', entry, ttlMs: DAY },
            { key: 'ip:a', entry: newer, ttlMs: DAY },
          ])
          expect(await store.resultCache.get('ip:a', T0 + 2)).toEqual(newer)
          expect(await store.resultCache.get('ip:b', T0 + 2)).toEqual(entry)
          expect((await store.getOrg(orgId, T0))!.usage.periodLookups).toBe(1)
          await store.settleCredits(orgId, 1, T0, [])
          expect((await store.getOrg(orgId, T0))!.usage.periodLookups).toBe(2)
        }),
      )

      it(
        'grouped reservations (the server hot path): concurrent requests of several orgs are granted exactly while each balance lasts, subscription first',
        withStore(async (store) => {
          const a = await orgWith(store, 50, 0)
          const b = await orgWith(store, 20, 5)
          const hot = store.grouped ?? store
          const asks = Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b))
          const got = await Promise.all(asks.map((org) => hot.reserveCredits(org, 1, T0 + 1)))
          const of = (org: string) => got.filter((r, i) => asks[i] === org && r !== null)
          expect(of(a)).toHaveLength(50)
          expect(of(b)).toHaveLength(25)
          expect(of(b).filter((r) => r!.fromSubscription === 1)).toHaveLength(20)
          expect(of(b).filter((r) => r!.fromPurchased === 1)).toHaveLength(5)
          expect(of(a).map((r) => r!.balanceAfter).sort((x, y) => x! - y!)).toEqual(Array.from({ length: 50 }, (_, i) => i))
          expect([await store.balance(a, T0 + 1), await store.balance(b, T0 + 1)]).toEqual([0, 0])
          expect((await store.getOrg(b, T0 + 1))!.usage.periodCredits).toBe(25)
          // a larger ask after a smaller one, both in one moment: granted in order while the balance lasts
          const c = await orgWith(store, 10, 0)
          const [first, second, third] = await Promise.all([hot.reserveCredits(c, 6, T0 + 1), hot.reserveCredits(c, 5, T0 + 1), hot.reserveCredits(c, 4, T0 + 1)])
          expect(first).toMatchObject({ amount: 6, fromSubscription: 6, balanceAfter: 4 })
          expect(second).toBeNull()
          expect(await store.balance(c, T0 + 1)).toBe(third === null ? 4 : 0)
          // an org whose period has ended is renewed first, then reserved
          const end = (await store.getOrg(a, T0 + 1))!.periodEnd
          expect(await hot.reserveCredits(a, 3, end)).toMatchObject({ amount: 3, fromSubscription: 3, periodStart: end, balanceAfter: 47 })
          expect(await hot.reserveCredits('org_missing', 1, T0 + 1)).toBeNull()
        }),
      )

      it(
        'grouped refunds (the server hot path) give every partial charge back exactly, each caller told the balance after',
        withStore(async (store) => {
          const a = await orgWith(store, 100, 10)
          const b = await orgWith(store, 50, 0)
          const hot = store.grouped ?? store
          // 20 requests per org reserve 2 and keep 1 (an email whose SMTP part was not needed)
          const asks = Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b))
          const held = await Promise.all(asks.map((org) => hot.reserveCredits(org, 2, T0 + 1)))
          const after = await Promise.all(held.map((r, i) => hot.refundCredits(asks[i]!, r!, 1, T0 + 2)))
          expect(held.every((r) => r !== null)).toBe(true)
          expect([await store.balance(a, T0 + 2), await store.balance(b, T0 + 2)]).toEqual([90, 30])
          for (const [i, v] of after.entries()) if (typeof v === 'number') expect(v).toBeLessThanOrEqual(asks[i] === a ? 90 : 30)
          expect((await store.getOrg(a, T0 + 2))!.usage.periodCredits).toBe(20)
          // a reservation of an ended period: only its purchased part comes back, into the new period's balance
          const r = (await hot.reserveCredits(a, 85, T0 + 3))!
          expect([r.fromSubscription, r.fromPurchased]).toEqual([80, 5]) // the 80 subscription credits left, then purchased
          const end = (await store.getOrg(a, T0 + 3))!.periodEnd
          await hot.refundCredits(a, r, 85, end)
          const renewed = (await store.getOrg(a, end))!
          expect([renewed.subscriptionCredits, renewed.purchasedCredits]).toEqual([100, 10])
        }),
      )

      it(
        'grouped settlements (the server hot path) of many concurrent requests of several orgs count every lookup once and store every entry',
        withStore(async (store) => {
          const a = await orgWith(store, 1_000, 0)
          const b = await orgWith(store, 1_000, 0)
          const hot = store.grouped ?? store
          await Promise.all(
            Array.from({ length: 60 }, (_, i) =>
              hot.settleCredits(i % 3 === 0 ? b : a, 1, T0 + 1, [{ key: `ip:grouped-${i}`, entry: { ...entry, storedAt: T0 + 1 }, ttlMs: DAY }]),
            ),
          )
          expect((await store.getOrg(a, T0 + 1))!.usage.periodLookups).toBe(40)
          expect((await store.getOrg(b, T0 + 1))!.usage.periodLookups).toBe(20)
          for (const i of [0, 1, 59]) expect(await store.resultCache.get(`ip:grouped-${i}`, T0 + 2)).toEqual({ ...entry, storedAt: T0 + 1 })
          // an org whose period has ended meanwhile is renewed, then settled
          const end = (await store.getOrg(a, T0 + 1))!.periodEnd
          await Promise.all([hot.settleCredits(a, 1, end), hot.settleCredits(b, 1, T0 + 2)])
          const renewed = (await store.getOrg(a, end))!
          expect([renewed.periodStart, renewed.usage.periodLookups, renewed.usage.totalLookups]).toEqual([end, 1, 41])
          expect((await store.getOrg(b, T0 + 2))!.usage.periodLookups).toBe(21)
        }),
      )
    })
  })
}

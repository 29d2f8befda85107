import { describe, expect, it } from 'vitest'
import { fakeClock } from '../test/clock.js'
import { gate } from '../test/gate.js'
import { assertValidResult } from '../test/validate.js'
import { createMemoryCache } from './cache.js'
import type { CheckContext, CheckDefinition, CheckOutcome } from './checks/types.js'
import { createMemoryLedger, UNMETERED, type CreditLedger } from './credits.js'
import { RiskcheckError } from './errors.js'
import { cacheKeyOf, runLookup, type LookupEnv } from './lookup.js'
import { resolveOptions } from './options.js'
import type { PhoneTypeData } from './schema.js'
import { DEFAULT_POLICY } from './scoring/rules.js'

// A fake phone_type check: the input decides the outcome, and every run is counted.
function fakeCheck() {
  const calls: string[] = []
  const def: CheckDefinition<string, { bypassCache?: boolean }, PhoneTypeData> = {
    type: 'phone_type',
    prepare(input) {
      if (typeof input !== 'string') throw new RiskcheckError('INVALID_INPUT', 'not a string')
      return { input: input.trim(), cacheKey: input.trim().toLowerCase() }
    },
    async run(_ctx, input): Promise<CheckOutcome<PhoneTypeData>> {
      calls.push(input)
      const valid = !input.startsWith('bad')
      return {
        details: { e164: valid ? '+15550100' : null, country: 'US', valid, line_type: 'mobile', numbering_plan_type: 'MOBILE' },
        factors: valid ? [] : ['phone_invalid'],
        partial: input.startsWith('slow'),
        dataSources: ['libphonenumber', 'libphonenumber'],
      }
    },
    test(_ctx, input) {
      return {
        details: { e164: null, country: null, valid: false, line_type: 'unknown', numbering_plan_type: null },
        factors: input === 'magic-invalid' ? ['phone_invalid'] : [],
        partial: false,
        dataSources: ['test'],
      }
    },
    testInputs: [],
    cli: { command: 'fake', summary: 'fake' },
  }
  return { def, calls }
}

function env(overrides: Partial<LookupEnv> & { mode?: 'live' | 'test'; now?: () => Date } = {}): LookupEnv {
  const o = resolveOptions({ mode: overrides.mode ?? 'live', ...(overrides.now ? { now: overrides.now } : {}) })
  const ctx: CheckContext = { now: o.now, mode: o.mode, offline: false, sources: {} as never, options: o }
  return { ctx, cache: createMemoryCache(), cacheTtlMs: 7 * 86_400_000, ledger: UNMETERED, policy: DEFAULT_POLICY, ...overrides }
}

describe('runLookup: the result builder', () => {
  it('builds a schema-valid result with a unique req_ id, the clock time and measured processing time', async () => {
    const clock = fakeClock('2026-11-22T10:00:00Z')
    const e = env({ now: clock.now })
    const { def } = fakeCheck()
    const a = await runLookup(e, def, ' 555 ', {})
    const b = await runLookup(e, def, 'other', {})
    assertValidResult(a, 'phone_type')
    expect(a.request.id).toMatch(/^req_[0-9a-f]{24}$/)
    expect(a.request.id).not.toBe(b.request.id)
    expect(a.request).toMatchObject({ type: 'phone_type', input: ' 555 ', timestamp: '2026-11-22T10:00:00.000Z' })
    expect(Number.isInteger(a.request.processing_time_ms)).toBe(true)
    expect(a.metadata).toEqual({
      api_version: '1',
      credits_used: 1,
      credits_remaining: null,
      cache_hit: false,
      test_mode: false,
      data_sources: ['libphonenumber'],
    })
    expect(a.verdict.status).toBe('valid')
    expect(a.recommendation.action).toBe('approve')
  })

  it('reports partial outcomes and never caches them', async () => {
    const e = env()
    const { def, calls } = fakeCheck()
    const a = await runLookup(e, def, 'slow-1', {})
    const b = await runLookup(e, def, 'slow-1', {})
    expect(a.partial).toBe(true)
    expect(b.metadata.cache_hit).toBe(false)
    expect(calls).toEqual(['slow-1', 'slow-1'])
  })
})

describe('runLookup: cache', () => {
  it('serves a repeat from the cache for free, and bypassCache forces a fresh billed lookup', async () => {
    const ledger = createMemoryLedger(10)
    const e = env({ ledger })
    const { def, calls } = fakeCheck()
    const first = await runLookup(e, def, 'A1', {})
    const hit = await runLookup(e, def, ' a1 ', {})
    const fresh = await runLookup(e, def, 'a1', { bypassCache: true })
    expect(calls).toEqual(['A1', 'a1'])
    expect([first.metadata.cache_hit, hit.metadata.cache_hit, fresh.metadata.cache_hit]).toEqual([false, true, false])
    expect([first.metadata.credits_used, hit.metadata.credits_used, fresh.metadata.credits_used]).toEqual([1, 0, 1])
    expect(fresh.metadata.credits_remaining).toBe(8)
    expect(hit.request.id).not.toBe(first.request.id)
  })

  it('expires entries after the TTL (7 days) by the context clock', async () => {
    const clock = fakeClock()
    const e = env({ now: clock.now })
    const { def, calls } = fakeCheck()
    await runLookup(e, def, 'x', {})
    clock.advance(7 * 86_400_000 - 1)
    expect((await runLookup(e, def, 'x', {})).metadata.cache_hit).toBe(true)
    clock.advance(1)
    expect((await runLookup(e, def, 'x', {})).metadata.cache_hit).toBe(false)
    expect(calls).toEqual(['x', 'x'])
  })

  it('keeps memory bounded (LRU)', () => {
    const cache = createMemoryCache({ maxEntries: 3 })
    const entry = { outcome: { details: {}, factors: [], partial: false, dataSources: [] }, storedAt: 0 }
    for (const k of ['a', 'b', 'c']) cache.set(k, entry, 1000)
    cache.get('a', 0) // a is now the most recently used
    cache.set('d', entry, 1000)
    expect(cache.size).toBe(3)
    expect(cache.get('b', 0)).toBeUndefined()
    expect(cache.get('a', 0)).toBeDefined()
  })
})

describe('runLookup: credits', () => {
  it('refunds free answers and rejects with INSUFFICIENT_CREDITS at zero, never going below zero', async () => {
    const ledger = createMemoryLedger(2)
    const e = env({ ledger, cache: null })
    const { def } = fakeCheck()
    // As a phone lookup, an invalid number is free (billing table); as phone_type it is always billed.
    const asPhone = { ...def, type: 'phone' } as unknown as typeof def
    const free = await runLookup(e, asPhone, 'bad-number', {})
    expect(free.metadata.credits_used).toBe(0)
    expect(free.metadata.credits_remaining).toBe(2)
    const results = await Promise.allSettled(['a', 'b', 'c', 'd', 'e'].map((x) => runLookup(e, def, x, {})))
    const ok = results.filter((r) => r.status === 'fulfilled')
    const rejected = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[]
    expect(ok).toHaveLength(2)
    expect(rejected).toHaveLength(3)
    for (const r of rejected) expect(r.reason).toMatchObject({ code: 'INSUFFICIENT_CREDITS', status: 402 })
    expect(ledger.balance()).toBe(0)
  })

  it('bills nothing for a lookup skipped entirely offline (email_auth asks DNS only), but bills local answers', async () => {
    const { createRiskcheck } = await import('./riskcheck.js')
    const rc = createRiskcheck({ offline: true, credits: 5, cache: false })
    try {
      const auth = await rc.emailAuth('corp.example')
      expect(auth.partial).toBe(false) // DNS was not asked: nothing failed
      expect(auth.metadata.data_sources).toEqual([])
      expect(auth.metadata.credits_used).toBe(0)
      expect(auth.metadata.credits_remaining).toBe(5)
      const phone = await rc.phoneType('+44 20 7946 0958')
      expect(phone.metadata.credits_used).toBe(1)
      expect(phone.metadata.credits_remaining).toBe(4)
    } finally {
      await rc.close()
    }
  })

  it('propagates an un-lookupable input as the check’s RiskcheckError, unbilled', async () => {
    const ledger = createMemoryLedger(1)
    const { def } = fakeCheck()
    await expect(runLookup(env({ ledger }), def, 42, {})).rejects.toMatchObject({ code: 'INVALID_INPUT', status: 422 })
    expect(ledger.balance()).toBe(1)
  })
})

/**
 * A ledger whose reservations answer when the test says (as a database server's do) and which says whether it
 * `covers` a reservation; its reservations and refunds are counted.
 */
function slowLedger(covers: boolean | undefined) {
  const answers: Array<ReturnType<typeof gate<boolean>>> = []
  const refunds: number[] = []
  const ledger: CreditLedger = {
    reserve() {
      const g = gate<boolean>()
      answers.push(g)
      return g.promise
    },
    refund: (amount) => void refunds.push(amount),
    balance: () => 1000,
    ...(covers === undefined ? {} : { covers: () => covers }),
  }
  return { ledger, answers, refunds }
}

const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('runLookup: a check started while its reservation is on its way', () => {
  for (const cache of ['memory', 'none'] as const) {
    const withCache = (o: Partial<LookupEnv>) => env({ ...o, ...(cache === 'none' ? { cache: null } : {}) })

    it(`starts the check before the reservation answers when the ledger covers it, and answers once it did (cache: ${cache})`, async () => {
      const { ledger, answers } = slowLedger(true)
      const { def, calls } = fakeCheck()
      const pending = runLookup(withCache({ ledger }), def, 'a1', {})
      await turn()
      expect(answers).toHaveLength(1)
      expect(calls).toEqual(['a1']) // running, the reservation not answered yet
      let done = false
      void pending.then(() => (done = true))
      await turn()
      expect(done).toBe(false) // the answer waits for the reservation
      answers[0]!.resolve(true)
      const r = await pending
      expect(r.metadata.credits_used).toBe(1)
      expect(calls).toEqual(['a1']) // run once
    })

    it(`discards the outcome of a check whose reservation was refused: nothing billed, cached or refunded (cache: ${cache})`, async () => {
      const { ledger, answers, refunds } = slowLedger(true)
      const { def, calls } = fakeCheck()
      const e = withCache({ ledger })
      const refused = runLookup(e, def, 'a1', {}).catch((err: unknown) => err)
      await turn()
      answers[0]!.resolve(false)
      expect(await refused).toMatchObject({ code: 'INSUFFICIENT_CREDITS', status: 402 })
      expect(refunds).toEqual([])
      // not cached: the next lookup runs the check again
      const again = runLookup(e, def, 'a1', {})
      await turn()
      answers[1]!.resolve(true)
      expect((await again).metadata.cache_hit).toBe(false)
      expect(calls).toEqual(['a1', 'a1'])
    })

    it(`a check that fails after its reservation was refused is no unhandled rejection (cache: ${cache})`, async () => {
      const { ledger, answers, refunds } = slowLedger(true)
      const failing = gate<never>()
      const { def } = fakeCheck()
      const broken = { ...def, run: () => failing.promise }
      const refused = runLookup(withCache({ ledger }), broken, 'a1', {}).catch((err: unknown) => err)
      await turn()
      answers[0]!.resolve(false)
      expect(await refused).toMatchObject({ code: 'INSUFFICIENT_CREDITS' })
      failing.reject(new Error('resolver down'))
      await turn() // vitest fails the run on an unhandled rejection
      expect(refunds).toEqual([])
    })

    it(`a check that fails after its reservation succeeded is refunded whole (cache: ${cache})`, async () => {
      const { ledger, answers, refunds } = slowLedger(true)
      const { def } = fakeCheck()
      const broken = { ...def, run: async () => Promise.reject(new Error('resolver down')) }
      const failed = runLookup(withCache({ ledger }), broken, 'a1', {}).catch((err: unknown) => err)
      await turn()
      answers[0]!.resolve(true)
      expect(await failed).toMatchObject({ code: 'INTERNAL_ERROR', message: 'Internal error: resolver down' })
      expect(refunds).toEqual([1])
    })

    for (const covers of [false, undefined]) {
      it(`waits for the reservation before the check when the ledger ${covers === false ? 'does not cover it' : 'cannot tell'} (cache: ${cache})`, async () => {
        const { ledger, answers } = slowLedger(covers)
        const { def, calls } = fakeCheck()
        const refused = runLookup(withCache({ ledger }), def, 'a1', {}).catch((err: unknown) => err)
        await turn()
        expect(answers).toHaveLength(1)
        expect(calls).toEqual([])
        answers[0]!.resolve(false)
        expect(await refused).toMatchObject({ code: 'INSUFFICIENT_CREDITS' })
        expect(calls).toEqual([])
      })
    }
  }
})

describe('runLookup: test mode', () => {
  it('answers from test() with no credits, credits_remaining null and test_mode true', async () => {
    const ledger = createMemoryLedger(0)
    const { def, calls } = fakeCheck()
    const r = await runLookup(env({ mode: 'test', ledger }), def, 'magic-invalid', {})
    assertValidResult(r, 'phone_type')
    expect(calls).toEqual([])
    expect(r.metadata).toMatchObject({ credits_used: 0, credits_remaining: null, test_mode: true, data_sources: ['test'] })
    expect(r.verdict.status).toBe('invalid')
    expect(r.recommendation.action).toBe('block')
  })
})

describe('request ids', () => {
  it('are unique across many draws (the random pool refills)', async () => {
    const { newRequestId } = await import('./result.js')
    const ids = new Set(Array.from({ length: 5000 }, () => newRequestId()))
    expect(ids.size).toBe(5000)
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/)
  })

  it("the service's: the same form, unique within one millisecond, in the order of their times", async () => {
    const { newTimedRequestId } = await import('./result.js')
    const t = Date.UTC(2026, 10, 28)
    const ids = Array.from({ length: 5000 }, () => newTimedRequestId(t))
    expect(new Set(ids).size).toBe(5000)
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/)
    expect(ids.every((id) => id.startsWith(`req_${t.toString(16).padStart(11, '0')}`))).toBe(true)
    const times = [t - 1, t, t + 1, t + 1000, t + 86_400_000].map((ms) => newTimedRequestId(ms))
    expect([...times].sort()).toEqual(times)
  })
})

describe('isoTimestamp', () => {
  it('equals toISOString for every millisecond, reused or not', async () => {
    const { isoTimestamp } = await import('./result.js')
    for (const ms of [0, 0, 1, 1_763_769_600_123, 1_763_769_600_123, 1_763_769_600_124, 253_402_300_799_999]) {
      expect(isoTimestamp(new Date(ms))).toBe(new Date(ms).toISOString())
    }
  })
})

describe('runLookup: robustness', () => {
  it('a caller changing a result cannot change what the cache serves next', async () => {
    const e = env()
    const { def } = fakeCheck()
    const first = await runLookup(e, def, 'mutable', {})
    first.details.line_type = 'premium'
    const hit = await runLookup(e, def, 'mutable', {})
    expect(hit.metadata.cache_hit).toBe(true)
    expect(hit.details.line_type).toBe('mobile')
    hit.details.e164 = 'changed'
    expect((await runLookup(e, def, 'mutable', {})).details.e164).toBe('+15550100')
  })

  it('a failing cache is a miss, not a failed lookup', async () => {
    const broken = { get: async () => Promise.reject(new Error('redis down')), set: async () => Promise.reject(new Error('redis down')) }
    const { def, calls } = fakeCheck()
    const r = await runLookup(env({ cache: broken }), def, 'x', {})
    expect(r.metadata.cache_hit).toBe(false)
    expect(calls).toEqual(['x'])
  })

  it('rejects only with RiskcheckError: an unexpected failure becomes INTERNAL_ERROR with its cause', async () => {
    const { def } = fakeCheck()
    const boom = new Error('bug in a check')
    const broken = { ...def, run: async () => Promise.reject(boom) }
    const ledger = createMemoryLedger(3)
    const err = await runLookup(env({ ledger }), broken, 'x', {}).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RiskcheckError)
    expect(err).toMatchObject({ code: 'INTERNAL_ERROR', status: 500, cause: boom })
    expect(ledger.balance()).toBe(3) // the reservation was refunded
  })
})

describe('cacheKeyOf', () => {
  const ctxWith = (offline: boolean, setId: string, rdap = true): CheckContext => {
    const o = resolveOptions({ offline, ...(rdap ? {} : { rdap: { enabled: false } }) })
    return { now: o.now, mode: 'live', offline, sources: { data: { current: () => ({ id: setId }) } } as never, options: o }
  }

  it('names the configuration and, for lookups reading the open data, the data set in force', () => {
    expect(cacheKeyOf('ip', '8.8.8.8', ctxWith(false, 'bundled'))).toBe('ip:8.8.8.8')
    expect(cacheKeyOf('ip', '8.8.8.8', ctxWith(true, 'bundled'))).toBe('ip:offline:8.8.8.8')
    expect(cacheKeyOf('ip', '8.8.8.8', ctxWith(false, '20261122T0612Z-1'))).toBe('ip:20261122T0612Z-1:8.8.8.8')
    // both at once: an offline answer of one data set is served neither online nor from another set
    expect(cacheKeyOf('ip', '8.8.8.8', ctxWith(true, '20261122T0612Z-1'))).toBe('ip:offline:20261122T0612Z-1:8.8.8.8')
    expect(cacheKeyOf('email', 'a@b.c|smtp=1', ctxWith(false, 's2', false))).toBe('email:nordap:s2:a@b.c|smtp=1')
    // lookups that do not read the open data are not scoped by it
    expect(cacheKeyOf('phone', '+15550100', ctxWith(false, 's2'))).toBe('phone:+15550100')
  })
})

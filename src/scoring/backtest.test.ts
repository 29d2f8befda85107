import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ACTIONS, CONTEXTS, type Action, type CheckContextName } from '../schema.js'
import { backtest, createBacktest, type BacktestChange, type Label } from './backtest.js'
import { createPolicy, evaluate } from './engine.js'
import { FACTOR_CODES, type FactorCode } from './factors.js'
import { DEFAULT_POLICY, type Policy } from './rules.js'
import { toStoredAnswer, type StoredAnswer } from './stored-answer.js'

/** A stored answer as the default policy answered it. */
function answer(input: string, factors: FactorCode[], context: CheckContextName | null = null): StoredAnswer {
  const a = evaluate(factors, { context })
  return { input, factors: a.factors, action: a.action, score: a.score, context }
}

const lookupResult = (input: string, factors: FactorCode[], extra: Record<string, unknown> = {}) => {
  const a = evaluate(factors)
  return {
    request: { id: `req_${input.length}abc`, type: 'email', input, timestamp: '2026-01-01T00:00:00.000Z', processing_time_ms: 1 },
    metadata: {},
    verdict: { status: a.status, reason: a.reason },
    risk: { score: a.score, level: a.level, factors: a.factors, confidence: a.confidence },
    details: {},
    recommendation: { action: a.action, message: a.message },
    partial: false,
    ...extra,
  }
}

const zero = () => ({ approve: 0, verify: 0, review: 0, block: 0 })

describe('toStoredAnswer()', () => {
  it('reads lookup results, envelopes, combined checks, bulk rows and stored answers; says why it skips the rest', () => {
    expect(toStoredAnswer(lookupResult('a@x.example', ['ip_vpn']))).toEqual({
      input: 'a@x.example',
      type: 'email',
      action: 'approve',
      score: 35,
      factors: ['ip_vpn'],
      context: null,
      keys: ['req_11abc'],
    })
    const check = {
      ...lookupResult('', ['email_disposable', 'ip_vpn', 'disposable_and_vpn']),
      request: { id: 'req_1', type: 'check', input: { email: 'A@x.example', ip: '192.0.2.1', phone: null, context: 'checkout' } },
      details: { context: 'checkout' },
    }
    expect(toStoredAnswer(check)).toMatchObject({ input: 'A@x.example · 192.0.2.1', type: 'check', context: 'checkout', keys: ['A@x.example', '192.0.2.1', 'req_1'] })
    const row = { input: '+12015550100', action: 'verify', status: 'risky', reason: 'r', risk_score: 40, credits_used: 1, cache_hit: false, error: null, factors: ['phone_voip'], details: {} }
    expect(toStoredAnswer(row)).toMatchObject({ input: '+12015550100', action: 'verify', score: 40, factors: ['phone_voip'] })
    expect(toStoredAnswer({ ...row, action: null, error: 'INVALID_INPUT: no', factors: null })).toBe('error')
    expect(toStoredAnswer({ input: 'x', error: { code: 'INVALID_INPUT', message: 'no' } })).toBe('error') // a CLI error line
    expect(toStoredAnswer({ ...row, factors: undefined })).toBe('no_factors') // written before rows kept factors
    expect(toStoredAnswer({ ...lookupResult('a', []), risk: {} })).toBe('no_factors')
    for (const junk of [null, 3, 'x', [], {}, { input: 3 }]) expect(toStoredAnswer(junk)).toBe('not_a_result')
  })
})

describe('backtest()', () => {
  const answers = [
    answer('vpn@a.example', ['ip_vpn']),
    answer('clean@a.example', []),
    answer('disposable@a.example', ['email_disposable']),
    answer('tor@a.example', ['ip_tor']),
    answer('bad', ['email_invalid_syntax']),
    answer('dc@a.example', ['ip_datacenter', 'ip_cloud']),
  ]

  it('re-scoring under the policy that wrote the answers changes nothing', async () => {
    const r = await backtest(answers, DEFAULT_POLICY)
    expect(r).toMatchObject({ read: 6, scored: 6, changed: 0, changes: [] })
    for (const from of ACTIONS) for (const to of ACTIONS) if (from !== to) expect(r.matrix[from][to]).toBe(0)
    expect(r.totals.current).toEqual(r.totals.candidate)
  })

  it('gives the transition matrix and the changes the engine gives one by one', async () => {
    const policy = createPolicy({ weights: { ip_vpn: 60, email_disposable: 90 }, rules: ['unusable_input_blocks', { name: 'tor_blocks', when: { any: ['ip_tor'] }, action: 'block' }] })
    const r = await backtest(answers, policy)
    const expected = Object.fromEntries(ACTIONS.map((a) => [a, zero()])) as Record<Action, Record<Action, number>>
    const changes: BacktestChange[] = []
    for (const a of answers) {
      const next = evaluate(a.factors as FactorCode[], { policy })
      expected[a.action!][next.action]++
      if (next.action !== a.action)
        changes.push({ input: a.input, type: null, context: null, label: null, factors: a.factors, current: { action: a.action!, score: a.score! }, candidate: { action: next.action, score: next.score, rule: next.rule } })
    }
    expect(r.matrix).toEqual(expected)
    expect(r.changes).toEqual(changes)
    expect(r.changes.map((c) => [c.input, c.current.action, c.candidate.action, c.candidate.rule])).toEqual([
      ['vpn@a.example', 'approve', 'verify', null],
      ['disposable@a.example', 'review', 'block', null],
      ['tor@a.example', 'review', 'block', 'tor_blocks'],
    ])
    expect(r.changed).toBe(3)
  })

  it('reads containers (arrays, results pages, envelopes) and async iterables; counts what it skips', async () => {
    async function* stream() {
      yield { success: true, data: [answers[0], { input: 'e', error: 'INVALID_INPUT: x', factors: null }], next_cursor: null }
      yield { success: true, data: lookupResult('one@a.example', ['email_role_account']) }
      yield [answers[1], 'junk']
      yield { input: 'no-factors@a.example', action: 'approve' }
      yield { input: 'no-action@a.example', factors: ['ip_vpn'] }
    }
    const r = await backtest(stream(), DEFAULT_POLICY)
    expect(r.read).toBe(7)
    expect(r.scored).toBe(3)
    expect(r.skipped).toEqual({ error: 1, no_factors: 1, no_action: 1, not_a_result: 1 })
  })

  it('with a baseline policy compares two policies (and re-scores answers stored without an action)', async () => {
    const strict = createPolicy({ thresholds: { medium: 30 } })
    const r = await backtest([{ input: 'v', factors: ['ip_vpn'] }, ...answers], createPolicy({ weights: { ip_vpn: 0 } }), { baseline: strict })
    expect(r.skipped.no_action).toBe(0)
    expect(r.changes.filter((c) => c.input === 'v' || c.input === 'vpn@a.example').map((c) => [c.current, c.candidate.action])).toEqual([
      [{ action: 'verify', score: 35 }, 'approve'],
      [{ action: 'verify', score: 35 }, 'approve'],
    ])
  })

  it('judges answers in their own context, or in the one given for all', async () => {
    const own = [answer('c@a.example', ['ip_vpn'], 'checkout'), answer('l@a.example', ['ip_vpn'], 'lead')]
    expect((await backtest(own, DEFAULT_POLICY)).changed).toBe(0)
    const all = await backtest(own, DEFAULT_POLICY, { context: 'checkout' })
    expect(all.changes.map((c) => [c.input, c.context, c.current.action, c.candidate.action])).toEqual([['l@a.example', 'checkout', 'approve', 'verify']])
  })

  it('keeps at most maxChanges, streams every change to onChange, and counts unknown factor codes', async () => {
    const seen: string[] = []
    const many = Array.from({ length: 50 }, (_, i) => answer(`u${i}@a.example`, ['ip_vpn']))
    const r = await backtest([...many, { input: 'old@a.example', factors: ['ip_vpn', 'retired_code'], action: 'approve' }], createPolicy({ weights: { ip_vpn: 50 } }), {
      maxChanges: 3,
      onChange: (c) => seen.push(c.input),
    })
    expect(r.changed).toBe(51)
    expect(r.changes.map((c) => c.input)).toEqual(['u0@a.example', 'u1@a.example', 'u2@a.example'])
    expect(seen).toHaveLength(51)
    expect(r.unknownFactors).toEqual({ retired_code: 1 })
  })

  it('with labels: per label the actions before and after, labels that matched nothing, keys of combined checks', async () => {
    const check = {
      ...lookupResult('', ['email_disposable', 'ip_vpn', 'disposable_and_vpn']),
      request: { id: 'req_1', type: 'check', input: { email: 'Fraudster@x.example', ip: '192.0.2.1' } },
      details: { context: 'signup' },
    }
    const labels = new Map<string, Label>([
      ['VPN@a.example', 'good'],
      ['clean@a.example', 'good'],
      ['disposable@a.example', 'fraud'],
      ['fraudster@x.example', 'fraud'],
      ['never-seen@a.example', 'good'],
    ])
    const policy = createPolicy({ weights: { ip_vpn: 70 } })
    const r = await backtest([...answers, check], policy, { labels })
    expect(r.labels).toMatchObject({
      given: 5,
      matched: 4,
      unmatched: 1,
      unmatchedExamples: ['never-seen@a.example'],
      fraud: { current: { ...zero(), review: 1, block: 1 }, candidate: { ...zero(), review: 1, block: 1 } },
      good: { current: { ...zero(), approve: 2 }, candidate: { ...zero(), approve: 1, review: 1 } },
    })
    expect(r.changes.find((c) => c.input === 'vpn@a.example')?.label).toBe('good')
    expect(r.histogram.good.reduce((a, b) => a + b, 0)).toBe(2)
    expect(r.histogram.fraud.reduce((a, b) => a + b, 0)).toBe(2)
    expect(r.histogram.unlabelled.reduce((a, b) => a + b, 0)).toBe(3)
    // A record of labels works the same; a bad label is a TypeError.
    expect((await backtest([...answers, check], policy, { labels: Object.fromEntries(labels) })).labels).toEqual(r.labels)
    await expect(backtest(answers, policy, { labels: { x: 'maybe' as Label } })).rejects.toThrow(/must be fraud or good/)
  })

  it('the threshold sweep is what re-scoring every labelled answer with the moved threshold gives', () => {
    const labelled = fc.record({
      factors: fc.uniqueArray(fc.constantFrom(...FACTOR_CODES), { maxLength: 4 }),
      context: fc.constantFrom(null, ...CONTEXTS),
      label: fc.constantFrom<Label>('fraud', 'good'),
    })
    const thresholds = fc.tuple(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 })).map((t) => {
      const [medium, high, critical] = [...t].sort((a, b) => a - b) as [number, number, number]
      return { medium, high, critical }
    })
    fc.assert(
      fc.property(fc.array(labelled, { minLength: 1, maxLength: 25 }), thresholds, fc.constantFrom<Action>('review', 'block'), (items, t, criticalAction) => {
        const policy = createPolicy({ thresholds: t, actions: { critical: criticalAction } })
        const run = createBacktest(policy, { labels: items.map((x, i) => [`in${i}`, x.label] as const) })
        items.forEach((x, i) => run.add({ input: `in${i}`, factors: x.factors, context: x.context, action: 'approve' }))
        const report = run.report()
        const clamp = (v: number) => Math.min(100, Math.max(0, v))
        const brute = (adjust: (p: Policy, ctx: CheckContextName | null) => Policy) => {
          const out = { fraud: zero(), good: zero() }
          for (const x of items) out[x.label][evaluate(x.factors, { policy: adjust(policy, x.context), context: null }).action]++
          return out
        }
        // The moved threshold of a context moves with the base one (contexts keep their offsets).
        const effective = (p: Policy, ctx: CheckContextName | null) => ({ ...p, weights: { ...p.weights, ...(ctx ? (p.contexts[ctx]?.weights ?? {}) : {}) }, rules: [...(ctx ? (p.contexts[ctx]?.rules ?? []) : []), ...p.rules], thresholds: { ...p.thresholds, ...(ctx ? (p.contexts[ctx]?.thresholds ?? {}) : {}) }, contexts: {} })
        for (const row of report.sweep!.block.rows) {
          const want = brute((p, ctx) => {
            const e = effective(p, ctx)
            const c = clamp(e.thresholds.critical + row.threshold - t.critical)
            return { ...e, thresholds: { medium: Math.min(e.thresholds.medium, c), high: Math.min(e.thresholds.high, c), critical: c } }
          })
          expect({ fraud: row.fraud, good: row.good }, `block at ${row.threshold}`).toEqual(want)
        }
        for (const row of report.sweep!.review.rows) {
          const want = brute((p, ctx) => {
            const e = effective(p, ctx)
            const h = clamp(e.thresholds.high + row.threshold - t.high)
            return { ...e, thresholds: { medium: Math.min(e.thresholds.medium, h), high: h, critical: Math.max(e.thresholds.critical, h) } }
          })
          expect({ fraud: row.fraud, good: row.good }, `review at ${row.threshold}`).toEqual(want)
        }
        // The row at the policy's own threshold is exactly the candidate outcome.
        const own = report.sweep!.block.rows.find((r) => r.threshold === t.critical)!
        expect({ fraud: own.fraud, good: own.good }).toEqual({ fraud: report.labels!.fraud.candidate, good: report.labels!.good.candidate })
      }),
      { numRuns: 60 },
    )
  })
})

describe('backtest() outcome measures', () => {
  // Candidate: Tor blocks, a VPN goes to review; everything else as the default policy answered it.
  const policy = createPolicy({
    rules: [
      { name: 'tor_blocks', when: { any: ['ip_tor'] }, action: 'block' },
      { name: 'vpn_reviews', when: { any: ['ip_vpn'] }, action: 'review' },
    ],
  })
  // input, factors, label — the default answered: ip_tor review, ip_vpn approve, email_disposable review, none approve.
  const set: Array<[string, FactorCode[], Label | null]> = [
    ['f1', ['ip_tor'], 'fraud'], // review → block
    ['f2', ['ip_tor'], 'fraud'], // review → block
    ['f3', ['ip_vpn'], 'fraud'], // approve → review
    ['f4', [], 'fraud'], // approve → approve
    ['g1', ['ip_tor'], 'good'], // review → block
    ['g2', ['ip_vpn'], 'good'], // approve → review
    ['g3', ['ip_vpn'], 'good'], // approve → review
    ['g4', [], 'good'], // approve → approve
    ['g5', ['email_disposable'], 'good'], // review → review
    ['u1', ['email_disposable'], null], // review → review
    ['u2', ['ip_vpn'], null], // approve → review
  ]
  const labels = new Map(set.flatMap(([i, , l]) => (l ? [[i, l] as const] : [])))

  it('gives precision and recall per action, the good customers held and the review queue, as counted by hand', async () => {
    const r = await backtest(
      set.map(([i, f]) => answer(i, f)),
      policy,
      { labels },
    )
    const m = r.labels!.metrics
    // Current: fraud approve 2, review 2; good approve 3, review 2 (g1, g5).
    expect(m.current.actions).toEqual({
      approve: { precision: 2 / 5, recall: 2 / 4 },
      verify: { precision: null, recall: 0 },
      review: { precision: 2 / 4, recall: 2 / 4 },
      block: { precision: null, recall: 0 },
    })
    expect(m.current.held).toEqual({ precision: 2 / 4, recall: 2 / 4 })
    expect(m.current.goodBlocked).toEqual({ count: 0, share: 0 })
    expect(m.current.goodReview).toEqual({ count: 2, share: 2 / 5 })
    // Candidate: fraud block 2, review 1, approve 1; good block 1, review 3, approve 1.
    expect(m.candidate.actions).toEqual({
      approve: { precision: 1 / 2, recall: 1 / 4 },
      verify: { precision: null, recall: 0 },
      review: { precision: 1 / 4, recall: 1 / 4 },
      block: { precision: 2 / 3, recall: 2 / 4 },
    })
    expect(m.candidate.held).toEqual({ precision: 3 / 7, recall: 3 / 4 })
    expect(m.candidate.goodBlocked).toEqual({ count: 1, share: 1 / 5 })
    expect(m.candidate.goodReview).toEqual({ count: 3, share: 3 / 5 })
    // Review queue over every answer: f1 f2 g1 g5 u1 now; f3 g2 g3 g5 u1 u2 with the candidate.
    expect(r.reviewQueue).toEqual({ current: 5, candidate: 6, change: 1, ratio: 6 / 5 })
  })

  it('without labels still reports the review queue; an empty queue has no ratio', async () => {
    const r = await backtest([answer('a', []), answer('b', ['ip_vpn'])], policy)
    expect(r.labels).toBeNull()
    expect(r.reviewQueue).toEqual({ current: 0, candidate: 1, change: 1, ratio: null })
  })

  it('ranked labels: the highest rank among the input and the keys wins', async () => {
    const a = { ...answer('x@a.example', ['ip_vpn']), keys: ['req_1', 'email:h1'] }
    const b = { ...answer('y@a.example', ['ip_vpn']), keys: ['req_2', 'email:h2'] }
    const r = await backtest([a, b], policy, {
      labels: new Map([
        ['req_1', { label: 'fraud' as const, rank: 1 }],
        ['email:h1', { label: 'good' as const, rank: 5 }], // later: wins for x
        ['req_2', { label: 'fraud' as const, rank: 9 }], // later: wins for y
        ['email:h2', { label: 'good' as const, rank: 2 }],
        ['req_gone', { label: 'fraud' as const, rank: 3 }],
      ]),
    })
    expect(r.labels).toMatchObject({ given: 5, matched: 2, unmatched: 3 })
    expect(r.labels!.good.candidate.review).toBe(1)
    expect(r.labels!.fraud.candidate.review).toBe(1)
  })
})

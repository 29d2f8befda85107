import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { applyContext, createPolicy, evaluate, levelOf, score, statusOf } from './engine.js'
import { FACTORS, FACTOR_CODES, type FactorCode } from './factors.js'
import { DEFAULT_POLICY } from './rules.js'

const factorArb = fc.constantFrom(...FACTOR_CODES)
const factorsArb = fc.array(factorArb, { maxLength: 12 })

describe('factor vocabulary', () => {
  it('every code is snake_case with a one-line description and a weight in 0–100', () => {
    for (const code of FACTOR_CODES) {
      const def = FACTORS[code]
      expect(code).toMatch(/^[a-z][a-z0-9_]*$/)
      expect(def.description).toMatch(/^[A-Z].*\.$/)
      expect(def.description).not.toContain('\n')
      expect(def.weight).toBeGreaterThanOrEqual(0)
      expect(def.weight).toBeLessThanOrEqual(100)
    }
  })
  it('covers every lookup, the combined cross-signals, your lists and velocity', () => {
    const groups = new Set(FACTOR_CODES.map((c) => FACTORS[c].group))
    expect([...groups].sort()).toEqual(['combined', 'domain', 'email', 'email_auth', 'ip', 'lists', 'outcomes', 'phone', 'velocity'])
  })
})

describe('score()', () => {
  it.each<[FactorCode[], number, string, string]>([
    [[], 0, 'low', 'high'],
    [['email_free_provider'], 0, 'low', 'high'],
    [['email_role_account'], 15, 'low', 'high'],
    [['ip_vpn'], 35, 'low', 'high'],
    [['ip_datacenter', 'ip_cloud'], 40, 'medium', 'high'],
    [['email_catch_all'], 15, 'low', 'medium'],
    [['email_catch_all', 'email_smtp_unknown'], 15, 'low', 'low'],
    [['email_disposable'], 70, 'high', 'high'],
    [['ip_tor'], 80, 'high', 'high'],
    [['ip_tor', 'ip_vpn'], 100, 'critical', 'high'],
    [['email_invalid_syntax', 'email_disposable'], 100, 'critical', 'high'],
    [['email_disposable', 'email_disposable'], 70, 'high', 'high'],
  ])('%j → %i %s, confidence %s', (factors, s, level, confidence) => {
    expect(score(factors)).toEqual({ score: s, level, confidence })
  })

  it('stays in 0–100 for any set of factors and any valid policy weights', () => {
    fc.assert(
      fc.property(factorsArb, fc.dictionary(factorArb, fc.integer({ min: 0, max: 100 })), (factors, weights) => {
        const { score: s } = score(factors, createPolicy({ weights }))
        return Number.isInteger(s) && s >= 0 && s <= 100
      }),
    )
  })

  it('adding a factor never lowers the score', () => {
    fc.assert(
      fc.property(factorsArb, factorArb, (factors, extra) => score([...factors, extra]).score >= score(factors).score),
    )
  })

  it('factor order does not matter (score, status, action, reason)', () => {
    fc.assert(
      fc.property(factorsArb, fc.integer(), (factors, seed) => {
        const shuffled = [...factors].sort((a, b) => ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7) || (a < b ? 1 : -1))
        const a = evaluate(factors)
        const b = evaluate(shuffled)
        return a.score === b.score && a.status === b.status && a.action === b.action && a.reason === b.reason && a.confidence === b.confidence
      }),
    )
  })

  it('ignores codes outside the vocabulary', () => {
    expect(score(['not_a_factor' as FactorCode, 'ip_vpn'])).toEqual(score(['ip_vpn']))
  })
})

describe('levels and thresholds', () => {
  it.each([
    [0, 'low'], [39, 'low'], [40, 'medium'], [64, 'medium'], [65, 'high'], [84, 'high'], [85, 'critical'], [100, 'critical'],
  ] as const)('score %i is %s (edges exact)', (s, level) => {
    expect(levelOf(s)).toBe(level)
  })
  it('maps levels to actions approve / verify / review / block', () => {
    const weights = { ip_vpn: 0 } as Record<FactorCode, number>
    const at = (w: number) => evaluate(['ip_vpn'], { policy: createPolicy({ weights: { ...weights, ip_vpn: w } }) }).action
    expect([at(39), at(40), at(64), at(65), at(84), at(85)]).toEqual(['approve', 'verify', 'verify', 'review', 'review', 'block'])
  })
})

describe('verdict status and hard rules', () => {
  it('takes the strongest effect: invalid > risky > unknown > valid', () => {
    expect(statusOf([])).toBe('valid')
    expect(statusOf(['email_free_provider'])).toBe('valid')
    expect(statusOf(['email_smtp_unknown'])).toBe('unknown')
    expect(statusOf(['email_smtp_unknown', 'email_role_account'])).toBe('risky')
    expect(statusOf(['email_role_account', 'email_undeliverable'])).toBe('invalid')
  })
  it('blocks unusable inputs whatever their weight', () => {
    const policy = createPolicy({ weights: { email_invalid_syntax: 0 } })
    const a = evaluate(['email_invalid_syntax'], { policy })
    expect(a).toMatchObject({ score: 0, level: 'low', status: 'invalid', action: 'block', rule: 'unusable_input_blocks' })
  })
  it('reports the strongest factor as the reason and the valid reason when none fired', () => {
    expect(evaluate(['email_free_provider', 'email_disposable']).reason).toBe(FACTORS.email_disposable.description)
    expect(evaluate(['email_free_provider'], { validReason: 'Deliverable.' }).reason).toBe('Deliverable.')
    expect(evaluate([], {}).reason).toBe('No risk factors found.')
  })
})

describe('contexts', () => {
  it('judges a checkout more strictly than a lead', () => {
    const f: FactorCode[] = ['ip_vpn']
    expect(evaluate(f, { context: 'lead' }).action).toBe('approve')
    expect(evaluate(f, { context: 'signup' }).action).toBe('approve')
    expect(evaluate(f, { context: 'checkout' }).action).toBe('verify')
    const g: FactorCode[] = ['email_disposable']
    expect([evaluate(g, { context: 'lead' }).action, evaluate(g, { context: 'signup' }).action, evaluate(g, { context: 'checkout' }).action]).toEqual([
      'verify',
      'review',
      'block',
    ])
  })
  it('a context overlay never changes the base policy object', () => {
    const before = JSON.stringify(DEFAULT_POLICY)
    applyContext(DEFAULT_POLICY, 'checkout')
    expect(JSON.stringify(DEFAULT_POLICY)).toBe(before)
  })
})

describe('createPolicy()', () => {
  it.each([
    [{ weights: { nope: 5 } }, /weights\.nope is not a factor code/],
    [{ weights: { ip_vpn: 101 } }, /weights\.ip_vpn must be a number from 0 to 100/],
    [{ weights: { ip_vpn: -1 } }, /weights\.ip_vpn/],
    [{ thresholds: { medium: 70, high: 60 } }, /thresholds must satisfy/],
    [{ rules: [{ name: 'x', when: {}, action: 'block' }] }, /rules\[0\]\.when must list at least one factor/],
    [{ rules: [{ name: 'x', when: { any: ['ip_vpn'] }, action: 'nuke' }] }, /rules\[0\]\.action/],
    [{ contexts: { wedding: {} } }, /contexts\.wedding/],
    [{ actions: { low: 'party' } }, /actions\.low/],
    // context thresholds are merged at evaluation time; a bad one must fail here, not out of a lookup
    [{ contexts: { checkout: { thresholds: { medium: 90 } } } }, /contexts\.checkout\.thresholds must satisfy/],
    [{ contexts: { lead: { thresholds: { high: 'x' } } } }, /contexts\.lead\.thresholds\.high/],
  ])('rejects %j with a TypeError naming the path', (overrides, message) => {
    expect(() => createPolicy(overrides as never)).toThrow(TypeError)
    expect(() => createPolicy(overrides as never)).toThrow(message)
  })
})

// The policy-override example of docs/scoring.md, verbatim.
describe('docs/scoring.md: override the policy and unit-test it', () => {
  it('runs as documented', () => {
    const policy = createPolicy({
      weights: { ip_vpn: 60, email_free_provider: 10 },
      thresholds: { medium: 30 },
      rules: [...DEFAULT_POLICY.rules, { name: 'tor_blocks', when: { any: ['ip_tor'] }, action: 'block' }],
    })
    expect(evaluate(['ip_vpn'], { policy }).action).toBe('verify')
    expect(evaluate(['ip_tor'], { policy }).action).toBe('block')
    expect(evaluate(['email_free_provider'], { policy }).score).toBe(10)
  })
})

describe('the reason names what decided', () => {
  it('a block list match that blocks: its sentence, though a factor of a stronger effect fired (before: that factor\'s)', () => {
    const reasons = { list_blocked: 'The email domain is on the block list "Fraud rings".' }
    const a = evaluate(['ip_bogon', 'list_blocked'], { reasons })
    expect([a.action, a.rule, a.status, a.reason]).toEqual(['block', 'block_list', 'invalid', reasons.list_blocked])
    // without the list's action the strongest factor explains, as before
    const weighed = evaluate(['ip_bogon', 'list_blocked'], { reasons, policy: createPolicy({ lists: { block: null } }) })
    expect(weighed.reason).toBe(FACTORS.ip_bogon.description)
  })

  it('an info factor the policy weighs: its description, not "No risk factors found." beside a verify', () => {
    const a = evaluate(['email_free_provider'], { policy: createPolicy({ weights: { email_free_provider: 45 } }) })
    expect([a.score, a.action, a.status, a.reason]).toEqual([45, 'verify', 'valid', FACTORS.email_free_provider.description])
    expect(evaluate(['email_free_provider']).reason).toBe('No risk factors found.') // weight 0: nothing to explain
  })
})

import { Ajv } from 'ajv'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ACTIONS, CONTEXTS } from '../schema.js'
import { createPolicy, evaluate, PolicyError } from './engine.js'
import { FACTOR_CODES } from './factors.js'
import { policyJsonSchema } from './policy-schema.js'
import { validatePolicy } from './policy-validate.js'
import { DEFAULT_POLICY } from './rules.js'

const errorsOf = (doc: unknown) => validatePolicy(doc, DEFAULT_POLICY).errors

describe('validatePolicy()', () => {
  it('refuses an empty `any` in a rule (at least one of no factor could never fire; it was read as no `any`)', () => {
    expect(errorsOf({ rules: ['unusable_input_blocks', { name: 'tor', when: { all: ['ip_tor'], any: [] }, action: 'block' }] })).toEqual([
      { path: 'rules[1].when.any', message: 'must be a list of one factor code or more (got [])' },
    ])
    expect(errorsOf({ rules: ['unusable_input_blocks', { name: 'tor', when: { all: ['ip_tor'], any: ['ip_vpn'] }, action: 'block' }] })).toEqual([])
  })
  it('reports every error of a document, each with its path, in document order', () => {
    const doc = {
      weights: { email_disposable: 'x', nope: 3, ip_vpn: 101 },
      thresholds: { medium: 70, high: 60 },
      rules: ['unusable_input_blocks', 'nope', { name: '', when: { any: ['ip_tor', 'x'] }, action: 'nuke', extra: 1 }, { when: {}, action: 'block' }, 5],
      contexts: { wedding: {}, checkout: { thresholds: { medium: 90 }, weights: { ip_vpn: -1 } } },
      actions: { low: 'party' },
      confidence: { medium: 3, low: 2 },
      zz: 1,
    }
    expect(errorsOf(doc)).toEqual([
      { path: 'actions.low', message: 'must be one of approve, verify, review, block (got "party")' },
      { path: 'confidence', message: 'must satisfy medium <= low (got medium 3, low 2)' },
      { path: 'contexts.checkout.thresholds', message: 'must satisfy medium <= high <= critical (got medium 90, high 60, critical 85)' },
      { path: 'contexts.checkout.weights.ip_vpn', message: 'must be a number from 0 to 100 (got -1)' },
      { path: 'contexts.wedding', message: 'is not a context (signup, lead, checkout)' },
      { path: 'rules[1]', message: 'names no rule of the base policy (got "nope"; base rules: unusable_input_blocks)' },
      { path: 'rules[2].action', message: 'must be one of approve, verify, review, block (got "nuke")' },
      { path: 'rules[2].extra', message: 'is not a field here (expected name, when, action, message)' },
      { path: 'rules[2].name', message: 'must be a non-empty string (got "")' },
      { path: 'rules[2].when.any[1]', message: 'must be a factor code of the vocabulary (got "x")' },
      { path: 'rules[3].name', message: 'is required (it must be a non-empty string)' },
      { path: 'rules[3].when', message: 'must list at least one factor in `all` or `any`' },
      { path: 'rules[4]', message: 'must be a rule (a mapping with name, when, action) or the name of a base rule (got 5)' },
      { path: 'thresholds', message: 'must satisfy medium <= high <= critical (got medium 70, high 60, critical 85)' },
      { path: 'weights.email_disposable', message: 'must be a number from 0 to 100 (got "x")' },
      { path: 'weights.ip_vpn', message: 'must be a number from 0 to 100 (got 101)' },
      { path: 'weights.nope', message: 'is not a factor code of the vocabulary (see "Factor vocabulary" in docs/scoring.md)' },
      { path: 'zz', message: 'is not a field here (expected $schema, description, weights, effects, thresholds, actions, rules, confidence, messages, contexts, velocity, lists)' },
    ])
  })

  it('checks a base context overlay against new thresholds, and says where the overlay came from', () => {
    const policy = createPolicy({ contexts: { checkout: { thresholds: { high: 70 } } } })
    expect(validatePolicy({ thresholds: { high: 60, critical: 62 } }, policy).errors).toEqual([
      {
        path: 'contexts.checkout.thresholds',
        message: 'must satisfy medium <= high <= critical (got medium 40, high 70, critical 62, the base policy’s overlay on these thresholds)',
      },
    ])
  })

  it('rejects what is not a mapping, and NaN or Infinity weights (YAML can write them)', () => {
    for (const doc of [null, 'x', 3, [1]]) expect(errorsOf(doc)).toEqual([{ path: '', message: expect.stringMatching(/^must be a mapping of policy fields/) }])
    expect(errorsOf({ weights: { ip_vpn: Number.NaN } })).toEqual([{ path: 'weights.ip_vpn', message: 'must be a number from 0 to 100 (got NaN)' }])
    expect(errorsOf({ weights: { ip_vpn: Number.POSITIVE_INFINITY } })).toEqual([{ path: 'weights.ip_vpn', message: 'must be a number from 0 to 100 (got Infinity)' }])
  })

  it('refuses a document nested more than 32 levels deep with its path, and never throws for a deep one', () => {
    let deep: unknown = 'x'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(errorsOf({ description: deep })).toEqual([
      { path: `description${'[0]'.repeat(31)}`, message: 'nests mappings or lists more than 32 levels deep; a policy needs 7' },
    ])
    let shallow: unknown = 'x'
    for (let i = 0; i < 31; i++) shallow = [shallow]
    expect(errorsOf({ description: shallow })).toEqual([{ path: 'description', message: expect.stringMatching(/^must be a string \(got \[\[/) }])
    const cyclic: Record<string, unknown> = {}
    cyclic.weights = { ip_vpn: cyclic }
    expect(errorsOf(cyclic)).toEqual([{ path: 'weights.ip_vpn', message: 'must be a number from 0 to 100 (got a mapping)' }])
    expect(() => createPolicy({ description: deep } as never)).toThrow(PolicyError)
  })

  it('warns when the rules drop the default hard rule or repeat a name, and keeps a referenced rule in place', () => {
    const tor = { name: 'tor', when: { any: ['ip_tor'] }, action: 'block' } as const
    expect(validatePolicy({ rules: [tor] }, DEFAULT_POLICY).warnings).toEqual([
      { path: 'rules', message: expect.stringMatching(/^replaces the base rules without unusable_input_blocks; list its name in rules to keep it/) },
    ])
    expect(validatePolicy({ rules: [tor, tor, 'unusable_input_blocks'] }, DEFAULT_POLICY).warnings).toEqual([
      { path: 'rules', message: 'has several rules named tor (backtest reports name rules)' },
    ])
    const policy = createPolicy({ rules: [tor, 'unusable_input_blocks'] })
    expect(policy.rules.map((r) => r.name)).toEqual(['tor', 'unusable_input_blocks'])
    expect(policy.rules[1]).toBe(DEFAULT_POLICY.rules[0])
    expect(evaluate(['email_invalid_syntax'], { policy }).action).toBe('block')
  })

  it('warns when a factor taken off invalid is still named by a block rule (valid, yet blocked)', () => {
    const lowered = { effects: { email_invalid_syntax: 'info', ip_vpn: 'info' } } as const
    expect(validatePolicy(lowered, DEFAULT_POLICY).warnings).toEqual([
      {
        path: 'effects.email_invalid_syntax',
        message:
          'is info, but the rule unusable_input_blocks still blocks on it: such answers are valid and blocked (keep it invalid, or give rules that do not name it)',
      },
    ])
    // what the warning says is what the policy does
    const policy = createPolicy(lowered)
    expect(evaluate(['email_invalid_syntax'], { policy })).toMatchObject({ status: 'valid', action: 'block' })
    // no warning once no block rule names it, nor for a factor that stays invalid
    const tor = { name: 'tor', when: { any: ['ip_tor'] }, action: 'block' } as const
    expect(validatePolicy({ ...lowered, rules: [tor] }, DEFAULT_POLICY).warnings.map((w) => w.path)).toEqual(['rules'])
    expect(validatePolicy({ effects: { email_invalid_syntax: 'invalid' } }, DEFAULT_POLICY).warnings).toEqual([])
    // a context's block rule counts too (and the base rules, which are frozen, are read, not added to)
    expect(validatePolicy({ ...lowered, contexts: { signup: { rules: [] } } }, DEFAULT_POLICY).warnings.map((w) => w.path)).toEqual(['effects.email_invalid_syntax'])
    const inSignup = { name: 'signup_syntax', when: { any: ['email_invalid_syntax'] }, action: 'block' } as const
    expect(validatePolicy({ ...lowered, rules: [tor], contexts: { signup: { rules: [inSignup] } } }, DEFAULT_POLICY).warnings).toEqual([
      { path: 'rules', message: expect.any(String) },
      { path: 'effects.email_invalid_syntax', message: expect.stringMatching(/^is info, but the rule signup_syntax still blocks on it/) },
    ])
    expect(validatePolicy({ effects: { email_invalid_syntax: 'risky' }, rules: ['unusable_input_blocks'] }, DEFAULT_POLICY).warnings).toEqual([
      { path: 'effects.email_invalid_syntax', message: expect.stringMatching(/^is risky, but the rule unusable_input_blocks still blocks on it: such answers are risky and blocked/) },
    ])
  })

  it('accepts the default policy itself as overrides, giving an equal policy', () => {
    expect(errorsOf(DEFAULT_POLICY)).toEqual([])
    expect(createPolicy(DEFAULT_POLICY as never)).toEqual(DEFAULT_POLICY)
  })

  it('createPolicy throws a PolicyError (a TypeError) naming every bad path, with the issues as data', () => {
    let thrown: unknown
    try {
      createPolicy({ weights: { ip_vpn: 101, nope: 1 } as never })
    } catch (e) {
      thrown = e
    }
    expect(thrown).toBeInstanceOf(TypeError)
    expect(thrown).toBeInstanceOf(PolicyError)
    expect((thrown as Error).message).toBe(
      'riskcheck scoring: weights.ip_vpn must be a number from 0 to 100 (got 101); weights.nope is not a factor code of the vocabulary (see "Factor vocabulary" in docs/scoring.md)',
    )
    expect((thrown as PolicyError).issues.map((i) => i.path)).toEqual(['weights.ip_vpn', 'weights.nope'])
  })
})

// Random documents mixing valid and invalid parts.
const code = fc.oneof(fc.constantFrom(...FACTOR_CODES), fc.constantFrom('nope', '', 'IP_VPN'))
const num = fc.oneof(fc.integer({ min: -5, max: 105 }), fc.constantFrom('10', null, 50.5))
const thresholds = fc.record({ medium: num, high: num, critical: num }, { requiredKeys: [] })
const action = fc.oneof(fc.constantFrom(...ACTIONS), fc.constantFrom('nuke', 3))
const rule = fc.oneof(
  fc.constantFrom('unusable_input_blocks', 'missing_rule'),
  fc.record(
    {
      name: fc.oneof(fc.string({ maxLength: 5 }), fc.constant(7)),
      when: fc.record({ all: fc.array(code, { maxLength: 2 }), any: fc.array(code, { maxLength: 2 }) }, { requiredKeys: [] }),
      action,
      message: fc.oneof(fc.string({ maxLength: 5 }), fc.constant(1)),
    },
    { requiredKeys: [] },
  ),
)
const overlay = fc.record({ weights: fc.dictionary(code, num, { maxKeys: 2 }), thresholds, rules: fc.array(rule, { maxLength: 2 }) }, { requiredKeys: [] })
const messyDocArb = fc.record(
  {
    weights: fc.dictionary(code, num, { maxKeys: 4 }),
    effects: fc.dictionary(code, fc.constantFrom('invalid', 'risky', 'unknown', 'info', 'bad'), { maxKeys: 2 }),
    thresholds,
    actions: fc.dictionary(fc.constantFrom('low', 'medium', 'high', 'critical', 'extreme'), action, { maxKeys: 2 }),
    rules: fc.array(rule, { maxLength: 3 }),
    confidence: fc.record({ medium: fc.integer({ min: -1, max: 4 }), low: fc.integer({ min: -1, max: 4 }) }, { requiredKeys: [] }),
    contexts: fc.dictionary(fc.oneof(fc.constantFrom(...CONTEXTS), fc.constant('wedding')), overlay, { maxKeys: 2 }),
    extra: fc.constant(1),
  },
  { requiredKeys: [] },
)
// … and documents that are mostly valid, so both sides of the property are exercised.
const sorted3 = fc.tuple(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 })).map((t) => {
  const [medium, high, critical] = [...t].sort((a, b) => a - b) as [number, number, number]
  return { medium, high, critical }
})
const goodCode = fc.constantFrom(...FACTOR_CODES)
const goodRule = fc.oneof(
  fc.constant('unusable_input_blocks'),
  fc.record({ name: fc.string({ minLength: 1, maxLength: 8 }), when: fc.record({ any: fc.array(goodCode, { minLength: 1, maxLength: 3 }) }), action: fc.constantFrom(...ACTIONS) }),
)
const goodDocArb = fc.record(
  {
    $schema: fc.constant('./policy.schema.json'),
    description: fc.string({ maxLength: 10 }),
    weights: fc.dictionary(goodCode, fc.integer({ min: 0, max: 100 }), { maxKeys: 5 }),
    thresholds: sorted3,
    actions: fc.dictionary(fc.constantFrom('low', 'medium', 'high', 'critical'), fc.constantFrom(...ACTIONS), { maxKeys: 2 }),
    rules: fc.array(goodRule, { maxLength: 3 }),
    confidence: fc.integer({ min: 1, max: 3 }).map((m) => ({ medium: m, low: m + 1 })),
    contexts: fc.dictionary(fc.constantFrom(...CONTEXTS), fc.record({ thresholds: sorted3, weights: fc.dictionary(goodCode, fc.integer({ min: 0, max: 100 }), { maxKeys: 2 }) }, { requiredKeys: [] }), { maxKeys: 2 }),
  },
  { requiredKeys: [] },
)
const docArb = fc.oneof({ arbitrary: goodDocArb, weight: 1 }, { arbitrary: messyDocArb, weight: 1 })

describe('validatePolicy() and the published JSON Schema agree', () => {
  const ajv = new Ajv({ allErrors: true, strict: true })
  const schemaValid = ajv.compile(policyJsonSchema())

  it('a document the schema rejects is rejected; a document accepted is schema-valid and usable in every context', () => {
    let accepted = 0
    fc.assert(
      fc.property(docArb, fc.array(fc.constantFrom(...FACTOR_CODES), { maxLength: 6 }), (doc, factors) => {
        const errors = errorsOf(doc)
        if (!schemaValid(doc)) expect(errors.length, JSON.stringify(doc)).toBeGreaterThan(0)
        if (errors.length > 0) {
          expect(() => createPolicy(doc as never)).toThrow(PolicyError)
          return
        }
        accepted++
        expect(schemaValid(doc), JSON.stringify(ajv.errors)).toBe(true)
        const policy = createPolicy(doc as never)
        for (const context of [null, ...CONTEXTS]) {
          const a = evaluate(factors, { policy, context })
          expect(a.score).toBeGreaterThanOrEqual(0)
          expect(a.score).toBeLessThanOrEqual(100)
          expect(ACTIONS).toContain(a.action)
        }
      }),
      { numRuns: 400 },
    )
    expect(accepted).toBeGreaterThan(50) // the generator reaches valid documents too
  })
})

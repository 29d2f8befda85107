/**
 * `verdict.reason` comes from the factor that decided the verdict — the first of `risk.factors` (strongest effect,
 * then highest weight) — never from a weaker one: it is that factor's own sentence (when the check gave one) or its
 * description, and the `validReason` when nothing beyond `info` fired. Checked over every lookup's documented inputs
 * in test mode and offline, and for the cases that went wrong (a disposable or mistyped address offline).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { CHECKS, type SingleLookupType } from '../src/checks/registry.js'
import type { CheckOutcome } from '../src/checks/types.js'
import { isRiskcheckError } from '../src/errors.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { DEFAULT_POLICY } from '../src/scoring/rules.js'
import { FACTORS, type FactorCode } from '../src/scoring/factors.js'

const NOW = () => new Date('2026-11-22T12:00:00Z')
const test = createRiskcheck({ mode: 'test', now: NOW })
const offline = createRiskcheck({ offline: true, now: NOW, cache: false })
afterAll(async () => {
  await test.close()
  await offline.close()
})

/** The outcome the check itself gives for `input` (to see the sentences it offered for each factor). */
async function outcomeOf(rc: Riskcheck, type: SingleLookupType, input: string): Promise<CheckOutcome<unknown>> {
  const def = CHECKS[type] as unknown as {
    prepare(i: unknown, o: object, c: unknown): { input: unknown }
    run(c: unknown, i: unknown, o: object): Promise<CheckOutcome<unknown>>
    test(c: unknown, i: unknown, o: object): CheckOutcome<unknown> | Promise<CheckOutcome<unknown>>
  }
  const ctx = rc.env.ctx
  const prepared = def.prepare(input, {}, ctx)
  return ctx.mode === 'test' ? def.test(ctx, prepared.input, {}) : def.run(ctx, prepared.input, {})
}

/** Checks one lookup's reason against its deciding factor. */
async function expectReasonFromDecidingFactor(rc: Riskcheck, type: SingleLookupType, input: string): Promise<void> {
  let result
  try {
    result = await rc.lookup(type, input)
  } catch (e) {
    if (isRiskcheckError(e) && e.code === 'INVALID_INPUT') return // no result to explain
    throw e
  }
  const outcome = await outcomeOf(rc, type, input)
  const reasons: Partial<Record<FactorCode, string>> = outcome.reasons ?? {}
  const top = result.risk.factors[0] as FactorCode | undefined
  const label = `${type} ${JSON.stringify(input)}: factors ${result.risk.factors.join(', ')}`
  if (top === undefined || DEFAULT_POLICY.effects[top] === 'info') {
    expect(result.verdict.reason, label).toBe(outcome.validReason ?? 'No risk factors found.')
    return
  }
  expect(result.verdict.reason, label).toBe(reasons[top] ?? FACTORS[top].description)
  // never the sentence of another (weaker) factor
  for (const [factor, sentence] of Object.entries(reasons)) {
    if (factor !== top && sentence !== reasons[top]) expect(result.verdict.reason, label).not.toBe(sentence)
  }
}

const CASES = (Object.keys(CHECKS) as SingleLookupType[]).flatMap((type) => CHECKS[type].testInputs.map((t) => [type, t.input] as const))

describe('the verdict reason is the deciding factor’s', () => {
  it.each(CASES)('test mode: %s %s', async (type, input) => {
    await expectReasonFromDecidingFactor(test, type, input)
  })

  it.each(CASES)('offline: %s %s', async (type, input) => {
    await expectReasonFromDecidingFactor(offline, type, input)
  })

  it.each([
    ['info@mailinator.com', 'email_disposable', FACTORS.email_disposable.description],
    ['jane@gmial.com', 'email_typo_suspected', 'The domain looks like a typo: did you mean jane@gmail.com?'],
    ['jane@gmail.com', 'email_smtp_unavailable', 'Offline: DNS and the mail server were not asked, so deliverability is unknown.'],
    ['not-an-address', 'email_invalid_syntax', undefined],
  ] as const)('offline: email %s is decided by %s', async (input, factor, sentence) => {
    const r = await offline.email(input)
    expect(r.risk.factors[0]).toBe(factor)
    if (sentence !== undefined) expect(r.verdict.reason).toBe(sentence)
    expect(r.verdict.reason).not.toMatch(factor === 'email_smtp_unavailable' ? /^$/ : /^Offline/)
  })

  it('the combined check: the reason is the deciding factor’s across all parts', async () => {
    const r = await offline.check({ email: 'info@mailinator.com', ip: '8.8.8.8', phone: '+1 415 555 0100' })
    expect(r.risk.factors[0]).toBe('email_disposable')
    expect(r.verdict.reason).toBe(FACTORS.email_disposable.description)
    const typo = await offline.check({ email: 'jane@gmial.com', phone: '+1 415 555 0100' })
    expect(typo.verdict.reason).toBe('The domain looks like a typo: did you mean jane@gmail.com?')
  })
})

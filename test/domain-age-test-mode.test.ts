/**
 * Test mode of the domain-age lookup: every documented magic input answers deterministically without network,
 * and together they produce every verdict status and every action domain age can reach with the default policy.
 */
import { describe, expect, it } from 'vitest'
import { Value } from '@sinclair/typebox/value'
import { domainAgeCheck, lookupDomainAge } from '../src/checks/domain-age.js'
import { isRiskcheckError } from '../src/errors.js'
import { DomainAgeDataSchema } from '../src/schema.js'
import { evaluate } from '../src/scoring/engine.js'
import type { CheckContext, Sources } from '../src/checks/types.js'
import type { ResolvedOptions } from '../src/options.js'

const NOW = new Date('2026-11-22T00:00:00Z')
const noNetwork = new Proxy({} as Sources, {
  get(_t, name) {
    throw new Error(`test mode touched the ${String(name)} source`)
  },
})
const ctx: CheckContext = { now: () => NOW, mode: 'test', offline: false, sources: noNetwork, options: {} as ResolvedOptions }

async function answer(input: string) {
  const { input: prepared } = domainAgeCheck.prepare(input, {}, ctx)
  const o = await domainAgeCheck.test(ctx, prepared, {})
  expect([...Value.Errors(DomainAgeDataSchema, o.details)]).toEqual([])
  const v = evaluate(o.factors, { ...(o.reasons ? { reasons: o.reasons } : {}), ...(o.validReason ? { validReason: o.validReason } : {}) })
  return { o, v }
}

describe('domain age test mode', () => {
  it('answers every documented input (or rejects it as documented) without touching a source', async () => {
    const statuses = new Set<string>()
    const actions = new Set<string>()
    for (const { input, note } of domainAgeCheck.testInputs) {
      if (note.includes('INVALID_INPUT')) {
        expect(() => domainAgeCheck.prepare(input, {}, ctx)).toThrow()
        continue
      }
      const { v } = await answer(input)
      statuses.add(v.status)
      actions.add(v.action)
      // the note states the outcome: check it names the verdict status and action we produce
      if (/→ (valid|invalid|risky|unknown), (approve|verify|review|block)/.test(note)) {
        expect(note, input).toContain(`→ ${v.status}, ${v.action}`)
      }
    }
    expect([...statuses].sort()).toEqual(['invalid', 'risky', 'unknown', 'valid'])
    expect([...actions].sort()).toEqual(['approve', 'block', 'review', 'verify'])
  })

  it('is deterministic and relative to ctx.now()', async () => {
    const a = await answer('new-domain.example')
    const b = await answer('https://www.new-domain.example/signup')
    expect(b.o).toEqual(a.o)
    expect(a.o.details).toMatchObject({
      domain: 'new-domain.example',
      created_date: '2026-11-19T00:00:00.000Z',
      age_days: 3,
      age_band: 'under_7_days',
      is_newly_registered: true,
    })
    expect((await answer('old-domain.example')).o.details.age_band).toBe('3_years_plus')
    expect((await answer('two-years.example')).o.details.age_band).toBe('under_3_years')
    expect((await answer('months-old.example')).o.details.age_band).toBe('under_1_year')
    expect((await answer('recent-domain.example')).o.details.age_band).toBe('under_90_days')
    expect((await answer('young-domain.example')).o.details.age_band).toBe('under_30_days')
  })

  it('magic labels work under any TLD and unknown names answer like old-domain', async () => {
    expect((await answer('x@unregistered.test')).v.status).toBe('invalid')
    expect((await answer('rdap-timeout.com')).o.partial).toBe(true)
    expect((await answer('rdap-error.org')).o.factors).toEqual(['domain_age_unknown'])
    expect((await answer('constructor.example')).o.details.age_band).toBe('3_years_plus')
    expect((await answer('__proto__.example')).o.details.age_band).toBe('3_years_plus')
  })

  it('unregistered answers are free of charge (found false)', async () => {
    expect((await answer('unregistered.example')).o.details.found).toBe(false)
  })

  it('lookupDomainAge answers from the magic table in test mode', async () => {
    const r = await lookupDomainAge(ctx, 'young-domain.example')
    expect(r).toMatchObject({ partial: false, details: { age_days: 20 } })
    expect((await lookupDomainAge(ctx, 'rdap-timeout.example')).details.age_days).toBeNull()
  })

  it('rejects inputs with no parsable host', () => {
    let err: unknown
    try {
      domainAgeCheck.prepare('not a domain', {}, ctx)
    } catch (e) {
      err = e
    }
    expect(isRiskcheckError(err, 'INVALID_INPUT')).toBe(true)
  })
})

/**
 * Date math of the domain-age lookup at the band and factor edges, with a fixed clock, through a stub RDAP source
 * (no network) and through the pure `computeDomainAges`.
 */
import { describe, expect, it } from 'vitest'
import { computeDomainAges, domainAgeCheck } from '../src/checks/domain-age.js'
import type { CheckContext, Sources } from '../src/checks/types.js'
import type { ResolvedOptions } from '../src/options.js'
import type { RdapAnswer } from '../src/sources/rdap.js'

const NOW = new Date('2026-11-22T12:00:00Z')
const DAY = 86_400_000
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString()
const ahead = (ms: number) => new Date(NOW.getTime() + ms).toISOString()

function stubContext(answer: Partial<RdapAnswer>): CheckContext {
  const rdap = {
    lookup: async (domain: string): Promise<RdapAnswer> => ({
      status: 'found',
      domain,
      created: null,
      updated: null,
      expires: null,
      registrar: null,
      statuses: [],
      nameservers: [],
      dnssec: null,
      ...answer,
    }),
    stats: () => ({ queries: 0, cacheHits: 0, joined: 0, bootstrapFetches: 0 }),
    close: async () => {},
  }
  return { now: () => NOW, mode: 'live', offline: false, sources: { rdap } as unknown as Sources, options: {} as ResolvedOptions }
}

async function run(answer: Partial<RdapAnswer>) {
  const ctx = stubContext(answer)
  const { input } = domainAgeCheck.prepare('edge.example', {}, ctx)
  return domainAgeCheck.run(ctx, input, {})
}

describe('age bands and registration factors at the edges', () => {
  it.each([
    // [age in ms, age_days, band, factor]
    [0, 0, 'under_7_days', 'domain_newly_registered,domain_brand_new'],
    [7 * DAY - 1, 6, 'under_7_days', 'domain_newly_registered,domain_brand_new'],
    [7 * DAY, 7, 'under_30_days', 'domain_newly_registered'],
    [30 * DAY - 1, 29, 'under_30_days', 'domain_newly_registered'],
    [30 * DAY, 30, 'under_90_days', 'domain_recently_registered'],
    [90 * DAY - 1, 89, 'under_90_days', 'domain_recently_registered'],
    [90 * DAY, 90, 'under_1_year', null],
    [364 * DAY, 364, 'under_1_year', null],
  ] as const)('created %d ms ago → %d days, %s', async (ageMs, days, band, factor) => {
    const o = await run({ created: ago(ageMs), expires: ahead(365 * DAY) })
    expect(o.details.age_days).toBe(days)
    expect(o.details.age_band).toBe(band)
    expect(o.details.is_newly_registered).toBe(days < 30)
    expect(o.factors).toEqual(factor === null ? [] : factor.split(','))
    expect(o.partial).toBe(false)
  })

  it('year bands follow calendar anniversaries (UTC), age_years is truncated to one decimal', async () => {
    // 2025-11-22T12:00Z is exactly one year before NOW (365 days, no leap day in between)
    let o = await run({ created: '2025-11-22T12:00:01Z' })
    expect(o.details.age_band).toBe('under_1_year')
    expect(o.details.age_days).toBe(364)
    expect(o.details.age_years).toBe(0.9)
    o = await run({ created: '2025-11-22T12:00:00Z' })
    expect(o.details.age_band).toBe('under_3_years')
    expect(o.details.age_days).toBe(365)
    expect(o.details.age_years).toBe(1)
    // three years back spans 29 Feb 2024: 1096 days
    o = await run({ created: '2023-11-22T12:00:01Z' })
    expect(o.details.age_band).toBe('under_3_years')
    expect(o.details.age_years).toBe(2.9)
    o = await run({ created: '2023-11-22T12:00:00Z' })
    expect(o.details.age_band).toBe('3_years_plus')
    expect(o.details.age_days).toBe(1096)
    expect(o.details.age_years).toBe(3)
    // half a year
    o = await run({ created: '2026-05-22T12:00:00Z' })
    expect(o.details.age_years).toBe(0.5)
  })

  it('a 29 February registration has its anniversary on 1 March in common years', () => {
    const created = '2024-02-29T00:00:00Z'
    expect(computeDomainAges(new Date('2025-02-28T23:59:59Z'), created, null).ageBand).toBe('under_1_year')
    expect(computeDomainAges(new Date('2025-03-01T00:00:00Z'), created, null)).toMatchObject({ ageBand: 'under_3_years', ageYears: 1 })
    expect(computeDomainAges(new Date('2028-02-29T00:00:00Z'), created, null)).toMatchObject({ ageBand: '3_years_plus', ageYears: 4 })
  })

  it('a creation date in the future counts as registered today', async () => {
    const o = await run({ created: ahead(5 * DAY) })
    expect(o.details.age_days).toBe(0)
    expect(o.details.age_years).toBe(0)
    expect(o.details.age_band).toBe('under_7_days')
    expect(o.factors).toEqual(['domain_newly_registered', 'domain_brand_new'])
  })

  it.each([
    [30 * DAY, 30, false],
    [30 * DAY - 1, 29, true],
    [1, 0, true],
    [0, 0, true],
    [-1, -1, true],
    [-3 * DAY, -3, true],
  ] as const)('expires in %d ms → days_until_expiry %d, expiring soon %s', async (inMs, days, soon) => {
    const o = await run({ created: ago(4000 * DAY), expires: ahead(inMs) })
    expect(o.details.days_until_expiry).toBe(days)
    expect(o.factors.includes('domain_expiring_soon')).toBe(soon)
  })

  it('a found domain without a registration date: unknown age, never new, not partial', async () => {
    const o = await run({ created: null, expires: ahead(100 * DAY), registrar: 'Some Registrar' })
    expect(o.details).toMatchObject({
      found: true,
      registered: true,
      is_newly_registered: false,
      age_days: null,
      age_years: null,
      age_band: null,
      days_until_expiry: 100,
      registrar: 'Some Registrar',
    })
    expect(o.factors).toEqual(['domain_age_unknown'])
    expect(o.partial).toBe(false)
    expect(o.reasons?.domain_age_unknown).toContain('no registration date')
  })

  it('unparsable dates are unknown, not zero', () => {
    expect(computeDomainAges(NOW, 'yesterday', 'soon')).toEqual({ ageDays: null, ageYears: null, ageBand: null, daysUntilExpiry: null })
  })

  it('the clock is ctx.now(): the same answer read a year later is a year older', async () => {
    const answer: Partial<RdapAnswer> = { created: '2026-11-01T00:00:00Z', expires: '2027-11-01T00:00:00Z' }
    const later: CheckContext = { ...stubContext(answer), now: () => new Date('2027-10-25T00:00:00Z') }
    const { input } = domainAgeCheck.prepare('edge.example', {}, later)
    const o = await domainAgeCheck.run(later, input, {})
    expect(o.details.age_days).toBe(358)
    expect(o.details.days_until_expiry).toBe(7)
    expect(o.factors).toEqual(['domain_expiring_soon'])
  })
})

/**
 * The domain-age seam of the email lookup: with RDAP configured (here: the loopback RDAP server), `domain_age_days`
 * comes from the domain-age lookup and a young domain makes the address risky; without RDAP it stays null.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertValidResult } from './validate.js'
import { startMailWorld, type MailWorld } from './fake-internet/mail-world.js'
import { daysAfter, daysBefore, startRdapServer, type RdapServer } from './fake-internet/rdap-server.js'
import type { Zones } from './fake-internet/dns-server.js'

const NOW = new Date('2026-11-22T09:30:00Z')
const zones: Zones = {}
for (const d of ['fresh-shop.com', 'month-old-shop.com', 'old-shop.com', 'rdap-slow-shop.com', 'eu.old-shop.com']) {
  zones[d] = { MX: [{ priority: 10, exchange: 'mx.old-shop.com' }], TXT: ['v=spf1 -all'] }
}
zones['mx.old-shop.com'] = { A: ['127.0.0.1'] }

let rdap: RdapServer
let world: MailWorld
let impatientWorld: MailWorld
let offlineWorld: MailWorld

/**
 * Time limits no loaded machine reaches on loopback: an answer that comes is always waited for. Only the RDAP
 * time-out case has a short limit, against a domain whose RDAP answer never comes while the suite runs.
 */
const PATIENT = { dns: { timeoutMs: 10_000 }, smtp: { timeoutMs: 10_000 } }

beforeAll(async () => {
  rdap = await startRdapServer({
    now: () => NOW,
    domains: {
      'fresh-shop.com': { kind: 'domain', created: daysBefore(NOW, 3), expires: daysAfter(NOW, 362) },
      'month-old-shop.com': { kind: 'domain', created: daysBefore(NOW, 45), expires: daysAfter(NOW, 320) },
      'old-shop.com': { kind: 'domain', created: daysBefore(NOW, 4000), expires: daysAfter(NOW, 700) },
      'rdap-slow-shop.com': { kind: 'domain', created: daysBefore(NOW, 4000), delayMs: 3_600_000 },
    },
  })
  world = await startMailWorld({
    zones,
    smtpServer: { onRcpt: (a) => (a.startsWith('jane@') ? 'accept' : 'reject') },
    riskcheck: { now: () => NOW, ...PATIENT, rdap: { bootstrapUrl: rdap.bootstrapUrl, timeoutMs: 10_000 } },
  })
  impatientWorld = await startMailWorld({
    zones,
    smtpServer: { onRcpt: (a) => (a.startsWith('jane@') ? 'accept' : 'reject') },
    riskcheck: { now: () => NOW, ...PATIENT, rdap: { bootstrapUrl: rdap.bootstrapUrl, timeoutMs: 300 } },
  })
  offlineWorld = await startMailWorld({ zones, riskcheck: { now: () => NOW, offline: true, rdap: { bootstrapUrl: rdap.bootstrapUrl } } })
})
afterAll(async () => {
  await world?.close()
  await impatientWorld?.close()
  await offlineWorld?.close()
  await rdap?.close()
})

describe('domain_age_days in the email lookup', () => {
  it('a domain registered 3 days ago: newly registered and brand new → risky, review (as the domain-age lookup says)', async () => {
    const r = await world.email('jane@fresh-shop.com')
    assertValidResult(r, 'email')
    expect(r.details).toMatchObject({ domain_age_days: 3, smtp_check: 'deliverable' })
    expect(r.risk.factors).toEqual(expect.arrayContaining(['domain_newly_registered', 'domain_brand_new']))
    expect(r.verdict.status).toBe('risky')
    expect(r.recommendation.action).toBe('review')
    expect(r.metadata.data_sources).toContain('rdap')
  })

  it('45 days: domain_recently_registered → risky', async () => {
    const r = await world.email('jane@month-old-shop.com')
    expect(r.details.domain_age_days).toBe(45)
    expect(r.risk.factors).toContain('domain_recently_registered')
    expect(r.verdict.status).toBe('risky')
  })

  it('an old domain adds nothing; a subdomain is looked up by its registrable domain', async () => {
    const r = await world.email('jane@eu.old-shop.com')
    expect(r.details.domain_age_days).toBe(4000)
    expect(r.verdict.status).toBe('valid')
    expect(rdap.requests.some((q) => q.path.endsWith('/domain/old-shop.com'))).toBe(true)
    expect(rdap.requests.some((q) => q.path.includes('eu.old-shop.com'))).toBe(false)
  })

  it('RDAP timing out leaves domain_age_days null and the result partial, never invalid', async () => {
    const r = await impatientWorld.email('jane@rdap-slow-shop.com')
    assertValidResult(r, 'email')
    expect(r.details.domain_age_days).toBeNull()
    expect(r.partial).toBe(true)
    expect(r.details.smtp_check).toBe('deliverable')
    expect(r.verdict.status).not.toBe('invalid')
  })

  it('offline: RDAP is not asked', async () => {
    const before = rdap.requests.length
    const r = await offlineWorld.email('jane@fresh-shop.com')
    expect(r.details.domain_age_days).toBeNull()
    expect(rdap.requests.length).toBe(before)
  })
})

describe('a cached email answer is brought up to date', () => {
  it('recomputes domain_age_days and the age factors from the remembered registration date', async () => {
    const { createRiskcheck } = await import('../src/riskcheck.js')
    const { fakeClock } = await import('./clock.js')
    const clock = fakeClock(NOW)
    const rc = createRiskcheck({
      now: clock.now,
      dns: { servers: [world.dnsServer.address], timeoutMs: 10_000, tries: 1 },
      smtp: { enabled: false },
      rdap: { bootstrapUrl: rdap.bootstrapUrl, timeoutMs: 10_000 },
    })
    try {
      const first = await rc.email('jane@fresh-shop.com')
      expect(first.details.domain_age_days).toBe(3)
      expect(first.risk.factors).toEqual(expect.arrayContaining(['domain_newly_registered', 'domain_brand_new']))
      expect(first).not.toHaveProperty('memo')
      clock.advance(5 * 86_400_000)
      const later = await rc.email('jane@fresh-shop.com')
      expect(later.metadata.cache_hit).toBe(true)
      expect(later.details.domain_age_days).toBe(8)
      expect(later.risk.factors).toContain('domain_newly_registered')
      expect(later.risk.factors).not.toContain('domain_brand_new')
      assertValidResult(later, 'email')
    } finally {
      await rc.close()
    }
  })
})

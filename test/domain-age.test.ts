/**
 * The domain-age lookup end to end against the loopback RDAP server: input parsing → rdapper → details → factors
 * → verdict (scoring engine), with a fixed clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { domainAgeCheck, lookupDomainAge } from '../src/checks/domain-age.js'
import { isRiskcheckError } from '../src/errors.js'
import { DomainAgeDataSchema, type DomainAgeData } from '../src/schema.js'
import { evaluate } from '../src/scoring/engine.js'
import type { CheckContext, CheckOutcome, Sources } from '../src/checks/types.js'
import type { ResolvedOptions } from '../src/options.js'
import { createRdapSource, type RdapSourceOptions } from '../src/sources/rdap.js'
import { Value } from '@sinclair/typebox/value'
import { daysAfter, daysBefore, standardRdapDomains, startRdapServer, type RdapServer } from './fake-internet/rdap-server.js'

type TestCtx = CheckContext & { close(): Promise<void> }

/** A check context with only the RDAP source (built as the facade builds it: options + the context clock). */
function createRdapContext(opts: { offline?: boolean; rdap: RdapSourceOptions }): TestCtx {
  const now = () => NOW
  const rdap = createRdapSource({ ...opts.rdap, now })
  return {
    now,
    mode: 'live',
    offline: opts.offline ?? false,
    sources: { rdap } as unknown as Sources,
    options: {} as ResolvedOptions,
    close: () => rdap.close(),
  }
}

const schemaErrors = (v: unknown) => [...Value.Errors(DomainAgeDataSchema, v)].map((e) => `${e.path} ${e.message}`)

const NOW = new Date('2026-11-22T09:30:00Z')
const iso = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString()

let server: RdapServer
let ctx: TestCtx

beforeAll(async () => {
  server = await startRdapServer({ domains: standardRdapDomains(NOW, 3_000), now: () => NOW })
  ctx = createRdapContext({ rdap: { bootstrapUrl: server.bootstrapUrl, timeoutMs: 400 } })
})
afterAll(async () => {
  await ctx.close()
  await server.close()
})

async function check(input: unknown, c: CheckContext = ctx): Promise<CheckOutcome<DomainAgeData>> {
  const prepared = domainAgeCheck.prepare(input, {}, c)
  const outcome = await domainAgeCheck.run(c, prepared.input, {})
  expect(schemaErrors(outcome.details)).toEqual([])
  return outcome
}

const verdict = (o: CheckOutcome<unknown>) =>
  evaluate(o.factors, { ...(o.reasons ? { reasons: o.reasons } : {}), ...(o.validReason ? { validReason: o.validReason } : {}) })

describe('domain age against the loopback RDAP server', () => {
  it('a domain registered years ago: every field, valid → approve', async () => {
    const o = await check('old-domain.test')
    expect(o.details).toEqual({
      domain: 'old-domain.test',
      found: true,
      registered: true,
      is_newly_registered: false,
      created_date: iso(daysBefore(NOW, 4000)),
      updated_date: null,
      expires_date: iso(daysAfter(NOW, 700)),
      age_days: 4000,
      days_until_expiry: 700,
      age_years: 10.9,
      age_band: '3_years_plus',
      registrar: 'MarkMonitor Inc.',
      statuses: [
        'client delete prohibited',
        'client transfer prohibited',
        'client update prohibited',
        'server delete prohibited',
        'server transfer prohibited',
        'server update prohibited',
      ],
      nameservers: ['ns1.google.com', 'ns2.google.com', 'ns3.google.com', 'ns4.google.com'],
      dnssec: true,
    })
    expect(o.factors).toEqual([])
    expect(o.partial).toBe(false)
    expect(o.dataSources).toEqual(['rdap'])
    const v = verdict(o)
    expect(v.status).toBe('valid')
    expect(v.action).toBe('approve')
    expect(v.reason).toBe('The domain was registered 10.9 years ago.')
  })

  it('a domain registered days ago, given as a URL: newly registered and brand new → risky, review', async () => {
    const o = await check('https://www.New-Domain.test:8443/signup?x=1')
    expect(o.details.domain).toBe('new-domain.test')
    expect(o.details.age_days).toBe(3)
    expect(o.details.age_years).toBe(0)
    expect(o.details.age_band).toBe('under_7_days')
    expect(o.details.is_newly_registered).toBe(true)
    expect(o.details.registrar).toBe('Hosting Concepts B.V. d/b/a Registrar.eu')
    expect(o.details.dnssec).toBe(false)
    expect(o.factors).toEqual(['domain_newly_registered', 'domain_brand_new'])
    const v = verdict(o)
    expect(v.status).toBe('risky')
    expect(v.action).toBe('review')
  })

  it('an email address asks about the registrable domain of its host', async () => {
    const before = server.requests.length
    const o = await check('someone@mail.eu.recent-domain.test')
    expect(o.details.domain).toBe('recent-domain.test')
    expect(server.requests.slice(before).map((r) => r.path)).toContain('/rdap/domain/recent-domain.test')
    expect(o.details.age_days).toBe(45)
    expect(o.details.age_band).toBe('under_90_days')
    expect(o.details.is_newly_registered).toBe(false)
    expect(o.factors).toEqual(['domain_recently_registered'])
    expect(verdict(o).status).toBe('risky')
  })

  it('an old domain close to expiry fires domain_expiring_soon only', async () => {
    const o = await check('expiring-domain.test')
    expect(o.details.days_until_expiry).toBe(10)
    expect(o.details.age_band).toBe('3_years_plus')
    expect(o.factors).toEqual(['domain_expiring_soon'])
    expect(verdict(o).status).toBe('valid')
  })

  it('a ccTLD-shaped answer without an expiration event', async () => {
    const o = await check('cctld-domain.test')
    expect(o.details.expires_date).toBeNull()
    expect(o.details.days_until_expiry).toBeNull()
    expect(o.details.updated_date).toBe(iso(daysBefore(NOW, 20)))
    expect(o.details.registrar).toBe('Domeneshop AS')
    expect(o.details.dnssec).toBeNull()
    expect(o.details.age_band).toBe('under_3_years')
    expect(o.details.age_years).toBe(1.6)
    expect(o.factors).toEqual([])
  })

  it('RDAP 404: not registered → invalid, block, nothing found (billed free)', async () => {
    const o = await check('unregistered.test')
    expect(o.details).toMatchObject({
      domain: 'unregistered.test',
      found: false,
      registered: false,
      is_newly_registered: false,
      age_days: null,
      age_band: null,
    })
    expect(o.factors).toEqual(['domain_not_registered'])
    expect(o.partial).toBe(false)
    const v = verdict(o)
    expect(v.status).toBe('invalid')
    expect(v.action).toBe('block')
  })

  it('a slow registry: partial, unknown age (never new) → unknown', async () => {
    const o = await check('slow-domain.test')
    expect(o.partial).toBe(true)
    expect(o.details).toMatchObject({ found: false, is_newly_registered: false, age_days: null, age_years: null, age_band: null })
    expect(o.factors).toEqual(['domain_age_unknown'])
    expect(o.reasons?.domain_age_unknown).toContain('did not answer in time')
    const v = verdict(o)
    expect(v.status).toBe('unknown')
    expect(v.confidence).not.toBe('high')
  })

  it('a malformed answer, a non-domain object and an HTTP 500: partial, unknown', async () => {
    for (const name of ['malformed.test', 'wrong-object.test', 'broken.test']) {
      const o = await check(name)
      expect(o.partial, name).toBe(true)
      expect(o.factors, name).toEqual(['domain_age_unknown'])
      expect(o.reasons?.domain_age_unknown, name).toContain('failed')
      expect(o.details.age_band, name).toBeNull()
    }
  })

  it('a failure is not cached: the next lookup asks again and can succeed', async () => {
    server.setDomain('flaky.test', { kind: 'http_error', status: 503 })
    expect((await check('flaky.test')).partial).toBe(true)
    server.setDomain('flaky.test', { kind: 'domain', created: daysBefore(NOW, 10) })
    const o = await check('flaky.test')
    expect(o.partial).toBe(false)
    expect(o.details.age_band).toBe('under_30_days')
  })

  it('a host without a registrable domain is not registered, without any RDAP request', async () => {
    const before = server.requests.length
    for (const input of ['localhost', 'user@localhost', 'co.uk']) {
      const o = await check(input)
      expect(o.factors).toEqual(['domain_not_registered'])
      expect(o.details.found).toBe(false)
    }
    expect(server.requests.length).toBe(before)
  })

  it('prepare: INVALID_INPUT without a parsable host; the cache key is the registrable domain', () => {
    for (const bad of ['', 'not a domain', 42, null, undefined, {}, 'http://1.2.3.4/', '[::1]', 'a'.repeat(5000)]) {
      let err: unknown
      try {
        domainAgeCheck.prepare(bad, {}, ctx)
      } catch (e) {
        err = e
      }
      expect(isRiskcheckError(err, 'INVALID_INPUT'), JSON.stringify(bad)).toBe(true)
    }
    expect(domainAgeCheck.prepare('https://WWW.Old-Domain.test./a', {}, ctx)).toEqual({
      input: { domain: 'old-domain.test', registrable: true },
      cacheKey: 'old-domain.test',
    })
    expect(domainAgeCheck.prepare('x@eu.corp.com', {}, ctx).cacheKey).toBe('corp.com')
    expect(domainAgeCheck.prepare('Bücher.de', {}, ctx).cacheKey).toBe('xn--bcher-kva.de')
  })
})

describe('lookupDomainAge (used by the email lookup)', () => {
  it('gives age_days for a registrable domain', async () => {
    const r = await lookupDomainAge(ctx, 'new-domain.test')
    expect(r.partial).toBe(false)
    expect(r.details.age_days).toBe(3)
  })

  it('offline: null ages and no request; not partial (RDAP was not asked, nothing failed)', async () => {
    const offline = createRdapContext({ offline: true, rdap: { bootstrapUrl: server.bootstrapUrl } })
    const before = server.requests.length
    const r = await lookupDomainAge(offline, 'old-domain.test')
    expect(r.partial).toBe(false)
    expect(r.details.age_days).toBeNull()
    expect(r.details.age_band).toBeNull()
    expect(server.requests.length).toBe(before)
    const o = await check('old-domain.test', offline)
    expect(o.factors).toEqual(['domain_age_unknown'])
    expect(o.dataSources).toEqual([])
    await offline.close()
  })

  it('a timeout gives partial and null ages', async () => {
    const r = await lookupDomainAge(ctx, 'slow-domain.test')
    expect(r.partial).toBe(true)
    expect(r.details.age_days).toBeNull()
  })
})

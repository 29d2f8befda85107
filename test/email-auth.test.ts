/**
 * The email-authentication lookup end to end against the loopback DNS server (test/fake-internet/dns-server.ts)
 * through the real DNS source (src/sources/dns.ts): one domain per grade, an SPF include chain over 10 lookups,
 * void lookups, two SPF records, DMARC inherited from the organizational domain, a DNS timeout, concurrency, and
 * the public facade (`rc.emailAuth`) with schema validation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emailAuthCheck, inspectEmailAuth } from '../src/checks/email-auth/index.js'
import type { CheckContext, CheckOutcome, Sources } from '../src/checks/types.js'
import type { ResolvedOptions } from '../src/options.js'
import { createRiskcheck } from '../src/riskcheck.js'
import type { EmailAuthData } from '../src/schema.js'
import { evaluate } from '../src/scoring/engine.js'
import { createDnsSource } from '../src/sources/dns.js'
import type { DnsSource } from '../src/sources/dns-types.js'
import { startDnsServer, type FakeDnsServer, type Zones } from './fake-internet/dns-server.js'
import { assertValidResult, schemaErrors } from './validate.js'
import { EmailAuthDataSchema } from '../src/schema.js'

const KEY_PARTS = ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAw1', 'yv4t3kzQ3Xo2h8H0ZtestkeyTAIL']
const mx = (d: string) => [{ priority: 10, exchange: `mx.${d}` }]
const dmarc = (p: string, extra = '') => [`v=DMARC1; p=${p}; rua=mailto:dmarc-reports@example.net${extra}`]

/** A complete sending domain; `over` replaces or removes (undefined) names relative to the domain. */
function domain(d: string, over: { spf?: string[]; dmarc?: string[] | null; dkim?: boolean; bimi?: boolean; mx?: boolean } = {}): Zones {
  const z: Zones = {
    [d]: { A: ['192.0.2.10'], ...(over.mx === false ? {} : { MX: mx(d) }), TXT: over.spf ?? [`v=spf1 include:_spf.${d} -all`] },
    [`_spf.${d}`]: { TXT: [`v=spf1 ip4:192.0.2.0/24 a:relay.${d} ~all`] },
    [`relay.${d}`]: { A: ['192.0.2.25'] },
  }
  if (over.dmarc !== null) z[`_dmarc.${d}`] = { TXT: over.dmarc ?? dmarc('reject') }
  if (over.dkim !== false) {
    // selector1 is a CNAME to the provider, as Microsoft 365 publishes it; the key is split into two strings
    z[`selector1._domainkey.${d}`] = { CNAME: `selector1-${d.replace(/\./g, '-')}._domainkey.provider.example` }
    z[`selector1-${d.replace(/\./g, '-')}._domainkey.provider.example`] = { TXT: [KEY_PARTS] }
  }
  if (over.bimi) z[`default._bimi.${d}`] = { TXT: [`v=BIMI1; l=https://${d}/logo.svg; a=https://${d}/vmc.pem`] }
  return z
}

function chain(d: string, depth: number): Zones {
  const z: Zones = {}
  for (let i = 1; i <= depth; i++) {
    z[`l${i}.${d}`] = { A: ['192.0.2.1'], TXT: [i < depth ? `v=spf1 a include:l${i + 1}.${d} ~all` : 'v=spf1 a ~all'] }
  }
  return z
}

const ZONES: Zones = {
  ...domain('aplus.test', { bimi: true }),
  ...domain('a.test'),
  ...domain('b.test', { dmarc: dmarc('quarantine') }),
  ...domain('c.test', { dmarc: dmarc('none') }),
  ...domain('d.test', { dmarc: null }),
  ...domain('f.test', { spf: ['v=spf1 +all'], dmarc: null, dkim: false }),
  // include chain: include:l1 → l1 (a, include:l2) → … → l6 (a): 12 DNS terms
  ...domain('chain.test', { spf: ['v=spf1 include:l1.chain.test -all'] }),
  ...chain('chain.test', 6),
  // three void lookups (NXDOMAIN a, NXDOMAIN mx, NODATA exists)
  ...domain('void.test', { spf: ['v=spf1 a:gone1.void.test mx:gone2.void.test exists:empty.void.test -all'] }),
  'empty.void.test': { TXT: ['nothing here'] },
  ...domain('void2.test', { spf: ['v=spf1 a:gone1.void2.test mx:gone2.void2.test -all'] }),
  ...domain('two.test', { spf: ['v=spf1 mx -all', 'v=spf1 ip4:192.0.2.0/24 -all'] }),
  // organizational domain with DMARC (sp=quarantine) and BIMI; the subdomain has its own MX/SPF/DKIM
  ...domain('corp.test', { dmarc: dmarc('reject', '; sp=quarantine'), bimi: true }),
  ...domain('eu.corp.test', { dmarc: null }),
  // everything at the host times out
  'timeout.test': { behaviour: 'timeout' },
  '_dmarc.timeout.test': { behaviour: 'timeout' },
  // every answer for this domain is delayed, to show the questions overlap
  ...Object.fromEntries(Object.entries(domain('slow.test', { bimi: true })).map(([n, e]) => [n, { ...e, behaviour: { delayMs: 60 } }])),
  '*._domainkey.slow.test': { behaviour: { delayMs: 60 } },
}

let server: FakeDnsServer
let dns: DnsSource
let ctx: CheckContext

beforeAll(async () => {
  server = await startDnsServer({ zones: ZONES })
  dns = createDnsSource({ servers: [server.address], timeoutMs: 150, tries: 1, cacheTtlSeconds: 0, maxInFlight: 64 })
  ctx = { now: () => new Date('2026-11-22T00:00:00Z'), mode: 'live', offline: false, sources: { dns } as unknown as Sources, options: {} as ResolvedOptions }
})
afterAll(async () => {
  dns.close()
  await server.close()
})

async function check(input: string): Promise<CheckOutcome<EmailAuthData>> {
  const prepared = emailAuthCheck.prepare(input, {}, ctx)
  const outcome = await emailAuthCheck.run(ctx, prepared.input, {})
  expect(schemaErrors(EmailAuthDataSchema, outcome.details)).toEqual([])
  return outcome
}

const verdict = (o: CheckOutcome<unknown>) => evaluate(o.factors, o.validReason ? { validReason: o.validReason } : {})

describe('one domain per grade (loopback DNS)', () => {
  it('A+: p=reject, -all, DKIM (CNAME, multi-string key), BIMI, MX', async () => {
    const o = await check('aplus.test')
    expect(o.details).toMatchObject({
      grade: 'A+',
      mx: { found: true, records: ['mx.aplus.test'] },
      spf: { found: true, policy: 'fail', dns_lookups: 2, too_many_lookups: false },
      dmarc: { found: true, policy: 'reject', pct: 100 },
      dkim: { found: true, selectors_found: ['selector1'], selectors_checked: 48 },
      bimi: { found: true },
    })
    expect(o.factors).toEqual([])
    expect(verdict(o)).toMatchObject({ status: 'valid', action: 'approve' })
  })

  it('A: as A+ without BIMI', async () => {
    expect((await check('a.test')).details.grade).toBe('A')
  })

  it('B: p=quarantine', async () => {
    const o = await check('b.test')
    expect(o.details.grade).toBe('B')
    expect(o.factors).toEqual(['auth_dmarc_weak'])
  })

  it('C: p=none', async () => {
    const o = await check('c.test')
    expect(o.details.grade).toBe('C')
    expect(o.factors).toEqual(['auth_dmarc_none'])
  })

  it('D: no DMARC', async () => {
    const o = await check('d.test')
    expect(o.details).toMatchObject({ grade: 'D', dmarc: { found: false, record: null, policy: null, pct: null } })
    expect(o.factors).toEqual(['auth_no_dmarc'])
  })

  it('F: +all and no DMARC → block', async () => {
    const o = await check('f.test')
    expect(o.details).toMatchObject({ grade: 'F', spf: { policy: 'pass' } })
    expect(o.factors).toEqual(['auth_spf_pass_all', 'auth_no_dmarc', 'auth_no_dkim'])
    expect(verdict(o)).toMatchObject({ status: 'risky', action: 'block' })
  })
})

describe('SPF edge cases (loopback DNS)', () => {
  it('an include chain over 10 lookups: too_many_lookups, permerror, grade C', async () => {
    const before = server.queries.length
    const o = await check('chain.test')
    expect(o.details.spf).toMatchObject({ found: true, dns_lookups: 11, too_many_lookups: true, policy: 'fail' })
    expect(o.details.grade).toBe('C')
    expect(o.factors).toEqual(['auth_spf_too_many_lookups'])
    // the walk stopped: l6 (the 12th term's record) was never asked for
    const asked = server.queries.slice(before).map((q) => q.name)
    expect(asked).toContain('l5.chain.test')
    expect(asked).not.toContain('l6.chain.test')
  })

  it('three void lookups: permerror', async () => {
    const report = await inspectEmailAuth(dns, 'void.test', 'void.test')
    expect(report.spf).toMatchObject({ status: 'permerror', voidLookups: 3, tooManyVoidLookups: true, dnsLookups: 3 })
    const o = await check('void.test')
    expect(o.factors).toEqual(['auth_spf_permerror'])
    expect(o.details.grade).toBe('C')
  })

  it('two void lookups are within the limit', async () => {
    const report = await inspectEmailAuth(dns, 'void2.test', 'void2.test')
    expect(report.spf).toMatchObject({ status: 'ok', voidLookups: 2, tooManyVoidLookups: false })
  })

  it('two SPF records: permerror, grade C', async () => {
    const o = await check('two.test')
    expect(o.details.spf).toMatchObject({ found: true, record: 'v=spf1 mx -all', policy: null })
    expect(o.factors).toEqual(['auth_spf_permerror'])
    expect(o.details.grade).toBe('C')
  })
})

describe('DMARC from the organizational domain (loopback DNS)', () => {
  it('x@eu.corp.test is checked at eu.corp.test; DMARC (and BIMI) come from corp.test, sp applies', async () => {
    const o = await check('someone@eu.corp.test')
    expect(o.details).toMatchObject({
      domain: 'eu.corp.test',
      mx: { found: true, records: ['mx.eu.corp.test'] },
      spf: { found: true, record: 'v=spf1 include:_spf.eu.corp.test -all' },
      dmarc: { found: true, policy: 'reject', subdomain_policy: 'quarantine' },
      bimi: { found: true },
      grade: 'B',
    })
    expect(o.factors).toEqual(['auth_dmarc_weak'])
    const report = await inspectEmailAuth(dns, 'eu.corp.test', 'corp.test')
    expect(report.dmarc).toMatchObject({ inherited: true, location: '_dmarc.corp.test', effectivePolicy: 'quarantine' })
  })
})

describe('DNS failures (loopback DNS)', () => {
  it('a timeout makes the result partial and unknown, never an F', async () => {
    const o = await check('timeout.test')
    expect(o.partial).toBe(true)
    expect(o.factors).toContain('auth_dns_unavailable')
    expect(o.details.grade).not.toBe('F')
    expect(o.details.grade).toBe('D')
    expect(verdict(o).status).toBe('unknown')
  })
})

describe('concurrency (loopback DNS)', () => {
  it('the questions of one lookup overlap: ~2 rounds, not 55 sequential ones', async () => {
    const before = server.queries.length
    server.resetPending()
    const o = await check('slow.test')
    const sent = server.queries.length - before
    expect(o.details.grade).toBe('A+')
    // MX, TXT, 1 DMARC, 48 DKIM, 1 BIMI (host = org domain) + include _spf + A/AAAA of relay
    expect(sent).toBe(55)
    // the server (60 ms per answer) held the whole first round at once; one after another it would hold 1
    expect(server.maxPending()).toBeGreaterThanOrEqual(50)
  })
})

describe('the facade', () => {
  it('rc.emailAuth returns a schema-valid result; a bad input is INVALID_INPUT', async () => {
    const rc = createRiskcheck({ dns: { servers: [server.address], timeoutMs: 200, tries: 1 } })
    try {
      const result = await rc.emailAuth('https://www.c.test/x')
      assertValidResult(result, 'email_auth')
      expect(result.details).toMatchObject({ domain: 'www.c.test' })
      const top = await rc.emailAuth('c.test')
      expect(top.details.grade).toBe('C')
      expect(top.risk.factors).toEqual(['auth_dmarc_none'])
      await expect(rc.emailAuth('not a domain')).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    } finally {
      await rc.close()
    }
  })
})

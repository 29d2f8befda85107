import { Value } from '@sinclair/typebox/value'
import { describe, expect, it } from 'vitest'
import { createFakeDns, type FakeZone } from '../../../test/email-auth-fake-dns.js'
import { isRiskcheckError } from '../../errors.js'
import type { ResolvedOptions } from '../../options.js'
import { EmailAuthDataSchema } from '../../schema.js'
import { evaluate } from '../../scoring/engine.js'
import type { DnsSource } from '../../sources/dns-types.js'
import type { CheckContext, CheckOutcome, Sources } from '../types.js'
import { emailAuthCheck, type EmailAuthInput } from './index.js'
import type { EmailAuthData } from '../../schema.js'

function ctxWith(dns: DnsSource, over: Partial<CheckContext> = {}): CheckContext {
  return {
    now: () => new Date('2026-11-22T00:00:00Z'),
    mode: 'live',
    offline: false,
    sources: { dns } as unknown as Sources,
    options: {} as ResolvedOptions,
    ...over,
  }
}

const schemaErrors = (v: unknown) => [...Value.Errors(EmailAuthDataSchema, v)].map((e) => `${e.path} ${e.message}`)

async function run(zone: FakeZone, input: string, delayMs = 0): Promise<CheckOutcome<EmailAuthData>> {
  const dns = createFakeDns(zone, { delayMs })
  const ctx = ctxWith(dns)
  const prepared = emailAuthCheck.prepare(input, {}, ctx)
  const outcome = await emailAuthCheck.run(ctx, prepared.input, {})
  expect(schemaErrors(outcome.details)).toEqual([])
  return outcome
}

const KEY = 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA'

describe('emailAuthCheck.prepare', () => {
  const ctx = ctxWith(createFakeDns({}))
  it('takes the host of a domain, URL or email address, with its organizational domain', () => {
    expect(emailAuthCheck.prepare('x@EU.Corp.com', {}, ctx)).toEqual({ input: { host: 'eu.corp.com', orgDomain: 'corp.com' }, cacheKey: 'eu.corp.com' })
    expect(emailAuthCheck.prepare('https://www.example.co.uk/path', {}, ctx).input).toEqual({ host: 'www.example.co.uk', orgDomain: 'example.co.uk' })
    expect(emailAuthCheck.prepare('bücher.de', {}, ctx).input.host).toBe('xn--bcher-kva.de')
  })

  it('rejects inputs with no parsable host with INVALID_INPUT', () => {
    for (const bad of ['not a domain', '', 'http://1.2.3.4/', 42, null, 'x@']) {
      let err: unknown
      try {
        emailAuthCheck.prepare(bad, {}, ctx)
      } catch (e) {
        err = e
      }
      expect(isRiskcheckError(err, 'INVALID_INPUT')).toBe(true)
    }
  })
})

describe('emailAuthCheck.run', () => {
  const good: FakeZone = {
    'corp.example': {
      MX: [{ priority: 10, exchange: 'mx1.corp.example' }, { priority: 20, exchange: 'mx2.corp.example' }],
      TXT: ['v=spf1 include:_spf.corp.example -all', 'google-site-verification=abc'],
    },
    '_spf.corp.example': { TXT: ['v=spf1 ip4:192.0.2.0/24 a:relay.corp.example ~all'] },
    'relay.corp.example': { A: ['192.0.2.25'] },
    '_dmarc.corp.example': { TXT: ['v=DMARC1; p=reject; rua=mailto:dmarc@corp.example'] },
    'selector1._domainkey.corp.example': { TXT: [KEY] },
    'default._bimi.corp.example': { TXT: ['v=BIMI1; l=https://corp.example/logo.svg'] },
  }

  it('produces every documented field of the details, grade A+, no factors', async () => {
    const o = await run(good, 'corp.example')
    expect(o.details).toEqual({
      domain: 'corp.example',
      grade: 'A+',
      mx: { found: true, records: ['mx1.corp.example', 'mx2.corp.example'] },
      spf: { found: true, record: 'v=spf1 include:_spf.corp.example -all', policy: 'fail', dns_lookups: 2, too_many_lookups: false },
      dmarc: { found: true, record: 'v=DMARC1; p=reject; rua=mailto:dmarc@corp.example', policy: 'reject', subdomain_policy: null, rua: 'mailto:dmarc@corp.example', pct: 100 },
      dkim: { found: true, selectors_found: ['selector1'], selectors_checked: 48 },
      bimi: { found: true, record: 'v=BIMI1; l=https://corp.example/logo.svg' },
    })
    expect(o).toMatchObject({ factors: [], partial: false, dataSources: ['dns'] })
    expect(evaluate(o.factors, { validReason: o.validReason ?? '' })).toMatchObject({ status: 'valid', action: 'approve' })
    expect(o.validReason).toBe('Grade A+: DMARC p=reject, SPF -all, DKIM (selector1), BIMI.')
  })

  it('checks the host itself; DMARC and BIMI are inherited from the organizational domain', async () => {
    const o = await run(good, 'someone@eu.corp.example')
    expect(o.details.domain).toBe('eu.corp.example')
    expect(o.details.mx.found).toBe(false)
    expect(o.details.spf.found).toBe(false)
    expect(o.details.dmarc).toMatchObject({ found: true, policy: 'reject' })
    expect(o.details.bimi.found).toBe(true)
    // the host itself does not exist (NXDOMAIN): mail from it cannot be genuine
    expect(o.factors).toEqual(['auth_domain_not_found', 'auth_no_mx', 'auth_no_spf', 'auth_no_dkim'])
  })

  it('sends every first-round question at once', async () => {
    const dns = createFakeDns(good, { delayMs: 20 })
    const ctx = ctxWith(dns)
    await emailAuthCheck.run(ctx, { host: 'eu.corp.example', orgDomain: 'corp.example' }, {})
    // MX + SPF TXT + 2 DMARC + 48 DKIM + 2 BIMI, all in flight together before the first answer
    expect(dns.calls).toHaveLength(54)
    expect(dns.maxInFlight()).toBe(54)
  })

  it('maps facts to factors: +all, no DMARC, softfail, too many lookups, DMARC weak', async () => {
    const plusAll = await run({ 'p.example': { TXT: ['v=spf1 +all'], MX: [{ priority: 1, exchange: 'mx.p.example' }] } }, 'p.example')
    expect(plusAll.details.grade).toBe('F')
    expect(plusAll.factors).toEqual(['auth_spf_pass_all', 'auth_no_dmarc', 'auth_no_dkim'])
    expect(evaluate(plusAll.factors).action).toBe('block')

    const weak = await run({ 'w.example': { TXT: ['v=spf1 ?all'] }, '_dmarc.w.example': { TXT: ['v=DMARC1; p=reject; pct=20'] } }, 'w.example')
    expect(weak.factors).toEqual(['auth_no_mx', 'auth_spf_softfail_or_neutral', 'auth_dmarc_weak', 'auth_no_dkim'])
    expect(weak.details.dmarc.pct).toBe(20)

    const none = await run({ 'n.example': { TXT: ['v=spf1 -all'] }, '_dmarc.n.example': { TXT: ['v=DMARC1; p=none'] } }, 'n.example')
    expect(none.factors).toContain('auth_dmarc_none')
    // p=none caps at C, but 48 points (SPF 30 + DMARC 18, no MX, no DKIM) already give D
    expect(none.details.grade).toBe('D')

    const broken = await run({ 'b.example': { TXT: ['v=spf1 ip4:1.2.3.4/40 -all'] } }, 'b.example')
    expect(broken.factors).toContain('auth_spf_permerror')
    expect(broken.details.spf).toMatchObject({ found: true, policy: null, dns_lookups: 0 })
  })

  it('a DNS timeout makes the result partial and never an F', async () => {
    const o = await run({ 'slow.example': { behaviour: 'timeout' }, '_dmarc.slow.example': { behaviour: 'timeout' } }, 'slow.example')
    expect(o.partial).toBe(true)
    expect(o.factors).toContain('auth_dns_unavailable')
    expect(o.details.grade).not.toBe('F')
    // the DKIM names answered NXDOMAIN (auth_no_dkim, info), everything else is unknown
    expect(o.factors).toEqual(['auth_no_dkim', 'auth_dns_unavailable'])
    expect(evaluate(o.factors).status).toBe('unknown')
  })

  it('offline: nothing asked, unknown, not partial (nothing failed)', async () => {
    const dns = createFakeDns(good)
    const ctx = ctxWith(dns, { offline: true })
    const o = await emailAuthCheck.run(ctx, { host: 'corp.example', orgDomain: 'corp.example' }, {})
    expect(dns.calls).toHaveLength(0)
    expect(o).toMatchObject({ partial: false, factors: ['auth_dns_unavailable'], dataSources: [] })
    expect(o.details.grade).toBe('D')
    expect(schemaErrors(o.details)).toEqual([])
  })

  it('a DNS source that throws gives an unknown outcome, not a rejection', async () => {
    const throwing = new Proxy({} as DnsSource, { get: () => () => Promise.reject(new Error('boom')) })
    const o = await emailAuthCheck.run(ctxWith(throwing), { host: 'corp.example', orgDomain: 'corp.example' }, {})
    expect(o).toMatchObject({ partial: true, factors: ['auth_dns_unavailable'] })
    expect(o.reasons?.auth_dns_unavailable).toMatch(/boom/)
  })
})

describe('test mode', () => {
  const expected: Record<string, { grade: string; status: string; action: string; partial?: boolean }> = {
    'grade-a-plus.example': { grade: 'A+', status: 'valid', action: 'approve' },
    'grade-a.example': { grade: 'A', status: 'valid', action: 'approve' },
    'grade-b.example': { grade: 'B', status: 'valid', action: 'approve' },
    'no-dkim.example': { grade: 'B', status: 'valid', action: 'approve' },
    'grade-c.example': { grade: 'C', status: 'risky', action: 'approve' },
    'spf-too-many-lookups.example': { grade: 'C', status: 'risky', action: 'approve' },
    'spf-two-records.example': { grade: 'C', status: 'risky', action: 'approve' },
    'grade-d.example': { grade: 'D', status: 'risky', action: 'approve' },
    'weak-auth.example': { grade: 'D', status: 'risky', action: 'verify' },
    'no-mail-auth.example': { grade: 'F', status: 'risky', action: 'review' },
    'grade-f.example': { grade: 'F', status: 'risky', action: 'block' },
    'no-such-domain.example': { grade: 'F', status: 'invalid', action: 'block' },
    'null-mx.example': { grade: 'B', status: 'risky', action: 'approve' },
    'dmarc-timeout.example': { grade: 'C', status: 'unknown', action: 'approve', partial: true },
    'dns-timeout.example': { grade: 'D', status: 'unknown', action: 'approve', partial: true },
    'postmaster@mail.grade-b.example': { grade: 'B', status: 'valid', action: 'approve' },
    'https://www.grade-c.example/': { grade: 'C', status: 'risky', action: 'approve' },
    'any-other.example': { grade: 'A', status: 'valid', action: 'approve' },
  }
  const ctx = ctxWith(createFakeDns({}), { mode: 'test' })

  it('documents every magic input, and each one behaves as its note says', async () => {
    const inputs = emailAuthCheck.testInputs.map((t) => t.input)
    expect(inputs).toEqual([...Object.keys(expected), 'not a domain'])
    for (const [input, want] of Object.entries(expected)) {
      const note = emailAuthCheck.testInputs.find((t) => t.input === input)?.note ?? ''
      const prepared = emailAuthCheck.prepare(input, {}, ctx)
      const o = await emailAuthCheck.test(ctx, prepared.input as EmailAuthInput, {})
      expect(schemaErrors(o.details)).toEqual([])
      const a = evaluate(o.factors, { validReason: o.validReason ?? '' })
      expect({ input, grade: o.details.grade, status: a.status, action: a.action, partial: o.partial }).toEqual({
        input, grade: want.grade, status: want.status, action: want.action, partial: want.partial ?? false,
      })
      if (!input.includes('@') && !input.includes('/') && input !== 'any-other.example') {
        expect(note).toContain(`grade ${want.grade}`)
        expect(note).toContain(`${want.status}, ${want.action}`)
      }
    }
    expect(() => emailAuthCheck.prepare('not a domain', {}, ctx)).toThrow(/parsable host/)
  })

  it('covers every verdict status and every action', async () => {
    const statuses = new Set(Object.values(expected).map((e) => e.status))
    const actions = new Set(Object.values(expected).map((e) => e.action))
    expect([...statuses].sort()).toEqual(['invalid', 'risky', 'unknown', 'valid'])
    expect([...actions].sort()).toEqual(['approve', 'block', 'review', 'verify'])
  })

  it('run() in test mode answers from the magic zones without touching DNS', async () => {
    const dns = createFakeDns({})
    const o = await emailAuthCheck.run(ctxWith(dns, { mode: 'test' }), { host: 'grade-f.example', orgDomain: 'grade-f.example' }, {})
    expect(o.details.grade).toBe('F')
    expect(dns.calls).toHaveLength(0)
  })
})

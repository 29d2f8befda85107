import { afterAll, describe, expect, it, vi } from 'vitest'
import { createRiskcheck } from '../src/riskcheck.js'
import type { CheckResult } from '../src/schema.js'
import { startDnsServer } from './fake-internet/dns-server.js'
import { assertValidResult } from './validate.js'

const rc = createRiskcheck({ mode: 'test', now: () => new Date('2026-11-22T12:00:00Z') })
afterAll(() => rc.close())

const check = async (input: Parameters<typeof rc.check>[0]): Promise<CheckResult> => {
  const r = await rc.check(input)
  assertValidResult(r, 'check')
  return r
}

const EMAIL = 'deliverable@example.com'
const IP = '192.0.2.1' // test mode: clean, located in the US
const PHONE = '+1 800 234 5678' // test mode: US toll-free

describe('combined check: which parts run', () => {
  it.each([
    [{ email: EMAIL, ip: IP, phone: PHONE }, ['email', 'ip', 'phone']],
    [{ email: EMAIL }, ['email']],
    [{ ip: IP }, ['ip']],
    [{ phone: PHONE }, ['phone']],
    [{ email: EMAIL, ip: IP }, ['email', 'ip']],
    [{ email: EMAIL, phone: PHONE }, ['email', 'phone']],
    [{ ip: IP, phone: PHONE }, ['ip', 'phone']],
  ] as const)('%j → parts %j, others null', async (input, parts) => {
    const r = await check(input)
    for (const p of ['email', 'ip', 'phone'] as const) {
      if ((parts as readonly string[]).includes(p)) {
        expect(r.details[p]).not.toBeNull()
        expect(r.details[p]!.verdict.status).toMatch(/^(valid|invalid|risky|unknown)$/)
        expect(r.details[p]!.risk.score).toBeGreaterThanOrEqual(0)
      } else {
        expect(r.details[p]).toBeNull()
      }
    }
    expect(r.request.type).toBe('check')
    expect(r.metadata.test_mode).toBe(true)
    expect(r.metadata.credits_used).toBe(0)
  })

  it('each part carries its own verdict and risk; the overall factors are the union plus signals', async () => {
    const r = await check({ email: 'disposable@example.com', ip: '192.0.2.8', phone: PHONE })
    expect(r.details.email!.risk.factors).toEqual(['email_disposable'])
    expect(r.details.ip!.risk.factors).toEqual(['ip_tor'])
    expect(r.details.phone!.risk.factors).toEqual(['phone_toll_free'])
    expect(r.risk.factors).toEqual(expect.arrayContaining(['email_disposable', 'ip_tor', 'phone_toll_free', 'disposable_and_vpn']))
    expect(r.details.signals.disposable_and_vpn).toBe(true)
    expect(r.risk.score).toBe(100)
    expect(r.recommendation.action).toBe('block')
  })
})

describe('combined check: cross-signals', () => {
  it('compares the email country (ccTLD) with the IP country', async () => {
    const mismatch = await check({ email: 'jan@web.de', ip: IP })
    expect(mismatch.details.signals.email_ip_country_match).toBe(false)
    expect(mismatch.risk.factors).toContain('email_ip_country_mismatch')
    const match = await check({ email: 'jan@web.de', ip: '203.0.113.1' }) // located in DE
    expect(match.details.signals.email_ip_country_match).toBe(true)
    expect(match.risk.factors).not.toContain('email_ip_country_mismatch')
  })
  it('is null when the email does not point to a country (.com) or a part is missing', async () => {
    expect((await check({ email: EMAIL, ip: IP })).details.signals.email_ip_country_match).toBeNull()
    expect((await check({ email: 'jan@web.de' })).details.signals.email_ip_country_match).toBeNull()
    expect((await check({ ip: IP })).details.signals.phone_ip_country_match).toBeNull()
  })
  it('uses a documented national provider on a generic TLD (qq.com → CN)', async () => {
    const r = await check({ email: 'li@qq.com', ip: IP })
    expect(r.details.signals.email_ip_country_match).toBe(false)
  })
  it('compares the phone country with the IP country', async () => {
    const gb = await check({ phone: '+44 7400 123456', ip: IP })
    expect(gb.details.signals.phone_ip_country_match).toBe(false)
    expect(gb.risk.factors).toContain('phone_ip_country_mismatch')
    const same = await check({ phone: '+44 7400 123456', ip: '198.51.100.1' }) // located in GB
    expect(same.details.signals.phone_ip_country_match).toBe(true)
  })
  it('counts a territory and the state whose numbers and networks it shares as one country (Guernsey and GB, Puerto Rico and the US)', async () => {
    const guernsey = await check({ phone: '+44 7781 123456', ip: '198.51.100.1' }) // a Guernsey mobile on an address located in GB
    expect(guernsey.details.phone?.country.code).toBe('GG')
    expect(guernsey.details.signals.phone_ip_country_match).toBe(true)
    expect(guernsey.risk.factors).not.toContain('phone_ip_country_mismatch')
    const puertoRico = await check({ phone: '+1 787 555 0100', ip: IP }) // located in the US
    expect(puertoRico.details.phone?.country.code).toBe('PR')
    expect(puertoRico.details.signals.phone_ip_country_match).toBe(true)
    // another state is still a mismatch
    const abroad = await check({ phone: '+44 7781 123456', ip: IP })
    expect(abroad.details.signals.phone_ip_country_match).toBe(false)
    expect(abroad.risk.factors).toContain('phone_ip_country_mismatch')
  })
  it('flags a disposable address used from a VPN, proxy or Tor address', async () => {
    for (const ip of ['192.0.2.2', '192.0.2.5', '192.0.2.8']) {
      const r = await check({ email: 'disposable@example.com', ip })
      expect(r.details.signals.disposable_and_vpn, ip).toBe(true)
    }
    expect((await check({ email: 'disposable@example.com', ip: IP })).details.signals.disposable_and_vpn).toBe(false)
    expect((await check({ email: EMAIL, ip: '192.0.2.2' })).details.signals.disposable_and_vpn).toBe(false)
  })
})

describe('combined check: one recommendation, adjusted for the context', () => {
  it.each([
    [{ email: EMAIL, ip: IP }, 'approve'],
    [{ email: EMAIL, ip: '192.0.2.5' }, 'verify'], // public proxy, 60
    [{ email: 'disposable@example.com', ip: IP }, 'review'], // 70
    [{ email: 'undeliverable@example.com', ip: IP }, 'block'],
  ] as const)('%j → %s (test-mode magic inputs produce every action)', async (input, action) => {
    expect((await check({ ...input, context: 'signup' })).recommendation.action).toBe(action)
  })
  it('judges a checkout more strictly than a lead', async () => {
    const input = { email: EMAIL, ip: '192.0.2.2' } // a VPN
    const lead = await check({ ...input, context: 'lead' })
    const checkout = await check({ ...input, context: 'checkout' })
    expect(lead.details.context).toBe('lead')
    expect(lead.recommendation.action).toBe('approve')
    expect(checkout.recommendation.action).toBe('verify')
    expect(checkout.risk.score).toBeGreaterThan(lead.risk.score)
  })
})

describe('combined check: input rules', () => {
  it.each([
    [{}, 'MISSING_FIELD'],
    [{ email: '', ip: null }, 'MISSING_FIELD'],
    [{ email: `${'a'.repeat(310)}@example.com` }, 'INVALID_REQUEST'],
    [{ ip: '1'.repeat(65) }, 'INVALID_REQUEST'],
    [{ phone: '1'.repeat(41) }, 'INVALID_REQUEST'],
    [{ phone: PHONE, country: 'USA' }, 'INVALID_REQUEST'],
    [{ ip: IP, context: 'wedding' }, 'INVALID_REQUEST'],
    [{ ip: IP, colour: 'red' }, 'INVALID_REQUEST'],
    [{ ip: 42 }, 'INVALID_REQUEST'],
    [{ ip: 'not-an-ip' }, 'INVALID_INPUT'],
  ])('%j → %s', async (input, code) => {
    await expect(rc.check(input as never)).rejects.toMatchObject({ code })
  })
})

describe('combined check: billing and caching (live, offline data)', () => {
  it('bills the sum of the billed parts; cache hits of parts are free and count as hits', async () => {
    const live = createRiskcheck({ offline: true, credits: 10 })
    try {
      const input = { email: 'jane@fastmail.com', phone: '+44 7400 123456', ip: '8.8.8.8' }
      const first = await live.check(input)
      assertValidResult(first, 'check')
      // email offline: smtp unavailable → free; phone valid → 1; ip → 1
      expect(first.metadata.credits_used).toBe(2)
      expect(first.metadata.credits_remaining).toBe(8)
      expect(first.partial).toBe(false) // offline answers are complete: nothing failed
      const again = await live.check({ phone: '+44 7400 123456' })
      expect(again.metadata).toMatchObject({ credits_used: 0, cache_hit: true, credits_remaining: 8 })
      const fresh = await live.check({ phone: '+44 7400 123456', bypassCache: true })
      expect(fresh.metadata).toMatchObject({ credits_used: 1, cache_hit: false, credits_remaining: 7 })
    } finally {
      await live.close()
    }
  })
  it('refuses a check the balance cannot cover, and charges nothing', async () => {
    const live = createRiskcheck({ offline: true, credits: 1 })
    try {
      await expect(live.check({ ip: '8.8.8.8', phone: '+44 7400 123456' })).rejects.toMatchObject({ code: 'INSUFFICIENT_CREDITS', status: 402 })
      const ok = await live.check({ ip: '8.8.8.8' })
      expect(ok.metadata.credits_remaining).toBe(0)
    } finally {
      await live.close()
    }
  })
})

describe('combined check: parts answered at once', () => {
  it('offline, no part arms a time limit: each part is answered in the turn it is asked (counted in timers)', async () => {
    const offline = createRiskcheck({ offline: true, cache: false })
    const timers = vi.spyOn(globalThis, 'setTimeout')
    try {
      const r = await offline.check({ email: 'jane@acme-widgets.io', ip: '8.8.8.8', phone: '+44 7400 123456' })
      assertValidResult(r, 'check')
      expect(r.partial).toBe(false)
      expect([r.details.email, r.details.ip, r.details.phone].every((p) => p !== null)).toBe(true)
      expect(timers).not.toHaveBeenCalled()
    } finally {
      timers.mockRestore()
      await offline.close()
    }
  })
})

describe('combined check: a slow part', () => {
  it('makes the result partial without delaying the others beyond its time limit', async () => {
    // The email domain's DNS answers after 1.2 s; the part limit is 400 ms.
    const dns = await startDnsServer({ zones: { 'slow-mail.org': { behaviour: { delayMs: 1200 }, MX: [{ priority: 10, exchange: 'mx.slow-mail.org' }] } } })
    const live = createRiskcheck({
      dns: { servers: [dns.address], timeoutMs: 2500, tries: 1 },
      rdap: { enabled: false },
      smtp: { enabled: false },
      partTimeoutMs: 400,
    })
    try {
      const r = await live.check({ email: 'jane@slow-mail.org', phone: '+44 7400 123456' })
      assertValidResult(r, 'check')
      // The DNS answer (1.2 s) would have given the email part its MX: 'unavailable' means the 400 ms limit ended it.
      expect(r.partial).toBe(true)
      expect(r.details.email!.smtp_check).toBe('unavailable')
      expect(r.details.email!.verdict.status).toBe('unknown')
      expect(r.details.phone!.valid).toBe(true)
      expect(r.metadata.credits_used).toBe(1) // the phone; the timed-out email part is not billed
      // The abandoned lookup finishes in the background but does not fill the cache (it was never billed).
      await new Promise((resolve) => setTimeout(resolve, 1500))
      const again = await live.email('jane@slow-mail.org')
      expect(again.metadata.cache_hit).toBe(false)
      expect(again.metadata.credits_used).toBe(0) // smtp.enabled false: only free checks run
    } finally {
      await live.close()
      await dns.close()
    }
  })
  it('a phone part whose live carrier source runs out of time is unknown and lowers confidence, as the phone lookup says', async () => {
    // before, its offline stand-in took the carrier for one not asked: "valid", no factor, the check approved at full confidence
    const rc = createRiskcheck({ offline: false, dns: { servers: ['127.0.0.1:9'] }, rdap: { enabled: false }, smtp: { enabled: false }, phone: { carrierSource: { lookup: () => new Promise(() => undefined) } }, partTimeoutMs: 200 })
    try {
      const r = await rc.check({ phone: '+12015550123' })
      assertValidResult(r, 'check')
      expect(r.partial).toBe(true)
      expect(r.details.phone!.risk.factors).toContain('phone_carrier_unavailable')
      expect(r.details.phone!.verdict.status).toBe('unknown')
      expect(r.risk.factors).toContain('phone_carrier_unavailable')
      expect(r.risk.confidence).not.toBe('high')
      expect(r.verdict.status).toBe('unknown')
    } finally {
      await rc.close()
    }
  })
})

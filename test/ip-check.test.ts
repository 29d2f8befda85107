/**
 * The IP check through `rc.ip()`: input rules, test mode's magic inputs, reverse DNS and DNSBL zones against a
 * loopback DNS server, local blocklists, offline behaviour.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ipCheck, dnsblQueryName, explainInvalidIp } from '../src/checks/ip.js'
import { isRiskcheckError } from '../src/errors.js'
import { createRiskcheck } from '../src/index.js'
import { parseIp } from '../src/sources/ip/parse.js'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { assertValidResult } from './validate.js'

const tmp = mkdtempSync(join(tmpdir(), 'riskcheck-ipcheck-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error('expected a rejection')
}

describe('input rules', () => {
  const rc = createRiskcheck({ mode: 'test' })

  it.each([
    ['010.0.0.1', /leading zeros/],
    ['0x7f.0.0.1', /hexadecimal/],
    ['127.1', /short IPv4/],
    ['2130706433', /short IPv4/],
    ['256.0.0.1', /0 to 255/],
    ['fe80::1%eth0', /zone ids/],
    ['192.0.2.0/24', /CIDR/],
    ['[::1]', /brackets/],
    ['hello', /expected an IPv4/],
    ['1.2.3.4:80', /expected an IPv4/],
    ['', /1 to 64 characters/],
    ['1'.repeat(65), /1 to 64 characters/],
  ])('%j → INVALID_INPUT (%s)', async (input, message) => {
    const e = await rejection(rc.ip(input))
    expect(isRiskcheckError(e, 'INVALID_INPUT')).toBe(true)
    expect((e as Error).message).toMatch(message)
    expect((e as { status: number }).status).toBe(422)
    expect((e as { field: string }).field).toBe('ip')
  })

  it('non-strings are INVALID_INPUT', async () => {
    for (const v of [42, null, undefined, {}, ['1.2.3.4']]) {
      const e = await rejection(rc.ip(v as unknown as string))
      expect(isRiskcheckError(e, 'INVALID_INPUT')).toBe(true)
    }
  })

  it('prepare normalizes, and IPv4-mapped IPv6 becomes IPv4', () => {
    const ctx = {} as Parameters<typeof ipCheck.prepare>[2]
    expect(ipCheck.prepare(' 2001:DB8:0::1 ', {}, ctx).cacheKey).toBe('2001:db8::1')
    const mapped = ipCheck.prepare('::ffff:198.51.100.1', {}, ctx)
    expect(mapped.cacheKey).toBe('198.51.100.1')
    expect(mapped.input.version).toBe(4)
  })

  it('explains common mistakes', () => {
    expect(explainInvalidIp('1.2.3.04')).toMatch(/leading zeros/)
    expect(explainInvalidIp('::1/128')).toMatch(/CIDR/)
    expect(explainInvalidIp('192.0.2.0/24')).toMatch(/CIDR/)
    // a slash alone does not make a network: these were all called one
    for (const text of ['foo/bar', '192.0.2.1/', '/24', '192.0.2.1/24/8', 'a.b/24']) expect(explainInvalidIp(text), text).toBe('expected an IPv4 (a.b.c.d) or IPv6 address')
    expect(explainInvalidIp('https://192.0.2.1/login')).toMatch(/^a URL is not an address/)
  })
})

describe('test mode: the documented magic inputs', () => {
  const rc = createRiskcheck({ mode: 'test' })
  const expected: Record<string, [string, string]> = {}
  for (const t of ipCheck.testInputs) {
    const m = /→ (valid|risky|invalid|unknown), (approve|verify|review|block)/.exec(t.note)
    if (m) expected[t.input] = [m[1]!, m[2]!]
  }

  it('every note states its outcome, and every status and action is reachable', () => {
    const statuses = new Set(Object.values(expected).map((e) => e[0]))
    const actions = new Set(Object.values(expected).map((e) => e[1]))
    expect([...statuses].sort()).toEqual(['invalid', 'risky', 'unknown', 'valid'])
    expect([...actions].sort()).toEqual(['approve', 'block', 'review', 'verify'])
  })

  it('each magic input gives the documented status and action, with a schema-valid result', async () => {
    for (const [input, [status, action]] of Object.entries(expected)) {
      const r = await rc.ip(input)
      assertValidResult(r, 'ip')
      expect([r.verdict.status, r.recommendation.action], input).toEqual([status, action])
      expect(r.metadata.test_mode).toBe(true)
      expect(r.metadata.credits_used).toBe(0)
    }
  })

  it('magic details: providers, blocklists, IPv6, country by range', async () => {
    expect((await rc.ip('192.0.2.2')).details.flags).toMatchObject({ is_vpn: true, vpn_provider: 'example_vpn' })
    expect((await rc.ip('192.0.2.4')).details.flags).toMatchObject({ is_cloud: true, cloud_provider: 'aws', is_datacenter: true })
    expect((await rc.ip('192.0.2.9')).details.flags.on_blocklists).toEqual(['test-blocklist'])
    expect((await rc.ip('198.51.100.1')).details.location.country_code).toBe('GB')
    expect((await rc.ip('203.0.113.1')).details.location.country_code).toBe('DE')
    const v6 = await rc.ip('2001:db8::8')
    expect(v6.details).toMatchObject({ version: 6, ip: '2001:db8::8', flags: { is_tor: true } })
    const partial = await rc.ip('192.0.2.11')
    expect(partial.partial).toBe(true)
    expect(partial.details.location.country).toBeNull()
    // the magic numbers are only 1–13: other documentation addresses are bogons
    expect((await rc.ip('192.0.2.14')).details.flags.is_bogon).toBe(true)
    const e = await rejection(rc.ip('010.0.0.1'))
    expect(isRiskcheckError(e, 'INVALID_INPUT')).toBe(true)
  })
})

describe('reverse DNS and DNSBL through the DNS source (loopback DNS server)', () => {
  let dns: FakeDnsServer
  beforeAll(async () => {
    dns = await startDnsServer({
      zones: {
        '160.69.2.81.in-addr.arpa': { PTR: ['mail.example.net'] },
        '2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.6.0.2.0.a.2.ip6.arpa': { PTR: ['ns.example.ru'] },
        '5.5.5.5.in-addr.arpa': { behaviour: 'timeout' },
        // DNSBL zones
        '160.69.2.81.bl.test': { A: ['127.0.0.2'] },
        '160.69.2.81.refused.test': { A: ['127.255.255.254'] },
        '5.5.5.5.slow.test': { behaviour: 'timeout' },
        [`${dnsblQueryName(parseIp('2a02:6b8::2')!, 'bl.test')}`]: { A: ['127.0.0.4'] },
      },
    })
  })
  afterAll(() => dns.close())

  const options = () => ({ dns: { servers: [dns.address], timeoutMs: 300, tries: 1 } })

  it('a PTR record becomes reverse_dns; no PTR is null and not partial', async () => {
    const rc = createRiskcheck(options())
    const r = await rc.ip('81.2.69.160')
    assertValidResult(r, 'ip')
    expect(r.details.reverse_dns).toBe('mail.example.net')
    expect(r.partial).toBe(false)
    expect(r.metadata.data_sources).toContain('dns')
    const v6 = await rc.ip('2a02:6b8::2')
    expect(v6.details.reverse_dns).toBe('ns.example.ru')
    const none = await rc.ip('1.1.1.1')
    expect(none.details.reverse_dns).toBeNull()
    expect(none.partial).toBe(false)
    await rc.close()
  })

  it('a PTR timeout is null and partial, never invalid', async () => {
    const rc = createRiskcheck(options())
    const r = await rc.ip('5.5.5.5')
    assertValidResult(r, 'ip')
    expect(r.details.reverse_dns).toBeNull()
    expect(r.partial).toBe(true)
    expect(r.verdict.status).not.toBe('invalid')
    await rc.close()
  })

  it('DNSBL zones: listed, not listed, refused/timeout (partial, source unavailable)', async () => {
    const rc = createRiskcheck({ ...options(), ip: { dnsbl: ['bl.test', 'refused.test', 'slow.test'] } })
    const listed = await rc.ip('81.2.69.160')
    assertValidResult(listed, 'ip')
    expect(listed.details.flags.on_blocklists).toEqual(['bl.test'])
    expect(listed.risk.factors).toEqual(expect.arrayContaining(['ip_blocklisted', 'ip_source_unavailable']))
    expect(listed.partial).toBe(true) // refused.test answered 127.255.255.254
    expect(listed.metadata.data_sources).toContain('dnsbl')
    const v6 = await rc.ip('2a02:6b8::2')
    expect(v6.details.flags.on_blocklists).toEqual(['bl.test'])
    const slow = await rc.ip('5.5.5.5')
    expect(slow.details.flags.on_blocklists).toEqual([])
    expect(slow.risk.factors).toContain('ip_source_unavailable')
    expect(slow.partial).toBe(true)
    const asked = dns.queries.filter((q) => q.name.endsWith('.bl.test')).map((q) => q.name)
    expect(asked).toContain('160.69.2.81.bl.test')
    await rc.close()
  })

  it('offline: no DNS question at all, reverse_dns null, not partial (not asked is not failed)', async () => {
    const before = dns.queries.length
    const rc = createRiskcheck({ ...options(), offline: true, ip: { dnsbl: ['bl.test'] } })
    const r = await rc.ip('81.2.69.160')
    expect(r.details.reverse_dns).toBeNull()
    expect(r.details.flags.on_blocklists).toEqual([])
    expect(r.partial).toBe(false)
    expect(dns.queries.length).toBe(before)
    await rc.close()
  })

  it('bogons are never sent to DNS', async () => {
    const before = dns.queries.length
    const rc = createRiskcheck({ ...options(), ip: { dnsbl: ['bl.test'] } })
    const r = await rc.ip('10.1.2.3')
    expect(r.verdict.status).toBe('invalid')
    expect(r.partial).toBe(false)
    expect(dns.queries.length).toBe(before)
    await rc.close()
  })
})

describe('local blocklists', () => {
  it('inline CIDR lists and list files name the lists that contain the address', async () => {
    const file = join(tmp, 'drop.txt')
    writeFileSync(file, '; Spamhaus-style header\n81.2.69.0/24 ; SBL000\n# comment\n2a02:6b8::/32\nnot-a-network\n')
    const rc = createRiskcheck({ offline: true, ip: { blocklists: { mine: ['81.2.69.160', '198.18.0.0/15'], drop: file } } })
    const r = await rc.ip('81.2.69.160')
    assertValidResult(r, 'ip')
    expect(r.details.flags.on_blocklists).toEqual(['mine', 'drop'])
    expect(r.risk.factors).toContain('ip_blocklisted')
    expect((await rc.ip('81.2.69.161')).details.flags.on_blocklists).toEqual(['drop'])
    expect((await rc.ip('2a02:6b8::1')).details.flags.on_blocklists).toEqual(['drop'])
    expect((await rc.ip('1.1.1.1')).details.flags.on_blocklists).toEqual([])
    await rc.close()
  })

  it('a missing list file or a bad inline entry fails at createRiskcheck', () => {
    const missing = join(tmp, 'nope.txt')
    expect(() => createRiskcheck({ ip: { blocklists: { x: missing } } })).toThrow(TypeError)
    expect(() => createRiskcheck({ ip: { blocklists: { x: missing } } })).toThrow(`option ip.blocklists.x: file not found (${missing})`)
    expect(() => createRiskcheck({ ip: { blocklists: { y: ['1.2.3.0/24', 'bogus'] } } })).toThrow(/option ip\.blocklists\.y: not an IP network: "bogus"/)
    const empty = join(tmp, 'only-comments.txt')
    writeFileSync(empty, '# nothing\nnot an ip\n')
    expect(() => createRiskcheck({ ip: { blocklists: { z: empty } } })).toThrow(/no IP network found/)
  })
})

describe('dnsblQueryName', () => {
  it('reverses IPv4 octets and IPv6 nibbles', () => {
    expect(dnsblQueryName(parseIp('192.0.2.1')!, 'zen.example')).toBe('1.2.0.192.zen.example')
    expect(dnsblQueryName(parseIp('2001:db8::1')!, 'v6.example')).toBe(
      '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.v6.example',
    )
  })
})

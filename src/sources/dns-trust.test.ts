import { describe, expect, it } from 'vitest'
import type { RiskcheckWarning } from '../options.js'
import { isIcannTopLevelDomain, topLevelDomainOf, trustNxdomain } from './dns-trust.js'
import type { DnsAnswer, DnsSource, DnsStatus } from './dns-types.js'

/** A DNS source whose NS answer for any name is `status`, counting the NS questions. */
function nsSource(status: DnsStatus, servers?: string[]): DnsSource & { asked: string[] } {
  const asked: string[] = []
  const none = <T>(): Promise<DnsAnswer<T>> => Promise.resolve({ status: 'nxdomain', records: [] })
  return {
    asked,
    resolveMx: none,
    resolveTxt: none,
    resolve4: none,
    resolve6: none,
    reverse: none,
    resolveNs: (name) => {
      asked.push(name)
      return Promise.resolve(status === 'ok' ? { status, records: [`a.nic.${name}`] } : { status, records: [] })
    },
    ...(servers ? { servers: () => servers } : {}),
    stats: () => ({ queries: asked.length, cacheHits: 0, deduplicated: 0, timeouts: 0 }),
    close: () => {},
  }
}

describe('top-level domains', () => {
  it('takes the last label of a name', () => {
    expect(topLevelDomainOf('mail.Example.COM.')).toBe('com')
    expect(topLevelDomainOf('1.2.3.4.in-addr.arpa')).toBe('arpa')
    expect(topLevelDomainOf('localhost')).toBe('localhost')
  })

  it('knows the real ICANN top-level domains from the Public Suffix List', () => {
    for (const tld of ['com', 'org', 'io', 'uk', 'de', 'arpa', 'xn--p1ai']) expect(isIcannTopLevelDomain(tld), tld).toBe(true)
    for (const tld of ['notatld', 'test', 'example', 'invalid', 'localhost', 'local', '', 'co.uk']) expect(isIcannTopLevelDomain(tld), tld).toBe(false)
  })
})

describe('trustNxdomain', () => {
  it('believes an NXDOMAIN under a TLD the resolver resolves', async () => {
    const dns = nsSource('ok')
    expect(await trustNxdomain(dns, 'missing.com')).toBe('trusted')
    expect(dns.asked).toEqual(['com'])
  })

  it('believes an NXDOMAIN under a TLD that does not exist, without asking', async () => {
    const dns = nsSource('nxdomain')
    expect(await trustNxdomain(dns, 'bar.notatld')).toBe('trusted')
    expect(dns.asked).toEqual([])
  })

  it('a resolver that denies a real TLD is broken: not believed, and a warning names it', async () => {
    const warnings: RiskcheckWarning[] = []
    const dns = nsSource('nxdomain', ['10.0.0.53:53'])
    expect(await trustNxdomain(dns, 'gmail.com', (w) => warnings.push(w))).toBe('resolver_broken')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ code: 'dns_resolver_broken', message: expect.stringContaining('10.0.0.53:53') })
  })

  it('a TLD question that gets no answer leaves the NXDOMAIN unconfirmed, without a warning', async () => {
    const warnings: RiskcheckWarning[] = []
    for (const status of ['timeout', 'servfail', 'refused', 'error'] as const) {
      expect(await trustNxdomain(nsSource(status), 'gmail.com', (w) => warnings.push(w))).toBe('unconfirmed')
    }
    expect(warnings).toEqual([])
  })
})

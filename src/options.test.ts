import { describe, expect, it } from 'vitest'
import { creditsFor } from './billing.js'
import { resolveOptions } from './options.js'
import { createRiskcheck } from './riskcheck.js'

describe('resolveOptions', () => {
  it('fills every default with no configuration', () => {
    const o = resolveOptions()
    expect(o).toMatchObject({
      mode: 'live',
      offline: false,
      dns: { servers: null, timeoutMs: 3000, tries: 2 },
      smtp: { enabled: true, port: 25, heloName: 'riskcheck.invalid', maxConnectionsPerHost: 2 },
      rdap: { timeoutMs: 8000 },
      ip: { defaults: true },
      partTimeoutMs: 15_000,
    })
    expect(o.now()).toBeInstanceOf(Date)
  })
  it.each([
    [{ mode: 'prod' }, /`mode`/],
    [{ offline: 'yes' }, /`offline` must be a boolean/],
    [{ dsn: {} }, /`dsn` is not an option/],
    [{ dns: { servers: [] } }, /`dns.servers`/],
    [{ dns: { servers: ['bad server!'] } }, /`dns.servers\[0\]`/],
    [{ dns: { timeoutMs: 0 } }, /`dns.timeoutMs`/],
    [{ dns: { retries: 3 } }, /`dns.retries` is not an option/],
    [{ smtp: { port: 70000 } }, /`smtp.port`/],
    [{ smtp: { heloName: '' } }, /`smtp.heloName`/],
    [{ rdap: { bootstrapUrl: 'not a url' } }, /`rdap.bootstrapUrl`/],
    [{ rdap: { fetch: 'curl' } }, /`rdap.fetch`/],
    [{ ip: { cityDb: 42 } }, /`ip.cityDb`/],
    [{ ip: { blocklists: { mine: [1] } } }, /`ip.blocklists.mine`/],
    [{ phone: { carrierSource: {} } }, /`phone.carrierSource`/],
    [{ now: () => 'today' }, /`now` must return a valid Date/],
    [{ cache: { maxEntries: 0 } }, /`cache.maxEntries`/],
    [{ credits: -5 }, /`credits`/],
    [{ credits: { spend() {} } }, /`credits`/],
    // without balance() every lookup would crash with a TypeError after running (and billing)
    [{ credits: { reserve: () => true, refund() {} } }, /`credits`/],
  ])('rejects %j with a TypeError naming the option', (opts, message) => {
    expect(() => resolveOptions(opts as never)).toThrow(TypeError)
    expect(() => resolveOptions(opts as never)).toThrow(message)
  })
  it('accepts IP addresses with an optional port as DNS servers', () => {
    const servers = ['127.0.0.1', '127.0.0.1:5353', '::1', '[::1]:53', '[::1]', '1.1.1.1:65535', '::ffff:1.2.3.4']
    expect(resolveOptions({ dns: { servers } }).dns.servers).toEqual(servers)
  })
  it.each(['nope::', 'nope:', 'dns.example', '1.1.1.1:0', '1.2.3.4:99999', '1.1.1.1:', '999.1.1.1', '01.1.1.1', '[::1]:053', '[nope]:53', ''])(
    'refuses the DNS server %j with a TypeError naming dns.servers[0] (Node would fail later, or abort on port 0)',
    (server) => {
      expect(() => createRiskcheck({ dns: { servers: [server] } })).toThrow(TypeError)
      expect(() => createRiskcheck({ dns: { servers: [server] } })).toThrow(/`dns\.servers\[0\]` must be an IP address/)
    },
  )
})

describe('creditsFor (the billing table)', () => {
  it('bills 1 per lookup with the documented free answers', () => {
    expect(creditsFor('email', { smtp_check: 'deliverable' } as never)).toBe(1)
    expect(creditsFor('email', { smtp_check: 'skipped' } as never)).toBe(1)
    expect(creditsFor('email', { smtp_check: 'unavailable' } as never)).toBe(0)
    expect(creditsFor('phone', { valid: true } as never)).toBe(1)
    expect(creditsFor('phone', { valid: false } as never)).toBe(0)
    expect(creditsFor('phone_type', { valid: false } as never)).toBe(1)
    expect(creditsFor('ip', {} as never)).toBe(1)
    expect(creditsFor('domain_age', { found: true, registered: true } as never)).toBe(1)
    expect(creditsFor('domain_age', { found: false, registered: false } as never)).toBe(0)
    expect(creditsFor('email_auth', {} as never)).toBe(1)
  })
})

describe('onWarning', () => {
  it('reaches the sink once per distinct warning and survives a throwing sink', () => {
    const seen: string[] = []
    const o = resolveOptions({ onWarning: (w) => seen.push(`${w.code}:${w.message}`) })
    o.warn({ code: 'dns_resolver_broken', message: 'a' })
    o.warn({ code: 'dns_resolver_broken', message: 'a' })
    o.warn({ code: 'smtp_port_blocked', message: 'b' })
    expect(seen).toEqual(['dns_resolver_broken:a', 'smtp_port_blocked:b'])
    const throwing = resolveOptions({ onWarning: () => { throw new Error('sink down') } })
    expect(() => throwing.warn({ code: 'x', message: 'y' })).not.toThrow()
  })

  it('must be a function', () => {
    expect(() => resolveOptions({ onWarning: 'log' as never })).toThrow(/`onWarning` must be a function/)
  })
})

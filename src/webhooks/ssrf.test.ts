import type { LookupAddress, LookupOptions } from 'node:dns'
import type { LookupFunction } from 'node:net'
import { describe, expect, it } from 'vitest'
import {
  createGuardedLookup,
  getBlockedAddressReason,
  isAllowedWebhookAddress,
  validateWebhookUrl,
  WebhookAddressBlockedError,
} from './ssrf.js'

// Svix's `is_allowed_test` vectors plus transition forms, long spellings and cloud metadata.
const BLOCKED: Array<[string, RegExp]> = [
  ['10.254.0.0', /Private-Use/],
  ['192.168.10.65', /Private-Use/],
  ['172.16.10.65', /Private-Use/],
  ['172.31.255.255', /Private-Use/],
  ['0.1.2.3', /This network/],
  ['0.0.0.0', /This network/],
  ['127.0.0.1', /Loopback/],
  ['127.0.0.254', /Loopback/],
  ['127.254.254.254', /Loopback/],
  ['169.254.45.1', /Link Local/],
  ['169.254.169.254', /Link Local/], // cloud metadata
  ['255.255.255.255', /Broadcast/],
  ['224.254.0.0', /Multicast/],
  ['239.255.255.250', /Multicast/],
  ['192.0.2.255', /TEST-NET-1/],
  ['198.51.100.65', /TEST-NET-2/],
  ['203.0.113.6', /TEST-NET-3/],
  ['100.100.0.0', /Shared Address Space/], // CGNAT
  ['100.100.100.200', /Shared Address Space/], // Alibaba metadata
  ['192.0.0.0', /IETF|Continuity/],
  ['192.0.0.255', /IETF Protocol Assignments/],
  ['192.0.0.192', /IETF Protocol Assignments/], // Oracle metadata
  ['192.88.99.3', /6to4 Relay/],
  ['198.18.0.0', /Benchmarking/],
  ['198.19.255.255', /Benchmarking/],
  ['240.240.240.240', /Reserved/],
  ['250.10.20.30', /Reserved/],
  ['168.63.129.16', /Azure/],
  ['::', /Unspecified/],
  ['::0', /Unspecified/],
  ['::1', /Loopback/],
  ['0:0:0:0:0:0:0:1', /Loopback/],
  ['0000:0000:0000:0000:0000:0000:0000:0001', /Loopback/],
  ['::ffff:127.0.0.1', /Loopback/],
  ['::ffff:7f00:1', /Loopback/],
  ['0000:0000:0000:0000:0000:ffff:7f00:0001', /Loopback/],
  ['::ffff:0.0.0.1', /This network/],
  ['::ffff:10.0.0.1', /Private-Use/],
  ['::ffff:169.254.169.254', /Link Local/],
  ['::127.0.0.1', /Reserved by IETF/], // IPv4-compatible (deprecated)
  ['::ffff:0:127.0.0.1', /Reserved by IETF/], // IPv4-translated
  ['2001:db8::1', /Documentation/],
  ['3fff::dead:beef', /Documentation/],
  ['fe80::dead:beef', /Link-Local/],
  ['febf:ffff::dead:beef', /Link-Local/],
  ['fec0::1', /site-local/],
  ['fdee:3A45:9057::0001', /Unique-Local/],
  ['fd7a:115c:a1e0::1', /Unique-Local/], // Tailscale
  ['fd00:ec2::254', /Unique-Local/], // AWS IPv6 metadata
  ['ff02::1', /Multicast/],
  ['2002:0808:0808::1', /6to4/], // 6to4 of a public address: still refused
  ['2002:c0a8:0101::1', /6to4/], // 6to4 of 192.168.1.1
  ['2002:7f00:1::', /6to4/],
  ['2001:0000:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
  ['2001:0000:0:0:0:0:80ff:fefe', /Teredo/], // Teredo client 127.0.1.1
  ['64:ff9b::c0a8:0101', /NAT64/], // NAT64 of 192.168.1.1
  ['64:ff9b::127.0.0.1', /NAT64/],
  ['64:ff9b::808:808', /NAT64/], // NAT64 of a public address: still refused
  ['64:ff9b:1::dead:beef', /NAT64/],
  ['5f00::dead:beef', /SRv6/],
  ['100::1:2:3:4', /Discard/],
  ['fe80::1%lo0', /not an IP address/], // zone ids fail closed
  ['127.1', /not an IP address/], // short forms are not addresses here (URLs are normalised first)
  ['', /not an IP address/],
  ['not-an-ip', /not an IP address/],
]

const ALLOWED = ['1.1.1.1', '8.8.8.8', '93.184.216.34', '2001:4860:4860::8888', '2606:4700:4700::1111', '::ffff:8.8.8.8', '::FFFF:808:808']

describe('getBlockedAddressReason', () => {
  it.each(BLOCKED)('refuses %s', (address, why) => {
    const reason = getBlockedAddressReason(address)
    expect(reason).toMatch(why)
    expect(isAllowedWebhookAddress(address)).toBe(false)
  })

  it.each(ALLOWED)('allows %s', (address) => {
    expect(getBlockedAddressReason(address)).toBeNull()
    expect(isAllowedWebhookAddress(address, { allowLoopback: true })).toBe(true)
  })

  it('allowLoopback permits exactly 127.0.0.0/8 and ::1 (and their mapped forms), nothing else', () => {
    const opt = { allowLoopback: true }
    for (const a of ['127.0.0.1', '127.255.0.9', '::1', '::ffff:127.0.0.1', '0000:0000:0000:0000:0000:ffff:7f00:0001']) {
      expect(getBlockedAddressReason(a, opt), a).toBeNull()
    }
    for (const a of ['10.0.0.1', '0.0.0.0', '::', '169.254.169.254', '192.168.0.1', 'fe80::1', '64:ff9b::7f00:1', '2002:7f00:1::', '::127.0.0.1']) {
      expect(getBlockedAddressReason(a, opt), a).not.toBeNull()
    }
  })
})

type UrlCase = [url: string, expected: 'ok' | string, note: string]

// Every spelling is judged after WHATWG normalisation (what Node's http client would connect to).
const URL_CASES: UrlCase[] = [
  ['https://hooks.example.com/riskcheck', 'ok', 'public name'],
  ['https://hooks.example.com:8443/x?y=1', 'ok', 'non-default port'],
  ['https://HOOKS.Example.COM./x', 'ok', 'upper case, trailing dot'],
  ['https://8.8.8.8/hook', 'ok', 'public IPv4 literal'],
  ['https://[2001:4860:4860::8888]/hook', 'ok', 'public IPv6 literal'],
  ['https://[::ffff:8.8.8.8]/hook', 'ok', 'mapped public IPv4'],
  ['https://hooks.slack.com/services/T0/B0/XYZ', 'ok', 'slack'],
  ['https://xn--bcher-kva.example/', 'host_not_public', 'IDN under a reserved TLD'],
  ['https://bücher.de/hook', 'ok', 'IDN (punycoded by URL)'],
  ['http://hooks.example.com/x', 'scheme_not_https', 'plain http'],
  ['ftp://hooks.example.com/x', 'scheme_not_https', 'ftp'],
  ['javascript:alert(1)', 'scheme_not_https', 'javascript:'],
  ['hooks.example.com/x', 'invalid_url', 'no scheme'],
  ['https://user:pass@hooks.example.com/x', 'credentials_in_url', 'userinfo'],
  ['https://user@hooks.example.com/x', 'credentials_in_url', 'username only'],
  ['https://:pass@hooks.example.com/x', 'credentials_in_url', 'password only'],
  ['https://@hooks.example.com/x', 'credentials_in_url', 'empty userinfo'],
  ['https://@[::1]:9876', 'credentials_in_url', 'Svix: empty userinfo on loopback'],
  ['https://1:2@[::1]:9876', 'credentials_in_url', 'Svix: userinfo on loopback'],
  ['https://hooks.example.com@127.0.0.1/', 'credentials_in_url', 'host confusion'],
  ['https:@hooks.example.com/x', 'credentials_in_url', 'empty userinfo, no slashes'],
  ['https:\\\\@hooks.example.com/x', 'credentials_in_url', 'empty userinfo after backslashes'],
  ['https:hooks.example.com/x', 'ok', 'no slashes (WHATWG adds them)'],
  ['https://hooks.example.com/path?next=a@b#c@d', 'ok', '@ after the authority'],
  ['https://127.0.0.1', 'address_not_public', 'Svix: loopback'],
  ['https://[::1]', 'address_not_public', 'Svix: IPv6 loopback'],
  ['https://[::1]:9876', 'address_not_public', 'Svix: IPv6 loopback with port'],
  ['https://[0000:0000:0000:0000:0000:ffff:7f00:0001]:9854', 'address_not_public', 'Svix: long-form mapped loopback'],
  ['https://[::ffff:127.0.0.1]/', 'address_not_public', 'mapped loopback'],
  ['https://[0:0:0:0:0:0:0:1]/', 'address_not_public', 'long loopback'],
  ['http://2130706433/', 'address_not_public', 'decimal IPv4'],
  ['https://2130706433/', 'address_not_public', 'decimal IPv4 (https)'],
  ['https://0x7f.1/', 'address_not_public', 'hex + short form'],
  ['https://0x7f000001/', 'address_not_public', 'hex'],
  ['https://0177.0.0.1/', 'address_not_public', 'octal'],
  ['https://017700000001/', 'address_not_public', 'octal whole'],
  ['https://127.1/', 'address_not_public', 'short form'],
  ['https://127.0.0.1./', 'address_not_public', 'trailing dot'],
  ['https://127.0.0.1%2e/', 'address_not_public', 'encoded trailing dot'],
  ['https://%31%32%37.0.0.1/', 'address_not_public', 'percent-encoded digits'],
  ['https://１２７.0.0.1/', 'address_not_public', 'full-width digits'],
  ['https://127。0。0。1/', 'address_not_public', 'ideographic full stops'],
  ['https://0/', 'address_not_public', '0 → 0.0.0.0'],
  ['https://10.0.0.1/', 'address_not_public', 'private'],
  ['https://169.254.169.254/latest/meta-data/', 'address_not_public', 'metadata'],
  ['https://[fd00:ec2::254]/', 'address_not_public', 'AWS IPv6 metadata'],
  ['https://[64:ff9b::7f00:1]/', 'address_not_public', 'NAT64 loopback'],
  ['https://[64:ff9b::a00:1]/', 'address_not_public', 'NAT64 private'],
  ['https://[2002:7f00:1::1]/', 'address_not_public', '6to4 loopback'],
  ['https://[2002:c0a8:101::1]/', 'address_not_public', '6to4 private'],
  ['https://[::127.0.0.1]/', 'address_not_public', 'IPv4-compatible loopback'],
  ['https://[127.0.0.1]', 'invalid_url', 'Svix: IPv4 in brackets does not parse'],
  ['https://[::1%lo]', 'invalid_url', 'Svix: zone id does not parse'],
  ['https://[::1%25lo]', 'invalid_url', 'encoded zone id'],
  ['https://::1', 'invalid_url', 'Svix: bare IPv6 does not parse'],
  ['https://localhost/', 'host_not_public', 'localhost'],
  ['https://localhost./', 'host_not_public', 'localhost trailing dot'],
  ['https://LOCALHOST/', 'host_not_public', 'localhost upper case'],
  ['https://api.localhost/', 'host_not_public', '*.localhost'],
  ['https://printer.local/', 'host_not_public', 'mDNS .local'],
  ['https://metadata.google.internal/', 'host_not_public', '.internal'],
  ['https://router.home.arpa/', 'host_not_public', 'home.arpa'],
  ['https://1.0.0.127.in-addr.arpa/', 'host_not_public', '.arpa'],
  ['https://intranet/', 'host_not_public', 'single label'],
  ['https://foo.test/', 'host_not_public', '.test'],
  ['https://foo.invalid/', 'host_not_public', '.invalid'],
  ['https://abc.onion/', 'host_not_public', '.onion'],
  ['https://svc.corp/', 'host_not_public', 'private-use TLD'],
  ['https://foo.notarealtld/', 'host_not_public', 'unknown TLD'],
  ['https://co.uk/', 'host_not_public', 'a bare public suffix'],
  ['https://hooks.example.com:25/', 'port_not_allowed', 'SMTP port'],
  ['https://hooks.example.com:22/', 'port_not_allowed', 'SSH port'],
  ['https://hooks.example.com:0/', 'port_not_allowed', 'port 0'],
  ['https://hooks.example.com:65536/', 'invalid_url', 'port out of range'],
  ['https://hooks.example.com/ x', 'invalid_url', 'space'],
  ['https://hooks.example.com/\tx', 'invalid_url', 'tab'],
  [' https://hooks.example.com/', 'invalid_url', 'leading space'],
  ['https://hooks.example.com/\u0000', 'invalid_url', 'NUL'],
  [`https://hooks.example.com/${'a'.repeat(2100)}`, 'invalid_url', 'too long'],
  ['', 'invalid_url', 'empty'],
]

describe('validateWebhookUrl', () => {
  it.each(URL_CASES)('%s → %s (%s)', (url, expected) => {
    const r = validateWebhookUrl(url)
    if (expected === 'ok') {
      expect(r.ok, JSON.stringify(r)).toBe(true)
    } else {
      expect(r.ok).toBe(false)
      if (!r.ok) expect(r.reason).toBe(expected)
    }
  })

  it('returns the normalised URL to store', () => {
    const r = validateWebhookUrl('https://HOOKS.Example.COM:443/a/../b?x=1')
    expect(r.ok && r.url.href).toBe('https://hooks.example.com/b?x=1')
  })

  it('rejects non-strings without throwing', () => {
    for (const v of [undefined, null, 42, {}, ['https://a.example.com']]) {
      expect(validateWebhookUrl(v).ok).toBe(false)
    }
  })

  it('allowLoopback opens exactly loopback, over http or https, and nothing else', () => {
    const opt = { allowLoopback: true }
    for (const u of [
      'http://127.0.0.1:8080/hook',
      'https://127.0.0.1:8443/hook',
      'http://[::1]:8080/',
      'http://2130706433:8080/',
      'http://[0000:0000:0000:0000:0000:ffff:7f00:0001]:9854/',
      'http://localhost:8080/',
      'https://hooks.example.com/x',
    ]) {
      expect(validateWebhookUrl(u, opt).ok, u).toBe(true)
    }
    for (const [u, reason] of [
      ['http://hooks.example.com/x', 'scheme_not_https'],
      ['http://8.8.8.8/x', 'scheme_not_https'],
      ['http://10.0.0.1/x', 'address_not_public'],
      ['http://0.0.0.0:8080/', 'address_not_public'],
      ['http://[::]:8080/', 'address_not_public'],
      ['http://169.254.169.254/', 'address_not_public'],
      ['http://user:pw@127.0.0.1:8080/', 'credentials_in_url'],
    ] as const) {
      const r = validateWebhookUrl(u, opt)
      expect(r.ok, u).toBe(false)
      if (!r.ok) expect(r.reason, u).toBe(reason)
    }
  })
})

/** A fake resolver: name → addresses (what a DNS server would answer at that moment). */
function fakeDns(table: Record<string, string[]>): LookupFunction & { calls: string[] } {
  const calls: string[] = []
  const fn = ((hostname: string, options: LookupOptions, cb: (err: NodeJS.ErrnoException | null, a: string | LookupAddress[], f?: number) => void) => {
    calls.push(hostname)
    const addrs = table[hostname]
    setImmediate(() => {
      if (!addrs) {
        const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
        cb(err, '', 0)
        return
      }
      const list = addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
      if (options.all) cb(null, list)
      else cb(null, list[0]?.address ?? '', list[0]?.family ?? 4)
    })
  }) as LookupFunction & { calls: string[] }
  fn.calls = calls
  return fn
}

function resolveWith(lookup: LookupFunction, host: string, all: boolean): Promise<{ err: NodeJS.ErrnoException | null; result: unknown }> {
  return new Promise((resolve) => {
    lookup(host, { all }, (err, address, family) => resolve({ err, result: all ? address : [address, family] }))
  })
}

describe('createGuardedLookup', () => {
  const dns = fakeDns({
    'public.example.com': ['93.184.216.34', '2606:4700:4700::1111'],
    'rebind.example.com': ['127.0.0.1'],
    'mixed.example.com': ['10.0.0.5', '93.184.216.34', '::1'],
    'metadata.example.com': ['169.254.169.254'],
    'mapped.example.com': ['::ffff:127.0.0.1'],
    'nat64.example.com': ['64:ff9b::a9fe:a9fe'],
    'v6loop.example.com': ['::1'],
  })

  it('passes public answers through, in both calling conventions', async () => {
    const g = createGuardedLookup({ lookup: dns })
    const all = await resolveWith(g, 'public.example.com', true)
    expect(all.err).toBeNull()
    expect(all.result).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700:4700::1111', family: 6 },
    ])
    const one = await resolveWith(g, 'public.example.com', false)
    expect(one.result).toEqual(['93.184.216.34', 4])
  })

  it('refuses a name that resolves to loopback, metadata, mapped or NAT64 forms', async () => {
    const g = createGuardedLookup({ lookup: dns })
    for (const host of ['rebind.example.com', 'metadata.example.com', 'mapped.example.com', 'nat64.example.com', 'v6loop.example.com']) {
      const r = await resolveWith(g, host, true)
      expect(r.err, host).toBeInstanceOf(WebhookAddressBlockedError)
      expect((r.err as WebhookAddressBlockedError).code).toBe('ERR_WEBHOOK_ADDRESS_BLOCKED')
      expect((r.err as WebhookAddressBlockedError).hostname).toBe(host)
    }
  })

  it('keeps only the allowed addresses of a mixed answer', async () => {
    const g = createGuardedLookup({ lookup: dns })
    const r = await resolveWith(g, 'mixed.example.com', true)
    expect(r.err).toBeNull()
    expect(r.result).toEqual([{ address: '93.184.216.34', family: 4 }])
  })

  it('checks every call afresh (DNS may change between creation and delivery)', async () => {
    const table: Record<string, string[]> = { 'flip.example.com': ['93.184.216.34'] }
    const g = createGuardedLookup({ lookup: fakeDns(table) })
    expect((await resolveWith(g, 'flip.example.com', false)).err).toBeNull()
    table['flip.example.com'] = ['127.0.0.1']
    expect((await resolveWith(g, 'flip.example.com', false)).err).toBeInstanceOf(WebhookAddressBlockedError)
  })

  it('allowLoopback lets 127.0.0.1 and ::1 through but not private or metadata addresses', async () => {
    const g = createGuardedLookup({ lookup: dns, allowLoopback: true })
    expect((await resolveWith(g, 'rebind.example.com', true)).result).toEqual([{ address: '127.0.0.1', family: 4 }])
    expect((await resolveWith(g, 'v6loop.example.com', true)).result).toEqual([{ address: '::1', family: 6 }])
    expect((await resolveWith(g, 'metadata.example.com', true)).err).toBeInstanceOf(WebhookAddressBlockedError)
    const mixed = await resolveWith(g, 'mixed.example.com', true)
    expect(mixed.result).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '::1', family: 6 },
    ])
  })

  it('loopbackOnly (plain http under allowLoopback) refuses public addresses', async () => {
    const g = createGuardedLookup({ lookup: dns, loopbackOnly: true })
    expect((await resolveWith(g, 'public.example.com', true)).err).toBeInstanceOf(WebhookAddressBlockedError)
    expect((await resolveWith(g, 'rebind.example.com', true)).err).toBeNull()
  })

  it('passes resolver errors through unchanged', async () => {
    const g = createGuardedLookup({ lookup: dns })
    const r = await resolveWith(g, 'nxdomain.example.com', true)
    expect(r.err?.code).toBe('ENOTFOUND')
  })

  it('fails closed on garbage from the resolver', async () => {
    const bad = ((_h: string, _o: LookupOptions, cb: (e: null, a: LookupAddress[]) => void) =>
      cb(null, [{ address: 'fe80::1%eth0', family: 6 }, { address: 'nonsense', family: 4 }])) as unknown as LookupFunction
    const r = await resolveWith(createGuardedLookup({ lookup: bad }), 'x.example.com', true)
    expect(r.err).toBeInstanceOf(WebhookAddressBlockedError)
    expect((r.err as WebhookAddressBlockedError).refused).toHaveLength(2)
  })
})

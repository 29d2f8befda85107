import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import net from 'node:net'
import dnsPacket from 'dns-packet'
import { createDnsSource, mapDnsErrorCode, reverseName } from './dns.js'
import { startDnsServer, type FakeDnsServer, type Zones } from '../../test/fake-internet/dns-server.js'

const longKey = 'k='.padEnd(300, 'A') // one TXT record > 255 octets must be split into strings
const zones: Zones = {
  'example.com': {
    MX: [
      { priority: 20, exchange: 'MX2.Example.com' },
      { priority: 10, exchange: 'mx1.example.com' },
    ],
    A: ['192.0.2.1', '192.0.2.2'],
    AAAA: ['2001:db8::1'],
    TXT: ['v=spf1 -all', ['v=DKIM1; ', 'p=abc']],
    NS: ['ns1.example.com.'],
    ttl: 120,
  },
  'nullmx.com': { MX: [{ priority: 0, exchange: '' }] },
  'a-only.com': { A: ['192.0.2.9'] },
  'slow.com': { MX: [{ priority: 1, exchange: 'mx.slow.com' }], behaviour: 'timeout' },
  'delayed.com': { A: ['192.0.2.7'], behaviour: { delayMs: 150 } },
  'broken.com': { MX: [{ priority: 1, exchange: 'mx.broken.com' }], behaviour: 'servfail' },
  'refusing.com': { A: ['192.0.2.3'], behaviour: 'refused' },
  'alias.com': { CNAME: 'example.com' },
  '*.wild.com': { A: ['192.0.2.55'] },
  'big.com': { TXT: Array.from({ length: 12 }, (_, i) => `record-${i}-`.padEnd(120, 'x')) },
  'long.com': { TXT: [[longKey.slice(0, 200), longKey.slice(200)]] },
  '1.2.0.192.in-addr.arpa': { PTR: ['host.example.com.'] },
}

let server: FakeDnsServer

beforeAll(async () => {
  server = await startDnsServer({ zones })
})
afterAll(async () => {
  await server.close()
})

function source(extra: Parameters<typeof createDnsSource>[0] = {}) {
  return createDnsSource({ servers: [server.address], timeoutMs: 300, tries: 1, ...extra })
}

describe('createDnsSource against the loopback server', () => {
  it('returns MX sorted by priority, lower-cased, without trailing dots', async () => {
    const dns = source()
    const mx = await dns.resolveMx('Example.COM.')
    expect(mx).toEqual({
      status: 'ok',
      records: [
        { exchange: 'mx1.example.com', priority: 10 },
        { exchange: 'mx2.example.com', priority: 20 },
      ],
    })
    dns.close()
  })

  it('reports RFC 7505 null MX as one record with exchange ""', async () => {
    const dns = source()
    expect(await dns.resolveMx('nullmx.com')).toEqual({ status: 'ok', records: [{ exchange: '', priority: 0 }] })
    dns.close()
  })

  it('maps NXDOMAIN and NODATA to statuses', async () => {
    const dns = source()
    expect((await dns.resolveMx('nowhere.com')).status).toBe('nxdomain')
    const nodata = await dns.resolveMx('a-only.com')
    expect(nodata).toEqual({ status: 'nodata', records: [] })
    expect(await dns.resolve4('a-only.com')).toEqual({ status: 'ok', records: ['192.0.2.9'] })
    dns.close()
  })

  it('joins the character-strings of one TXT record and keeps records apart', async () => {
    const dns = source()
    const txt = await dns.resolveTxt('example.com')
    expect(txt.status).toBe('ok')
    expect([...txt.records].sort()).toEqual(['v=DKIM1; p=abc', 'v=spf1 -all'])
    expect(await dns.resolveTxt('long.com')).toEqual({ status: 'ok', records: [longKey] })
    dns.close()
  })

  it('reads large answers (TCP fallback or EDNS)', async () => {
    const dns = source()
    const txt = await dns.resolveTxt('big.com')
    expect(txt.status).toBe('ok')
    expect(txt.records).toHaveLength(12)
    // ~1.5 KB does not fit the UDP payload size c-ares advertises: truncated over UDP, retried over TCP
    const asked = server.queries.filter((q) => q.name === 'big.com')
    expect(asked.map((q) => q.transport)).toEqual(['udp', 'tcp'])
    dns.close()
  })

  it('resolves A, AAAA, NS, PTR, CNAME chains and wildcards', async () => {
    const dns = source()
    expect((await dns.resolve4('example.com')).records.sort()).toEqual(['192.0.2.1', '192.0.2.2'])
    expect(await dns.resolve6('example.com')).toEqual({ status: 'ok', records: ['2001:db8::1'] })
    expect(await dns.resolveNs('example.com')).toEqual({ status: 'ok', records: ['ns1.example.com'] })
    expect(await dns.reverse('192.0.2.1')).toEqual({ status: 'ok', records: ['host.example.com'] })
    expect((await dns.reverse('192.0.2.99')).status).toBe('nxdomain')
    expect((await dns.resolveMx('alias.com')).records[0]).toEqual({ exchange: 'mx1.example.com', priority: 10 })
    expect(await dns.resolve4('anything.deep.wild.com')).toEqual({ status: 'ok', records: ['192.0.2.55'] })
    expect((await dns.resolve4('wild.com')).status).toBe('nxdomain')
    dns.close()
  })

  it('asks the PTR question of the address: never the hosts file, IPv6 by nibbles, a mapped IPv4 address as IPv4', async () => {
    // 127.0.0.1 is in every /etc/hosts: a reverse lookup that read the file first answered its names instead
    const names = {
      '1.0.0.127.in-addr.arpa': { PTR: ['loopback.dns.example.'] },
      '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa': { PTR: ['six.example.net'] },
    }
    const own = await startDnsServer({ zones: names })
    try {
      const dns = createDnsSource({ servers: [own.address], timeoutMs: 500, tries: 1 })
      expect(await dns.reverse('127.0.0.1')).toEqual({ status: 'ok', records: ['loopback.dns.example'] })
      expect(await dns.reverse('2001:DB8::1')).toEqual({ status: 'ok', records: ['six.example.net'] })
      expect(await dns.reverse('::ffff:127.0.0.1')).toEqual({ status: 'ok', records: ['loopback.dns.example'] })
      expect(own.queries.map((q) => q.type)).toEqual(['PTR', 'PTR']) // the mapped address was the cached IPv4 question
      expect((await dns.reverse('127.0.0.2')).status).toBe('nxdomain')
      dns.close()
    } finally {
      await own.close()
    }
    expect(reverseName('192.0.2.1')).toBe('1.2.0.192.in-addr.arpa')
    expect(reverseName('::1')).toBe(`1.${'0.'.repeat(31)}ip6.arpa`)
    expect(reverseName('ffff:0:0:0:0:0:0:a')).toBe(`a.${'0.'.repeat(27)}f.f.f.f.ip6.arpa`)
  })

  it('turns timeouts, SERVFAIL and REFUSED into statuses, never rejections', async () => {
    const dns = source({ timeoutMs: 150 })
    const slow = await dns.resolveMx('slow.com') // never answered: only a timeout can end it
    expect(slow.status).toBe('timeout')
    expect((await dns.resolveMx('broken.com')).status).toBe('servfail')
    expect((await dns.resolve4('refusing.com')).status).toBe('refused')
    expect(dns.stats().timeouts).toBe(1)
    dns.close()
  })

  it('caps a question at timeoutMs × tries even when c-ares backs off', async () => {
    // The outer cap is a JS timer; c-ares keeps its own (real) clock, whose tries take 2 + 4 + 8 s and more here.
    // With the JS timers faked, the cap fires exactly at timeoutMs × tries while c-ares is still on its first try.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const dns = source({ timeoutMs: 2000, tries: 3 })
      let answer: { status: string } | undefined
      void dns.resolve4('slow.com').then((a) => (answer = a))
      await vi.advanceTimersByTimeAsync(2000 * 3 - 1)
      expect(answer).toBeUndefined()
      await vi.advanceTimersByTimeAsync(1)
      expect(answer?.status).toBe('timeout')
      dns.close()
    } finally {
      vi.useRealTimers()
    }
  })

  it('answers error for names and IPs it cannot ask, without querying', async () => {
    const dns = source()
    const before = server.queries.length
    for (const bad of ['', 'a b.com', 'x'.repeat(300), 'bücher.de', 'a..b']) {
      expect((await dns.resolveMx(bad)).status).toBe('error')
    }
    expect((await dns.reverse('not-an-ip')).status).toBe('error')
    expect((await dns.resolveMx(42 as unknown as string)).status).toBe('error')
    expect(server.queries.length).toBe(before)
    dns.close()
  })

  it('de-duplicates identical questions in flight and caches answers', async () => {
    const dns = source()
    const before = server.queries.filter((q) => q.name === 'delayed.com').length
    const answers = await Promise.all(Array.from({ length: 10 }, () => dns.resolve4('delayed.com')))
    for (const a of answers) expect(a).toEqual({ status: 'ok', records: ['192.0.2.7'] })
    expect(server.queries.filter((q) => q.name === 'delayed.com').length - before).toBe(1)
    expect(dns.stats().deduplicated).toBe(9)
    await dns.resolve4('DELAYED.com')
    expect(dns.stats().cacheHits).toBe(1)
    expect(dns.stats().queries).toBe(1)
    // answers are copies: mutating one does not poison the cache
    answers[0]!.records.push('bogus')
    expect((await dns.resolve4('delayed.com')).records).toEqual(['192.0.2.7'])
    dns.close()
  })

  it('respects TTLs (A record TTL, default TTL for MX, short negative TTL, no caching of timeouts)', async () => {
    let clock = 1_000_000
    const dns = source({ now: () => clock, cacheTtlSeconds: 600, negativeTtlSeconds: 30, timeoutMs: 100 })
    await dns.resolve4('example.com') // ttl 120
    await dns.resolveMx('example.com') // default 600
    await dns.resolveMx('nowhere.com') // negative 30
    await dns.resolveMx('slow.com') // timeout: not cached
    expect(dns.stats().queries).toBe(4)
    clock += 29_000
    await Promise.all([dns.resolve4('example.com'), dns.resolveMx('example.com'), dns.resolveMx('nowhere.com')])
    expect(dns.stats().cacheHits).toBe(3)
    clock += 2_000 // 31 s: negative expired
    await dns.resolveMx('nowhere.com')
    expect(dns.stats().queries).toBe(5)
    clock += 100_000 // 131 s: A (120 s) expired, MX (600 s) not
    await dns.resolve4('example.com')
    await dns.resolveMx('example.com')
    expect(dns.stats().queries).toBe(6)
    await dns.resolveMx('slow.com')
    expect(dns.stats().queries).toBe(7)
    dns.close()
  })

  it('bounds concurrency and queues the rest', async () => {
    // the queue wait counts against a question's time limit: a generous one, so all six are answered
    const dns = source({ maxInFlight: 2, cacheTtlSeconds: 0, timeoutMs: 5000 })
    // six distinct questions, each held 100 ms by the server: the server counts how many it holds at once
    server.setZones({ ...zones, '*.q.com': { A: ['192.0.2.8'], behaviour: { delayMs: 100 } } })
    server.resetPending()
    const res = await Promise.all(Array.from({ length: 6 }, (_, i) => dns.resolve4(`n${i}.q.com`)))
    for (const r of res) expect(r.status).toBe('ok')
    expect(server.maxPending()).toBe(2)
    server.setZones(zones)
    dns.close()
  })

  it('a queued question waits at most its own time limit, counted from when it was asked (never a second round)', async () => {
    const dead = await startDnsServer({ zones: {}, everyName: 'timeout' })
    const dns = createDnsSource({ servers: [dead.address], timeoutMs: 200, tries: 1, maxInFlight: 1 })
    try {
      const order: string[] = []
      const first = dns.resolve4('first.com').then((a) => order.push(`first ${a.status}`))
      const queued = dns.resolve4('queued.com').then((a) => order.push(`queued ${a.status}`))
      // A marker at one and a half rounds: timers fire in order of expiry, however loaded the machine. The queued
      // question's limit (one round from when it was asked) comes before the marker; a second round would not.
      const marker = new Promise<void>((resolve) => setTimeout(() => (order.push('marker'), resolve()), 300))
      await Promise.all([first, queued, marker])
      expect(order).toEqual(['first timeout', 'queued timeout', 'marker'])
      expect(dns.stats().timeouts).toBe(2)
    } finally {
      dns.close()
      await dead.close()
    }
  })

  it('close() answers error for later and queued questions', async () => {
    const dns = source({ maxInFlight: 1 })
    const first = dns.resolve4('delayed.com')
    const queued = dns.resolve4('example.com')
    dns.close()
    expect((await first).status).toBe('error')
    expect((await queued).status).toBe('error')
    expect((await dns.resolveMx('example.com')).status).toBe('error')
  })

  it('accepts host, host:port and [v6]:port servers; rejects bad options at creation', () => {
    expect(() => createDnsSource({ servers: ['127.0.0.1', '127.0.0.1:5353', '[::1]:5353', '::1'] }).close()).not.toThrow()
    expect(() => createDnsSource({ servers: ['not a server'] })).toThrow(TypeError)
    expect(() => createDnsSource({ timeoutMs: -1 })).toThrow(TypeError)
    expect(() => createDnsSource({ maxInFlight: 0 })).toThrow(TypeError)
  })

  it('reports connection errors to a closed port as error, not nxdomain', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer()
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port
        s.close(() => resolve(p))
      })
    })
    const dns = createDnsSource({ servers: [`127.0.0.1:${port}`], timeoutMs: 200, tries: 1 })
    const a = await dns.resolveMx('example.com')
    expect(['error', 'timeout']).toContain(a.status)
    dns.close()
  })

  it('maps error codes', () => {
    expect(mapDnsErrorCode('ENOTFOUND')).toBe('nxdomain')
    expect(mapDnsErrorCode('ENODATA')).toBe('nodata')
    expect(mapDnsErrorCode('ETIMEOUT')).toBe('timeout')
    expect(mapDnsErrorCode('ESERVFAIL')).toBe('servfail')
    expect(mapDnsErrorCode('EREFUSED')).toBe('refused')
    expect(mapDnsErrorCode('ECONNREFUSED')).toBe('error')
  })
})

describe('fake DNS server', () => {
  it('answers over TCP with the length prefix and counts queries', async () => {
    const before = server.queries.length
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const sock = net.connect(server.port, '127.0.0.1', () => {
        sock.write(dnsPacket.streamEncode({ type: 'query', id: 7, questions: [{ type: 'MX', name: 'example.com' }] }))
      })
      let buf = Buffer.alloc(0)
      sock.on('data', (d) => {
        buf = Buffer.concat([buf, d])
        if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          sock.end()
          resolve(buf)
        }
      })
      sock.on('error', reject)
    })
    const packet = dnsPacket.streamDecode(reply)
    expect(packet.id).toBe(7)
    expect(packet.answers).toHaveLength(2)
    expect(server.queries.slice(before)).toEqual([{ name: 'example.com', type: 'MX' }])
  })
})

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRdapSource } from './rdap.js'
import {
  daysAfter,
  daysBefore,
  standardRdapDomains,
  startRdapServer,
  type RdapServer,
} from '../../test/fake-internet/rdap-server.js'

const NOW = new Date('2026-11-15T12:00:00Z')
const iso = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString()

let server: RdapServer

beforeAll(async () => {
  server = await startRdapServer({ domains: standardRdapDomains(NOW, 3_000), now: () => NOW })
})
afterAll(async () => {
  await server.close()
})

const requestsFor = (name: string) => server.requests.filter((r) => r.path.toLowerCase().endsWith(`/domain/${name}`)).length

describe('createRdapSource against the loopback RDAP server', () => {
  it('reads a long-registered .com-shaped domain', async () => {
    const rdap = createRdapSource({ bootstrapUrl: server.bootstrapUrl, timeoutMs: 2000 })
    const a = await rdap.lookup('old-domain.test')
    expect(a).toEqual({
      status: 'found',
      domain: 'old-domain.test',
      created: iso(daysBefore(NOW, 4000)),
      updated: null,
      expires: iso(daysAfter(NOW, 700)),
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
    const req = server.requests.find((r) => r.path === '/rdap/domain/old-domain.test')
    expect(req?.accept).toContain('application/rdap+json')
    await rdap.close()
  })

  it('reads a domain registered days ago, unsigned, and a ccTLD-shaped answer without expiry', async () => {
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000 })
    const fresh = await rdap.lookup('NEW-DOMAIN.test.')
    expect(fresh.status).toBe('found')
    expect(fresh.domain).toBe('new-domain.test')
    expect(fresh.created).toBe(iso(daysBefore(NOW, 3)))
    expect(fresh.registrar).toBe('Hosting Concepts B.V. d/b/a Registrar.eu')
    expect(fresh.dnssec).toBe(false)
    expect(fresh.statuses).toEqual(['client transfer prohibited'])
    expect(fresh.nameservers).toEqual(['ns1.dns-parking.com', 'ns2.dns-parking.com'])

    const cc = await rdap.lookup('cctld-domain.test')
    expect(cc.status).toBe('found')
    expect(cc.expires).toBeNull()
    expect(cc.updated).toBe(iso(daysBefore(NOW, 20)))
    expect(cc.registrar).toBe('Domeneshop AS')
    expect(cc.dnssec).toBeNull()
    expect(cc.nameservers).toHaveLength(4)
    await rdap.close()
  })

  it('maps HTTP 404 to not_found', async () => {
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000 })
    const a = await rdap.lookup('unregistered.test')
    expect(a.status).toBe('not_found')
    expect(a.created).toBeNull()
    expect(a.error).toBeUndefined()
    // a name the server does not know at all is also a 404
    expect((await rdap.lookup('never-heard-of.test')).status).toBe('not_found')
    await rdap.close()
  })

  it('times out a slow server within the deadline', async () => {
    // The server answers long after the 300 ms limit: a 'timeout' status means the limit ended the lookup.
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 300 })
    const a = await rdap.lookup('slow-domain.test')
    expect(a.status).toBe('timeout')
    expect(a.created).toBeNull()
    await rdap.close()
  })

  it('reports malformed, non-domain and failing answers as errors', async () => {
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000 })
    for (const name of ['malformed.test', 'wrong-object.test', 'broken.test']) {
      const a = await rdap.lookup(name)
      expect(a.status, name).toBe('error')
      expect(a.error, name).toBeTypeOf('string')
      expect(a.created).toBeNull()
    }
    const a = await rdap.lookup('wrong-object.test')
    expect(a.error).toContain('not an RDAP domain object')
    expect(a.cause).toBe('bad_answer')
    await rdap.close()
  })

  it('reports a 429 as an error and keeps lists from a third party bounded', async () => {
    server.setDomain('limited.test', { kind: 'http_error', status: 429, retryAfter: '30' })
    server.setDomain(
      'many-ns.test',
      { kind: 'domain', nameservers: Array.from({ length: 100 }, (_, i) => `ns${i}.example.net`), registrar: ` ${'R'.repeat(400)} ` },
    )
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000 })
    expect((await rdap.lookup('limited.test')).status).toBe('error')
    const a = await rdap.lookup('many-ns.test')
    expect(a.status).toBe('found')
    expect(a.nameservers).toHaveLength(32)
    expect(a.nameservers[0]).toBe('ns0.example.net')
    expect(a.registrar).toBe('R'.repeat(255))
    await rdap.close()
  })

  it('reports a TLD without an RDAP server, and an unusable input, as errors', async () => {
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000 })
    const a = await rdap.lookup('example.zzzz')
    expect(a.status).toBe('error')
    expect((await rdap.lookup('')).status).toBe('error')
    expect((await rdap.lookup('a'.repeat(300) + '.test')).status).toBe('error')
    await rdap.close()
  })

  it('fetches the bootstrap file once and reuses it', async () => {
    const before = server.requests.filter((r) => r.path === '/dns.json').length
    const rdap = createRdapSource({ bootstrapUrl: server.bootstrapUrl, timeoutMs: 2000, cacheTtlSeconds: 0 })
    await Promise.all([rdap.lookup('old-domain.test'), rdap.lookup('new-domain.test')])
    await rdap.lookup('recent-domain.test')
    expect(server.requests.filter((r) => r.path === '/dns.json').length - before).toBe(1)
    expect(rdap.stats().bootstrapFetches).toBe(1)
    await rdap.close()
  })

  it('answers a failed bootstrap fetch as error and retries it next time', async () => {
    const rdap = createRdapSource({ bootstrapUrl: `${server.url}/no-such-bootstrap.json`, timeoutMs: 2000 })
    const a = await rdap.lookup('old-domain.test')
    expect(a.status).toBe('error')
    expect(a.error).toContain('bootstrap')
    await rdap.lookup('old-domain.test')
    expect(rdap.stats().bootstrapFetches).toBe(2)
    await rdap.close()
  })

  it('de-duplicates concurrent lookups of one domain', async () => {
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000 })
    const before = requestsFor('recent-domain.test')
    const answers = await Promise.all([rdap.lookup('recent-domain.test'), rdap.lookup('Recent-Domain.test'), rdap.lookup('recent-domain.test.')])
    expect(requestsFor('recent-domain.test') - before).toBe(1)
    expect(new Set(answers.map((a) => a.created)).size).toBe(1)
    expect(rdap.stats()).toMatchObject({ queries: 1, joined: 2 })
    // answers are copies: changing one does not change the others or the cache
    answers[0]!.statuses.push('mutated')
    expect(answers[1]!.statuses).not.toContain('mutated')
    expect((await rdap.lookup('recent-domain.test')).statuses).not.toContain('mutated')
    await rdap.close()
  })

  it('caches found and not_found answers for their TTLs and never caches failures', async () => {
    let clock = NOW.getTime()
    const rdap = createRdapSource({
      bootstrapData: server.bootstrapData,
      timeoutMs: 2000,
      cacheTtlSeconds: 3600,
      notFoundTtlSeconds: 60,
      now: () => new Date(clock),
    })
    const found0 = requestsFor('expiring-domain.test')
    const nf0 = requestsFor('unregistered.test')
    const bad0 = requestsFor('broken.test')
    await rdap.lookup('expiring-domain.test')
    await rdap.lookup('unregistered.test')
    await rdap.lookup('broken.test')
    clock += 30_000
    await rdap.lookup('expiring-domain.test')
    await rdap.lookup('unregistered.test')
    await rdap.lookup('broken.test')
    expect(requestsFor('expiring-domain.test') - found0).toBe(1)
    expect(requestsFor('unregistered.test') - nf0).toBe(1)
    expect(requestsFor('broken.test') - bad0).toBe(2)
    clock += 60_000 // not_found expired, found still fresh
    await rdap.lookup('expiring-domain.test')
    await rdap.lookup('unregistered.test')
    expect(requestsFor('expiring-domain.test') - found0).toBe(1)
    expect(requestsFor('unregistered.test') - nf0).toBe(2)
    clock += 3600_000 // found expired too
    await rdap.lookup('expiring-domain.test')
    expect(requestsFor('expiring-domain.test') - found0).toBe(2)
    expect(rdap.stats().cacheHits).toBe(3)
    await rdap.close()
  })

  it('bounds the cache size', async () => {
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000, maxCacheEntries: 1 })
    await rdap.lookup('old-domain.test')
    await rdap.lookup('new-domain.test') // evicts old-domain
    const before = requestsFor('old-domain.test')
    await rdap.lookup('old-domain.test')
    expect(requestsFor('old-domain.test') - before).toBe(1)
    await rdap.close()
  })

  it('uses the custom fetch for every request', async () => {
    const urls: string[] = []
    const rdap = createRdapSource({
      bootstrapUrl: server.bootstrapUrl,
      timeoutMs: 2000,
      fetch: (input, init) => {
        urls.push(String(input))
        return fetch(input, init)
      },
    })
    expect((await rdap.lookup('old-domain.test')).status).toBe('found')
    expect(urls).toEqual([server.bootstrapUrl, `${server.url}/rdap/domain/old-domain.test`])
    await rdap.close()
  })

  it('follows the registrar link only when asked', async () => {
    const plain = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000 })
    expect((await plain.lookup('new-domain.test')).updated).toBeNull()
    await plain.close()
    const linked = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000, followLinks: true })
    const a = await linked.lookup('new-domain.test')
    expect(a.status).toBe('found')
    expect(a.updated).toBe(iso(NOW))
    expect(server.requests.some((r) => r.path === '/registrar/domain/NEW-DOMAIN.TEST')).toBe(true)
    await linked.close()
  })

  it('refuses a response body over the size cap', async () => {
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 2000, maxResponseBytes: 500 })
    const a = await rdap.lookup('old-domain.test')
    expect(a.status).toBe('error')
    await rdap.close()
  })

  it('close() aborts lookups in flight and refuses later ones', async () => {
    const rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 5000 })
    const pending = rdap.lookup('slow-domain.test')
    await new Promise((r) => setTimeout(r, 50))
    await rdap.close()
    // 'error', not 'timeout' or an answer: close() ended it, not the 5 s limit or the slow server
    const a = await pending
    expect(a.status).toBe('error')
    expect((await rdap.lookup('old-domain.test')).status).toBe('error')
  })
})

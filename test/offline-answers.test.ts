/**
 * Offline answers are complete answers: a source that offline mode (or `rdap.enabled: false`, or `smtp: false`) does
 * not ask did not fail, so no result is partial; billed answers are cached under a key of their own (the configuration
 * is part of it), and a repeat is a free cache hit — through the library and through the HTTP server started offline.
 * An offline answer that cost nothing is not stored (recomputing it from local data is faster than the cache), and
 * its repeat is free too; an offline instance that counts no credits asks no cache at all.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createMemoryCache, type CacheEntry } from '../src/cache.js'
import { createRiskcheck } from '../src/riskcheck.js'
import { startDnsServer } from './fake-internet/dns-server.js'
import { startTestServer } from './server-helpers.js'
import { assertValidResult } from './validate.js'

/** Offline, these answers are billed (local data), so they are cached. */
const BILLED = [
  ['phone', '+1 415 555 0100'],
  ['phone_type', '+44 20 7946 0958'],
  ['ip', '8.8.8.8'],
] as const
/** Offline, these ask nothing billable: free, recomputed each time. */
const FREE = [
  ['email', 'jane@gmail.com'],
  ['domain_age', 'corp-mail.com'],
  ['email_auth', 'corp-mail.com'],
] as const

describe('offline answers through the library', () => {
  const rc = createRiskcheck({ offline: true, credits: 100 })
  afterAll(() => rc.close())

  it.each(BILLED)('%s: not partial; billed once, the repeat is a free cache hit', async (type, input) => {
    const first = await rc.lookup(type, input)
    assertValidResult(first, type)
    expect(first.partial).toBe(false)
    expect(first.metadata).toMatchObject({ cache_hit: false, credits_used: 1 })
    const again = await rc.lookup(type, input)
    expect(again.metadata).toMatchObject({ cache_hit: true, credits_used: 0, credits_remaining: first.metadata.credits_remaining })
    expect(again.details).toEqual(first.details)
  })

  it.each(FREE)('%s: not partial; free, and free again', async (type, input) => {
    const first = await rc.lookup(type, input)
    assertValidResult(first, type)
    expect(first.partial).toBe(false)
    expect(first.metadata.credits_used).toBe(0)
    const again = await rc.lookup(type, input)
    expect(again.metadata).toMatchObject({ credits_used: 0, credits_remaining: first.metadata.credits_remaining })
    expect(again.details).toEqual(first.details)
  })

  it('the combined check: not partial; repeated, the billed parts are free cache hits', async () => {
    const input = { email: 'li@corp-mail.com', ip: '1.1.1.1', phone: '+44 7400 123456' }
    const first = await rc.check(input)
    expect(first.partial).toBe(false)
    expect(first.metadata.credits_used).toBe(2) // ip 1, phone 1, email offline free (smtp_check unavailable)
    const again = await rc.check(input)
    expect(again.metadata).toMatchObject({ credits_used: 0 })
    expect(again.metadata.credits_remaining).toBe(first.metadata.credits_remaining)
    const parts = await rc.check({ ip: '1.1.1.1', phone: '+44 7400 123456' })
    expect(parts.metadata).toMatchObject({ cache_hit: true, credits_used: 0 })
  })

  it('a bulk job offline: no row is partial, so none is retried', async () => {
    const job = await rc.bulk.create({ type: 'ip', inputs: ['9.9.9.9', '149.112.112.112', '2620:fe::fe'] })
    const done = await rc.bulk.waitFor(job.id)
    expect(done.results.errors).toBe(0)
    await expect(rc.bulk.retry(job.id)).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
  })
})

describe('offline answers through the library without credits', () => {
  it('ask no cache: a hit would save neither credits nor time, so each answer is computed again', async () => {
    const asked: string[] = []
    const memory = createMemoryCache()
    const cache = { get: (k: string, now: number) => (asked.push(`get ${k}`), memory.get(k, now)), set: (k: string, e: CacheEntry, ttl: number) => (asked.push(`set ${k}`), memory.set(k, e, ttl)) }
    const unmetered = createRiskcheck({ offline: true, cache })
    const metered = createRiskcheck({ offline: true, credits: 10, cache })
    try {
      for (const [type, input] of BILLED) {
        const first = await unmetered.lookup(type, input)
        const again = await unmetered.lookup(type, input)
        expect([first.metadata.cache_hit, again.metadata.cache_hit, again.metadata.credits_used]).toEqual([false, false, 1])
        expect(again.details).toEqual(first.details)
      }
      const check = await unmetered.check({ ip: '1.1.1.1', phone: '+44 7400 123456' })
      expect(check.metadata).toMatchObject({ cache_hit: false, credits_used: 2, credits_remaining: null })
      expect(asked).toEqual([])
      // the same cache behind an instance that counts credits: billed answers are stored, and a repeat is a free hit
      await metered.ip('8.8.8.8')
      expect((await metered.ip('8.8.8.8')).metadata).toMatchObject({ cache_hit: true, credits_used: 0 })
      expect(asked.length).toBeGreaterThan(0)
    } finally {
      await unmetered.close()
      await metered.close()
    }
  })
})

describe('answers of sources switched off by configuration', () => {
  it('rdap.enabled false: domain age unknown but not partial, and cached', async () => {
    const rc = createRiskcheck({ rdap: { enabled: false } })
    try {
      const r = await rc.domainAge('corp-mail.com')
      expect(r.partial).toBe(false)
      expect(r.risk.factors).toEqual(['domain_age_unknown'])
      expect((await rc.domainAge('corp-mail.com')).metadata.cache_hit).toBe(true)
    } finally {
      await rc.close()
    }
  })

  it('smtp false: the mailbox is skipped, the answer is not partial, and cached', async () => {
    const dns = await startDnsServer({
      zones: { 'corp-mail.com': { MX: [{ priority: 10, exchange: 'mx.corp-mail.com' }], TXT: ['v=spf1 mx -all'] }, '_dmarc.corp-mail.com': { TXT: ['v=DMARC1; p=reject'] } },
    })
    const rc = createRiskcheck({ dns: { servers: [dns.address] }, rdap: { enabled: false } })
    try {
      const r = await rc.email('jane@corp-mail.com', { smtp: false })
      expect(r.details.smtp_check).toBe('skipped')
      expect(r.partial).toBe(false)
      expect((await rc.email('jane@corp-mail.com', { smtp: false })).metadata.cache_hit).toBe(true)
    } finally {
      await rc.close()
      await dns.close()
    }
  })
})

describe('the cache key includes the configuration', () => {
  it('an offline answer is never served to an online instance sharing the cache, nor the other way round', async () => {
    const cache = createMemoryCache()
    const dns = await startDnsServer({ zones: { '8.8.8.8.in-addr.arpa': { PTR: ['dns.google'] } } })
    const offline = createRiskcheck({ offline: true, cache })
    const online = createRiskcheck({ cache, dns: { servers: [dns.address] } })
    try {
      const a = await offline.ip('8.8.8.8')
      expect(a.details.reverse_dns).toBeNull()
      const b = await online.ip('8.8.8.8')
      expect(b.metadata.cache_hit).toBe(false)
      expect(b.details.reverse_dns).toBe('dns.google')
      expect((await offline.ip('8.8.8.8')).details.reverse_dns).toBeNull()
      expect((await online.ip('8.8.8.8')).metadata.cache_hit).toBe(true)
    } finally {
      await offline.close()
      await online.close()
      await dns.close()
    }
  })
})

describe('the HTTP server started offline', () => {
  it('bills an IP lookup once; repeats are free cache hits', async () => {
    const s = await startTestServer()
    try {
      const first = await s.post('/v1/ip', { ip: '8.8.8.8' }, s.live)
      expect(first.status).toBe(200)
      expect(first.body.data.partial).toBe(false)
      expect(first.body.data.metadata.credits_used).toBe(1)
      const balance = first.body.data.metadata.credits_remaining
      for (let i = 0; i < 5; i++) {
        s.tick()
        const again = await s.post('/v1/ip', { ip: '8.8.8.8' }, s.live)
        expect(again.body.data.metadata).toMatchObject({ cache_hit: true, credits_used: 0, credits_remaining: balance })
      }
      const check = await s.post('/v1/check', { ip: '8.8.8.8', phone: '+1 415 555 0100' }, s.live)
      expect(check.body.data.metadata.credits_used).toBe(1) // the IP part is a cache hit; the phone part is billed
    } finally {
      await s.close()
    }
  })
})

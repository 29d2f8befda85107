/**
 * Credits through the HTTP API: concurrent spending at a low balance never goes below zero and spends each credit
 * once (also with two server instances on one database file), subscription credits first, refunds of free answers,
 * usage, credit events in the outbox, period roll-over, upgrades, test keys never charged, and the persistent result
 * cache across restarts.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventPayloadSchema } from '../src/schema.js'
import { createServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { fakeClock } from './clock.js'
import { startTestServer, type TestServer } from './server-helpers.js'
import { schemaErrors } from './validate.js'

let s: TestServer
let dir: string

beforeAll(async () => {
  s = await startTestServer()
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-credits-'))
})

afterAll(async () => {
  await s.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A fresh org with `subscription` monthly credits plus `purchased`, a live key and a high rate. */
async function orgWith(subscription: number, purchased = 0) {
  const store = s.app.store
  const now = s.clock.now().getTime()
  const org = await store.createOrg({ name: `org-${subscription}-${purchased}`, planId: 'free' }, now)
  await store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: subscription, ratePerSecond: 10_000 }, now)
  if (purchased > 0) await store.addCredits(org.id, purchased, 'top_up', now)
  const live = await issueApiKey(store, { orgId: org.id }, now)
  const test = await issueApiKey(store, { orgId: org.id, mode: 'test' }, now)
  return { org, live: live.secret, test: test.secret }
}

const account = async (key: string) => (await s.get('/v1/account', key)).body.data

describe('spending', () => {
  it('concurrent lookups at a low balance: exactly the balance is spent, never below zero', async () => {
    const { org, live } = await orgWith(3, 2)
    const requests = Array.from({ length: 30 }, (_, i) => s.post('/v1/ip', { ip: `8.8.${i}.8`, bypass_cache: true }, live))
    const answers = await Promise.all(requests)
    const ok = answers.filter((r) => r.status === 200)
    const refused = answers.filter((r) => r.status === 402)
    expect(ok).toHaveLength(5)
    expect(refused).toHaveLength(25)
    for (const r of refused) expect(r.body.error.code).toBe('INSUFFICIENT_CREDITS')
    const remaining = ok.map((r) => r.body.data.metadata.credits_remaining as number)
    expect(Math.min(...remaining)).toBeGreaterThanOrEqual(0)
    const a = await account(live)
    expect(a.credits).toEqual({ subscription: 0, purchased: 0, total_available: 0 })
    expect(a.usage.period).toEqual({ lookups: 5, credits: 5 })
    const depleted = (await s.app.store.listEvents({ orgId: org.id })).filter((e) => e.type === 'credits.depleted')
    expect(depleted).toHaveLength(1)
  })

  it('the combined check reserves one credit per part before it runs', async () => {
    const { live } = await orgWith(2)
    const r = await s.post('/v1/check', { email: 'a@example.com', ip: '8.8.8.8', phone: '+12015550100', bypass_cache: true }, live)
    expect(r.status).toBe(402)
    const two = await s.post('/v1/check', { ip: '8.8.8.8', phone: '+12015550100', bypass_cache: true }, live)
    expect(two.status).toBe(200)
    expect(two.body.data.metadata.credits_used).toBe(2)
    expect(two.body.data.metadata.credits_remaining).toBe(0)
  })

  it('subscription credits are spent before purchased ones; free answers are refunded', async () => {
    const { live } = await orgWith(2, 3)
    expect((await s.post('/v1/ip', { ip: '9.9.9.9', bypass_cache: true }, live)).body.data.metadata.credits_used).toBe(1)
    let a = await account(live)
    expect(a.credits).toEqual({ subscription: 1, purchased: 3, total_available: 4 })
    // Offline, the mailbox check is unavailable: the email lookup is free (reserved, then refunded).
    const email = await s.post('/v1/email', { email: 'jane@acme-widgets.com', bypass_cache: true }, live)
    expect(email.body.data.metadata.credits_used).toBe(0)
    a = await account(live)
    expect(a.credits.total_available).toBe(4)
    expect(a.usage.period).toEqual({ lookups: 2, credits: 1 })
    for (const ip of ['9.9.9.1', '9.9.9.2']) await s.post('/v1/ip', { ip, bypass_cache: true }, live)
    a = await account(live)
    expect(a.credits).toEqual({ subscription: 0, purchased: 2, total_available: 2 })
    expect(a.usage.all_time).toEqual({ lookups: 4, credits: 3 })
  })

  it('test keys never use credits and do not count as usage', async () => {
    const { live, test } = await orgWith(1)
    for (const ip of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) {
      const r = await s.post('/v1/ip', { ip, bypass_cache: true }, test)
      expect(r.body.data.metadata).toMatchObject({ credits_used: 0, credits_remaining: null, test_mode: true })
    }
    const a = await account(live)
    expect(a.credits.total_available).toBe(1)
    expect(a.usage.all_time).toEqual({ lookups: 0, credits: 0 })
  })

  it('two server instances on one database file never spend a credit twice', async () => {
    const file = join(dir, 'shared.sqlite')
    const clock = fakeClock()
    const opts = { db: file, purgeIntervalMs: 0, riskcheck: { offline: true, now: clock.now, cache: false as const } }
    const a = createServer(opts)
    const b = createServer(opts)
    try {
      await Promise.all([a.ready(), b.ready()])
      const now = clock.now().getTime()
      const org = await a.store.createOrg({ name: 'Shared', planId: 'free' }, now)
      await a.store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: 7, ratePerSecond: 10_000 }, now)
      const { secret } = await issueApiKey(a.store, { orgId: org.id }, now)
      const send = (app: typeof a, i: number) =>
        app.inject({ method: 'POST', url: '/v1/ip', headers: { authorization: `Bearer ${secret}` }, payload: { ip: `1.1.${i}.1` } })
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => send(i % 2 ? a : b, i)))
      expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(7)
      expect(answers.filter((r) => r.statusCode === 402)).toHaveLength(17)
      expect(await b.store.balance(org.id, now)).toBe(0)
    } finally {
      await Promise.all([a.close(), b.close()])
    }
  })
})

describe('credit events', () => {
  it('credits.low below 25 % and below 5 %, credits.depleted at 0, once each on the way down; credits.added resets', async () => {
    const { org, live } = await orgWith(40)
    const types = async () => (await s.app.store.listEvents({ orgId: org.id })).map((e) => e.payload)
    const spend = async (n: number) => {
      for (let i = 0; i < n; i++) expect((await s.post('/v1/ip', { ip: `7.7.7.${i}`, bypass_cache: true }, live)).status).toBe(200)
    }
    await spend(30) // balance 10: exactly 25 %, not below
    expect(await types()).toEqual([])
    await spend(1) // 9
    let events = await types()
    expect(events.map((e) => e.type)).toEqual(['credits.low'])
    expect(events[0]!.data).toEqual({ balance: 9, threshold_percent: 25, monthly_credits: 40 })
    await spend(7) // 2: exactly 5 %
    expect(await types()).toHaveLength(1)
    await spend(1) // 1
    await spend(1) // 0
    events = await types()
    expect(events.map((e) => e.type)).toEqual(['credits.low', 'credits.low', 'credits.depleted'])
    expect(events[1]!.data).toEqual({ balance: 1, threshold_percent: 5, monthly_credits: 40 })
    expect(events[2]!.data).toEqual({ balance: 0, monthly_credits: 40 })
    expect((await s.post('/v1/ip', { ip: '7.7.8.1', bypass_cache: true }, live)).status).toBe(402)
    expect(await types()).toHaveLength(3)

    await s.app.store.addCredits(org.id, 5, 'top_up', s.clock.now().getTime())
    await spend(4) // 1: below 5 % again
    await spend(1) // 0: depleted again
    events = await types()
    expect(events.slice(3).map((e) => [e.type, e.data])).toEqual([
      ['credits.added', { amount: 5, balance: 5, reason: 'top_up' }],
      ['credits.low', { balance: 1, threshold_percent: 5, monthly_credits: 40 }],
      ['credits.depleted', { balance: 0, monthly_credits: 40 }],
    ])
    for (const e of events) {
      expect(schemaErrors(EventPayloadSchema, e)).toEqual([])
      expect(e).toMatchObject({ api_version: '1', org_id: org.id, created: Math.floor(s.clock.now().getTime() / 1000) })
      expect(e.id).toMatch(/^evt_[0-9a-f]{24}$/)
    }
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length)
  })

  it('a new period renews the subscription credits (credits.added, period_renewal); purchased ones stay', async () => {
    const { org, live } = await orgWith(10, 4)
    for (const ip of ['6.6.6.1', '6.6.6.2', '6.6.6.3']) await s.post('/v1/ip', { ip, bypass_cache: true }, live)
    let a = await account(live)
    expect(a.credits).toEqual({ subscription: 7, purchased: 4, total_available: 11 })
    s.clock.advance(31 * 24 * 60 * 60 * 1000) // 2026-12-23: the second period (Dec 22 – Jan 22)
    try {
      a = await account(live)
      expect(a.plan.period_start).toBe('2026-12-22T00:00:00.000Z')
      expect(a.plan.period_end).toBe('2027-01-22T00:00:00.000Z')
      expect(a.credits).toEqual({ subscription: 10, purchased: 4, total_available: 14 })
      expect(a.usage.period).toEqual({ lookups: 0, credits: 0 })
      expect(a.usage.all_time).toEqual({ lookups: 3, credits: 3 })
      const renewal = (await s.app.store.listEvents({ orgId: org.id })).map((e) => e.payload).filter((e) => e.type === 'credits.added')
      expect(renewal.at(-1)!.data).toEqual({ amount: 10, balance: 14, reason: 'period_renewal' })
    } finally {
      s.clock.set('2026-11-22T00:00:00Z')
    }
  })

  it('an upgrade grants the difference of the monthly credits (credits.added, upgrade)', async () => {
    const { org, live } = await orgWith(100)
    await s.app.store.setOrgPlan(org.id, { planId: 'starter' }, s.clock.now().getTime())
    const a = await account(live)
    expect(a.plan).toMatchObject({ id: 'starter', name: 'Starter', credits_per_period: 10_000 })
    expect(a.credits.subscription).toBe(10_000)
    const last = (await s.app.store.listEvents({ orgId: org.id })).at(-1)!.payload
    expect(last).toMatchObject({ type: 'credits.added', data: { amount: 9_900, balance: 10_000, reason: 'upgrade' } })
    expect((await s.get('/v1/account', live)).headers['x-ratelimit-limit']).toBe('20')
  })
})

describe('the persistent result cache', () => {
  it('a repeated lookup is a free cache hit, also after a restart, for 7 days', async () => {
    const file = join(dir, 'cache.sqlite')
    const clock = fakeClock()
    const open = () => createServer({ db: file, purgeIntervalMs: 0, riskcheck: { now: clock.now } })
    let app = open()
    await app.ready()
    const now = clock.now().getTime()
    const org = await app.store.createOrg({ name: 'Cache', planId: 'starter' }, now)
    const { secret } = await issueApiKey(app.store, { orgId: org.id }, now)
    const lookup = async () => {
      const r = await app.inject({ method: 'POST', url: '/v1/phone/type', headers: { authorization: `Bearer ${secret}` }, payload: { phone: '+1 201 555 0100' } })
      return JSON.parse(r.body).data.metadata as { cache_hit: boolean; credits_used: number; credits_remaining: number }
    }
    try {
      expect(await lookup()).toMatchObject({ cache_hit: false, credits_used: 1, credits_remaining: 9_999 })
      expect(await lookup()).toMatchObject({ cache_hit: true, credits_used: 0, credits_remaining: 9_999 })
      await app.close()
      app = open()
      expect(await lookup()).toMatchObject({ cache_hit: true, credits_used: 0, credits_remaining: 9_999 })
      clock.advance(7 * 24 * 60 * 60 * 1000)
      expect(await lookup()).toMatchObject({ cache_hit: false, credits_used: 1, credits_remaining: 9_998 })
      const store = app.store as ReturnType<typeof createSqliteStore>
      expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal')
    } finally {
      await app.close()
    }
  })
})

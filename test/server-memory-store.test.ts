/**
 * The server over the in-memory store (`createServer({ db: createMemoryStore() })`), as an application embeds it in
 * its own unit tests: lookups billed from the store's credits, the account, keys issued, re-scoped and revoked
 * through the store, idempotent replays, the result cache, an org policy kept with the store, and a store that
 * outlives the server it was given to.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { parsePolicy } from '../src/scoring/policy-file.js'
import { createMemoryStore, createServer, issueApiKey, type MemoryStore } from '../src/server/index.js'
import { startTestServer, type TestServer } from './server-helpers.js'

const servers: TestServer[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

/** A test server (offline lookups, fixed clock, starter org with a live and a test key) over `store`. */
async function serve(store: MemoryStore = createMemoryStore()) {
  const s = await startTestServer({ db: store })
  servers.push(s)
  return { s, store, now: () => s.clock.now().getTime() }
}

describe('createServer over a memory store', () => {
  it('bills lookups from the store, reports them in the account, and never charges test keys', async () => {
    const { s, store, now } = await serve()
    const ip = await s.post('/v1/ip', { ip: '8.8.8.8' }, s.live)
    expect(ip.status).toBe(200)
    expect(ip.body.data.metadata).toMatchObject({ credits_used: 1, credits_remaining: 9_999, cache_hit: false })
    // the store's result cache answers the repeat, free
    expect((await s.post('/v1/ip', { ip: '8.8.8.8' }, s.live)).body.data.metadata).toMatchObject({ cache_hit: true, credits_used: 0 })
    expect((await s.post('/v1/ip', { ip: '1.1.1.1', bypass_cache: true }, s.test)).status).toBe(200)
    const account = await s.get('/v1/account', s.live)
    expect(account.status).toBe(200)
    expect(account.body.data).toMatchObject({
      org: { id: s.org.id, name: 'Acme' },
      credits: { subscription: 9_999, purchased: 0, total_available: 9_999 },
      usage: { period: { lookups: 2, credits: 1 }, all_time: { lookups: 2, credits: 1 } },
      key: { id: s.liveKeyId, mode: 'live' },
      policy_version: null,
    })
    expect(store.balance(s.org.id, now())).toBe(9_999)
    expect(store.getKey(s.liveKeyId)!.lastUsedAt).toBe(now())
  })

  it('spends exactly the balance under concurrent requests, then 402; the alerts are in the store outbox', async () => {
    const { s, store, now } = await serve()
    store.setOrgPlan(s.org.id, { planId: 'starter', monthlyCredits: 3, ratePerSecond: 1_000 }, now())
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => s.post('/v1/ip', { ip: `8.8.${i}.8`, bypass_cache: true }, s.live)))
    expect(answers.filter((r) => r.status === 200)).toHaveLength(3)
    const refused = answers.filter((r) => r.status === 402)
    expect(refused).toHaveLength(7)
    for (const r of refused) expect(r.body.error.code).toBe('INSUFFICIENT_CREDITS')
    expect(store.balance(s.org.id, now())).toBe(0)
    expect(store.listEvents({ orgId: s.org.id }).map((e) => e.type)).toEqual(['credits.low', 'credits.low', 'credits.depleted'])
  })

  it('keys issued, re-scoped and revoked through the store take effect on the next request', async () => {
    const { s, store, now } = await serve()
    const issued = await issueApiKey(store, { orgId: s.org.id, name: 'new' }, now())
    expect((await s.get('/v1/account', issued.secret)).body.data.key).toMatchObject({ id: issued.key.id, name: 'new' })
    store.setKeyScopes(issued.key.id, ['account:read'])
    const forbidden = await s.post('/v1/ip', { ip: '8.8.8.8' }, issued.secret)
    expect([forbidden.status, forbidden.body.error.code]).toEqual([403, 'FORBIDDEN_SCOPE'])
    store.revokeKey(issued.key.id, now())
    const revoked = await s.get('/v1/account', issued.secret)
    expect([revoked.status, revoked.body.error.code]).toEqual([401, 'UNAUTHORIZED'])
    store.setOrgSuspended(s.org.id, true, now())
    expect((await s.get('/v1/account', s.live)).status).toBe(403)
  })

  it('replays an idempotent request without charging again', async () => {
    const { s, store, now } = await serve()
    const h = { 'idempotency-key': 'memory-1' }
    const first = await s.post('/v1/ip', { ip: '192.0.2.44', bypass_cache: true }, s.live, h)
    const again = await s.post('/v1/ip', { ip: '192.0.2.44', bypass_cache: true }, s.live, h)
    expect(first.status).toBe(200)
    expect(again.raw).toBe(first.raw)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(store.balance(s.org.id, now())).toBe(9_999)
    const other = await s.post('/v1/ip', { ip: '192.0.2.45', bypass_cache: true }, s.live, h)
    expect([other.status, other.body.error.code]).toEqual([409, 'IDEMPOTENCY_CONFLICT'])
  })

  it("scores an org's requests with the policy set in the store's own org policies", async () => {
    const { s, store } = await serve()
    // Offline, 8.8.8.8 fires ip_datacenter (the service policy says verify).
    expect((await s.post('/v1/ip', { ip: '8.8.8.8' }, s.live)).body.data.recommendation.action).toBe('verify')
    const file = await parsePolicy('rules: [{ name: datacenter_blocks, when: { any: [ip_datacenter] }, action: block }]', { format: 'yaml' })
    store.orgPolicies.setOrgPolicy({ orgId: s.org.id, version: file.version, canonical: file.canonical, description: null, source: null, setAt: 0 })
    expect((await s.post('/v1/ip', { ip: '8.8.8.8', bypass_cache: true }, s.live)).body.data.recommendation.action).toBe('block')
    expect((await s.get('/v1/account', s.live)).body.data.policy_version).toBe(file.version)
  })

  it('is ready (GET /readyz) and lists the plans it holds; the catalogue given to createServer is written into it', async () => {
    const { s } = await serve()
    const ready = await s.get('/readyz', null)
    expect([ready.status, ready.body.status]).toEqual([200, 'ready'])
    const gold = { id: 'gold', name: 'Gold', monthly_price: 10, monthly_credits: 5, rate_per_second: 3 }
    const store = createMemoryStore()
    const app = createServer({ db: store, plans: [gold], purgeIntervalMs: 0, riskcheck: { offline: true } })
    await app.ready()
    expect((await app.inject({ method: 'GET', url: '/v1/pricing' })).json().plans).toEqual([
      { id: 'gold', name: 'Gold', monthly_price: 10, monthly_credits: 5 },
    ])
    expect(store.listPlans()).toContainEqual(gold)
    await app.close()
  })

  it('starts from the catalogue it is given, checked like createServer checks one', () => {
    const gold = { id: 'gold', name: 'Gold', monthly_price: 10, monthly_credits: 5, rate_per_second: 3 }
    const store = createMemoryStore({ plans: [gold] })
    expect(store.listPlans()).toEqual([gold])
    expect(store.createOrg({ name: 'G', planId: 'gold' }, 0).subscriptionCredits).toBe(5)
    expect(() => createMemoryStore({ plans: [{ ...gold, rate_per_second: 0 }] })).toThrow(TypeError)
  })

  it('outlives the server it was given to: a second server over it finds the org, its keys and credits', async () => {
    const { s, store, now } = await serve()
    expect((await s.post('/v1/ip', { ip: '8.8.8.8', bypass_cache: true }, s.live)).status).toBe(200)
    await servers.pop()!.close()
    const next = await startTestServer({ db: store })
    servers.push(next)
    const account = await next.get('/v1/account', s.live)
    expect(account.status).toBe(200)
    expect(account.body.data.credits.total_available).toBe(9_999)
    expect(store.balance(s.org.id, now())).toBe(9_999)
  })
})

/**
 * The server over the in-memory store (`createServer({ db: createMemoryStore() })`), as an application embeds it in
 * its own unit tests: lookups billed from the store's credits, the account, keys issued, re-scoped and revoked
 * through the store, idempotent replays, the result cache, an org policy kept with the store, bulk jobs billed from
 * the store's credits, webhooks delivered from the store's outbox to a real receiver, and a store that outlives the
 * server it was given to.
 */
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { parsePolicy } from '../src/scoring/policy-file.js'
import { createMemoryStore, createServer, issueApiKey, type MemoryStore } from '../src/server/index.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { startTestServer, type TestServer } from './server-helpers.js'

const servers: TestServer[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

/** A test server (offline lookups, fixed clock, starter org with a live and a test key) over `store`. */
async function serve(store: MemoryStore = createMemoryStore(), options: Parameters<typeof startTestServer>[0] = {}) {
  const s = await startTestServer({ db: store, ...options })
  servers.push(s)
  return { s, store, now: () => s.clock.now().getTime() }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Polls a bulk job until it has finished. */
async function finished(s: TestServer, id: string, key = s.live) {
  for (let i = 0; i < 500; i++) {
    const r = await s.get(`/v1/bulk/jobs/${id}`, key)
    if (['completed', 'cancelled', 'failed'].includes(r.body.data.status)) return r.body.data
    await sleep(10)
  }
  throw new Error(`job ${id} did not finish`)
}

/** A webhook receiver on 127.0.0.1 that answers 200 and keeps what it was sent. */
async function receiver() {
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      res.end('ok')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    received,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
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

  it('runs bulk jobs: credits reserved with the job and exactly the used ones kept, results paged, bulk.completed in the outbox', async () => {
    const { s, store, now } = await serve()
    store.setOrgPlan(s.org.id, { planId: 'starter', ratePerSecond: 1_000_000 }, now())
    const before = store.balance(s.org.id, now())
    const inputs = ['8.8.8.8', '1.1.1.1', '8.8.8.8', 'not an ip', '9.9.9.9', '', '8.8.4.4']
    const created = await s.post('/v1/bulk/jobs', { type: 'ip', inputs }, s.live)
    expect(created.status, created.raw).toBe(202)
    expect(created.body.data).toMatchObject({ status: 'queued', total_rows: 7, unique_inputs: 5 })
    const done = await finished(s, created.body.data.id)
    expect(done).toMatchObject({ status: 'completed', processed: 5, credits_used: 4 })
    expect(done.results.errors).toBe(1)
    expect(store.balance(s.org.id, now())).toBe(before - 4)

    const rows: Array<{ input: string; credits_used: number }> = []
    let cursor: string | null = null
    do {
      const page = await s.get(`/v1/bulk/jobs/${done.id}/results?limit=2${cursor ? `&cursor=${cursor}` : ''}`, s.live)
      expect(page.status).toBe(200)
      expect(page.body.data.length).toBeLessThanOrEqual(2)
      rows.push(...page.body.data)
      cursor = page.body.next_cursor
    } while (cursor)
    expect(rows.map((r) => r.input)).toEqual(['8.8.8.8', '1.1.1.1', 'not an ip', '9.9.9.9', '8.8.4.4'])
    expect(rows.reduce((sum, r) => sum + r.credits_used, 0)).toBe(4)
    const account = (await s.get('/v1/account', s.live)).body.data
    expect(account.usage.period).toEqual({ lookups: 4, credits: 4 })
    expect(store.listEvents({ orgId: s.org.id }).filter((e) => e.type === 'bulk.completed').map((e) => [e.payload.data.id, e.payload.test_mode])).toEqual([[done.id, false]])
    // a test key's job says so in its event: a receiver can keep test runs out of its live work
    const testJob = await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['192.0.2.8'] }, s.test)
    expect(testJob.status, testJob.raw).toBe(202)
    const testDone = await finished(s, testJob.body.data.id, s.test)
    const completed = store.listEvents({ orgId: s.org.id }).filter((e) => e.type === 'bulk.completed')
    expect(completed.map((e) => [e.payload.data.id, e.payload.test_mode])).toEqual([[done.id, false], [testDone.id, true]])

    // more unique inputs than credits: 402, and nothing reserved
    store.setOrgPlan(s.org.id, { planId: 'starter', monthlyCredits: 0, ratePerSecond: 1_000_000 }, now())
    const left = store.balance(s.org.id, now())
    const short = await s.post('/v1/bulk/jobs', { type: 'ip', inputs: Array.from({ length: left + 1 }, (_, i) => `10.0.${i >> 8}.${i & 255}`) }, s.live)
    expect([short.status, short.body.error?.code]).toEqual([402, 'INSUFFICIENT_CREDITS'])
    expect(store.balance(s.org.id, now())).toBe(left)
  })

  it('delivers webhooks from the store outbox: a credits.added event reaches a loopback receiver, signed with the endpoint secret', async () => {
    const rx = await receiver()
    try {
      const { s, store, now } = await serve(createMemoryStore(), { unsafeAllowLoopbackWebhooks: true, webhookIntervalMs: 0 })
      const key = (await issueApiKey(store, { orgId: s.org.id, scopes: ['webhooks'] }, now())).secret
      const created = await s.post('/v1/webhook-endpoints', { url: rx.url, events: ['credits.added'] }, key)
      expect(created.status, created.raw).toBe(201)
      const endpoint = created.body.data
      expect((await s.get('/v1/webhook-endpoints', key)).body.data.map((e: { id: string }) => e.id)).toEqual([endpoint.id])
      store.addCredits(s.org.id, 25, 'top_up', now())
      const [event] = store.listEvents({ orgId: s.org.id }).filter((e) => e.type === 'credits.added')
      expect(await s.app.webhooks!.runOnce()).toMatchObject({ events: 1, succeeded: 1 })
      expect(rx.received).toHaveLength(1)
      const sent = rx.received[0]!
      expect(sent.headers['svc-event-id']).toBe(event!.id)
      expect(JSON.parse(sent.body)).toMatchObject({ id: event!.id, type: 'credits.added', data: { amount: 25 } })
      expect(verifyWebhook(sent.body, sent.headers['svc-signature'] as string, endpoint.secret, { now }).ok).toBe(true)
      // the outbox is pumped once: nothing more to send
      expect(await s.app.webhooks!.runOnce()).toMatchObject({ events: 0, leased: 0 })
      expect(rx.received).toHaveLength(1)
    } finally {
      await rx.close()
    }
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

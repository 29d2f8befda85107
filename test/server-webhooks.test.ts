/**
 * Webhooks over HTTP and through the server's SQLite-backed queue: endpoint routes (public https URLs only, at most
 * 10, events, formats, the secret shown on create and rotate only), events from the ledger, bulk jobs and the
 * operator ping delivered to a real receiver on loopback that verifies every signature with `verifyWebhook`, the
 * documented retry schedule on a fake clock (surviving a restart), auto-disable after a day of failures with an
 * operator notice, re-enable / resend / ping operator commands, rotation mid-queue, redirects as failures, the
 * connect-time SSRF guard, and the 30-day log retention.
 */
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { runAdmin } from '../src/cli/admin-command.js'
import { EventPayloadSchema, WebhookEndpointSchema } from '../src/schema.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import type { SqliteStore } from '../src/server/store/sqlite/store.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { fakeClock } from './clock.js'
import { startTestServer, type TestServer } from './server-helpers.js'
import { schemaErrors } from './validate.js'

interface Received {
  headers: http.IncomingHttpHeaders
  body: string
  path: string
}

/** A webhook receiver on 127.0.0.1: records every request; `reply` decides the status. */
async function startReceiver() {
  const received: Received[] = []
  let reply: (r: Received) => { status: number; headers?: Record<string, string>; body?: string } = () => ({ status: 200, body: 'ok' })
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '/' }
      received.push(r)
      const answer = reply(r)
      res.writeHead(answer.status, answer.headers ?? {})
      res.end(answer.body ?? '')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as AddressInfo).port
  return {
    received,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    setReply(fn: typeof reply) {
      reply = fn
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-webhooks-'))
let s: TestServer
let rx: Receiver
let hookKey: string
const logs: string[] = []

beforeAll(async () => {
  rx = await startReceiver()
  s = await startTestServer({
    unsafeAllowLoopbackWebhooks: true,
    webhookIntervalMs: 0,
    testKeyRatePerSecond: 1_000_000,
    logger: {
      level: 'warn',
      stream: new Writable({
        write(chunk, _enc, cb) {
          logs.push(String(chunk))
          cb()
        },
      }),
    },
  })
  await s.app.store.setOrgPlan(s.org.id, { planId: 'starter', ratePerSecond: 1_000_000 }, s.clock.now().getTime())
  hookKey = (await issueApiKey(s.app.store, { orgId: s.org.id, scopes: ['webhooks', 'bulk'] }, s.clock.now().getTime())).secret
})

afterAll(async () => {
  await s.close()
  await rx.close()
  rmSync(dir, { recursive: true, force: true })
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const nowMs = () => s.clock.now().getTime()
const verify = (r: Received, secret: string) => verifyWebhook(r.body, r.headers['svc-signature'] as string, secret, { now: nowMs })
const create = (body: Record<string, unknown>, key = hookKey) => s.post('/v1/webhook-endpoints', body, key)
const run = () => s.app.webhooks!.runOnce()
async function removeAll() {
  for (const e of (await s.get('/v1/webhook-endpoints', hookKey)).body.data) await s.request('DELETE', `/v1/webhook-endpoints/${e.id}`, { key: hookKey })
}

describe('endpoint routes', () => {
  it('create (201, secret once), list without secret, rotate (new secret), delete', async () => {
    const r = await create({ url: 'https://hooks.example.com/riskcheck', events: ['credits.low', 'bulk.completed'], description: 'prod' })
    expect(r.status, r.raw).toBe(201)
    expect(schemaErrors(WebhookEndpointSchema, r.body.data)).toEqual([])
    expect(r.body.data).toMatchObject({
      url: 'https://hooks.example.com/riskcheck',
      description: 'prod',
      events: ['credits.low', 'bulk.completed'],
      format: 'json',
      status: 'enabled',
      disabled_reason: null,
      created_at: s.clock.now().toISOString(),
    })
    expect(r.body.data.secret).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/)
    const list = await s.get('/v1/webhook-endpoints', hookKey)
    expect(list.status).toBe(200)
    expect(list.body.data).toHaveLength(1)
    expect(list.body.data[0].secret).toBeUndefined()
    expect(list.raw).not.toContain('whsec_')
    const rot = await s.post(`/v1/webhook-endpoints/${r.body.data.id}/rotate-secret`, {}, hookKey)
    expect(rot.status).toBe(200)
    expect(rot.body.data.secret).toMatch(/^whsec_/)
    expect(rot.body.data.secret).not.toBe(r.body.data.secret)
    // no body, sent with a JSON Content-Type (what many clients do): as no body at all (before: 400 "The request body is empty")
    const bare = await s.request('POST', `/v1/webhook-endpoints/${r.body.data.id}/rotate-secret`, { key: hookKey, headers: { 'content-type': 'application/json' }, payload: '' })
    expect(bare.status, bare.raw).toBe(200)
    expect(bare.body.data.secret).not.toBe(rot.body.data.secret)
    // a route that needs a body says so
    const empty = await s.request('POST', '/v1/webhook-endpoints', { key: hookKey, headers: { 'content-type': 'application/json' }, payload: '' })
    expect(empty.status).toBe(400)
    expect(empty.body.error.code).toBe('INVALID_REQUEST')
    const del = await s.request('DELETE', `/v1/webhook-endpoints/${r.body.data.id}`, { key: hookKey })
    expect(del.status).toBe(200)
    expect(del.body.data).toEqual({ id: r.body.data.id, deleted: true })
    expect((await s.request('DELETE', `/v1/webhook-endpoints/${r.body.data.id}`, { key: hookKey })).body.error.code).toBe('NOT_FOUND')
    expect((await s.post(`/v1/webhook-endpoints/${r.body.data.id}/rotate-secret`, {}, hookKey)).body.error.code).toBe('NOT_FOUND')
  })

  it('format defaults from Slack and Discord incoming-webhook URLs; events are types or *', async () => {
    const slack = await create({ url: 'https://hooks.slack.com/services/T000/B000/XXXX', events: ['*'] })
    expect(slack.body.data.format).toBe('slack')
    const discord = await create({ url: 'https://discord.com/api/webhooks/123/abc', events: ['credits.depleted'] })
    expect(discord.body.data.format).toBe('discord')
    const forced = await create({ url: 'https://hooks.slack.com/services/T000/B000/YYYY', events: ['*'], format: 'json' })
    expect(forced.body.data.format).toBe('json')
    for (const events of [[], ['nope'], ['*', 'ping']]) expect((await create({ url: 'https://x.example.com/', events })).body.error.code).toBe('INVALID_REQUEST')
    expect((await create({ url: 'https://x.example.com/', events: ['*'], format: 'teams' })).body.error.code).toBe('INVALID_REQUEST')
    expect((await create({ events: ['*'] })).body.error.code).toBe('MISSING_FIELD')
    expect((await create({ url: 'https://x.example.com/' })).body.error.code).toBe('MISSING_FIELD')
    await removeAll()
  })

  it('at most 10 endpoints per org; another org cannot see or touch them; scope webhooks needed', async () => {
    const ids: string[] = []
    for (let i = 0; i < 10; i++) ids.push((await create({ url: `https://h${i}.example.com/x`, events: ['*'] })).body.data.id)
    const eleventh = await create({ url: 'https://h10.example.com/x', events: ['*'] })
    expect(eleventh.status).toBe(400)
    expect(eleventh.body.error.message).toMatch(/At most 10/)
    const other = await s.app.store.createOrg({ name: 'Other', planId: 'free' }, nowMs())
    const otherKey = (await issueApiKey(s.app.store, { orgId: other.id, mode: 'test', scopes: ['webhooks'] }, nowMs())).secret
    expect((await s.get('/v1/webhook-endpoints', otherKey)).body.data).toEqual([])
    expect((await s.request('DELETE', `/v1/webhook-endpoints/${ids[0]}`, { key: otherKey })).status).toBe(404)
    expect((await s.post(`/v1/webhook-endpoints/${ids[0]}/rotate-secret`, {}, otherKey)).status).toBe(404)
    expect((await s.get('/v1/webhook-endpoints', s.live)).body.error.code).toBe('FORBIDDEN_SCOPE')
    await removeAll()
  })

  it('the url must be a public https URL: 422 INVALID_INPUT otherwise (without the loopback option)', async () => {
    const strict = await startTestServer({ webhookIntervalMs: 0, testKeyRatePerSecond: 1_000_000 })
    try {
      const key = (await issueApiKey(strict.app.store, { orgId: strict.org.id, mode: 'test', scopes: ['webhooks'] }, nowMs())).secret
      const refused = [
        'http://hooks.example.com/x', // not https
        'ftp://hooks.example.com/x',
        'https://user:pw@hooks.example.com/x', // userinfo
        'https://@hooks.example.com/x',
        'https://hooks.example.com@127.0.0.1/x',
        'https://localhost/x',
        'https://api.localhost/x',
        'https://127.0.0.1/x',
        'https://2130706433/x', // 127.0.0.1 as one number
        'https://0x7f.0.0.1/x',
        'https://[::1]/x',
        'https://[::ffff:127.0.0.1]/x', // IPv4-mapped loopback
        'https://[0:0:0:0:0:ffff:7f00:1]/x', // long-form mapped loopback
        'https://10.0.0.1/x',
        'https://192.168.1.1/x',
        'https://172.16.0.1/x',
        'https://169.254.169.254/latest/meta-data', // link-local (cloud metadata)
        'https://100.64.0.1/x', // CGNAT
        'https://224.0.0.1/x', // multicast
        'https://240.0.0.1/x', // reserved
        'https://192.0.2.10/x', // documentation
        'https://[2001:db8::1]/x', // documentation (v6)
        'https://[fe80::1]/x',
        'https://[fc00::1]/x',
        'https://[64:ff9b::7f00:1]/x', // NAT64 of loopback
        'https://[2002:7f00:1::]/x', // 6to4
        'https://intranet.corp/x',
        'https://printer.local/x',
        'not a url',
      ]
      for (const url of refused) {
        const r = await strict.post('/v1/webhook-endpoints', { url, events: ['*'] }, key)
        expect(r.status, url).toBe(422)
        expect(r.body.error.code, url).toBe('INVALID_INPUT')
      }
      for (const url of ['https://hooks.example.com/x', 'https://8.8.8.8/hook', 'https://[2606:4700:4700::1111]/hook']) {
        expect((await strict.post('/v1/webhook-endpoints', { url, events: ['*'] }, key)).status, url).toBe(201)
      }
    } finally {
      await strict.close()
    }
  })
})

describe('delivery to a real receiver', () => {
  beforeEach(async () => {
    await removeAll()
    await run() // queued deliveries of removed endpoints are skipped
  })

  it('credits.added from the ledger: signed JSON payload and the documented headers', async () => {
    rx.received.length = 0
    const ep = (await create({ url: rx.url('/credits'), events: ['credits.added'] })).body.data
    await s.app.store.addCredits(s.org.id, 250, 'top_up', nowMs())
    const r1 = await run()
    expect(r1.succeeded).toBe(1)
    expect(rx.received).toHaveLength(1)
    const got = rx.received[0]!
    expect(got.path).toBe('/credits')
    expect(verify(got, ep.secret)).toEqual({ ok: true, timestamp: Math.floor(nowMs() / 1000) })
    expect(verify({ ...got, body: got.body.replace('250', '251') }, ep.secret)).toEqual({ ok: false, error: 'signature_mismatch' })
    const payload = JSON.parse(got.body)
    expect(schemaErrors(EventPayloadSchema, payload)).toEqual([])
    expect(payload).toMatchObject({ type: 'credits.added', api_version: '1', org_id: s.org.id, data: { amount: 250, reason: 'top_up' } })
    expect(payload.data.balance).toBeTypeOf('number')
    expect(payload.id).toMatch(/^evt_/)
    expect(payload.created).toBe(Math.floor(nowMs() / 1000))
    expect(got.headers['content-type']).toMatch(/^application\/json/)
    expect(got.headers['svc-event-id']).toBe(payload.id)
    expect(got.headers['svc-event-type']).toBe('credits.added')
    expect(got.headers['svc-delivery-id']).toMatch(/^dlv_[0-9a-f]{24}$/)
    expect(got.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
    // Nothing more to send; the log holds the attempt.
    expect((await run()).leased).toBe(0)
    const attempts = await s.app.webhooks!.deliveries.listAttempts(ep.id)
    expect(attempts).toHaveLength(1)
    expect(attempts[0]).toMatchObject({ attempt: 1, ok: true, status: 200, responseBody: 'ok', error: null })
    expect(attempts[0]!.durationMs).toBeGreaterThanOrEqual(0)
    // Another event type is not sent to it.
    await s.app.store.setOrgPlan(s.org.id, { planId: 'starter', monthlyCredits: 1, ratePerSecond: 1_000_000 }, nowMs())
    expect((await run()).leased).toBe(0)
    await removeAll()
  })

  it('credits.low / credits.depleted when live lookups spend the balance', async () => {
    rx.received.length = 0
    const org = await s.app.store.createOrg({ name: 'Spender', planId: 'free' }, nowMs())
    await s.app.store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: 4, ratePerSecond: 1000 }, nowMs())
    const live = (await issueApiKey(s.app.store, { orgId: org.id, scopes: ['lookup', 'webhooks'] }, nowMs())).secret
    const ep = (await s.post('/v1/webhook-endpoints', { url: rx.url('/spend'), events: ['*'] }, live)).body.data
    for (const ip of ['8.8.8.8', '8.8.4.4', '1.1.1.1', '9.9.9.9']) expect((await s.post('/v1/ip', { ip, bypass_cache: true }, live)).status).toBe(200)
    await run()
    const types = rx.received.map((r) => JSON.parse(r.body))
    expect(types.map((p) => p.type)).toEqual(['credits.low', 'credits.low', 'credits.depleted'])
    expect(types[0].data).toEqual({ balance: 0, threshold_percent: 25, monthly_credits: 4 })
    expect(types[2].data).toEqual({ balance: 0, monthly_credits: 4 })
    for (const r of rx.received) expect(verify(r, ep.secret).ok).toBe(true)
  })

  it('bulk.completed arrives after a job finishes, with the job object', async () => {
    rx.received.length = 0
    const ep = (await create({ url: rx.url('/bulk'), events: ['bulk.completed'] })).body.data
    const job = (await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['192.0.2.1', '8.8.8.8', '8.8.8.8'] }, hookKey)).body.data
    expect((await run()).leased).toBe(0) // not finished yet: nothing to send
    let final: any
    for (let i = 0; i < 200; i++) {
      final = (await s.get(`/v1/bulk/jobs/${job.id}`, hookKey)).body.data
      if (final.status === 'completed') break
      await sleep(10)
    }
    await run()
    expect(rx.received).toHaveLength(1)
    const payload = JSON.parse(rx.received[0]!.body)
    expect(payload.type).toBe('bulk.completed')
    expect(payload.data).toEqual(final)
    expect(verify(rx.received[0]!, ep.secret).ok).toBe(true)
    await removeAll()
  })

  it('slack and discord formats send a one-line message in their incoming-webhook shape', async () => {
    rx.received.length = 0
    await create({ url: rx.url('/slack'), events: ['credits.added'], format: 'slack' })
    await create({ url: rx.url('/discord'), events: ['credits.added'], format: 'discord' })
    await s.app.store.addCredits(s.org.id, 10, 'top_up', nowMs())
    await run()
    const byPath = Object.fromEntries(rx.received.map((r) => [r.path, JSON.parse(r.body)]))
    expect(Object.keys(byPath['/slack'])).toEqual(['text'])
    expect(byPath['/discord'].content).toBeTypeOf('string')
    expect(byPath['/discord'].content).not.toContain('\n')
    expect(byPath['/slack'].text).toMatch(/10/)
    expect(byPath['/slack'].text).not.toContain('\n')
    await removeAll()
  })

  it('the server timer delivers without being asked', async () => {
    const t = await startTestServer({ unsafeAllowLoopbackWebhooks: true, webhookIntervalMs: 20 })
    try {
      const key = (await issueApiKey(t.app.store, { orgId: t.org.id, mode: 'test', scopes: ['webhooks'] }, nowMs())).secret
      const ep = (await t.post('/v1/webhook-endpoints', { url: rx.url('/timer'), events: ['*'] }, key)).body.data
      rx.received.length = 0
      await t.app.store.addCredits(t.org.id, 5, 'top_up', t.clock.now().getTime())
      for (let i = 0; i < 200 && rx.received.length === 0; i++) await sleep(10)
      expect(rx.received).toHaveLength(1)
      expect(verifyWebhook(rx.received[0]!.body, rx.received[0]!.headers['svc-signature'] as string, ep.secret, { now: () => t.clock.now().getTime() }).ok).toBe(true)
    } finally {
      await t.close()
    }
  })
})

describe('retries, auto-disable, operator commands', () => {
  beforeEach(async () => {
    await removeAll()
    await run()
    rx.setReply(() => ({ status: 200 }))
  })

  it('rotation mid-queue: the retry is signed with the new secret', async () => {
    rx.received.length = 0
    rx.setReply(() => ({ status: 503, body: 'busy' }))
    const ep = (await create({ url: rx.url('/rotate'), events: ['credits.added'] })).body.data
    await s.app.store.addCredits(s.org.id, 1, 'top_up', nowMs())
    const first = await run()
    expect(first.retrying).toBe(1)
    expect(verify(rx.received[0]!, ep.secret).ok).toBe(true)
    const rotated = (await s.post(`/v1/webhook-endpoints/${ep.id}/rotate-secret`, {}, hookKey)).body.data
    rx.setReply(() => ({ status: 200 }))
    s.clock.advance(60_000)
    expect((await run()).succeeded).toBe(1)
    const retry = rx.received[1]!
    expect(retry.headers['svc-event-id']).toBe(rx.received[0]!.headers['svc-event-id'])
    expect(retry.headers['svc-delivery-id']).toBe(rx.received[0]!.headers['svc-delivery-id'])
    expect(verify(retry, rotated.secret).ok).toBe(true)
    expect(verify(retry, ep.secret)).toEqual({ ok: false, error: 'signature_mismatch' })
    await removeAll()
  })

  it('a redirect is a failure and is not followed', async () => {
    rx.received.length = 0
    rx.setReply((r) => (r.path === '/moved' ? { status: 302, headers: { location: rx.url('/target') } } : { status: 200 }))
    const ep = (await create({ url: rx.url('/moved'), events: ['credits.added'] })).body.data
    await s.app.store.addCredits(s.org.id, 1, 'top_up', nowMs())
    expect((await run()).retrying).toBe(1)
    expect(rx.received.map((r) => r.path)).toEqual(['/moved'])
    expect((await s.app.webhooks!.deliveries.listAttempts(ep.id))[0]).toMatchObject({ ok: false, status: 302, error: 'redirect' })
    rx.setReply(() => ({ status: 200 }))
    await removeAll()
  })

  it('the retry schedule (1 min … 7 h, 11 attempts) held in SQLite across a restart; auto-disable after a day; enable, resend, ping', async () => {
    const file = join(dir, 'retry.sqlite')
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const notices: string[] = []
    const open = () =>
      createServer({
        db: file,
        purgeIntervalMs: 0,
        webhookIntervalMs: 0,
        unsafeAllowLoopbackWebhooks: true,
        riskcheck: { offline: true, now: clock.now },
        logger: {
          level: 'warn',
          stream: new Writable({
            write(chunk, _e, cb) {
              notices.push(String(chunk))
              cb()
            },
          }),
        },
      })
    let app: RiskcheckServer = open()
    await app.ready()
    const t0 = clock.now().getTime()
    const org = await app.store.createOrg({ name: 'Failing', planId: 'free' }, t0)
    const key = (await issueApiKey(app.store, { orgId: org.id, mode: 'test', scopes: ['webhooks'] }, t0)).secret
    const inject = async (method: 'GET' | 'POST', url: string, body?: unknown) =>
      JSON.parse(
        (
          await app.inject({
            method,
            url,
            headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            ...(body ? { payload: JSON.stringify(body) } : {}),
          })
        ).body,
      )
    const ep = (await inject('POST', '/v1/webhook-endpoints', { url: rx.url('/failing'), events: ['*'] })).data
    rx.received.length = 0
    rx.setReply((r) => (r.path === '/failing' ? { status: 500, body: 'x'.repeat(10_000) } : { status: 200 }))
    await app.store.addCredits(org.id, 7, 'top_up', clock.now().getTime())
    const attemptTimes: number[] = []
    const tick = async () => {
      const before = rx.received.length
      await app.webhooks!.runOnce()
      if (rx.received.length > before) attemptTimes.push(clock.now().getTime())
    }
    await tick()
    const delays = [1, 5, 15, 30, 60, 120, 180, 240, 360, 420].map((m) => m * 60_000)
    for (const [i, d] of delays.entries()) {
      clock.advance(d - 1000)
      await tick()
      expect(attemptTimes, `retry ${i + 1} not before its time`).toHaveLength(i + 1)
      clock.advance(1000)
      if (i === 4) {
        // Restart in the middle of the schedule: the next retry time is in the database.
        await app.close()
        app = open()
        await app.ready()
      }
      await tick()
      expect(attemptTimes, `retry ${i + 1}`).toHaveLength(i + 2)
    }
    expect(attemptTimes.slice(1).map((t, i) => t - attemptTimes[i]!)).toEqual(delays)
    // All 11 attempts failed; nothing ever succeeded for a day → disabled with reason failing + an operator notice.
    clock.advance(10 * 3600_000)
    await tick()
    expect(attemptTimes).toHaveLength(11)
    const listed = (await inject('GET', '/v1/webhook-endpoints')).data[0]
    expect(listed).toMatchObject({ id: ep.id, status: 'disabled', disabled_reason: 'failing' })
    const stored = await app.webhooks!.deliveries.listNotices()
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatchObject({ kind: 'webhook_endpoint_disabled', subject: ep.id, orgId: org.id })
    expect(notices.join('')).toContain(`Webhook endpoint ${ep.id}`)
    const log = await app.webhooks!.deliveries.listAttempts(ep.id)
    expect(log.map((a) => a.attempt)).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1])
    for (const a of log) {
      expect(a).toMatchObject({ ok: false, status: 500, error: 'http_status' })
      expect(a.responseBody.length).toBeLessThanOrEqual(4096)
    }
    // While disabled, new events are not sent.
    await app.store.addCredits(org.id, 1, 'top_up', clock.now().getTime())
    await tick()
    expect(attemptTimes).toHaveLength(11)

    // Operator: a ping reaches even a disabled endpoint; then enable + resend the missed events (same event ids).
    const io = () => {
      const out: string[] = []
      const err: string[] = []
      return {
        out,
        err,
        io: { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) } } as never,
      }
    }
    const now = () => clock.now().getTime()
    const ping = io()
    expect(await runAdmin(['webhook', 'ping', ep.id, '--db', file, '--json'], ping.io, { now })).toBe(0)
    const pingEvent = JSON.parse(ping.out.join(''))
    rx.setReply(() => ({ status: 204 }))
    rx.received.length = 0
    await app.webhooks!.runOnce()
    expect(rx.received).toHaveLength(1)
    expect(JSON.parse(rx.received[0]!.body)).toMatchObject({ type: 'ping', id: pingEvent.id, data: { endpoint_id: ep.id } })
    const resendDisabled = io()
    expect(await runAdmin(['webhook', 'resend', ep.id, '--db', file], resendDisabled.io, { now })).toBe(1)
    const enable = io()
    expect(await runAdmin(['webhook', 'enable', ep.id, '--db', file, '--json'], enable.io, { now })).toBe(0)
    expect(JSON.parse(enable.out.join(''))).toMatchObject({ id: ep.id, status: 'enabled', disabled_reason: null })
    const resend = io()
    expect(await runAdmin(['webhook', 'resend', ep.id, '--db', file, '--json', '--since', new Date(t0).toISOString()], resend.io, { now })).toBe(0)
    const queued = JSON.parse(resend.out.join('')) as Array<{ event_id: string; resend_of: string }>
    expect(queued).toHaveLength(2) // the failed credits.added and the one skipped while disabled
    rx.received.length = 0
    await app.webhooks!.runOnce()
    expect(rx.received.map((r) => r.headers['svc-event-id']).sort()).toEqual(queued.map((q) => q.event_id).sort())
    for (const r of rx.received) expect(r.headers['svc-delivery-id']).not.toBe(queued.find((q) => q.event_id === r.headers['svc-event-id'])!.resend_of)
    expect((await inject('GET', '/v1/webhook-endpoints')).data[0].status).toBe('enabled')
    const noticesCli = io()
    expect(await runAdmin(['notices', 'list', '--db', file], noticesCli.io, { now })).toBe(0)
    expect(noticesCli.out.join('')).toContain('webhook_endpoint_disabled')
    const listCli = io()
    expect(await runAdmin(['webhook', 'list', '--org', org.id, '--db', file, '--json'], listCli.io, { now })).toBe(0)
    const adminList = JSON.parse(listCli.out.join('')) as Array<Record<string, unknown>>
    expect(adminList).toEqual([expect.objectContaining({ id: ep.id, url: ep.url, status: 'enabled', disabled_reason: null, org_id: org.id })])
    expect(adminList[0]).not.toHaveProperty('secret')

    // Delivery logs are kept 30 days.
    expect((await app.webhooks!.deliveries.listAttempts(ep.id)).length).toBeGreaterThan(11)
    clock.advance(31 * 24 * 3600_000)
    await app.webhooks!.prune()
    expect(await app.webhooks!.deliveries.listAttempts(ep.id)).toEqual([])
    expect(((app.store as SqliteStore).db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries').get() as { n: number }).n).toBe(0)
    await app.close()
    rx.setReply(() => ({ status: 200 }))
  })

  it('SSRF: without the loopback option the connected address is refused at delivery time', async () => {
    const file = join(dir, 'ssrf.sqlite')
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const base = { db: file, purgeIntervalMs: 0, webhookIntervalMs: 0, riskcheck: { offline: true, now: clock.now } }
    let app = createServer({ ...base, unsafeAllowLoopbackWebhooks: true })
    await app.ready()
    const org = await app.store.createOrg({ name: 'Ssrf', planId: 'free' }, clock.now().getTime())
    const key = (await issueApiKey(app.store, { orgId: org.id, mode: 'test', scopes: ['webhooks'] }, clock.now().getTime())).secret
    const ep = JSON.parse(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/webhook-endpoints',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ url: rx.url('/ssrf'), events: ['*'] }),
        })
      ).body,
    ).data
    await app.close()
    app = createServer(base)
    await app.ready()
    rx.received.length = 0
    await app.store.addCredits(org.id, 1, 'top_up', clock.now().getTime())
    const r = await app.webhooks!.runOnce()
    expect(r.retrying).toBe(1)
    expect(rx.received).toEqual([])
    const attempt = (await app.webhooks!.deliveries.listAttempts(ep.id))[0]!
    expect(['blocked_address', 'invalid_url']).toContain(attempt.error)
    expect(attempt.status).toBeNull()
    await app.close()
  })
})

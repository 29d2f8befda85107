/**
 * Deliveries to a REAL receiver on loopback: signatures verified with the library's verifyWebhook, headers, 3xx not
 * followed, timeouts, bounded response reading, and SSRF refusals at connect time (a fake resolver maps names to
 * loopback; loopback is only reachable with allowLoopback).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventPayloadSchema } from '../src/schema.js'
import { buildDelivery, deliverWebhook, WEBHOOK_USER_AGENT } from '../src/webhooks/deliver.js'
import { buildCreditsLowEvent, buildPingEvent, createWebhookSecret } from '../src/webhooks/events.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { schemaErrors } from './validate.js'
import { RECEIVER_CERT, fakeDns, startReceiver, type Receiver } from './webhooks-helpers.js'

const secret = createWebhookSecret()
const orgId = 'org_test'

function signed(format: 'json' | 'slack' | 'discord' = 'json', deliveryId = 'dlv_test1') {
  const now = new Date()
  const event = buildCreditsLowEvent({ orgId, now, balance: 240, thresholdPercent: 25, monthlyCredits: 10000 })
  return { event, ...buildDelivery(event, { secret, format }, { deliveryId, now }) }
}

describe('deliverWebhook → real loopback receiver (http)', () => {
  let rx: Receiver
  beforeAll(async () => {
    rx = await startReceiver()
  })
  afterAll(async () => {
    await rx.close()
  })

  it('delivers a signed JSON event the receiver verifies with verifyWebhook, with every header', async () => {
    const verdicts: unknown[] = []
    rx.handle((req, res) => {
      const v = verifyWebhook(req.rawBody, req.headers['svc-signature'] as string, secret)
      verdicts.push(v)
      res.writeHead(v.ok ? 200 : 400, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify({ received: v.ok }))
    })
    const before = rx.requests.length
    const { event, body, headers } = signed()
    const r = await deliverWebhook({ url: `${rx.url}/hooks/riskcheck?x=1`, body, headers, allowLoopback: true })
    expect(r).toMatchObject({ ok: true, status: 200, error: null, errorDetail: null, responseBody: '{"received":true}', address: '127.0.0.1' })
    expect(r.durationMs).toBeGreaterThanOrEqual(0)
    expect(verdicts).toEqual([{ ok: true, timestamp: expect.any(Number) }])
    const got = rx.requests[before]
    expect(got?.method).toBe('POST')
    expect(got?.url).toBe('/hooks/riskcheck?x=1')
    expect(got?.headers['content-type']).toBe('application/json')
    expect(got?.headers['user-agent']).toBe(WEBHOOK_USER_AGENT)
    expect(got?.headers['svc-event-id']).toBe(event.id)
    expect(got?.headers['svc-event-type']).toBe('credits.low')
    expect(got?.headers['svc-delivery-id']).toBe('dlv_test1')
    expect(got?.headers['svc-signature']).toMatch(/^t=\d{10},v1=[0-9a-f]{64}$/)
    expect(Number(got?.headers['content-length'])).toBe(got?.rawBody.length)
    const payload = JSON.parse(got?.rawBody.toString('utf8') ?? '') as unknown
    expect(payload).toEqual(event)
    expect(schemaErrors(EventPayloadSchema, payload)).toEqual([])
    // The receiver's check is real: another secret or a changed body fails.
    expect(verifyWebhook(got?.rawBody ?? '', got?.headers['svc-signature'] as string, createWebhookSecret()).ok).toBe(false)
    expect(verifyWebhook(`${got?.rawBody.toString()} `, got?.headers['svc-signature'] as string, secret).ok).toBe(false)
  })

  it('slack and discord bodies are their incoming-webhook shapes, signed as sent', async () => {
    rx.handle((_req, res) => res.writeHead(204).end())
    for (const format of ['slack', 'discord'] as const) {
      const before = rx.requests.length
      const { body, headers } = signed(format)
      const r = await deliverWebhook({ url: `${rx.url}/chat`, body, headers, allowLoopback: true })
      expect(r.ok).toBe(true)
      expect(r.status).toBe(204)
      const got = rx.requests[before]
      const parsed = JSON.parse(got?.rawBody.toString() ?? '') as Record<string, unknown>
      expect(Object.keys(parsed)[0]).toBe(format === 'slack' ? 'text' : 'content')
      expect(String(Object.values(parsed)[0])).toMatch(/^riskcheck: credits low — 240 of 10,000/)
      expect(verifyWebhook(got?.rawBody ?? '', got?.headers['svc-signature'] as string, secret).ok).toBe(true)
    }
  })

  it('any 2xx is success', async () => {
    for (const status of [200, 201, 202, 204, 299]) {
      rx.handle((_req, res) => res.writeHead(status).end())
      const { body, headers } = signed()
      const r = await deliverWebhook({ url: rx.url, body, headers, allowLoopback: true })
      expect(r.ok, String(status)).toBe(true)
      expect(r.status).toBe(status)
    }
  })

  it('a redirect is a failure and is NOT followed', async () => {
    rx.handle((req, res) => {
      if (req.url === '/moved') res.writeHead(302, { Location: `${rx.url}/target` }).end('moved')
      else res.writeHead(200).end('followed')
    })
    for (const status of [301, 302, 303, 307, 308]) {
      rx.handle((req, res) => {
        if (req.url === '/moved') res.writeHead(status, { Location: `${rx.url}/target` }).end('moved')
        else res.writeHead(200).end('followed')
      })
      const before = rx.requests.length
      const { body, headers } = signed()
      const r = await deliverWebhook({ url: `${rx.url}/moved`, body, headers, allowLoopback: true })
      expect(r).toMatchObject({ ok: false, status, error: 'redirect', responseBody: 'moved' })
      expect(r.errorDetail).toContain('/target')
      expect(rx.requests.length - before).toBe(1)
      expect(rx.requests[before]?.url).toBe('/moved')
    }
  })

  it('non-2xx statuses fail with the status and the (truncated) response body', async () => {
    rx.handle((_req, res) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end('x'.repeat(20_000)))
    const { body, headers } = signed()
    const r = await deliverWebhook({ url: rx.url, body, headers, allowLoopback: true })
    expect(r).toMatchObject({ ok: false, status: 500, error: 'http_status', errorDetail: 'HTTP 500' })
    expect(r.responseBody).toBe('x'.repeat(4096))
    const small = await deliverWebhook({ url: rx.url, body, headers, allowLoopback: true, maxResponseBytes: 10 })
    expect(small.responseBody).toBe('x'.repeat(10))
  })

  it('truncation never splits a UTF-8 character into garbage', async () => {
    rx.handle((_req, res) => res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end('é'.repeat(3000)))
    const { body, headers } = signed()
    const r = await deliverWebhook({ url: rx.url, body, headers, allowLoopback: true, maxResponseBytes: 4095 })
    expect(r.ok).toBe(true)
    expect(r.responseBody).toBe('é'.repeat(2047))
  })

  it('a receiver slower than the timeout is a timeout failure (status null)', async () => {
    rx.handle((_req, res) => {
      setTimeout(() => res.writeHead(200).end('late'), 3000).unref()
    })
    const { body, headers } = signed()
    // The receiver answers after 3 s: a timeout naming 300 ms means the limit ended the delivery.
    const r = await deliverWebhook({ url: rx.url, body, headers, allowLoopback: true, timeoutMs: 300 })
    expect(r).toMatchObject({ ok: false, status: null, error: 'timeout', errorDetail: 'no response within 300 ms' })
  })

  it('a 2xx whose body trickles past the deadline is still a success, returned at the deadline', async () => {
    rx.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.write('part1')
      setTimeout(() => res.end('part2'), 3000).unref()
    })
    const { body, headers } = signed()
    // The body ends after 3 s; only 'part1' means the answer was returned at the 400 ms deadline.
    const r = await deliverWebhook({ url: rx.url, body, headers, allowLoopback: true, timeoutMs: 400 })
    expect(r).toMatchObject({ ok: true, status: 200, responseBody: 'part1' })
  })

  it('reuses connections between deliveries (keep-alive) and still works after the receiver closes them', async () => {
    rx.handle((_req, res) => res.writeHead(200).end('ok'))
    const before = rx.requests.length
    for (let i = 0; i < 3; i++) {
      const { body, headers } = signed()
      expect((await deliverWebhook({ url: rx.url, body, headers, allowLoopback: true })).ok).toBe(true)
    }
    const ports = new Set(rx.requests.slice(before).map((r) => r.remotePort))
    expect(ports.size).toBe(1)
    rx.handle((_req, res) => {
      res.setHeader('Connection', 'close')
      res.writeHead(200).end('bye')
    })
    for (let i = 0; i < 2; i++) {
      const { body, headers } = signed()
      expect((await deliverWebhook({ url: rx.url, body, headers, allowLoopback: true })).ok).toBe(true)
    }
  })

  it('WHATWG spellings of loopback reach the loopback receiver only with allowLoopback', async () => {
    rx.handle((_req, res) => res.writeHead(200).end('ok'))
    const spellings = [
      `http://2130706433:${rx.port}/`,
      `http://0x7f.1:${rx.port}/`,
      `http://127.1:${rx.port}/`,
      `http://127.0.0.1.:${rx.port}/`,
      `http://[::ffff:127.0.0.1]:${rx.port}/`,
    ]
    for (const url of spellings) {
      const { body, headers } = signed()
      expect((await deliverWebhook({ url, body, headers, allowLoopback: true })).ok, url).toBe(true)
      const before = rx.requests.length
      const refused = await deliverWebhook({ url: url.replace('http:', 'https:'), body, headers })
      expect(refused.ok).toBe(false)
      expect(refused.error, url).toBe('blocked_address')
      expect(rx.requests.length).toBe(before)
    }
  })
})

describe('SSRF refusals at delivery time (nothing reaches the receiver)', () => {
  let rx: Receiver
  let tlsRx: Receiver
  beforeAll(async () => {
    rx = await startReceiver()
    tlsRx = await startReceiver({ tls: true })
  })
  afterAll(async () => {
    await rx.close()
    await tlsRx.close()
  })

  it('https to a public-looking name that resolves to 127.0.0.1 is refused at connect time', async () => {
    const dns = fakeDns({ 'hooks.example.com': ['127.0.0.1'] })
    const { body, headers } = signed()
    const r = await deliverWebhook({ url: `https://hooks.example.com:${tlsRx.port}/x`, body, headers, lookup: dns, ca: RECEIVER_CERT })
    expect(r).toMatchObject({ ok: false, status: null, error: 'blocked_address', address: null })
    expect(r.errorDetail).toContain('127.0.0.1 is Loopback')
    expect(dns.calls).toContain('hooks.example.com')
    expect(tlsRx.requests).toHaveLength(0)
  })

  it('the same name is delivered over TLS (SNI + certificate checked) when loopback is explicitly allowed', async () => {
    const dns = fakeDns({ 'hooks.example.com': ['127.0.0.1'] })
    const { body, headers } = signed()
    const r = await deliverWebhook({ url: `https://hooks.example.com:${tlsRx.port}/x`, body, headers, lookup: dns, ca: RECEIVER_CERT, allowLoopback: true })
    expect(r).toMatchObject({ ok: true, status: 200, address: '127.0.0.1' })
    expect(tlsRx.requests).toHaveLength(1)
    expect(tlsRx.requests[0]?.headers.host).toBe(`hooks.example.com:${tlsRx.port}`)
    expect(verifyWebhook(tlsRx.requests[0]?.rawBody ?? '', tlsRx.requests[0]?.headers['svc-signature'] as string, secret).ok).toBe(true)
  })

  it('an untrusted certificate is a tls failure', async () => {
    const dns = fakeDns({ 'hooks.example.com': ['127.0.0.1'] })
    const { body, headers } = signed()
    const before = tlsRx.requests.length
    const r = await deliverWebhook({ url: `https://hooks.example.com:${tlsRx.port}/x`, body, headers, lookup: dns, allowLoopback: true })
    expect(r).toMatchObject({ ok: false, error: 'tls' })
    expect(tlsRx.requests.length).toBe(before)
  })

  it('DNS changing to a private address between deliveries is caught (rebinding)', async () => {
    const dns = fakeDns({ 'hooks.example.com': ['127.0.0.1'] })
    const { body, headers } = signed()
    const opts = { url: `https://hooks.example.com:${tlsRx.port}/x`, body, headers, lookup: dns, ca: RECEIVER_CERT, keepAlive: false }
    // With loopback allowed the name works; then DNS answers 10.0.0.7 / 169.254.169.254 and the connection is refused.
    expect((await deliverWebhook({ ...opts, allowLoopback: true })).ok).toBe(true)
    for (const address of ['10.0.0.7', '169.254.169.254', '::ffff:127.0.0.1', '64:ff9b::7f00:1', '::1']) {
      dns.table['hooks.example.com'] = [address]
      const r = await deliverWebhook(opts)
      expect(r.error, address).toBe('blocked_address')
    }
  })

  it('plain http to loopback is refused without allowLoopback, before any connection', async () => {
    const { body, headers } = signed()
    const before = rx.requests.length
    for (const url of [`${rx.url}/x`, `http://localhost:${rx.port}/`, `http://[::1]:${rx.port}/`]) {
      const r = await deliverWebhook({ url, body, headers })
      expect(r.ok).toBe(false)
      expect(['blocked_address', 'invalid_url']).toContain(r.error)
    }
    expect(rx.requests.length).toBe(before)
  })

  it('plain http under allowLoopback still refuses a name that resolves to a public address', async () => {
    const dns = fakeDns({ localhost: ['93.184.216.34'] })
    const { body, headers } = signed()
    const r = await deliverWebhook({ url: `http://localhost:${rx.port}/`, body, headers, lookup: dns, allowLoopback: true })
    expect(r.error).toBe('blocked_address')
    expect(r.errorDetail).toContain('not loopback')
  })

  it('userinfo, bracketed and long-form mapped loopback URLs are refused', async () => {
    const { body, headers } = signed()
    const before = rx.requests.length
    for (const url of [
      `https://user:pw@127.0.0.1:${rx.port}/`,
      `https://@[::1]:${rx.port}/`,
      `https://[::1]:${rx.port}/`,
      `https://[0000:0000:0000:0000:0000:ffff:7f00:0001]:${rx.port}/`,
    ]) {
      const r = await deliverWebhook({ url, body, headers })
      expect(r.ok, url).toBe(false)
      expect(['blocked_address', 'invalid_url'], url).toContain(r.error)
    }
    expect(rx.requests.length).toBe(before)
  })

  it('DNS failure and a closed port are failures with their own codes, never throws', async () => {
    const { body, headers } = signed()
    const nx = await deliverWebhook({ url: 'https://nowhere.example.com/', body, headers, lookup: fakeDns({}) })
    expect(nx).toMatchObject({ ok: false, error: 'dns', status: null })
    const closed = await startReceiver()
    const port = closed.port
    await closed.close()
    const refused = await deliverWebhook({ url: `http://127.0.0.1:${port}/`, body, headers, allowLoopback: true })
    expect(refused).toMatchObject({ ok: false, error: 'connection', status: null })
    const garbage = await deliverWebhook({ url: 'not a url', body, headers })
    expect(garbage).toMatchObject({ ok: false, error: 'invalid_url' })
  })
})

describe('ping payloads', () => {
  it('validate against the schema', () => {
    const e = buildPingEvent({ orgId, now: new Date(), endpointId: 'we_1' })
    expect(schemaErrors(EventPayloadSchema, e)).toEqual([])
  })
})

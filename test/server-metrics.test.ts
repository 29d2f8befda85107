/**
 * Prometheus metrics (src/server/metrics.ts): counters move by exactly the requests made — requests by route and
 * status, the latency histogram, lookups by type and cache hit, credits billed, webhook deliveries by outcome — and
 * `serve --metrics-port` serves them on their own port.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import type { SqliteStore } from '../src/server/store/sqlite/store.js'
import { webhookOperator } from '../src/server/webhook-service.js'
import { serveInProcess, startTestServer, type TestServer } from './server-helpers.js'

/** The value of one sample line (`name{labels} value`), 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m || m[1] !== name) continue
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]))
    if (Object.entries(labels).every(([k, v]) => have[k] === v) && Object.keys(have).length === Object.keys(labels).length) return Number(m[3])
  }
  return 0
}

let server: TestServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('metrics', () => {
  it('are off unless asked for', async () => {
    server = await startTestServer()
    expect(server.app.metrics).toBeUndefined()
  })

  it('count requests, latency, lookups by type and cache hit, and credits billed', async () => {
    server = await startTestServer({ metrics: true })
    const before = await server.app.metrics!.text()
    const balance0 = (await server.get('/v1/account')).body.data.credits.total_available as number
    for (let i = 0; i < 3; i++) expect((await server.post('/v1/ip', { ip: '8.8.8.8' })).status).toBe(200)
    expect((await server.post('/v1/email', { email: 'someone@example.com' }, server.test)).status).toBe(200)
    expect((await server.get('/v1/nope', null)).status).toBe(404)
    const balance1 = (await server.get('/v1/account')).body.data.credits.total_available as number
    const text = await server.app.metrics!.text()
    const d = (name: string, labels: Record<string, string> = {}) => sample(text, name, labels) - sample(before, name, labels)

    expect(d('riskcheck_http_requests_total', { method: 'POST', route: '/v1/ip', status: '200' })).toBe(3)
    expect(d('riskcheck_http_requests_total', { method: 'POST', route: '/v1/email', status: '200' })).toBe(1)
    expect(d('riskcheck_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1)
    expect(d('riskcheck_http_requests_total', { method: 'GET', route: '/v1/account', status: '200' })).toBe(2)
    expect(d('riskcheck_http_request_duration_seconds_count', { method: 'POST', route: '/v1/ip' })).toBe(3)
    expect(d('riskcheck_http_request_duration_seconds_bucket', { method: 'POST', route: '/v1/ip', le: '+Inf' })).toBe(3)
    // the first /v1/ip ran the lookup, the next two came from the 7-day result cache
    expect(d('riskcheck_lookups_total', { type: 'ip', cache_hit: 'false', mode: 'live' })).toBe(1)
    expect(d('riskcheck_lookups_total', { type: 'ip', cache_hit: 'true', mode: 'live' })).toBe(2)
    expect(d('riskcheck_lookups_total', { type: 'email', cache_hit: 'false', mode: 'test' })).toBe(1)
    // credits billed equal what the account lost (test keys are free)
    expect(balance0 - balance1).toBeGreaterThan(0)
    expect(d('riskcheck_credits_billed_total')).toBe(balance0 - balance1)
    expect(sample(text, 'riskcheck_bulk_queue_depth')).toBe(0)
  })

  it('count webhook deliveries by outcome', async () => {
    let n = 0
    server = await startTestServer({
      metrics: true,
      webhookIntervalMs: 0,
      unsafeAllowLoopbackWebhooks: true,
      webhookDeliver: async () => (n++ === 0 ? { ok: true, status: 200, durationMs: 1, responseBody: '' } : { ok: false, status: 500, durationMs: 1, responseBody: '', error: 'HTTP_STATUS' }) as never,
    })
    const hookKey = (await issueApiKey(server.app.store, { orgId: server.org.id, scopes: ['webhooks'] }, server.clock.now().getTime())).secret
    const created = await server.post('/v1/webhook-endpoints', { url: 'http://127.0.0.1:8099/hook', events: ['*'] }, hookKey)
    expect(created.status, created.raw).toBe(201)
    const endpoint = (await server.app.webhooks!.deliveries.getStoredEndpoint(created.body.data.id))!
    const db = (server.app.store as SqliteStore).db
    webhookOperator.ping(db, endpoint, server.clock.now().getTime())
    await server.app.webhooks!.runOnce()
    webhookOperator.ping(db, endpoint, server.clock.now().getTime())
    await server.app.webhooks!.runOnce()
    const text = await server.app.metrics!.text()
    expect(sample(text, 'riskcheck_webhook_deliveries_total', { outcome: 'succeeded' })).toBe(1)
    expect(sample(text, 'riskcheck_webhook_deliveries_total', { outcome: 'failed' })).toBe(1)
  })
})

describe('serve --metrics-port', () => {
  let dir: string
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('serves GET /metrics (and GET /healthz) on its own port; the API port does not serve /metrics', async () => {
    dir = mkdtempSync(join(tmpdir(), 'riskcheck-metrics-'))
    const { url, io, stop, exit } = await serveInProcess(['--port', '0', '--db', join(dir, 'db.sqlite'), '--offline', '--json', '--log-level', 'silent', '--metrics-port', '0'])
    const { metrics_url } = JSON.parse(io.out()) as { metrics_url: string }
    expect(metrics_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
    expect((await fetch(`${url}/metrics`)).status).toBe(404)
    const res = await fetch(metrics_url)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
    const text = await res.text()
    expect(sample(text, 'riskcheck_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(1)
    expect(text).toContain('riskcheck_process_cpu_seconds_total')
    expect((await fetch(metrics_url.replace('/metrics', '/other'))).status).toBe(404)
    // liveness beside the metrics, for an operator who probes only that port (the API port's answer)
    const health = await fetch(metrics_url.replace('/metrics', '/healthz'))
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ status: 'ok', version: expect.any(String) })
    stop()
    expect(await exit).toBe(0)
  })
})

/**
 * `riskcheck worker` as an operator watches it: one log line per bulk job it takes and one when it finishes it (ids
 * and counts, never the inputs), one per webhook attempt, and with `--metrics-port` the Prometheus text of `serve`
 * and GET /healthz on a port of its own. Real processes (./scale-out-harness.ts) on PostgreSQL and Redis; skipped
 * with a note without them.
 */
import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BulkJob } from '../src/schema.js'
import { runWorker } from '../src/cli/worker-command.js'
import { memoryIO } from './helpers.js'
import { call, scaleOut, until, type Instance } from './scale-out-harness.js'

const h = scaleOut('worker-cli')

/** The worker's JSON log lines so far. */
function logLines(i: Instance): Array<{ msg: string } & Record<string, unknown>> {
  return i
    .err()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string } & Record<string, unknown>)
}

describe.skipIf(!h.enabled)('riskcheck worker', () => {
  let api: Instance
  let worker: Instance
  let receiver: Server
  let hook = ''
  const received: string[] = []

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = ''
      req.on('data', (d: Buffer) => (body += d.toString()))
      req.on('end', () => {
        received.push(body)
        res.writeHead(200).end('ok')
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`
    await h.open()
    ;[api, worker] = await Promise.all([
      h.serve(['--no-workers', '--unsafe-allow-loopback-webhooks']),
      h.worker(['--log-level', 'info', '--metrics-port', '0', '--unsafe-allow-loopback-webhooks']),
    ])
  }, 120_000)

  afterAll(async () => {
    await h.close()
    await new Promise((resolve) => receiver?.close(resolve))
  }, 60_000)

  it('logs the bulk job it takes and finishes with its id and counts, and the webhook it sends — never an input', async () => {
    const { orgId, secret } = await h.orgWithKey(1_000, 10_000, ['bulk', 'webhooks'])
    expect((await call(api.url, secret, 'POST', '/v1/webhook-endpoints', { url: hook, events: ['bulk.completed'] })).status).toBe(201)
    const inputs = ['203.0.113.7', '198.51.100.23', '192.0.2.99', '203.0.113.7']
    const created = await call<{ data: BulkJob }>(api.url, secret, 'POST', '/v1/bulk/jobs', { type: 'ip', inputs, name: 'secret-campaign' })
    expect(created.status).toBe(202)
    const id = created.body.data.id
    const finished = await until(async () => logLines(worker).find((l) => l.msg.startsWith(`bulk job ${id} finished`)))
    const taken = logLines(worker).find((l) => l.msg.startsWith(`bulk job ${id} taken`))!
    expect(taken).toMatchObject({ level: 30, bulk_job: id, org_id: orgId, mode: 'live', type: 'ip', unique_inputs: 3, processed: 0 })
    expect(taken.msg).toBe(`bulk job ${id} taken (ip, live): 0 of 3 rows done so far`)
    expect(finished).toMatchObject({ bulk_job: id, status: 'completed', unique_inputs: 3, processed: 3, credits_used: 3 })
    const r = finished.results as BulkJob['results']
    expect(r.approve + r.verify + r.review + r.block + r.errors).toBe(3)
    expect(finished.msg).toMatch(new RegExp(`^bulk job ${id} finished \\(completed\\): 3 of 3 rows, \\d+ approve, \\d+ verify, \\d+ review, \\d+ block, 0 errors, \\d+ cache hits, 3 credits$`))
    // exactly one line each for this job
    expect(logLines(worker).filter((l) => l.bulk_job === id)).toHaveLength(2)

    const delivered = await until(async () => logLines(worker).find((l) => String(l.msg).startsWith('webhook delivery ')))
    expect(delivered).toMatchObject({ attempt: 1, ok: true, http_status: 200 })
    expect(delivered.msg).toMatch(/^webhook delivery dlv_\S+ attempt 1: delivered \(HTTP 200, \d+ ms\)$/)
    expect(received.join('')).toContain(id)

    // The inputs and the job's name are the customer's: they are not in the log.
    for (const secretText of [...inputs, 'secret-campaign']) expect(worker.err()).not.toContain(secretText)
  }, 120_000)

  it('--metrics-port serves the Prometheus text of serve and GET /healthz; nothing else there', async () => {
    expect(worker.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
    const metrics = await fetch(worker.url)
    expect(metrics.status).toBe(200)
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    const text = await metrics.text()
    for (const name of ['riskcheck_bulk_queue_depth', 'riskcheck_webhook_deliveries_pending', 'riskcheck_webhook_deliveries_total', 'riskcheck_process_cpu_seconds_total']) {
      expect(text).toContain(`# TYPE ${name} `)
    }
    // the delivery of the first case was counted by this worker
    expect(text).toMatch(/^riskcheck_webhook_deliveries_total\{outcome="succeeded"\} [1-9]/m)
    const health = await fetch(worker.url.replace(/\/metrics$/, '/healthz'))
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ status: 'ok' })
    expect((await fetch(worker.url.replace(/\/metrics$/, '/v1/pricing'))).status).toBe(404)
  })
})

describe('riskcheck worker --metrics-port', () => {
  it('takes a port 0–65535 from the flag or RISKCHECK_METRICS_PORT, and names the one that is wrong', async () => {
    const base = ['--database-url', 'postgres://u@127.0.0.1:1/x', '--redis-url', 'redis://127.0.0.1:1']
    const flag = memoryIO()
    expect(await runWorker([...base, '--metrics-port', '70000'], flag)).toBe(64)
    expect(flag.err()).toContain('riskcheck worker: --metrics-port must be 0–65535 (got 70000)')
    const env = memoryIO({ RISKCHECK_METRICS_PORT: 'nine' })
    expect(await runWorker(base, env)).toBe(64)
    expect(env.err()).toContain('RISKCHECK_METRICS_PORT must be 0–65535 (got nine)')
    const help = memoryIO()
    expect(await runWorker(['--help'], help)).toBe(0)
    for (const s of ['--metrics-port N', 'RISKCHECK_METRICS_PORT', 'GET /healthz', '--host HOST']) expect(help.out()).toContain(s)
  })
})

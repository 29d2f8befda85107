/**
 * Many instances give the same answers as one, when one dies: `riskcheck serve` processes on one PostgreSQL schema
 * and one Redis prefix of this run's own (./scale-out-harness.ts), one of them killed with SIGKILL (no drain, as a
 * lost machine) while it holds a bulk job or webhook deliveries; another process finishes the work. The processes
 * run with `--queue-lock-timeout 2s`, so a dead worker's BullMQ jobs are taken over within seconds instead of the
 * default 30 s. Needs RISKCHECK_TEST_DATABASE_URL and RISKCHECK_TEST_REDIS_URL (`.ci/run` sets both).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BulkJob, BulkResultRow } from '../src/schema.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { call, scaleOut, until } from './scale-out-harness.js'

const h = scaleOut('scale-out crash')
const LOCK = ['--queue-lock-timeout', '2s']

/** `n` distinct public IPv4 addresses (20.0.0.1, 20.0.1.1, …). */
const distinctAddresses = (n: number) => Array.from({ length: n }, (_, i) => `${20 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.1`)

describe.skipIf(!h.enabled)('an instance killed mid-work on one PostgreSQL and one Redis', () => {
  beforeAll(() => h.open(), 60_000)
  afterAll(() => h.close(), 60_000)

  it('a bulk job of 20,000 inputs created on one, that process killed with SIGKILL mid-run: the other finishes it with no row lost or duplicated and credits exact', { timeout: 600_000 }, async () => {
    // Large enough that A dies mid-run with many pages done and many to go (the job runs in pages of rows).
    const N = 20_000
    // A is the only worker when the job is created, so A runs it.
    const a = await h.serve(LOCK)
    const { orgId, secret } = await h.orgWithKey(N + 50_000)
    const inputs = distinctAddresses(N)
    const created = await call<{ data: BulkJob }>(a.url, secret, 'POST', '/v1/bulk/jobs', { type: 'ip', inputs })
    expect(created.status).toBe(202)
    const id = created.body.data.id
    expect(created.body.data.unique_inputs).toBe(N)
    const job = (url: string) => call<{ data: BulkJob }>(url, secret, 'GET', `/v1/bulk/jobs/${id}`).then((r) => r.body.data)
    await until(async () => ((await job(a.url)).processed > 0 ? true : undefined))
    // B starts while A runs the job; then A dies without a word.
    const b = await h.serve(LOCK)
    await h.kill(a)
    const atKill = await job(b.url)
    console.log(`[scale-out crash] A killed with ${atKill.processed} of ${N} rows done`)
    expect(atKill.status).toBe('running')
    expect(atKill.processed).toBeGreaterThan(0)
    expect(atKill.processed).toBeLessThan(N)

    const done = await until(async () => {
      const j = await job(b.url)
      return j.status === 'running' || j.status === 'queued' ? undefined : j
    }, 500)
    expect(done).toMatchObject({ status: 'completed', total_rows: N, unique_inputs: N, processed: N, credits_used: N })
    expect(done.results.errors).toBe(0)

    // Every input has exactly one finished row: in the database …
    const rows = await h.sql.query<{ n: string; distinct_idx: string; distinct_input: string; pending: string }>(
      `SELECT count(*) AS n, count(DISTINCT r.idx) AS distinct_idx, count(DISTINCT r.input) AS distinct_input,
              count(*) FILTER (WHERE r.state = 0) AS pending
         FROM bulk_rows r JOIN bulk_jobs j ON j.seq = r.job_seq WHERE j.id = $1`,
      [id],
    )
    expect(rows.rows[0]).toEqual({ n: String(N), distinct_idx: String(N), distinct_input: String(N), pending: '0' })
    // … and through the API, paged, in input order.
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: { status: number; body: { data: BulkResultRow[]; next_cursor: string | null } } = await call(
        b.url,
        secret,
        'GET',
        `/v1/bulk/jobs/${id}/results?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      )
      expect(page.status).toBe(200)
      for (const r of page.body.data) {
        expect(r.error).toBeNull()
        expect(r.credits_used).toBe(1)
        seen.push(r.input)
      }
      cursor = page.body.next_cursor
    } while (cursor)
    expect(seen).toEqual(inputs)

    // Credits: one per unique input, charged once; usage counted once; one bulk.completed event.
    const org = (await h.store.getOrg(orgId, Date.now()))!
    expect(org.subscriptionCredits + org.purchasedCredits).toBe(50_000)
    expect(org.usage.periodCredits).toBe(N)
    expect(org.usage.periodLookups).toBe(N)
    const events = await h.sql.query<{ payload: string }>(`SELECT payload FROM events WHERE type = 'bulk.completed' AND org_id = $1`, [orgId])
    expect(events.rows).toHaveLength(1)
    expect(JSON.parse(events.rows[0]!.payload)).toMatchObject({ data: { id, status: 'completed', processed: N } })
    await h.kill(b)
  })

  it('webhook deliveries pending when a worker dies are delivered by another: at least once, same event id, signatures valid', { timeout: 180_000 }, async () => {
    const receiver = await holdingReceiver()
    try {
      // A is the only worker: it sends the deliveries, and the receiver holds them unanswered.
      const a = await h.serve([...LOCK, '--unsafe-allow-loopback-webhooks'])
      const { secret } = await h.orgWithKey(1_000, 10_000, ['lookup', 'bulk', 'webhooks'])
      const endpoint = await call<{ data: { id: string; secret: string } }>(a.url, secret, 'POST', '/v1/webhook-endpoints', {
        url: `${receiver.url}/hook`,
        events: ['bulk.completed'],
      })
      expect(endpoint.status).toBe(201)
      const whsec = endpoint.body.data.secret
      // Five finished bulk jobs: five bulk.completed events, one delivery each.
      const jobs = await Promise.all(
        ['8.8.8.8', '1.1.1.1', '9.9.9.9', '8.8.4.4', '1.0.0.1'].map(async (ip) => {
          const r = await call<{ data: BulkJob }>(a.url, secret, 'POST', '/v1/bulk/jobs', { type: 'ip', inputs: [ip] })
          expect(r.status).toBe(202)
          return r.body.data.id
        }),
      )
      await until(async () => (new Set(receiver.received.map((r) => r.deliveryId)).size === jobs.length ? true : undefined), 100)
      const heldByA = receiver.received.length
      await h.kill(a)
      receiver.answer()

      // B, a worker process, takes the dead worker's deliveries over once their locks expire, and sends them again.
      const b = await h.worker([...LOCK, '--unsafe-allow-loopback-webhooks'])
      await until(async () => {
        const { rows } = await h.sql.query<{ n: string }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'succeeded'`, [endpoint.body.data.id])
        return rows[0]!.n === String(jobs.length) ? true : undefined
      }, 250)
      const answered = receiver.received.filter((r) => r.answered)
      console.log(`[scale-out crash] ${heldByA} deliveries held by A when killed; ${receiver.received.length} copies received in all, ${answered.length} answered`)

      // Every job's event arrived, at least once after A died, every copy with the same event id and a valid signature.
      const byJob = new Map<string, typeof receiver.received>()
      for (const r of receiver.received) {
        const payload = JSON.parse(r.body) as { id: string; type: string; data: { id: string } }
        expect(payload.type).toBe('bulk.completed')
        expect(r.eventId).toBe(payload.id)
        expect(verifyWebhook(r.body, r.signature, whsec)).toMatchObject({ ok: true })
        byJob.set(payload.data.id, [...(byJob.get(payload.data.id) ?? []), r])
      }
      expect([...byJob.keys()].sort()).toEqual([...jobs].sort())
      for (const copies of byJob.values()) {
        expect(copies.length).toBeGreaterThanOrEqual(2) // held by A, sent again by B
        expect(new Set(copies.map((c) => c.eventId)).size).toBe(1)
        expect(new Set(copies.map((c) => c.deliveryId)).size).toBe(1)
        expect(copies.some((c) => c.answered)).toBe(true)
      }
      await h.kill(b)
    } finally {
      await receiver.close()
    }
  })
})

interface Received {
  deliveryId: string
  eventId: string
  signature: string
  body: string
  answered: boolean
}

/**
 * A loopback webhook receiver that records every request and holds each one unanswered until `answer()`; from then
 * on it answers 200 at once (held requests stay unanswered: their sender is gone).
 */
async function holdingReceiver(): Promise<{ url: string; received: Received[]; answer(): void; close(): Promise<void> }> {
  const received: Received[] = []
  let holding = true
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (d: string) => (body += d))
    req.on('end', () => {
      const r: Received = {
        deliveryId: String(req.headers['svc-delivery-id']),
        eventId: String(req.headers['svc-event-id']),
        signature: String(req.headers['svc-signature']),
        body,
        answered: !holding,
      }
      received.push(r)
      if (!holding) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answer: () => {
      holding = false
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/**
 * The delivery queue end to end against a REAL receiver on loopback: the worker leases, signs at send time with the
 * endpoint's current secret, sends through deliverWebhook (allowLoopback, as tests must), logs, retries on the
 * schedule (fake clock) and resends keeping the event id. The receiver verifies every request with verifyWebhook.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeClock } from './clock.js'
import { buildBulkCompletedEvent, buildCreditsAddedEvent, createWebhookSecret } from '../src/webhooks/events.js'
import { createTestDeliveryStore } from './sqlite-delivery-fixture.js'
import { createDeliveryWorker, enqueueEvent, resendDeliveries } from '../src/webhooks/queue.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { startReceiver, type Receiver } from './webhooks-helpers.js'

const ORG = 'org_e2e'
const MIN = 60_000

describe('delivery worker → real receiver', () => {
  let rx: Receiver
  beforeAll(async () => {
    rx = await startReceiver()
  })
  afterAll(async () => {
    await rx.close()
  })

  it('rotation mid-queue: the retry is signed with the new secret and the old one no longer verifies', async () => {
    const clock = fakeClock('2026-05-01T08:00:00Z')
    const store = createTestDeliveryStore()
    const first = createWebhookSecret()
    store.addEndpoint({ id: 'we_rot', orgId: ORG, url: `${rx.url}/rot`, secret: first, events: ['*'], createdAt: clock.now() })
    // The receiver knows the secret its owner configured; it answers 500 until the owner has rotated.
    let receiverSecret = first
    let rotated = false
    const seen: Array<{ withCurrent: boolean; withFirst: boolean; deliveryId: string; eventId: string }> = []
    rx.handle((req, res) => {
      const header = req.headers['svc-signature'] as string
      const opts = { now: () => clock.now().getTime() }
      seen.push({
        withCurrent: verifyWebhook(req.rawBody, header, receiverSecret, opts).ok,
        withFirst: verifyWebhook(req.rawBody, header, first, opts).ok,
        deliveryId: String(req.headers['svc-delivery-id']),
        eventId: String(req.headers['svc-event-id']),
      })
      res.writeHead(rotated ? 200 : 500).end(rotated ? 'thanks' : 'not yet')
    })
    const worker = createDeliveryWorker({ store, now: clock.now, allowLoopback: true })
    const event = buildCreditsAddedEvent({ orgId: ORG, now: clock.now(), amount: 100, balance: 150, reason: 'top_up' })
    const [delivery] = await enqueueEvent({ store, now: clock.now, event })
    expect(await worker.tick()).toMatchObject({ leased: 1, retrying: 1 })

    const next = createWebhookSecret()
    store.rotateSecret('we_rot', next)
    receiverSecret = next
    rotated = true
    clock.advance(MIN - 1)
    expect((await worker.tick()).leased).toBe(0)
    clock.advance(1)
    expect(await worker.tick()).toMatchObject({ leased: 1, succeeded: 1 })

    expect(seen).toEqual([
      { withCurrent: true, withFirst: true, deliveryId: delivery?.id, eventId: event.id },
      { withCurrent: true, withFirst: false, deliveryId: delivery?.id, eventId: event.id },
    ])
    const log = store.allAttempts(delivery?.id)
    expect(log.map((a) => [a.attempt, a.status, a.ok, a.responseBody])).toEqual([
      [1, 500, false, 'not yet'],
      [2, 200, true, 'thanks'],
    ])
    expect(log.every((a) => a.durationMs >= 0 && a.durationMs < 5000)).toBe(true)
  })

  it('a resent delivery keeps its event id and gets a new delivery id', async () => {
    const clock = fakeClock('2026-05-02T08:00:00Z')
    const store = createTestDeliveryStore()
    const secret = createWebhookSecret()
    store.addEndpoint({ id: 'we_resend', orgId: ORG, url: `${rx.url}/resend`, secret, events: ['bulk.completed'], createdAt: clock.now() })
    let up = false
    const seen: Array<{ ok: boolean; eventId: string; deliveryId: string; type: string }> = []
    rx.handle((req, res) => {
      const ok = verifyWebhook(req.rawBody, req.headers['svc-signature'] as string, secret, { now: () => clock.now().getTime() }).ok
      seen.push({ ok, eventId: String(req.headers['svc-event-id']), deliveryId: String(req.headers['svc-delivery-id']), type: String(req.headers['svc-event-type']) })
      res.writeHead(up ? 200 : 503).end()
    })
    const worker = createDeliveryWorker({ store, now: clock.now, allowLoopback: true, concurrency: 2 })
    const event = buildBulkCompletedEvent({
      orgId: ORG,
      now: clock.now(),
      job: {
        id: 'bulk_9',
        name: 'Leads',
        type: 'email',
        status: 'completed',
        total_rows: 2,
        unique_inputs: 2,
        processed: 2,
        credits_used: 2,
        results: { approve: 1, verify: 0, review: 0, block: 1, errors: 0, skipped: 0, cache_hits: 0 },
        created_at: '2026-05-02T07:59:00.000Z',
        completed_at: '2026-05-02T08:00:00.000Z',
        expires_at: '2026-05-09T07:59:00.000Z',
      },
    })
    await enqueueEvent({ store, now: clock.now, event })
    // fail every attempt: walk the whole schedule (attempt times only)
    for (let i = 0; i < 11; i++) {
      const d = store.allDeliveries()[0]
      if (d?.nextAttemptAt) clock.set(d.nextAttemptAt)
      await worker.tick()
    }
    expect(store.allDeliveries()[0]).toMatchObject({ status: 'failed', attempts: 11 })
    expect(seen).toHaveLength(11)
    expect((await store.getEndpoint('we_resend'))?.status).toBe('disabled')

    store.enableEndpoint('we_resend', clock.now())
    up = true
    const [resent] = await resendDeliveries({ store, now: clock.now, endpointId: 'we_resend' })
    expect(await worker.tick()).toMatchObject({ succeeded: 1 })
    const last = seen[seen.length - 1]
    expect(last).toEqual({ ok: true, eventId: event.id, deliveryId: resent?.id, type: 'bulk.completed' })
    expect(new Set(seen.map((s) => s.eventId))).toEqual(new Set([event.id]))
    expect(new Set(seen.map((s) => s.deliveryId)).size).toBe(2)
    expect(seen.every((s) => s.ok)).toBe(true)
  })
})

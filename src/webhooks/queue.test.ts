import { describe, expect, it } from 'vitest'
import { fakeClock } from '../../test/clock.js'
import type { DeliverWebhookOptions, DeliveryResult } from './deliver.js'
import { buildBulkCompletedEvent, buildCreditsLowEvent, buildPingEvent, createWebhookSecret } from './events.js'
import { createTestDeliveryStore } from '../../test/sqlite-delivery-fixture.js'
import { createDeliveryWorker, enqueueEvent, pruneDeliveryLog, resendDeliveries, type WebhookEndpointRecord } from './queue.js'
import { FAILING_WINDOW_MS } from './schedule.js'
import { verifyWebhook } from './signature.js'
import type { BulkJob } from '../schema.js'

const MIN = 60_000
const HOUR = 60 * MIN
const ORG = 'org_1'

type Sent = DeliverWebhookOptions & { at: Date }

/** A fake sender: records what would be sent; `respond` decides the outcome. */
function fakeSender(clock: { now: () => Date }, respond: (req: Sent, n: number) => Partial<DeliveryResult> = () => ({})) {
  const sent: Sent[] = []
  const deliver = async (req: DeliverWebhookOptions): Promise<DeliveryResult> => {
    const rec = { ...req, at: clock.now() }
    sent.push(rec)
    const r = respond(rec, sent.length)
    const ok = r.ok ?? false
    return {
      ok,
      status: ok ? 200 : 503,
      durationMs: 12,
      responseBody: ok ? 'ok' : 'unavailable',
      error: ok ? null : 'http_status',
      errorDetail: ok ? null : 'HTTP 503',
      address: '93.184.216.34',
      ...r,
    }
  }
  return { sent, deliver }
}

function setup(start = '2026-03-01T00:00:00Z') {
  const clock = fakeClock(start)
  const store = createTestDeliveryStore(() => clock.now().getTime())
  let n = 0
  const createId = () => `dlv_${++n}`
  const add = (id: string, events: string[], extra: Partial<{ orgId: string; createdAt: Date }> = {}): WebhookEndpointRecord =>
    store.addEndpoint({
      id,
      orgId: extra.orgId ?? ORG,
      url: `https://${id}.hooks.example.com/x`,
      secret: createWebhookSecret(),
      events,
      createdAt: extra.createdAt ?? clock.now(),
    })
  return { clock, store, createId, add }
}

const job: BulkJob = {
  id: 'bulk_1',
  name: 'job',
  type: 'phone',
  status: 'completed',
  total_rows: 3,
  unique_inputs: 3,
  processed: 3,
  credits_used: 3,
  results: { approve: 3, verify: 0, review: 0, block: 0, errors: 0, skipped: 0, cache_hits: 0 },
  created_at: '2026-03-01T00:00:00.000Z',
  completed_at: '2026-03-01T00:00:01.000Z',
  expires_at: '2026-03-08T00:00:00.000Z',
}

const lowEvent = (clock: { now: () => Date }) =>
  buildCreditsLowEvent({ orgId: ORG, now: clock.now(), balance: 20, thresholdPercent: 25, monthlyCredits: 100 })

async function runUntil(worker: { tick(): Promise<unknown> }, clock: ReturnType<typeof fakeClock>, untilMs: number, stepMs = MIN) {
  const end = clock.now().getTime() + untilMs
  while (clock.now().getTime() < end) {
    await worker.tick()
    clock.advance(stepMs)
  }
  await worker.tick()
}

describe('enqueueEvent (fan-out)', () => {
  it('creates one delivery per subscribed endpoint of the org; disabled endpoints get a skipped one', async () => {
    const { clock, store, createId, add } = setup()
    add('all', ['*'])
    add('bulk', ['bulk.completed'])
    add('low', ['credits.low'])
    add('off', ['credits.low'])
    add('other', ['*'], { orgId: 'org_2' })
    await store.disableEndpoint('off', 'failing')
    const e = lowEvent(clock)
    const ds = await enqueueEvent({ store, now: clock.now, event: e, createId })
    expect(ds.map((d) => [d.endpointId, d.status, d.eventId])).toEqual([
      ['all', 'pending', e.id],
      ['low', 'pending', e.id],
      ['off', 'skipped', e.id],
    ])
    expect(ds[0]?.nextAttemptAt?.getTime()).toBe(clock.now().getTime())
    const bulk = await enqueueEvent({ store, now: clock.now, event: buildBulkCompletedEvent({ orgId: ORG, now: clock.now(), job }), createId })
    expect(bulk.map((d) => d.endpointId)).toEqual(['all', 'bulk'])
    expect(store.eventCount()).toBe(2)
  })

  it('a ping goes only to the endpoint it was requested for, whatever it subscribes to', async () => {
    const { clock, store, createId, add } = setup()
    add('a', ['*'])
    add('b', ['bulk.completed'])
    add('x', ['*'], { orgId: 'org_2' })
    const ping = buildPingEvent({ orgId: ORG, now: clock.now(), endpointId: 'b' })
    const ds = await enqueueEvent({ store, now: clock.now, event: ping, endpointId: 'b', createId })
    expect(ds.map((d) => [d.endpointId, d.status])).toEqual([['b', 'pending']])
    await expect(enqueueEvent({ store, now: clock.now, event: ping, createId })).rejects.toThrow(TypeError)
    await expect(enqueueEvent({ store, now: clock.now, event: ping, endpointId: 'x', createId })).rejects.toThrow(/no endpoint/)
  })
})

describe('createDeliveryWorker with a fake clock', () => {
  it('retries on the documented schedule, logs every attempt, then fails and auto-disables the endpoint', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'], { createdAt: new Date(clock.now().getTime() - MIN) })
    const t0 = clock.now().getTime()
    const { sent, deliver } = fakeSender(clock)
    const disabled: Array<[string, string | null, Date]> = []
    const worker = createDeliveryWorker({
      store,
      now: clock.now,
      deliver,
      onEndpointDisabled: (ep, at) => {
        disabled.push([ep.id, ep.disabledReason, at])
      },
    })
    const [d] = await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    await runUntil(worker, clock, 26 * HOUR)

    const offsetsMin = sent.map((s) => (s.at.getTime() - t0) / MIN)
    expect(offsetsMin).toEqual([0, 1, 6, 21, 51, 111, 231, 411, 651, 1011, 1431])
    const log = store.allAttempts(d?.id)
    expect(log.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    expect(log.every((a) => a.status === 503 && a.durationMs === 12 && a.responseBody === 'unavailable' && a.error === 'http_status')).toBe(true)
    const [final] = store.allDeliveries()
    expect(final).toMatchObject({ status: 'failed', attempts: 11, nextAttemptAt: null, leaseUntil: null, lastStatus: 503, lastError: 'http_status' })
    expect(disabled).toHaveLength(1)
    expect(disabled[0]?.[0]).toBe('ep')
    expect(disabled[0]?.[1]).toBe('failing')
    expect((disabled[0]?.[2].getTime() ?? 0) - t0).toBe(1431 * MIN)
    expect((await store.getEndpoint('ep'))?.status).toBe('disabled')
    expect((await store.getEndpoint('ep'))?.disabledReason).toBe('failing')
  })

  it('does not retry before the delay is up (checked at 1 ms before each due time)', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'])
    const { sent, deliver } = fakeSender(clock)
    const worker = createDeliveryWorker({ store, now: clock.now, deliver })
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    await worker.tick()
    for (const delay of [1 * MIN, 5 * MIN, 15 * MIN]) {
      const before = sent.length
      clock.advance(delay - 1)
      expect((await worker.tick()).leased).toBe(0)
      clock.advance(1)
      expect((await worker.tick()).retrying).toBe(1)
      expect(sent.length).toBe(before + 1)
    }
  })

  it('a success stops the retries and records lastSuccessAt', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'])
    const { sent, deliver } = fakeSender(clock, (_r, n) => ({ ok: n >= 3 }))
    const worker = createDeliveryWorker({ store, now: clock.now, deliver })
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    await runUntil(worker, clock, 2 * HOUR)
    expect(sent).toHaveLength(3)
    expect(store.allDeliveries()[0]).toMatchObject({ status: 'succeeded', attempts: 3 })
    expect((await store.getEndpoint('ep'))?.lastSuccessAt?.getTime()).toBe(new Date('2026-03-01T00:06:00Z').getTime())
  })

  it('an endpoint with a success inside the failing window is not disabled', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'])
    const t0 = clock.now().getTime()
    // Everything fails except the event enqueued 5 h in.
    let goodEvent = ''
    const { deliver } = fakeSender(clock, (req) => ({ ok: req.body.includes(goodEvent) && goodEvent !== '' }))
    const disabled: string[] = []
    const worker = createDeliveryWorker({ store, now: clock.now, deliver, onEndpointDisabled: (ep) => void disabled.push(ep.id) })
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    await runUntil(worker, clock, 5 * HOUR)
    const good = buildBulkCompletedEvent({ orgId: ORG, now: clock.now(), job })
    goodEvent = good.id
    await enqueueEvent({ store, now: clock.now, event: good, createId })
    await runUntil(worker, clock, 21 * HOUR)
    const statuses = store.allDeliveries().map((d) => d.status)
    expect(statuses).toEqual(['failed', 'succeeded'])
    expect(clock.now().getTime() - t0).toBeGreaterThan(FAILING_WINDOW_MS)
    expect(disabled).toEqual([])
    expect((await store.getEndpoint('ep'))?.status).toBe('enabled')
  })

  it('after auto-disable: queued deliveries are skipped, pings still go out, re-enable + resend sends the missed ones with their event ids', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'])
    let up = false
    const { sent, deliver } = fakeSender(clock, () => ({ ok: up }))
    const worker = createDeliveryWorker({ store, now: clock.now, deliver })
    const first = lowEvent(clock)
    await enqueueEvent({ store, now: clock.now, event: first, createId })
    // a second event 10 h later, still retrying when the first one exhausts its schedule
    await runUntil(worker, clock, 10 * HOUR)
    const second = buildBulkCompletedEvent({ orgId: ORG, now: clock.now(), job })
    await enqueueEvent({ store, now: clock.now, event: second, createId })
    await runUntil(worker, clock, 14 * HOUR)
    expect((await store.getEndpoint('ep'))?.status).toBe('disabled')
    const afterDisable = sent.length
    // the second event's next retry (due 26 h 51 min after the start) is skipped, not sent
    await runUntil(worker, clock, 4 * HOUR)
    expect(sent.length).toBe(afterDisable)
    const byEvent = (id: string) => store.allDeliveries().filter((d) => d.eventId === id)
    expect(byEvent(first.id).map((d) => d.status)).toEqual(['failed'])
    expect(byEvent(second.id).map((d) => [d.status, d.lastError])).toEqual([['skipped', 'endpoint_disabled']])
    // while disabled, new events are logged as skipped
    const third = lowEvent(clock)
    expect((await enqueueEvent({ store, now: clock.now, event: third, createId })).map((d) => d.status)).toEqual(['skipped'])
    // a ping still reaches the disabled endpoint (operators test before re-enabling)
    up = true
    const ping = buildPingEvent({ orgId: ORG, now: clock.now(), endpointId: 'ep' })
    await enqueueEvent({ store, now: clock.now, event: ping, endpointId: 'ep', createId })
    expect((await worker.tick()).succeeded).toBe(1)
    // resend does nothing while disabled
    expect(await resendDeliveries({ store, now: clock.now, endpointId: 'ep', createId })).toEqual([])
    store.enableEndpoint('ep', clock.now())
    const resent = await resendDeliveries({ store, now: clock.now, endpointId: 'ep', createId })
    expect(resent.map((d) => d.eventId).sort()).toEqual([first.id, second.id, third.id].sort())
    const oldIds = new Set(store.allDeliveries().filter((d) => !resent.some((r) => r.id === d.id)).map((d) => d.id))
    for (const r of resent) {
      expect(oldIds.has(r.id)).toBe(false)
      expect(r.resendOf && oldIds.has(r.resendOf)).toBe(true)
    }
    const before = sent.length
    expect((await worker.tick()).succeeded).toBe(3)
    const headers = sent.slice(before).map((s) => s.headers)
    expect(headers.map((h) => h['SVC-Event-Id']).sort()).toEqual([first.id, second.id, third.id].sort())
    expect(headers.map((h) => h['SVC-Delivery-Id']).sort()).toEqual(resent.map((r) => r.id).sort())
    // a second resend finds nothing missing any more
    expect(await resendDeliveries({ store, now: clock.now, endpointId: 'ep', createId })).toEqual([])
  })

  it('signs with the CURRENT secret at send time: a rotation mid-queue applies to queued retries', async () => {
    const { clock, store, createId, add } = setup()
    const ep = add('ep', ['*'])
    const oldSecret = ep.secret
    const { sent, deliver } = fakeSender(clock, (_r, n) => ({ ok: n >= 2 }))
    const worker = createDeliveryWorker({ store, now: clock.now, deliver })
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    await worker.tick()
    const newSecret = createWebhookSecret()
    store.rotateSecret('ep', newSecret)
    clock.advance(MIN)
    await worker.tick()
    expect(sent).toHaveLength(2)
    const verify = (i: number, secret: string) =>
      verifyWebhook(sent[i]?.body ?? '', sent[i]?.headers['SVC-Signature'], secret, { now: () => (sent[i]?.at ?? new Date()).getTime() }).ok
    expect(verify(0, oldSecret)).toBe(true)
    expect(verify(1, newSecret)).toBe(true)
    expect(verify(1, oldSecret)).toBe(false)
    // a fresh timestamp per attempt
    expect(sent[1]?.headers['SVC-Signature']).toContain(`t=${Math.floor((sent[1]?.at.getTime() ?? 0) / 1000)},`)
    expect(sent[0]?.headers['SVC-Delivery-Id']).toBe(sent[1]?.headers['SVC-Delivery-Id'])
  })

  it('keeps concurrency bounded', async () => {
    const { clock, store, createId, add } = setup()
    for (let i = 0; i < 25; i++) add(`ep${i}`, ['*'])
    let inFlight = 0
    let maxInFlight = 0
    const deliver = async (): Promise<DeliveryResult> => {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      await new Promise((r) => setTimeout(r, 5))
      inFlight--
      return { ok: true, status: 200, durationMs: 5, responseBody: '', error: null, errorDetail: null, address: null }
    }
    const worker = createDeliveryWorker({ store, now: clock.now, deliver, concurrency: 3, batchSize: 10 })
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    const r1 = await worker.tick()
    expect(r1).toMatchObject({ leased: 10, succeeded: 10 })
    await worker.tick()
    await worker.tick()
    expect(store.allDeliveries().every((d) => d.status === 'succeeded')).toBe(true)
    expect(maxInFlight).toBe(3)
  })

  it('overlapping ticks share one run; a lease keeps a delivery from being sent twice until it expires', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'])
    const { sent, deliver } = fakeSender(clock, () => ({ ok: true }))
    const worker = createDeliveryWorker({ store, now: clock.now, deliver, timeoutMs: 10_000, leaseGraceMs: 60_000 })
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    const [a, b] = [worker.tick(), worker.tick()]
    expect(a).toBe(b)
    await a
    expect(sent).toHaveLength(1)

    // Simulate a process that leased a delivery and died: nobody else takes it until the lease expires.
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    const crashed = await store.leaseDue(clock.now(), 10, new Date(clock.now().getTime() + 70_000))
    expect(crashed).toHaveLength(1)
    expect((await worker.tick()).leased).toBe(0)
    clock.advance(69_999)
    expect((await worker.tick()).leased).toBe(0)
    clock.advance(1)
    expect((await worker.tick()).succeeded).toBe(1)
    expect(sent).toHaveLength(2)
  })

  it('skips deliveries whose endpoint was deleted; a throwing sender counts as a network failure', async () => {
    const { clock, store, createId, add } = setup()
    add('gone', ['*'])
    add('flaky', ['*'])
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    store.deleteEndpoint('gone')
    const worker = createDeliveryWorker({
      store,
      now: clock.now,
      deliver: async () => {
        throw new Error('boom')
      },
    })
    expect(await worker.tick()).toMatchObject({ leased: 2, skipped: 1, retrying: 1 })
    const byEp = Object.fromEntries(store.allDeliveries().map((d) => [d.endpointId, d]))
    expect(byEp.gone).toMatchObject({ status: 'skipped', lastError: 'endpoint_deleted', attempts: 0 })
    expect(byEp.flaky).toMatchObject({ status: 'pending', attempts: 1, lastError: 'network' })
    expect(store.allAttempts()[0]).toMatchObject({ error: 'network', errorDetail: 'boom', status: null })
  })

  it('start()/stop() drive ticks on a timer', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'])
    const { sent, deliver } = fakeSender(clock, () => ({ ok: true }))
    const worker = createDeliveryWorker({ store, now: clock.now, deliver })
    worker.start(5)
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    for (let i = 0; i < 100 && sent.length === 0; i++) await new Promise((r) => setTimeout(r, 5))
    await worker.stop()
    expect(sent).toHaveLength(1)
  })
})

describe('resendDeliveries', () => {
  it('resends only events without a success since `since`, keeping the event id', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'])
    const results = new Map<string, boolean>()
    const { deliver } = fakeSender(clock, (req) => ({ ok: results.get(String(req.headers['SVC-Event-Id'])) ?? false }))
    const worker = createDeliveryWorker({ store, now: clock.now, deliver })
    const old = lowEvent(clock)
    await enqueueEvent({ store, now: clock.now, event: old, createId })
    clock.advance(2 * HOUR)
    const since = clock.now()
    const okEvent = lowEvent(clock)
    const badEvent = lowEvent(clock)
    results.set(okEvent.id, true)
    await enqueueEvent({ store, now: clock.now, event: okEvent, createId })
    await enqueueEvent({ store, now: clock.now, event: badEvent, createId })
    await runUntil(worker, clock, 25 * HOUR, 5 * MIN)
    store.enableEndpoint('ep', clock.now())
    const resent = await resendDeliveries({ store, now: clock.now, endpointId: 'ep', since, createId })
    expect(resent.map((d) => d.eventId)).toEqual([badEvent.id])
    const all = await resendDeliveries({ store, now: clock.now, endpointId: 'ep', createId })
    expect(all.map((d) => d.eventId)).toEqual([old.id])
  })
})

describe('pruneDeliveryLog', () => {
  it('drops attempts, finished deliveries and orphan events older than 30 days', async () => {
    const { clock, store, createId, add } = setup()
    add('ep', ['*'])
    const { deliver } = fakeSender(clock, () => ({ ok: true }))
    const worker = createDeliveryWorker({ store, now: clock.now, deliver })
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    await worker.tick()
    clock.advance(29 * 24 * HOUR)
    await enqueueEvent({ store, now: clock.now, event: lowEvent(clock), createId })
    await worker.tick()
    expect(await pruneDeliveryLog({ store, now: clock.now })).toEqual({ attempts: 0, deliveries: 0, events: 0 })
    clock.advance(2 * 24 * HOUR)
    expect(await pruneDeliveryLog({ store, now: clock.now })).toEqual({ attempts: 1, deliveries: 1, events: 1 })
    expect(store.allAttempts()).toHaveLength(1)
    expect(store.eventCount()).toBe(1)
  })
})

/**
 * The contract of {@link DeliveryServiceStorage} (src/server/store/contracts/deliveries.ts), run by ./contracts.test.ts on
 * every engine of ./engines.ts: endpoints, the outbox pump (one delivery per subscribed endpoint, exactly once), the
 * claim of due deliveries with a lease that expires, attempts and the retry schedule through the real delivery worker,
 * resends, the log's retention and operator notices.
 */
import { expect, it } from 'vitest'
import type { EventPayload } from '../../src/schema.js'
import { buildPingEvent } from '../../src/webhooks/events.js'
import { createDeliveryWorker, enqueueEvent, resendDeliveries, type DeliverFunction } from '../../src/webhooks/queue.js'
import { NOW, type OpenHarness, type ServiceHarness } from './service-harness.js'

const MIN = 60_000
let n = 0

/** A credits.low event of `org` (a fan-out type). */
export function creditsEvent(org: string, at = NOW): EventPayload {
  return { id: `evt_contract_${++n}_${Math.random().toString(16).slice(2, 10)}`, type: 'credits.low', created: Math.floor(at / 1000), api_version: '1', org_id: org, test_mode: false, data: { balance: 5 } }
}

/** An endpoint of `org` subscribed to `events`. */
export async function addEndpoint(h: ServiceHarness, org: string, events: string[] = ['*'], url = 'https://hooks.example.test/in') {
  return h.webhooks.deliveries.createEndpoint({ orgId: org, url, description: null, events, format: 'json', secret: 'whsec_contract' }, NOW)
}

/**
 * Disables `endpoint` as the worker does: the last failure of a delivery (created a day before {@link NOW}, so a
 * resend `since` NOW leaves it out) that meets the auto-disable rule. True when the endpoint changed.
 */
export async function autoDisable(h: ServiceHarness, endpoint: { id: string; orgId: string }): Promise<boolean> {
  const id = `dlv_disable_${++n}`
  const day = new Date(NOW - 86_400_000)
  await h.webhooks.deliveries.insertDeliveries([
    { id, eventId: `evt_disable_${n}`, endpointId: endpoint.id, orgId: endpoint.orgId, status: 'pending', attempts: 10, nextAttemptAt: day, leaseUntil: null, createdAt: day, lastAttemptAt: null, lastStatus: null, lastError: null, resendOf: null },
  ])
  const update = { status: 'failed' as const, attempts: 11, nextAttemptAt: null, lastAttemptAt: new Date(NOW), lastStatus: 500, lastError: 'http_status', disableEndpoint: { reason: 'failing' as const, at: new Date(NOW) } }
  return (await h.webhooks.deliveries.completeDelivery(id, update, null))?.endpointDisabled === true
}

/** A sender that answers `status` and records what it was asked to send. */
function fakeSender(status: () => number) {
  const sent: Array<{ url: string; eventId: string | undefined }> = []
  const deliver: DeliverFunction = async (req) => {
    sent.push({ url: String(req.url), eventId: req.headers['SVC-Event-Id'] })
    const s = status()
    return { ok: s < 300, status: s, durationMs: 3, responseBody: 'ok', error: s < 300 ? null : 'http_status', errorDetail: null, address: null }
  }
  return { sent, deliver }
}

/** Registers the delivery contract cases; `open` gives a fresh database per case. */
export function deliveryStorageContract(open: OpenHarness): void {
  const withHarness = (fn: (h: ServiceHarness) => Promise<void>) => async () => {
    const h = await open()
    try {
      await fn(h)
    } finally {
      await h.done()
    }
  }
  const clockAt = (ms: number) => () => new Date(ms)

  it(
    'endpoints: create, list oldest first, count, rotate and delete only within their org, disable and re-enable',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      const other = await h.createOrg({ subscription: 0, purchased: 0 })
      const d = h.webhooks.deliveries
      const a = await addEndpoint(h, org, ['credits.low'])
      const b = await addEndpoint(h, org, ['*'], 'https://hooks.example.test/b')
      expect(a).toMatchObject({ orgId: org, status: 'enabled', events: ['credits.low'], format: 'json', secret: 'whsec_contract', description: null, enabledAt: null, lastSuccessAt: null })
      expect((await d.listOrgEndpoints(org)).map((e) => e.id).sort()).toEqual([a.id, b.id].sort())
      expect(await d.countEndpoints(org)).toBe(2)
      expect(await d.countEndpoints(other)).toBe(0)
      expect(await d.rotateSecret(a.id, 'whsec_new', other)).toBeNull()
      expect((await d.rotateSecret(a.id, 'whsec_new', org))!.secret).toBe('whsec_new')
      expect((await d.getEndpoint(a.id))!.secret).toBe('whsec_new')
      expect(await d.deleteEndpoint(b.id, other)).toBe(false)
      expect(await d.deleteEndpoint(b.id, org)).toBe(true)
      expect(await d.getStoredEndpoint(b.id)).toBeNull()
      // the auto-disable and its operator notice are written with the delivery's last failure, once
      expect(await autoDisable(h, a)).toBe(true)
      expect(await autoDisable(h, a)).toBe(false)
      expect(await d.getStoredEndpoint(a.id)).toMatchObject({ status: 'disabled', disabledReason: 'failing' })
      expect((await d.listNotices()).map((x) => [x.kind, x.subject, x.orgId, x.at])).toEqual([['webhook_endpoint_disabled', a.id, org, NOW]])
      expect(await d.enableEndpoint(a.id, NOW + MIN)).toMatchObject({ status: 'enabled', disabledReason: null, enabledAt: new Date(NOW + MIN) })
      expect(await d.enableEndpoint('we_missing', NOW)).toBeNull()
    }),
  )

  it(
    'the pump fans each event out once: one delivery per subscribed endpoint (skipped for a disabled one), none for the rest, however often it runs',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      const all = await addEndpoint(h, org, ['*'])
      const credits = await addEndpoint(h, org, ['credits.low'])
      const bulkOnly = await addEndpoint(h, org, ['bulk.completed'])
      const off = await addEndpoint(h, org, ['*'])
      await autoDisable(h, off)
      const first = creditsEvent(org)
      const second = creditsEvent(org)
      await h.webhooks.insertEvent(first)
      await h.webhooks.insertEvent(first)
      await h.webhooks.insertEvent(second)
      // a pump that died after fanning out `first` but before moving past it: its deliveries exist already
      await enqueueEvent({ store: h.webhooks.deliveries, now: clockAt(NOW), event: first })
      expect(await h.webhooks.pumpOutbox(clockAt(NOW))).toBe(2)
      expect(await h.webhooks.pumpOutbox(clockAt(NOW))).toBe(0)
      for (const e of [first, second]) {
        const byEndpoint = new Map<string, string>()
        for (const ep of [all, credits, bulkOnly, off]) {
          for (const d of await h.webhooks.deliveries.listDeliveries({ endpointId: ep.id })) if (d.eventId === e.id) byEndpoint.set(ep.id, d.status)
        }
        expect(Object.fromEntries(byEndpoint)).toEqual({ [all.id]: 'pending', [credits.id]: 'pending', [off.id]: 'skipped' })
      }
      expect((await h.stored()).deliveries.filter((id) => !id.startsWith('evt_disable_'))).toHaveLength(6)
      expect(await h.webhooks.pendingCount()).toBe(4)
      expect(await h.webhooks.deliveries.getEvent(first.id)).toEqual(first)
    }),
  )

  it(
    'a ping goes to its endpoint only, even a disabled one; a ping to an endpoint deleted meanwhile is dropped',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      const target = await addEndpoint(h, org)
      const bystander = await addEndpoint(h, org)
      const gone = await addEndpoint(h, org)
      await autoDisable(h, target)
      await h.webhooks.insertEvent(buildPingEvent({ orgId: org, now: new Date(NOW), endpointId: target.id }))
      await h.webhooks.insertEvent(buildPingEvent({ orgId: org, now: new Date(NOW), endpointId: gone.id }))
      await h.webhooks.deliveries.deleteEndpoint(gone.id)
      expect(await h.webhooks.pumpOutbox(clockAt(NOW))).toBe(2)
      expect((await h.webhooks.deliveries.listDeliveries({ endpointId: target.id, since: new Date(NOW) })).map((d) => d.status)).toEqual(['pending'])
      expect(await h.webhooks.deliveries.listDeliveries({ endpointId: bystander.id })).toEqual([])
      expect((await h.stored()).deliveries.filter((id) => !id.startsWith('evt_disable_'))).toHaveLength(1)
    }),
  )

  it(
    'claims: a due delivery is leased to one claimer until its lease expires (a dead worker), then taken again; not-yet-due ones wait',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      await addEndpoint(h, org)
      await h.webhooks.insertEvent(creditsEvent(org))
      await h.webhooks.pumpOutbox(clockAt(NOW))
      const d = h.webhooks.deliveries
      const [taken, ...rest] = await d.leaseDue(new Date(NOW), 10, new Date(NOW + 5 * MIN))
      expect(rest).toEqual([])
      expect(taken).toMatchObject({ status: 'pending', attempts: 0, leaseUntil: null })
      expect(await d.leaseDue(new Date(NOW + MIN), 10, new Date(NOW + 6 * MIN))).toEqual([])
      // the worker died: after its lease another one takes the delivery
      const again = await d.leaseDue(new Date(NOW + 5 * MIN), 10, new Date(NOW + 10 * MIN))
      expect(again.map((x) => [x.id, x.leaseUntil?.getTime()])).toEqual([[taken!.id, NOW + 5 * MIN]])
      // a failed attempt schedules the retry and releases the lease
      await d.completeDelivery(
        taken!.id,
        { status: 'pending', attempts: 1, nextAttemptAt: new Date(NOW + 7 * MIN), lastAttemptAt: new Date(NOW + 5 * MIN), lastStatus: 500, lastError: 'http_status' },
        { deliveryId: taken!.id, eventId: taken!.eventId, endpointId: taken!.endpointId, attempt: 1, at: new Date(NOW + 5 * MIN), ok: false, status: 500, durationMs: 12.6, responseBody: 'no', error: 'http_status', errorDetail: null },
      )
      expect(await d.getDelivery(taken!.id)).toMatchObject({ attempts: 1, leaseUntil: null, nextAttemptAt: new Date(NOW + 7 * MIN), lastStatus: 500 })
      expect(await d.leaseDue(new Date(NOW + 6 * MIN), 10, new Date(NOW + 9 * MIN))).toEqual([])
      expect(await d.leaseDue(new Date(NOW + 7 * MIN), 10, new Date(NOW + 9 * MIN))).toHaveLength(1)
      expect(await d.listAttempts(taken!.endpointId)).toEqual([
        { deliveryId: taken!.id, eventId: taken!.eventId, endpointId: taken!.endpointId, attempt: 1, at: new Date(NOW + 5 * MIN), ok: false, status: 500, durationMs: 13, responseBody: 'no', error: 'http_status', errorDetail: null },
      ])
    }),
  )

  it(
    'the delivery worker over the storage: a failure is retried on the schedule, a success ends the delivery and marks the endpoint',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      const ep = await addEndpoint(h, org)
      const event = creditsEvent(org)
      await h.webhooks.insertEvent(event)
      await h.webhooks.pumpOutbox(clockAt(NOW))
      let at = NOW
      let status = 503
      const sender = fakeSender(() => status)
      const worker = createDeliveryWorker({ store: h.webhooks.deliveries, now: () => new Date(at), deliver: sender.deliver })
      expect(await worker.tick()).toMatchObject({ leased: 1, retrying: 1 })
      const [d] = await h.webhooks.deliveries.listDeliveries({ endpointId: ep.id })
      expect(d!.nextAttemptAt).toEqual(new Date(NOW + MIN)) // the first retry: one minute later
      at = NOW + 30_000
      expect((await worker.tick()).leased).toBe(0)
      at = NOW + MIN
      status = 200
      expect(await worker.tick()).toMatchObject({ leased: 1, succeeded: 1 })
      expect(await h.webhooks.deliveries.getDelivery(d!.id)).toMatchObject({ status: 'succeeded', attempts: 2, nextAttemptAt: null, leaseUntil: null })
      expect((await h.webhooks.deliveries.getStoredEndpoint(ep.id))!.lastSuccessAt).toEqual(new Date(NOW + MIN))
      expect(sender.sent).toEqual([
        { url: ep.url, eventId: event.id },
        { url: ep.url, eventId: event.id },
      ])
      expect((await h.webhooks.deliveries.listAttempts(ep.id)).map((a) => [a.attempt, a.ok])).toEqual([
        [2, true],
        [1, false],
      ])
      expect(await h.webhooks.pendingCount()).toBe(0)
    }),
  )

  it(
    'resend queues again what an endpoint missed (same event id, a new delivery); the log is pruned after its retention; notices newest first',
    withHarness(async (h) => {
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      const ep = await addEndpoint(h, org)
      await autoDisable(h, ep)
      const missed = creditsEvent(org)
      await h.webhooks.insertEvent(missed)
      await h.webhooks.pumpOutbox(clockAt(NOW))
      await h.webhooks.deliveries.enableEndpoint(ep.id, NOW + MIN)
      const created = await resendDeliveries({ store: h.webhooks.deliveries, now: clockAt(NOW + MIN), endpointId: ep.id, since: new Date(NOW) })
      expect(created).toHaveLength(1)
      expect(created[0]).toMatchObject({ eventId: missed.id, status: 'pending' })
      expect(await resendDeliveries({ store: h.webhooks.deliveries, now: clockAt(NOW + MIN), endpointId: ep.id, since: new Date(NOW) })).toEqual([])
      expect((await h.webhooks.deliveries.listDeliveries({ endpointId: ep.id, since: new Date(NOW) })).map((d) => [d.status, d.resendOf !== null])).toEqual([
        ['skipped', false],
        ['pending', true],
      ])

      expect(await h.webhooks.deliveries.pruneBefore(new Date(NOW + 2 * MIN))).toEqual({ attempts: 0, deliveries: 2, events: 0 })
      await h.webhooks.deliveries.addNotice({ at: NOW, orgId: org, subject: ep.id, kind: 'other', message: 'first' })
      await h.webhooks.deliveries.addNotice({ at: NOW + 1, orgId: null, subject: 'x', kind: 'other', message: 'second' })
      expect((await h.webhooks.deliveries.listNotices(10)).map((x) => x.message.slice(0, 6))).toEqual(['second', 'first', 'Webhoo'])
      expect((await h.webhooks.deliveries.listNotices(1)).map((x) => x.message)).toEqual(['second'])
    }),
  )
}

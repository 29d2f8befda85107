/**
 * Webhook deliveries through BullMQ on a real Redis, over the SQLite delivery store: the documented retry schedule
 * (scaled down 60,000× so 23 h 51 min take 1.4 s) carried by BullMQ's backoff, the attempt count kept by the store;
 * a worker that dies mid-delivery (closed at once in this process, or a child process SIGKILLed while its request is
 * in flight) → another worker delivers it (same event and delivery id, valid signature); a
 * repeated message neither adds an attempt nor sends twice.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { createDeliveryQueue, type DeliveryQueue } from '../src/server/queue/delivery-queue.js'
import { createSqliteDeliveryStore, type SqliteDeliveryStore } from '../src/server/store/sqlite/deliveries.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import { buildPingEvent, createWebhookSecret } from '../src/webhooks/events.js'
import { enqueueEvent, type DeliverFunction } from '../src/webhooks/queue.js'
import { RETRY_DELAYS_MS } from '../src/webhooks/schedule.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { deleteKeys, testRedis, testRedisUrl, uniquePrefix } from './redis-env.js'
import { nodeArgs } from './child-process.js'

const url = testRedisUrl('webhook deliveries through BullMQ (test/redis-delivery-queue.test.ts)')
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-delivery-queue-'))
const SCALED = RETRY_DELAYS_MS.map((d) => d / 60_000) // 1 ms … 420 ms

/** Resolves when `check` holds, polling the store (the queue works asynchronously). */
async function until(check: () => boolean, what: string, tries = 400): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe.skipIf(!url)('webhook deliveries through BullMQ', () => {
  let redis: Redis
  let store: SqliteStore
  let deliveries: SqliteDeliveryStore
  let receiver: Server
  let port = 0
  const received: Array<{ eventId: string; deliveryId: string; signatureOk: boolean }> = []
  let receiverStatus = 200
  const secret = createWebhookSecret()
  const prefix = uniquePrefix().replace(/:$/, '')
  const queues: DeliveryQueue[] = []

  beforeAll(async () => {
    redis = testRedis(url as string)
    store = createSqliteStore(':memory:')
    deliveries = createSqliteDeliveryStore(store.db)
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        received.push({
          eventId: String(req.headers['svc-event-id']),
          deliveryId: String(req.headers['svc-delivery-id']),
          signatureOk: verifyWebhook(body, req.headers['svc-signature'] as string, secret).ok,
        })
        res.statusCode = receiverStatus
        res.end('ok')
      })
    })
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    port = (receiver.address() as AddressInfo).port
  })

  afterEach(async () => {
    for (const q of queues.splice(0)) await q.close(true)
  })

  afterAll(async () => {
    await new Promise((r) => receiver.close(r))
    store?.close()
    rmSync(dir, { recursive: true, force: true })
    if (redis) {
      await deleteKeys(redis, `${prefix}:`)
      await redis.quit()
    }
  })

  const newQueue = (extra: Partial<Parameters<typeof createDeliveryQueue>[0]> = {}) => {
    const q = createDeliveryQueue({
      redisUrl: url as string,
      prefix,
      store: deliveries,
      allowLoopback: true,
      retryDelaysMs: SCALED,
      worker: { lockDuration: 1000, stalledInterval: 250 },
      ...extra,
    })
    queues.push(q)
    return q
  }

  async function newDelivery(orgId: string) {
    const endpoint = deliveries.createEndpoint(
      { orgId, url: `http://127.0.0.1:${port}/hook`, description: null, events: ['*'], format: 'json', secret },
      Date.now(),
    )
    const event = buildPingEvent({ orgId, now: new Date(), endpointId: endpoint.id })
    const [d] = await enqueueEvent({ store: deliveries, now: () => new Date(), event, endpointId: endpoint.id })
    return { endpoint, event, delivery: d as NonNullable<typeof d> }
  }

  it('a failing endpoint gets 11 attempts on the documented schedule, then the delivery fails', async () => {
    receiverStatus = 500
    received.length = 0
    const { event, delivery } = await newDelivery('org_retry')
    const q = newQueue()
    q.startWorker()
    expect(await q.sweep()).toBe(1)
    await until(() => deliveries.getDelivery(delivery.id)?.status === 'failed', 'the final failure')
    // A sweep after the end finds nothing: the store, not BullMQ, says the delivery is finished.
    expect(await q.sweep()).toBe(0)
    const attempts = deliveries.listAttempts(delivery.endpointId).reverse()
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    expect(attempts.every((a) => a.status === 500 && !a.ok)).toBe(true)
    // Each retry came no earlier than its (scaled) delay after the previous attempt ended.
    for (let i = 1; i < attempts.length; i++) {
      const gap = (attempts[i] as (typeof attempts)[0]).at.getTime() - (attempts[i - 1] as (typeof attempts)[0]).at.getTime()
      expect(gap).toBeGreaterThanOrEqual(Math.floor(SCALED[i - 1] as number))
    }
    expect(received).toHaveLength(11)
    expect(new Set(received.map((r) => r.eventId))).toEqual(new Set([event.id]))
    expect(received.every((r) => r.signatureOk && r.deliveryId === delivery.id)).toBe(true)
    expect(deliveries.getDelivery(delivery.id)).toMatchObject({ status: 'failed', attempts: 11, nextAttemptAt: null, lastStatus: 500 })
    expect(await q.depth()).toBe(0)
  })

  it('a retry succeeds: the delivery stops at the attempt that succeeded', async () => {
    received.length = 0
    receiverStatus = 503
    const { delivery } = await newDelivery('org_recover')
    const q = newQueue({
      onAttempt: (a) => {
        if (a.attempt === 3) receiverStatus = 200
      },
    })
    q.startWorker()
    await q.sweep()
    await until(() => deliveries.getDelivery(delivery.id)?.status === 'succeeded', 'the success')
    expect(deliveries.getDelivery(delivery.id)).toMatchObject({ status: 'succeeded', attempts: 4, lastStatus: 200 })
    expect(received.map((r) => r.deliveryId)).toEqual([delivery.id, delivery.id, delivery.id, delivery.id])
  })

  it('a worker killed mid-delivery: another worker delivers it (same event id, valid signature)', async () => {
    received.length = 0
    receiverStatus = 200
    const { event, delivery } = await newDelivery('org_crash')
    let started = 0
    const hang: DeliverFunction = () => {
      started++
      return new Promise(() => undefined) // the process dies while sending: never answers, never records
    }
    const dying = newQueue({ deliver: hang })
    dying.startWorker()
    await dying.sweep()
    await until(() => started === 1, 'the first worker to start sending')
    // Kill it: its worker stops at once without finishing the job or renewing its lock. The survivor never sweeps:
    // the job reaches it through BullMQ's stalled-job check alone.
    queues.splice(queues.indexOf(dying), 1)
    await dying.close(true)
    const survivor = newQueue()
    survivor.startWorker()
    await until(() => deliveries.getDelivery(delivery.id)?.status === 'succeeded', 'the other worker to deliver')
    expect(received).toHaveLength(1)
    expect(received[0]).toEqual({ eventId: event.id, deliveryId: delivery.id, signatureOk: true })
    expect(deliveries.getDelivery(delivery.id)).toMatchObject({ status: 'succeeded', attempts: 1 })
    expect(started).toBe(1)
  })

  it('a worker process SIGKILLed while its request is in flight: another process delivers it (at least once)', async () => {
    // The delivery store of a file both processes open.
    const file = join(dir, 'kill.sqlite')
    const fileStore = createSqliteStore(file)
    const fileDeliveries = createSqliteDeliveryStore(fileStore.db)
    let child: ChildProcess | undefined
    const hits: Array<{ eventId: string; deliveryId: string; signatureOk: boolean }> = []
    let killed!: () => void
    const killedNow = new Promise<void>((r) => (killed = r))
    const hook = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        hits.push({
          eventId: String(req.headers['svc-event-id']),
          deliveryId: String(req.headers['svc-delivery-id']),
          signatureOk: verifyWebhook(Buffer.concat(chunks).toString('utf8'), req.headers['svc-signature'] as string, secret).ok,
        })
        if (hits.length === 1) {
          // The first request arrives from the child: kill it before answering.
          child?.kill('SIGKILL')
          child?.once('exit', () => {
            res.destroy()
            killed()
          })
          return
        }
        res.end('ok')
      })
    })
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r))
    try {
      const endpoint = fileDeliveries.createEndpoint(
        { orgId: 'org_kill', url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`, description: null, events: ['*'], format: 'json', secret },
        Date.now(),
      )
      const event = buildPingEvent({ orgId: 'org_kill', now: new Date(), endpointId: endpoint.id })
      const [delivery] = await enqueueEvent({ store: fileDeliveries, now: () => new Date(), event, endpointId: endpoint.id })
      child = spawn(process.execPath, [...nodeArgs('test/children/delivery-worker.ts'), file, url as string, prefix], {
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      await killedNow
      expect(child.signalCode).toBe('SIGKILL')
      // The attempt of the dead process was never recorded; the delivery is still pending, leased to its job.
      expect(fileDeliveries.getDelivery(delivery!.id)).toMatchObject({ status: 'pending', attempts: 0 })
      const survivor = createDeliveryQueue({
        redisUrl: url as string,
        prefix,
        store: fileDeliveries,
        allowLoopback: true,
        worker: { lockDuration: 1000, stalledInterval: 250 },
      })
      queues.push(survivor)
      survivor.startWorker() // no sweep: the job reaches it through BullMQ's stalled-job check
      await until(() => fileDeliveries.getDelivery(delivery!.id)?.status === 'succeeded', 'the surviving process to deliver')
      expect(hits).toEqual([
        { eventId: event.id, deliveryId: delivery!.id, signatureOk: true },
        { eventId: event.id, deliveryId: delivery!.id, signatureOk: true },
      ])
      expect(fileDeliveries.getDelivery(delivery!.id)).toMatchObject({ status: 'succeeded', attempts: 1, lastStatus: 200 })
    } finally {
      child?.kill('SIGKILL')
      await new Promise((r) => hook.close(r))
      fileStore.close()
    }
  })

  it('a repeated message for a finished delivery sends nothing and adds no attempt', async () => {
    received.length = 0
    receiverStatus = 200
    const { delivery } = await newDelivery('org_dup')
    const q = newQueue()
    q.startWorker()
    await q.sweep()
    await until(() => deliveries.getDelivery(delivery.id)?.status === 'succeeded', 'the delivery')
    const job = await q.queue.add('deliver', { deliveryId: delivery.id }, { jobId: `${delivery.id}-again`, removeOnComplete: false })
    let state = ''
    for (let i = 0; i < 400 && state !== 'completed'; i++) {
      state = await job.getState()
      if (state !== 'completed') await new Promise((r) => setTimeout(r, 25))
    }
    expect(state).toBe('completed')
    expect((await q.queue.getJob(job.id as string))?.returnvalue).toBe('done')
    expect(received).toHaveLength(1)
    expect(deliveries.getDelivery(delivery.id)).toMatchObject({ status: 'succeeded', attempts: 1 })
  })
})

/**
 * Webhook deliveries under crashes, on the server's real SQLite store. For every boundary of a delivery's life
 * (`DELIVERY_CRASH_POINTS`: the outbox pump has fanned an event out / moved its cursor; a worker has leased due
 * deliveries / had the endpoint's answer / recorded the attempt and outcome) a child process running the webhook
 * service SIGKILLs itself there; a fresh service on the same file then runs to completion against a real receiver
 * on loopback, on an injected clock that jumps to the moment the next delivery may be claimed (no sleeps). Checked
 * exactly: one delivery row per event and endpoint; every event received, each copy with the same SVC-Event-Id and
 * SVC-Delivery-Id and a valid signature, and a second copy only of the POST whose outcome the dead process had not
 * recorded (at-least-once); attempts, statuses, retry times (the documented 1-minute first retry), the endpoint's last
 * success, auto-disable with one operator notice; a dead worker's lease holds until it expires, not a millisecond
 * less; balance and credit rows untouched by the delivery machinery.
 *
 * Where an event comes from, its write is part of its cause's transaction: a failure at the event's insert (a SQLite
 * trigger aborting that statement) leaves neither the credit change nor the event; a bulk job's final status, refund,
 * usage and bulk.completed event commit together, so a failure there is retried whole by the resumed job.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { lookupsOf } from '../src/server/bulk-service.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { createWebhookService, webhookOperator } from '../src/server/webhook-service.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import type { StoredEndpoint } from '../src/server/store/sqlite/deliveries.js'
import { createWebhookSecret } from '../src/webhooks/events.js'
import { DELIVERY_CRASH_POINTS, type DeliveryCrashPoint } from '../src/webhooks/queue.js'
import { MAX_DELIVERY_ATTEMPTS, RETRY_DELAYS_MS } from '../src/webhooks/schedule.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { MOBILE_RECORD } from './children/slow-carrier.js'
import { startReceiver, type Receiver } from './webhooks-helpers.js'
import { nodeArgs } from './child-process.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-delivery-crash-'))
const T0 = Date.parse('2026-11-22T10:00:00Z')
let rx: Receiver
let failing = false
let n = 0

beforeAll(async () => {
  rx = await startReceiver({
    handler: (_req, res) => {
      res.writeHead(failing ? 500 : 200)
      res.end(failing ? 'down' : 'ok')
    },
  })
})
afterAll(async () => {
  await rx.close()
  rmSync(dir, { recursive: true, force: true })
})

interface DeliveryRow {
  id: string
  event_id: string
  endpoint_id: string
  status: string
  attempts: number
  next_attempt_at: number | null
  lease_until: number | null
  last_attempt_at: number | null
}

/** A database with an org, `endpoints` endpoints (all events) and its outbox: credits.added, then a ping to the last endpoint when `ping`. */
function setup(endpoints: 1 | 2, ping: boolean) {
  const file = join(dir, `crash-${++n}.sqlite`)
  const store = createSqliteStore(file)
  const org = store.createOrg({ name: 'Acme', planId: 'starter' }, T0)
  const service = createWebhookService({ db: store.db, nowMs: () => T0, allowLoopback: true, intervalMs: 0 })
  const eps: StoredEndpoint[] = []
  for (let i = 0; i < endpoints; i++) {
    const input = { orgId: org.id, url: `${rx.url}/ep${i}`, description: null, events: ['*'], format: 'json' as const, secret: createWebhookSecret() }
    eps.push(service.deliveries.createEndpoint(input, T0 - 1000 + i))
  }
  store.addCredits(org.id, 5, 'top_up', T0)
  if (ping) webhookOperator.ping(store.db, eps[eps.length - 1]!, T0)
  const money = snapshotMoney(store)
  store.close()
  return { file, org, endpoints: eps, money, pairs: endpoints + (ping ? 1 : 0) }
}

/** Everything about credits: the orgs' rows and the credit transactions. */
function snapshotMoney(store: SqliteStore) {
  return {
    orgs: store.db.prepare('SELECT * FROM orgs ORDER BY id').all(),
    transactions: store.db.prepare('SELECT * FROM credit_transactions ORDER BY id').all(),
  }
}

/** Runs the child until it kills itself at `point` (or says it survived). */
async function crashAt(file: string, point: DeliveryCrashPoint, clock: number) {
  const child = spawn(process.execPath, [...nodeArgs('test/children/delivery-crash.ts'), file, point, String(clock)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += String(c)))
  child.stderr.on('data', (c: Buffer) => (out += String(c)))
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null]
  expect({ code, signal, out }, `the child died at ${point}`).toEqual({ code: null, signal: 'SIGKILL', out: '' })
}

/** A fresh service on the file ("the restart"), with a clock the test moves. */
function restart(file: string, clock: number) {
  const store = createSqliteStore(file)
  const time = { now: clock }
  const service = createWebhookService({ db: store.db, nowMs: () => time.now, allowLoopback: true, intervalMs: 0 })
  const deliveries = () => store.db.prepare('SELECT * FROM webhook_deliveries ORDER BY rowid').all() as DeliveryRow[]
  /** The first moment a pending delivery may be claimed (due, lease expired), or null when none is pending. */
  const nextClaim = () => {
    const times = deliveries()
      .filter((d) => d.status === 'pending')
      .map((d) => Math.max(d.next_attempt_at ?? 0, d.lease_until ?? 0))
    return times.length > 0 ? Math.min(...times) : null
  }
  /** Rounds until nothing is left (or `until` holds), jumping the clock to each next claimable moment. */
  const run = async (until: () => boolean = () => false) => {
    for (let i = 0; i < 100; i++) {
      if (until()) return
      const r = await service.runOnce()
      if (r.leased > 0 || r.events > 0) continue
      const next = nextClaim()
      if (next === null) return
      time.now = Math.max(time.now, next)
    }
    throw new Error('the deliveries did not finish')
  }
  return { store, service, time, deliveries, nextClaim, run }
}

/** The receiver's copies per delivery row, each checked: same event and delivery id, valid signature, right endpoint. */
function copiesOf(rows: DeliveryRow[], endpoints: StoredEndpoint[], t: number) {
  const copies = new Map<string, number>()
  for (const req of rx.requests) {
    const eventId = String(req.headers['svc-event-id'])
    const deliveryId = String(req.headers['svc-delivery-id'])
    const row = rows.find((d) => d.id === deliveryId)
    expect(row, `a copy of ${deliveryId} has a delivery row`).toBeDefined()
    expect(eventId).toBe(row!.event_id)
    const ep = endpoints.find((e) => e.id === row!.endpoint_id)!
    expect(req.url).toBe(new URL(ep.url).pathname)
    expect(JSON.parse(req.rawBody.toString('utf8')).id).toBe(eventId)
    const verified = verifyWebhook(req.rawBody, req.headers['svc-signature'] as string, ep.secret, { now: () => t, toleranceSeconds: 2 * 86_400 })
    expect(verified.ok, `signature of a copy of ${deliveryId}`).toBe(true)
    copies.set(deliveryId, (copies.get(deliveryId) ?? 0) + 1)
  }
  return copies
}

/** One delivery per event and endpoint (pump exactly once), the cursor past every event, money untouched. */
function checkRows(s: ReturnType<typeof restart>, setupOf: ReturnType<typeof setup>) {
  const rows = s.deliveries()
  expect(rows).toHaveLength(setupOf.pairs)
  expect(new Set(rows.map((d) => `${d.event_id} ${d.endpoint_id}`)).size).toBe(setupOf.pairs)
  const lastSeq = (s.store.db.prepare('SELECT MAX(seq) AS m FROM events').get() as { m: number }).m
  expect(s.store.db.prepare("SELECT value FROM meta WHERE key = 'webhook_outbox_seq'").get()).toEqual({ value: String(lastSeq) })
  expect(snapshotMoney(s.store)).toEqual(setupOf.money)
  return rows
}

const attemptsOf = (store: SqliteStore, id: string) =>
  store.db.prepare('SELECT attempt, at, ok, status FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt').all(id) as Array<{
    attempt: number
    at: number
    ok: number
    status: number | null
  }>

describe('delivery crash points (SQLite, a child process SIGKILLed at each boundary)', () => {
  it('every boundary is a crash point of these tests', () => {
    expect([...DELIVERY_CRASH_POINTS]).toEqual(['pump.fanned-out', 'pump.advanced', 'worker.leased', 'worker.sent', 'worker.recorded'])
  })

  for (const point of DELIVERY_CRASH_POINTS) {
    it(`${point}: every event delivered to every endpoint once, re-sent only if its outcome was not recorded`, async () => {
      rx.requests.length = 0
      failing = false
      const db = setup(2, true)
      await crashAt(db.file, point, T0)
      const sentByChild = rx.requests.length
      const s = restart(db.file, T0)
      if (point === 'worker.leased' || point === 'worker.sent') {
        // the dead worker's leases hold until they expire, not a millisecond less; then another worker claims them
        const leased = s.deliveries().filter((d) => d.lease_until !== null)
        expect(leased).toHaveLength(db.pairs)
        const until = Math.min(...leased.map((d) => d.lease_until!))
        s.time.now = until - 1
        expect((await s.service.runOnce()).leased).toBe(0)
        expect(rx.requests).toHaveLength(sentByChild)
        s.time.now = until
      }
      await s.run()
      const rows = checkRows(s, db)
      const copies = copiesOf(rows, db.endpoints, s.time.now)
      for (const d of rows) {
        expect(d.status).toBe('succeeded')
        expect(d.attempts).toBe(1)
        expect(attemptsOf(s.store, d.id).map((a) => [a.attempt, a.ok])).toEqual([[1, 1]])
      }
      // one POST only is repeated: the one the child sent and died before recording
      const twice = [...copies.values()].filter((c) => c === 2).length
      expect([...copies.values()].every((c) => c === 1 || c === 2)).toBe(true)
      expect(copies.size).toBe(db.pairs)
      expect(twice).toBe(point === 'worker.sent' ? 1 : 0)
      expect(sentByChild).toBe(point === 'worker.sent' || point === 'worker.recorded' ? 1 : 0)
      // every endpoint knows its last success: the latest successful attempt to it
      for (const ep of db.endpoints) {
        const last = Math.max(...rows.filter((d) => d.endpoint_id === ep.id).map((d) => d.last_attempt_at!))
        expect(s.service.deliveries.getStoredEndpoint(ep.id)!.lastSuccessAt?.getTime(), `last success of ${ep.url}`).toBe(last)
      }
      expect(s.service.deliveries.listNotices()).toEqual([])
      await s.service.stop()
      s.store.close()
    })
  }

  for (const point of ['worker.sent', 'worker.recorded'] as const) {
    it(`${point} of a failed attempt: the retry is scheduled 1 minute after the recorded failure and then delivered`, async () => {
      rx.requests.length = 0
      failing = true
      const db = setup(2, true)
      await crashAt(db.file, point, T0)
      const s = restart(db.file, T0)
      // while the endpoints fail, every delivery gets at least one recorded failure …
      await s.run(() => s.deliveries().every((d) => d.attempts >= 1))
      for (const d of s.deliveries()) {
        expect(d.status).toBe('pending')
        expect(d.next_attempt_at! - d.last_attempt_at!).toBe(RETRY_DELAYS_MS[d.attempts - 1])
      }
      failing = false // … then they recover
      await s.run()
      const rows = checkRows(s, db)
      const copies = copiesOf(rows, db.endpoints, s.time.now)
      let recorded = 0
      for (const d of rows) {
        expect(d.status).toBe('succeeded')
        const log = attemptsOf(s.store, d.id)
        recorded += log.length
        expect(d.attempts).toBe(log.length)
        // failures, then one success, each retry exactly its documented delay after the previous attempt
        expect(log.map((a) => [a.attempt, a.ok, a.status])).toEqual(log.map((_, i) => (i < log.length - 1 ? [i + 1, 0, 500] : [i + 1, 1, 200])))
        for (let i = 1; i < log.length; i++) expect(log[i]!.at - log[i - 1]!.at).toBe(RETRY_DELAYS_MS[i - 1])
      }
      expect([...copies.values()].reduce((a, b) => a + b, 0)).toBe(recorded + (point === 'worker.sent' ? 1 : 0))
      await s.service.stop()
      s.store.close()
    })
  }

  for (const point of ['worker.leased', 'worker.sent', 'worker.recorded'] as const) {
    it(`${point} of the last attempt: the delivery fails once, the endpoint is disabled with one operator notice`, async () => {
      rx.requests.length = 0
      failing = true
      const db = setup(1, false)
      // ten failed attempts over the documented schedule, in this process
      const first = restart(db.file, T0)
      await first.run(() => first.deliveries()[0]?.attempts === MAX_DELIVERY_ATTEMPTS - 1)
      const due = first.nextClaim()!
      await first.service.stop()
      first.store.close()
      // the last attempt, in a process that dies at `point`
      await crashAt(db.file, point, due)
      const s = restart(db.file, due)
      await s.run()
      const [d] = checkRows(s, db)
      expect([d!.status, d!.attempts]).toEqual(['failed', MAX_DELIVERY_ATTEMPTS])
      expect(attemptsOf(s.store, d!.id).map((a) => a.attempt)).toEqual(Array.from({ length: MAX_DELIVERY_ATTEMPTS }, (_, i) => i + 1))
      const copies = copiesOf([d!], db.endpoints, s.time.now)
      expect(copies.get(d!.id)).toBe(MAX_DELIVERY_ATTEMPTS + (point === 'worker.sent' ? 1 : 0))
      const ep = s.service.deliveries.getStoredEndpoint(db.endpoints[0]!.id)!
      expect([ep.status, ep.disabledReason]).toEqual(['disabled', 'failing'])
      expect(s.service.deliveries.listNotices().map((x) => [x.kind, x.subject])).toEqual([['webhook_endpoint_disabled', ep.id]])
      await s.service.stop()
      s.store.close()
    })
  }
})

describe('an event and its cause are one write (SQLite)', () => {
  it('credits.added: a failure at the event insert leaves neither the credits nor the event; written again, it is delivered once per endpoint', async () => {
    rx.requests.length = 0
    failing = false
    const db = setup(2, false)
    const store = createSqliteStore(db.file)
    const balance = () => store.balance(db.org.id, T0)
    const before = balance()
    store.db.exec(`CREATE TEMP TRIGGER crash BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'crash at the event'); END`)
    expect(() => store.addCredits(db.org.id, 7, 'top_up', T0)).toThrow('crash at the event')
    expect(balance()).toBe(before)
    expect(snapshotMoney(store)).toEqual(db.money)
    store.db.exec('DROP TRIGGER temp.crash')
    store.addCredits(db.org.id, 7, 'top_up', T0)
    expect(balance()).toBe(before + 7)
    store.close()
    const s = restart(db.file, T0)
    await s.run()
    const rows = s.deliveries()
    expect(rows).toHaveLength(4) // (the setup's top-up + this one) × 2 endpoints
    expect(new Set(rows.map((d) => `${d.event_id} ${d.endpoint_id}`)).size).toBe(4)
    expect([...copiesOf(rows, db.endpoints, T0).values()]).toEqual([1, 1, 1, 1])
    const added = s.store.db.prepare("SELECT payload FROM events WHERE type = 'credits.added' ORDER BY seq").all() as Array<{ payload: string }>
    expect(added.map((e) => JSON.parse(e.payload).data.amount)).toEqual([5, 7])
    await s.service.stop()
    s.store.close()
  })

  it("bulk.completed: a failure at the event insert rolls back the job's final status, refund and usage; the resumed job writes them once", async () => {
    rx.requests.length = 0
    failing = false
    const file = join(dir, `bulk-${++n}.sqlite`)
    const open = () =>
      createServer({
        db: file,
        purgeIntervalMs: 0,
        webhookIntervalMs: 0,
        unsafeAllowLoopbackWebhooks: true,
        riskcheck: { now: () => new Date(T0), cache: false, phone: { carrierSource: { name: 'fake-carrier', lookup: async () => MOBILE_RECORD } } },
      })
    let app: RiskcheckServer = open()
    await app.ready()
    const sqlite = () => (app.store as SqliteStore).db
    const org = await app.store.createOrg({ name: 'Bulk', planId: 'starter' }, T0)
    const key = (await issueApiKey(app.store, { orgId: org.id }, T0)).secret
    const secret = createWebhookSecret()
    const ep = await app.webhooks!.deliveries.createEndpoint({ orgId: org.id, url: `${rx.url}/bulk`, description: null, events: ['bulk.completed'], format: 'json', secret }, T0)
    const usage = () => sqlite().prepare('SELECT period_lookups AS p, total_lookups AS t FROM orgs WHERE id = ?').get(org.id)
    const balance = async () => app.store.balance(org.id, T0)
    const before = await balance()
    const completedEvents = () => (sqlite().prepare("SELECT COUNT(*) AS c FROM events WHERE type = 'bulk.completed'").get() as { c: number }).c
    // the first process's final write fails at the bulk.completed insert (a function records that it got there)
    let tried = 0
    sqlite().function('crash_seen', () => ++tried)
    sqlite().exec(
      `CREATE TEMP TRIGGER crash BEFORE INSERT ON events WHEN NEW.type = 'bulk.completed' BEGIN SELECT crash_seen(); SELECT RAISE(ABORT, 'crash at bulk.completed'); END`,
    )
    const created = await app.inject({
      method: 'POST',
      url: '/v1/bulk/jobs',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ type: 'phone', inputs: ['+12015550100', '+12015550101', '+12015550102', 'not a phone'] }),
    })
    expect(created.statusCode).toBe(202)
    const id = JSON.parse(created.body).data.id as string
    for (let i = 0; i < 2000 && tried === 0; i++) await new Promise((r) => setTimeout(r, 5))
    expect(tried).toBe(1)
    await app.close()
    // nothing of the finish is written: not final, no event, no usage, the reservation still held
    app = open()
    const job = () => JSON.parse((sqlite().prepare('SELECT job FROM bulk_jobs WHERE id = ?').get(id) as { job: string }).job)
    expect(completedEvents()).toBe(0)
    expect(usage()).toEqual({ p: 0, t: 0 })
    await app.ready() // the restarted server resumes the job and finishes it
    for (let i = 0; i < 2000 && job().status !== 'completed'; i++) await new Promise((r) => setTimeout(r, 5))
    expect([job().status, job().credits_used]).toEqual(['completed', 3])
    expect(completedEvents()).toBe(1)
    expect(usage()).toEqual({ p: lookupsOf(job()), t: lookupsOf(job()) }) // counted once
    expect(lookupsOf(job())).toBeGreaterThan(0)
    expect(await balance()).toBe(before - 3)
    expect(sqlite().prepare('SELECT COUNT(*) AS c FROM bulk_reservations').get()).toEqual({ c: 0 })
    await app.webhooks!.runOnce()
    expect(rx.requests).toHaveLength(1)
    expect(rx.requests[0]!.headers['svc-event-type']).toBe('bulk.completed')
    expect(JSON.parse(rx.requests[0]!.rawBody.toString('utf8')).data.id).toBe(id)
    expect(verifyWebhook(rx.requests[0]!.rawBody, rx.requests[0]!.headers['svc-signature'] as string, secret, { now: () => T0 }).ok).toBe(true)
    expect(sqlite().prepare('SELECT COUNT(*) AS c FROM webhook_deliveries WHERE endpoint_id = ?').get(ep.id)).toEqual({ c: 1 })
    await app.close()
  })
})

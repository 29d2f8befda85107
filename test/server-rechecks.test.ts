/**
 * Rechecks of deferred email answers on SQLite (docs/rechecks.md), against a loopback mail server that answers
 * `450 greylisted` to the first attempts at an address: a single lookup is checked again 5 and 15 minutes later
 * (the server's clock advanced), its org gets `email.rechecked` with the new verdict, the result cache holds the new
 * answer and no credit is taken; an address deferred every time is announced after its last attempt; a bulk job with
 * `recheck_deferred` waits in `rechecking`, its row is updated in place and it completes after the pass; and a
 * recheck scheduled before a restart is still done by the next process on the same file; a request whose settlement
 * is refused takes its recheck back.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recheckOf } from '../src/cli/serve-settings.js'
import { recheckSettings } from '../src/server/recheck-service.js'
import type { EventPayload } from '../src/schema.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { fakeClock } from './clock.js'
import { call, creditsLeft, DOMAIN, greyServer, MINUTE, orgWithEndpoint, startGreyWorld, waitForJob, type GreyWorld } from './rechecks-harness.js'

let world: GreyWorld
let dir: string

beforeAll(async () => {
  world = await startGreyWorld()
  dir = mkdtempSync(join(tmpdir(), 'rc-rechecks-'))
})
afterAll(async () => {
  await world?.close()
  rmSync(dir, { recursive: true, force: true })
})

const rechecked = (sent: EventPayload[]) => sent.filter((e) => e.type === 'email.rechecked')

describe('rechecks of deferred email answers (SQLite)', () => {
  it('a single lookup deferred twice: rechecked at 5 and 15 minutes, webhook with the new verdict, cache updated, no credits', async () => {
    world.script.set('alice', { defer: 2, then: 'accept' })
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const sent: EventPayload[] = []
    const app = greyServer(world, ':memory:', clock, sent)
    await app.ready()
    try {
      const { key } = await orgWithEndpoint(app, app.store, clock.now().getTime())
      const first = await call(app, 'POST', '/v1/email', key, { email: `alice@${DOMAIN}` })
      expect(first.status).toBe(200)
      expect(first.body.data.details.smtp_check).toBe('unknown')
      expect(first.body.data.verdict.status).toBe('unknown')
      const requestId = first.body.data.request.id as string
      const credits = await creditsLeft(app, key)

      expect(await app.rechecks!.runOnce()).toBe(0) // not due yet
      clock.advance(5 * MINUTE)
      expect(await app.rechecks!.runOnce()).toBe(1) // deferred again: the next attempt at 15 minutes
      await app.webhooks!.runOnce()
      expect(rechecked(sent)).toEqual([])
      expect(world.attempts.get('alice')).toBe(2)

      clock.advance(10 * MINUTE)
      expect(await app.rechecks!.runOnce()).toBe(1)
      await app.webhooks!.runOnce()
      const events = rechecked(sent)
      expect(events).toHaveLength(1)
      expect(events[0]!.test_mode).toBe(false) // a live key's answer
      expect(events[0]!.data).toMatchObject({
        request_id: requestId,
        bulk_job_id: null,
        row_index: null,
        email: `alice@${DOMAIN}`,
        verdict: 'valid',
        action: 'approve',
        smtp_check: 'deliverable',
        attempts: 2,
        definite: true,
      })
      expect(typeof events[0]!.data.score).toBe('number')
      expect(await app.rechecks!.runOnce()).toBe(0) // done: nothing left
      expect(await creditsLeft(app, key)).toBe(credits) // the rechecks were free

      // the cache holds the new answer: the next lookup is a free hit with the definite verdict, no SMTP
      const rcpt = world.smtp.rcptCount
      const again = await call(app, 'POST', '/v1/email', key, { email: `alice@${DOMAIN}` })
      expect(again.body.data.metadata.cache_hit).toBe(true)
      expect(again.body.data.details.smtp_check).toBe('deliverable')
      expect(world.smtp.rcptCount).toBe(rcpt)
    } finally {
      await app.close()
    }
  })

  it('an address deferred at every attempt is announced after the last one (60 minutes), still unknown', async () => {
    world.script.set('bob', { defer: 100, then: 'accept' })
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const sent: EventPayload[] = []
    const app = greyServer(world, ':memory:', clock, sent)
    await app.ready()
    try {
      const { key } = await orgWithEndpoint(app, app.store, clock.now().getTime())
      const first = await call(app, 'POST', '/v1/check', key, { email: `bob@${DOMAIN}` })
      expect(first.status).toBe(200)
      for (const m of [5, 10, 45]) {
        clock.advance(m * MINUTE)
        expect(await app.rechecks!.runOnce()).toBe(1)
      }
      await app.webhooks!.runOnce()
      const events = rechecked(sent)
      expect(events).toHaveLength(1)
      expect(events[0]!.data).toMatchObject({ request_id: first.body.data.request.id, verdict: 'unknown', attempts: 3, definite: false })
      expect(world.attempts.get('bob')).toBe(4)
    } finally {
      await app.close()
    }
  })

  it('bulk with recheck_deferred: the job waits in rechecking, its row is updated in place, completed after the pass', async () => {
    world.script.set('carol', { defer: 1, then: 'reject' })
    world.script.set('dave', { defer: 0, then: 'accept' })
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const sent: EventPayload[] = []
    const app = greyServer(world, ':memory:', clock, sent)
    await app.ready()
    try {
      const { key } = await orgWithEndpoint(app, app.store, clock.now().getTime())
      const created = await call(app, 'POST', '/v1/bulk/jobs', key, { type: 'email', inputs: [`carol@${DOMAIN}`, `dave@${DOMAIN}`], recheck_deferred: true })
      expect(created.status, JSON.stringify(created.body)).toBe(202)
      const id = created.body.data.id as string
      const waiting = await waitForJob(app, key, id, (j) => j.status !== 'queued' && j.status !== 'running')
      expect(waiting.status).toBe('rechecking')
      await app.webhooks!.runOnce()
      expect(sent.filter((e) => e.type === 'bulk.completed')).toEqual([])
      const before = (await call(app, 'GET', `/v1/bulk/jobs/${id}/results`, key)).body.data
      expect(before[0].details.smtp_check).toBe('unknown')
      const credits = await creditsLeft(app, key)

      clock.advance(5 * MINUTE)
      expect(await app.rechecks!.runOnce()).toBe(1)
      const done = (await call(app, 'GET', `/v1/bulk/jobs/${id}`, key)).body.data
      expect(done.status).toBe('completed')
      expect(done.results.block).toBe(1) // carol: the mailbox does not exist after all
      const rows = (await call(app, 'GET', `/v1/bulk/jobs/${id}/results`, key)).body.data
      expect(rows[0]).toMatchObject({ input: `carol@${DOMAIN}`, status: 'invalid', action: 'block' })
      expect(rows[0].details.smtp_check).toBe('undeliverable')
      const csv = await app.inject({ method: 'GET', url: `/v1/bulk/jobs/${id}/results.csv`, headers: { authorization: `Bearer ${key}` } })
      expect(csv.body.split('\n')[1]).toContain('undeliverable')
      await app.webhooks!.runOnce()
      expect(rechecked(sent)).toHaveLength(1)
      expect(rechecked(sent)[0]!.data).toMatchObject({ bulk_job_id: id, row_index: 0, verdict: 'invalid', attempts: 1 })
      expect(sent.filter((e) => e.type === 'bulk.completed')).toHaveLength(1)
      expect(await creditsLeft(app, key)).toBe(credits)
    } finally {
      await app.close()
    }
  })

  it('a restart between the answer and the due time: the next process on the file rechecks it', async () => {
    world.script.set('erin', { defer: 1, then: 'accept' })
    const file = join(dir, 'restart.sqlite')
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const sent: EventPayload[] = []
    const first = greyServer(world, file, clock, sent)
    await first.ready()
    const { key } = await orgWithEndpoint(first, first.store, clock.now().getTime())
    const answer = await call(first, 'POST', '/v1/email', key, { email: `erin@${DOMAIN}` })
    expect(answer.body.data.details.smtp_check).toBe('unknown')
    await first.close()

    clock.advance(5 * MINUTE)
    const second = greyServer(world, file, clock, sent)
    await second.ready()
    try {
      expect(await second.rechecks!.runOnce()).toBe(1)
      await second.webhooks!.runOnce()
      expect(rechecked(sent)).toHaveLength(1)
      expect(rechecked(sent)[0]!.data).toMatchObject({ request_id: answer.body.data.request.id, verdict: 'valid', attempts: 1 })
    } finally {
      await second.close()
    }
  })

  it('--no-recheck (recheck: false): nothing is scheduled', async () => {
    world.script.set('frank', { defer: 1, then: 'accept' })
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const app = greyServer(world, ':memory:', clock, [], { recheck: false })
    await app.ready()
    try {
      const { key } = await orgWithEndpoint(app, app.store, clock.now().getTime())
      await call(app, 'POST', '/v1/email', key, { email: `frank@${DOMAIN}` })
      expect(app.rechecks).toBeUndefined()
      const bulk = await call(app, 'POST', '/v1/bulk/jobs', key, { type: 'email', inputs: [`frank@${DOMAIN}`], recheck_deferred: true })
      expect(bulk.status).toBe(400)
    } finally {
      await app.close()
    }
  })

  it('a request whose settlement is refused takes its recheck back: only the answered retry is rechecked and announced', async () => {
    world.script.set('rita', { defer: 3, then: 'accept' })
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const sent: EventPayload[] = []
    const sqlite = createSqliteStore(':memory:')
    const leases = sqlite.leases!
    let refuse = 2
    // the first two settlements are refused (as when a request's hold was swept): 503s that charged nothing
    const store: Store = { ...sqlite, leases: { ...leases, closeHeld: async (...args) => (refuse-- > 0 ? false : leases.closeHeld(...args)) } }
    const app = greyServer(world, store, clock, sent)
    await app.ready()
    try {
      const { key } = await orgWithEndpoint(app, sqlite, clock.now().getTime())
      const post = (idem?: string) =>
        app.inject({
          method: 'POST',
          url: '/v1/email',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(idem ? { 'idempotency-key': idem } : {}) },
          payload: JSON.stringify({ email: `rita@${DOMAIN}` }),
        })
      // refused without a key (settled in the route) and with one (settled with its stored answer)
      for (const idem of [undefined, 'r-1']) expect((await post(idem)).statusCode).toBe(503)
      const answered = await post('r-1')
      expect(answered.statusCode).toBe(200)
      expect(answered.json().data.details.smtp_check).toBe('unknown')
      expect(world.attempts.get('rita')).toBe(3)

      clock.advance(5 * MINUTE)
      expect(await app.rechecks!.runOnce()).toBe(1)
      await app.webhooks!.runOnce()
      const events = rechecked(sent)
      expect(events).toHaveLength(1)
      expect(events[0]!.data).toMatchObject({ request_id: answered.json().data.request.id, verdict: 'valid' })
      expect(world.attempts.get('rita')).toBe(4)
    } finally {
      await app.close()
      sqlite.close()
    }
  })
})

describe('recheck settings', () => {
  it('serve --recheck-delays reads ascending durations; --no-recheck turns rechecks off', () => {
    expect(recheckOf({})).toBeUndefined()
    expect(recheckOf({ 'recheck-delays': '5m,15m,60m' })).toEqual({ delaysMs: [300_000, 900_000, 3_600_000] })
    expect(recheckOf({ 'no-recheck': true })).toBe(false)
    expect(() => recheckOf({ 'recheck-delays': '15m,5m' })).toThrow(/ascending/)
    expect(() => recheckOf({ 'recheck-delays': 'soon' })).toThrow(/durations/)
    expect(() => recheckOf({ 'recheck-delays': '5m', 'no-recheck': true })).toThrow(/together/)
  })

  it('createServer({ recheck }) defaults to 5, 15 and 60 minutes and refuses bad delays', () => {
    expect(recheckSettings(undefined)!.delaysMs).toEqual([300_000, 900_000, 3_600_000])
    expect(recheckSettings(false)).toBeNull()
    expect(() => recheckSettings({ delaysMs: [] })).toThrow(TypeError)
    expect(() => recheckSettings({ delaysMs: [2, 1] })).toThrow(/ascending/)
  })
})

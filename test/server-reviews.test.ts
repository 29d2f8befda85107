/**
 * The review queue end to end on real engines — a server over an SQLite file, and over PostgreSQL (a schema of its
 * own; set RISKCHECK_TEST_DATABASE_URL): an answer whose action is review is queued (others are not), listed with its
 * filters and pages, decided over HTTP — the outcome recorded, a later answer of the same input carrying
 * reported_fraud_before, the input added to a block list, review.decided delivered to a receiver on loopback with a
 * valid signature — and the refusals: another org's id, a list of the wrong kind or org, the other decision; over a
 * store of your own (no queue, no outcomes) the routes answer 503 UPSTREAM_UNAVAILABLE in the envelope.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { once } from 'node:events'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { DEFAULT_POLICY } from '../src/scoring/index.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createPostgresStore } from '../src/server/store/postgres/store.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { fakeClock } from './clock.js'

const PG_URL = process.env.RISKCHECK_TEST_DATABASE_URL
const TOR = '192.0.2.8' // test mode: a Tor exit, action review
const REVIEW_EMAIL = 'disposable@example.com' // test mode: email_disposable, action review

interface Harness {
  app: RiskcheckServer
  clock: ReturnType<typeof fakeClock>
  key: string
  keyId: string
  other: string
  /** A key of the org with the lookup scope only. */
  lookupOnly: string
  /** A live key of the other org (its other review queue). */
  otherLive: string
  done(): Promise<void>
}

async function harness(db: string | Store, cleanup: () => Promise<void>): Promise<Harness> {
  const clock = fakeClock('2026-11-22T00:00:00Z')
  let rateMs = 0
  const app = createServer({
    db,
    purgeIntervalMs: 0,
    webhookIntervalMs: 0,
    unsafeAllowLoopbackWebhooks: true,
    rateLimitNow: () => (rateMs += 1000),
    // a premium-rate number is reviewed, so a single phone lookup's answer can be queued
    riskcheck: { offline: true, now: clock.now, scoring: { rules: [...DEFAULT_POLICY.rules, { name: 'premium_reviewed', when: { any: ['phone_premium_rate'] }, action: 'review' }] } },
  })
  await app.ready()
  const now = clock.now().getTime()
  const org = await app.store.createOrg({ name: 'Acme', planId: 'starter' }, now)
  const other = await app.store.createOrg({ name: 'Other', planId: 'starter' }, now)
  // test keys: their answers are deterministic (the test-mode inputs) and they have a review queue of their own
  const scopes = ['lookup', 'lists', 'webhooks'] as const
  const issued = await issueApiKey(app.store, { orgId: org.id, mode: 'test', name: 'reviewer', scopes: [...scopes] }, now)
  const otherKey = (await issueApiKey(app.store, { orgId: other.id, mode: 'test', name: 'other', scopes: [...scopes] }, now)).secret
  const lookupOnly = (await issueApiKey(app.store, { orgId: org.id, mode: 'test', name: 'lookup only', scopes: ['lookup'] }, now)).secret
  const otherLive = (await issueApiKey(app.store, { orgId: other.id, mode: 'live', name: 'other live', scopes: ['lookup'] }, now)).secret
  return {
    lookupOnly,
    otherLive,
    app,
    clock,
    key: issued.secret,
    keyId: issued.key.id,
    other: otherKey,
    async done() {
      await app.close()
      await cleanup()
    },
  }
}

const ENGINES: Array<{ name: string; skip: boolean; open(): Promise<Harness> }> = [
  {
    name: 'SQLite file',
    skip: false,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'riskcheck-reviews-'))
      return harness(join(dir, 'reviews.sqlite'), async () => rmSync(dir, { recursive: true, force: true }))
    },
  },
  {
    name: 'PostgreSQL',
    skip: !PG_URL,
    async open() {
      const schema = `rc_reviews_${randomBytes(5).toString('hex')}`
      const store = await createPostgresStore({ connectionString: PG_URL!, schema })
      return harness(store, async () => {
        await store.close()
        const admin = new pg.Pool({ connectionString: PG_URL, max: 1 })
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        await admin.end()
      })
    },
  },
]

async function call(h: Harness, method: 'GET' | 'POST', url: string, key: string, body?: unknown) {
  const r = await h.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  })
  return { status: r.statusCode, body: JSON.parse(r.body) }
}

/** A receiver on loopback recording each request's raw body and headers. */
async function startReceiver() {
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      res.writeHead(200).end('ok')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as AddressInfo).port
  return { received, url: `http://127.0.0.1:${port}/hook`, close: () => new Promise<void>((r) => server.close(() => r())) }
}

for (const engine of ENGINES) {
  describe.skipIf(engine.skip)(`the review queue on ${engine.name}`, () => {
    let h: Harness
    let rx: Awaited<ReturnType<typeof startReceiver>>
    beforeAll(async () => {
      h = await engine.open()
      rx = await startReceiver()
    })
    afterAll(async () => {
      await h?.done()
      await rx?.close()
    })

    it('review → queued → blocked over HTTP → outcome, block list, a later answer carries reported_fraud_before, review.decided signed', async () => {
      const hook = await call(h, 'POST', '/v1/webhook-endpoints', h.key, { url: rx.url, events: ['review.decided'] })
      expect(hook.status).toBe(201)
      const secret = hook.body.data.secret as string
      const list = await call(h, 'POST', '/v1/lists', h.key, { name: 'reviewed fraud', kind: 'block', item_type: 'ip' })
      expect(list.status).toBe(201)

      const approved = await call(h, 'POST', '/v1/ip', h.key, { ip: '192.0.2.1' })
      expect(approved.body.data.recommendation.action).not.toBe('review')
      const answer = await call(h, 'POST', '/v1/ip', h.key, { ip: TOR })
      expect(answer.body.data.recommendation.action).toBe('review')
      expect(answer.body.data.risk.factors).not.toContain('reported_fraud_before')

      const queue = await call(h, 'GET', '/v1/reviews', h.key)
      expect(queue.status).toBe(200)
      expect(queue.body.data).toHaveLength(1) // the approved answer is not queued
      const entry = queue.body.data[0]
      expect(entry).toMatchObject({ request_id: answer.body.data.request.id, type: 'ip', input: TOR, score: answer.body.data.risk.score, action: 'review', status: 'pending', decision: null })
      expect(entry.factors.map((f: { code: string }) => f.code)).toEqual(answer.body.data.risk.factors)
      expect(entry.factors.every((f: { weight: number }) => typeof f.weight === 'number')).toBe(true)
      expect(entry.factors.reduce((n: number, f: { weight: number }) => n + f.weight, 0)).toBeGreaterThanOrEqual(entry.score)

      // another org sees neither the entry nor can decide it
      expect((await call(h, 'GET', '/v1/reviews', h.other)).body.data).toEqual([])
      const foreign = await call(h, 'POST', `/v1/reviews/${entry.id}/decision`, h.other, { decision: 'block' })
      expect(foreign.status).toBe(404)
      expect(foreign.body.error.code).toBe('NOT_FOUND')

      // a list of the wrong kind, or of another org: 400, and nothing decided
      const allow = await call(h, 'POST', '/v1/lists', h.key, { name: 'good', kind: 'allow', item_type: 'ip' })
      const wrongKind = await call(h, 'POST', `/v1/reviews/${entry.id}/decision`, h.key, { decision: 'block', add_to_list: allow.body.data.id })
      expect(wrongKind.status).toBe(400)
      const otherList = await call(h, 'POST', '/v1/lists', h.other, { name: 'theirs', kind: 'block', item_type: 'ip' })
      expect((await call(h, 'POST', `/v1/reviews/${entry.id}/decision`, h.key, { decision: 'block', add_to_list: otherList.body.data.id })).status).toBe(400)
      expect((await call(h, 'GET', '/v1/reviews?status=pending', h.key)).body.data).toHaveLength(1)
      // adding to a list takes the lists scope: a lookup-only key may decide, not list (403, nothing decided)
      const unscoped = await call(h, 'POST', `/v1/reviews/${entry.id}/decision`, h.lookupOnly, { decision: 'block', add_to_list: list.body.data.id })
      expect(unscoped.status).toBe(403)
      expect(unscoped.body.error.code).toBe('FORBIDDEN_SCOPE')
      expect((await call(h, 'GET', '/v1/reviews?status=pending', h.key)).body.data).toHaveLength(1)

      const decided = await call(h, 'POST', `/v1/reviews/${entry.id}/decision`, h.key, { decision: 'block', add_to_list: list.body.data.id, note: 'chargeback pattern' })
      expect(decided.status).toBe(200)
      expect(decided.body.data.already_decided).toBe(false)
      const review = decided.body.data.review
      expect(review).toMatchObject({ id: entry.id, status: 'decided', decision: 'block', decided_by: `key:${h.keyId}`, note: 'chargeback pattern', list_id: list.body.data.id })
      expect(review.outcome_id).toMatch(/^out_[0-9a-f]{24}$/)

      const outcomes = await call(h, 'GET', `/v1/outcomes?request_id=${entry.request_id}`, h.key)
      expect(outcomes.body.data).toEqual([expect.objectContaining({ id: review.outcome_id, outcome: 'fraud', note: 'chargeback pattern' })])
      const items = await call(h, 'GET', `/v1/lists/${list.body.data.id}/items`, h.key)
      expect(items.body.data.map((i: { value: string }) => i.value)).toEqual([TOR])

      const later = await call(h, 'POST', '/v1/ip', h.key, { ip: TOR, bypass_cache: true })
      expect(later.body.data.risk.factors).toContain('reported_fraud_before')

      // idempotent: the same decision again is the same review; the other decision is a conflict
      const again = await call(h, 'POST', `/v1/reviews/${entry.id}/decision`, h.key, { decision: 'block' })
      expect(again.status).toBe(200)
      expect(again.body.data).toEqual({ review, already_decided: true })
      const flip = await call(h, 'POST', `/v1/reviews/${entry.id}/decision`, h.key, { decision: 'approve' })
      expect(flip.status).toBe(409)
      expect(flip.body.error.code).toBe('CONFLICT')

      await h.app.webhooks!.runOnce()
      const events = rx.received.map((r) => ({ r, event: JSON.parse(r.body) })).filter((e) => e.event.type === 'review.decided')
      expect(events).toHaveLength(1) // one event, however often the decision was sent
      const { r, event } = events[0]!
      expect(event.test_mode).toBe(true) // a test key decided it
      expect(verifyWebhook(r.body, r.headers['svc-signature'] as string, secret, { now: () => h.clock.now().getTime() }).ok).toBe(true)
      expect(event.data).toEqual({
        review_id: entry.id,
        request_id: entry.request_id,
        type: 'ip',
        mode: 'test',
        decision: 'block',
        decided_by: `key:${h.keyId}`,
        outcome_id: review.outcome_id,
        list_id: list.body.data.id,
      })
    })

    it('a phone number sent in national form with its country is listed and labelled in the E.164 form its answer read', async () => {
      const list = await call(h, 'POST', '/v1/lists', h.key, { name: 'premium lines', kind: 'block', item_type: 'phone' })
      const answer = await call(h, 'POST', '/v1/phone', h.key, { phone: '(900) 234-5678', country: 'US' })
      expect(answer.body.data.details.e164).toBe('+19002345678')
      expect(answer.body.data.recommendation.action).toBe('review')
      const listed = await call(h, 'GET', '/v1/reviews?type=phone', h.key)
      expect(listed.status, JSON.stringify(listed.body)).toBe(200)
      const entry = listed.body.data.find((e: { request_id: string }) => e.request_id === answer.body.data.request.id)
      expect(entry.input).toBe('(900) 234-5678') // the entry shows the input as sent
      // before the entry kept the answer's E.164 form, the list normaliser got '(900) 234-5678' alone: 400
      const decided = await call(h, 'POST', `/v1/reviews/${entry.id}/decision`, h.key, { decision: 'block', add_to_list: list.body.data.id })
      expect(decided.status).toBe(200)
      const items = await call(h, 'GET', `/v1/lists/${list.body.data.id}/items`, h.key)
      expect(items.body.data.map((i: { value: string }) => i.value)).toEqual(['+19002345678'])
      const later = await call(h, 'POST', '/v1/phone', h.key, { phone: '+1 900 234 5678', bypass_cache: true })
      expect(later.body.data.details.lists).toEqual([expect.objectContaining({ list_id: list.body.data.id, value: '+19002345678' })])
      expect(later.body.data.risk.factors).toEqual(expect.arrayContaining(['list_blocked', 'reported_fraud_before']))

      // the combined check's phone part alike (its input keeps the national form and the country)
      const check = await call(h, 'POST', '/v1/check', h.key, { ip: '198.51.100.1', phone: '(900) 234-5679', country: 'US' })
      expect(check.body.data.recommendation.action).toBe('review')
      const checkEntry = (await call(h, 'GET', '/v1/reviews?type=check', h.key)).body.data.find((e: { request_id: string }) => e.request_id === check.body.data.request.id)
      expect(checkEntry.input).toMatchObject({ phone: '(900) 234-5679', country: 'US' })
      expect((await call(h, 'POST', `/v1/reviews/${checkEntry.id}/decision`, h.key, { decision: 'block', add_to_list: list.body.data.id })).status).toBe(200)
      const after = await call(h, 'GET', `/v1/lists/${list.body.data.id}/items?value=${encodeURIComponent('+19002345679')}`, h.key)
      expect(after.body.data.map((i: { value: string }) => i.value)).toEqual(['+19002345679'])
    })

    it('approve records legitimate; filters and cursor pages; a decision that is neither is refused', async () => {
      const a = await call(h, 'POST', '/v1/email', h.key, { email: REVIEW_EMAIL })
      expect(a.body.data.recommendation.action).toBe('review')
      const check = await call(h, 'POST', '/v1/check', h.key, { email: REVIEW_EMAIL, ip: '192.0.2.1' })
      expect(check.body.data.recommendation.action).toBe('review')

      const pending = await call(h, 'GET', '/v1/reviews?status=pending', h.key)
      expect(pending.body.data.map((e: { request_id: string }) => e.request_id)).toEqual([check.body.data.request.id, a.body.data.request.id]) // newest first
      expect(pending.body.data[0].input).toMatchObject({ email: REVIEW_EMAIL, ip: '192.0.2.1' })
      const emails = await call(h, 'GET', '/v1/reviews?type=email', h.key)
      expect(emails.body.data.map((e: { request_id: string }) => e.request_id)).toEqual([a.body.data.request.id])
      const byFactor = await call(h, 'GET', '/v1/reviews?factor=ip_tor', h.key)
      expect(byFactor.body.data.every((e: { factors: Array<{ code: string }> }) => e.factors.some((f) => f.code === 'ip_tor'))).toBe(true)
      expect(byFactor.body.data.length).toBeGreaterThan(0)
      const high = await call(h, 'GET', '/v1/reviews?min_score=100', h.key)
      expect(high.body.data.every((e: { score: number }) => e.score >= 100)).toBe(true)
      const low = await call(h, 'GET', `/v1/reviews?max_score=${a.body.data.risk.score}&type=email`, h.key)
      expect(low.body.data).toHaveLength(1)

      const page1 = await call(h, 'GET', '/v1/reviews?limit=1', h.key)
      expect(page1.body.data).toHaveLength(1)
      const page2 = await call(h, 'GET', `/v1/reviews?limit=1&cursor=${page1.body.next_cursor}`, h.key)
      expect(page2.body.data[0].id).not.toBe(page1.body.data[0].id)
      expect((await call(h, 'GET', '/v1/reviews?cursor=abc', h.key)).status).toBe(400)
      for (const forged of ['abc', '007', '9999999999999999']) {
        expect((await call(h, 'GET', `/v1/reviews?cursor=${forged}`, h.key)).body.error, forged).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
      }
      // a number out of range is said in words (before: "`limit` must match pattern \"^(100|[1-9][0-9]?)$\"")
      expect((await call(h, 'GET', '/v1/reviews?limit=0', h.key)).body.error.message).toBe('`limit` must be a whole number from 1 to 100.')
      expect((await call(h, 'GET', '/v1/reviews?min_score=101', h.key)).body.error.message).toBe('`min_score` must be a whole number from 0 to 100.')
      expect((await call(h, 'GET', '/v1/reviews?limit=01', h.key)).body.error.message).toBe('`limit` must be a whole number from 1 to 100.')
      expect((await call(h, 'GET', '/v1/reviews?max_score=007', h.key)).body.error.message).toBe('`max_score` must be a whole number from 0 to 100.')
      // a range with no score in it is the query's mistake (it was answered an empty page)
      const empty = await call(h, 'GET', '/v1/reviews?min_score=80&max_score=20', h.key)
      expect(empty.status).toBe(400)
      expect(empty.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`min_score` (80) must not be greater than `max_score` (20).' })
      expect((await call(h, 'GET', `/v1/reviews?min_score=${a.body.data.risk.score}&max_score=${a.body.data.risk.score}&type=email`, h.key)).body.data).toHaveLength(1)

      const id = pending.body.data[1].id
      const ok = await call(h, 'POST', `/v1/reviews/${id}/decision`, h.key, { decision: 'approve' })
      expect(ok.body.data.review).toMatchObject({ decision: 'approve', status: 'decided' })
      const outcome = await call(h, 'GET', `/v1/outcomes?request_id=${a.body.data.request.id}`, h.key)
      expect(outcome.body.data[0].outcome).toBe('legitimate')
      expect((await call(h, 'GET', '/v1/reviews?status=decided&type=email', h.key)).body.data).toHaveLength(1)
      expect((await call(h, 'POST', `/v1/reviews/${id}/decision`, h.key, { decision: 'maybe' })).status).toBe(400)
    })

    it('a cursor holds only with the filters, org and key mode of its page; followed, it walks the filtered queue once', async () => {
      // the other org's queue (this org's has labels and lists of the cases above): three email entries
      for (let i = 0; i < 3; i++) {
        expect((await call(h, 'POST', '/v1/email', h.other, { email: REVIEW_EMAIL, bypass_cache: true })).body.data.recommendation.action).toBe('review')
      }
      const emails = (await call(h, 'GET', '/v1/reviews?type=email&status=pending&limit=100', h.other)).body.data.map((e: { id: string }) => e.id)
      expect(emails).toHaveLength(3)
      // followed with its filters (in another order, with another page size), the cursor walks the same rows once
      const first = await call(h, 'GET', '/v1/reviews?type=email&status=pending&limit=1', h.other)
      const cursor = first.body.next_cursor as string
      expect(cursor).toEqual(expect.any(String))
      const walked = [first.body.data[0].id]
      for (let next: string | null = cursor; next !== null; ) {
        const page: { body: any } = await call(h, 'GET', `/v1/reviews?limit=2&status=pending&cursor=${next}&type=email`, h.other)
        walked.push(...page.body.data.map((e: { id: string }) => e.id))
        next = page.body.next_cursor
      }
      expect(walked).toEqual(emails)
      // another filter value, a filter added or dropped: refused, where a page of the other filters from the old
      // position was answered (rows of the new filters above the position skipped)
      const changed = '`cursor` was made for other filters: send the same `type`, `status`, `min_score`, `max_score` and `factor` as the page it came from, or start again without `cursor`.'
      for (const filters of ['type=ip&status=pending', 'type=email&status=decided', 'type=email', 'type=email&status=pending&min_score=1', 'type=email&status=pending&factor=ip_tor']) {
        const r = await call(h, 'GET', `/v1/reviews?${filters}&cursor=${cursor}`, h.other)
        expect([r.status, r.body.error], filters).toEqual([400, expect.objectContaining({ code: 'INVALID_REQUEST', message: changed })])
      }
      // the same filters from another org, from the org's live queue, or on the outcomes' pages: no cursor of theirs
      const same = `type=email&status=pending&cursor=${cursor}`
      for (const [key, url] of [[h.key, `/v1/reviews?${same}`], [h.otherLive, `/v1/reviews?${same}`], [h.other, `/v1/outcomes?cursor=${cursor}`]] as const) {
        const r = await call(h, 'GET', url, key)
        expect([r.status, r.body.error], url).toEqual([400, expect.objectContaining({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })])
      }
    })
  })
}

describe('a server without review or outcome storage', () => {
  it('answers the review and outcome routes 503 UPSTREAM_UNAVAILABLE in the envelope, with Retry-After; lookups still answer, none queued', async () => {
    const { createMemoryStore } = await import('../src/server/store/sqlite/memory.js')
    const inner = createMemoryStore()
    // a store of the caller's own: the same methods, no engine the server knows (so no queue, no outcomes, no lists)
    const store = new Proxy(inner, { get: (t, p) => (p === 'engine' ? undefined : Reflect.get(t, p)) })
    const app = createServer({ db: store, purgeIntervalMs: 0, riskcheck: { offline: true } })
    await app.ready()
    try {
      const now = Date.now()
      const org = await inner.createOrg({ name: 'Own', planId: 'starter' }, now)
      const h = { app } as Harness
      for (const mode of ['test', 'live'] as const) {
        const key = (await issueApiKey(inner, { orgId: org.id, mode, name: mode, scopes: ['lookup', 'lists'] }, now)).secret
        const routes: Array<[string, string, unknown?]> = [
          ['GET', '/v1/reviews'],
          ['GET', '/v1/reviews?status=pending&type=ip'],
          ['POST', '/v1/reviews/rev_0123456789abcdef01234567/decision', { decision: 'block' }],
          ['POST', '/v1/reviews/rev_0123456789abcdef01234567/decision', { decision: 'approve', add_to_list: 'lst_x', note: 'n' }],
          ['GET', '/v1/outcomes'],
          ['POST', '/v1/outcomes', { outcomes: [{ input: '192.0.2.1', type: 'ip', outcome: 'fraud' }] }],
        ]
        for (const [method, url, body] of routes) {
          const r = await app.inject({
            method: method as 'GET',
            url,
            headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
            ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
          })
          expect(r.statusCode, `${mode} ${method} ${url}: ${r.body}`).toBe(503)
          expect(r.headers['retry-after']).toMatch(/^[1-9][0-9]*$/)
          const got = JSON.parse(r.body)
          expect(Object.keys(got)).toEqual(['success', 'error'])
          expect(got.success).toBe(false)
          expect(Object.keys(got.error).sort()).toEqual(['code', 'docs_url', 'message', 'request_id'])
          expect(got.error.code).toBe('UPSTREAM_UNAVAILABLE')
          expect(got.error.message).toMatch(/needs? the SQLite or PostgreSQL store/)
          expect(got.error.docs_url).toMatch(/#upstream_unavailable$/)
          expect(got.error.request_id).toMatch(/^req_/)
        }
        // a bad body is still the caller's mistake (400), whatever the storage
        expect((await call(h, 'POST', '/v1/reviews/rev_x/decision', key, { decision: 'maybe' })).status).toBe(400)
      }
      // the lookups answer; an answer whose action is review (a Tor exit in test mode) is not queued anywhere
      const test = (await issueApiKey(inner, { orgId: org.id, mode: 'test', name: 'again' }, now)).secret
      const tor = await call(h, 'POST', '/v1/ip', test, { ip: TOR })
      expect(tor.status).toBe(200)
      expect(tor.body.data.recommendation.action).toBe('review')
      expect((await call(h, 'GET', '/v1/reviews', test)).status).toBe(503)
    } finally {
      await app.close()
      inner.close()
    }
  })
})

for (const engine of ENGINES) {
  describe.skipIf(engine.skip)(`the review queue's retention on ${engine.name}`, () => {
    it('an entry past its retention (default 180 days) is gone before the sweep: not listed, deciding it is 404 NOT_FOUND and records nothing', async () => {
      const g = await engine.open() // a server of its own: its clock moves a year
      try {
        const retentionMs = 180 * 24 * 60 * 60 * 1000
        const ids = async (q = '') => (await call(g, 'GET', `/v1/reviews${q}`, g.key)).body.data.map((e: { id: string }) => e.id)
        const first = await call(g, 'POST', '/v1/ip', g.key, { ip: TOR })
        const [pending] = await ids()
        g.clock.advance(retentionMs / 2)
        expect((await call(g, 'POST', '/v1/email', g.key, { email: REVIEW_EMAIL })).body.data.recommendation.action).toBe('review')
        const [decided] = await ids('?type=email')
        expect((await call(g, 'POST', `/v1/reviews/${decided}/decision`, g.key, { decision: 'approve' })).status).toBe(200)
        g.clock.advance(retentionMs / 2) // the first entry's retention ends now: the sweep keeps it still
        expect(await ids()).toEqual([decided, pending])
        g.clock.advance(1)
        const late = await call(g, 'POST', `/v1/reviews/${pending}/decision`, g.key, { decision: 'block' })
        expect([late.status, late.body.error?.code]).toEqual([404, 'NOT_FOUND'])
        expect((await call(g, 'GET', `/v1/outcomes?request_id=${first.body.data.request.id}`, g.key)).body.data).toEqual([])
        expect(await ids()).toEqual([decided])
        expect(await ids('?status=pending')).toEqual([])
        // a decided entry is kept its retention after the decision: then the same decision again is NOT_FOUND too
        g.clock.advance(retentionMs / 2)
        expect(await ids()).toEqual([])
        const again = await call(g, 'POST', `/v1/reviews/${decided}/decision`, g.key, { decision: 'approve' })
        expect([again.status, again.body.error?.code]).toEqual([404, 'NOT_FOUND'])
      } finally {
        await g.done()
      }
    })
  })
}

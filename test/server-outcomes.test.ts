/**
 * Outcomes end to end on real engines — a server over an SQLite file, and over PostgreSQL (a schema of its own; set
 * RISKCHECK_TEST_DATABASE_URL): labels by request id and by input, their effect on later answers (cached ones too),
 * idempotency and history, org and key-mode separation, the 1,000-item bound, paging, and the retention sweep.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createOutcomeService } from '../src/server/outcomes.js'
import { outcomeStoreOf } from '../src/server/store/open-storage.js'
import { createPostgresStore } from '../src/server/store/postgres/store.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { fakeClock } from './clock.js'

const PG_URL = process.env.RISKCHECK_TEST_DATABASE_URL
const DAY = 24 * 60 * 60 * 1000

interface Harness {
  app: RiskcheckServer
  clock: ReturnType<typeof fakeClock>
  live: string
  test: string
  otherLive: string
  done(): Promise<void>
}

async function harness(db: string | Store, cleanup: () => Promise<void>): Promise<Harness> {
  const clock = fakeClock('2026-11-22T00:00:00Z')
  let rateMs = 0
  const app = createServer({ db, purgeIntervalMs: 0, rateLimitNow: () => (rateMs += 1000), riskcheck: { offline: true, now: clock.now } })
  await app.ready()
  const now = clock.now().getTime()
  const org = await app.store.createOrg({ name: 'Acme', planId: 'starter' }, now)
  const other = await app.store.createOrg({ name: 'Other', planId: 'starter' }, now)
  const live = (await issueApiKey(app.store, { orgId: org.id, name: 'live' }, now)).secret
  const test = (await issueApiKey(app.store, { orgId: org.id, mode: 'test', name: 'test' }, now)).secret
  const otherLive = (await issueApiKey(app.store, { orgId: other.id, name: 'other' }, now)).secret
  return {
    app,
    clock,
    live,
    test,
    otherLive,
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
      const dir = mkdtempSync(join(tmpdir(), 'riskcheck-outcomes-'))
      return harness(join(dir, 'outcomes.sqlite'), async () => rmSync(dir, { recursive: true, force: true }))
    },
  },
  {
    name: 'PostgreSQL',
    skip: !PG_URL,
    async open() {
      const schema = `rc_outcomes_${randomBytes(5).toString('hex')}`
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

const factorsOf = (r: { body: any }): string[] => r.body.data.risk.factors

for (const engine of ENGINES) {
  describe.skipIf(engine.skip)(`outcomes on ${engine.name}`, () => {
    let h: Harness
    beforeAll(async () => {
      h = await engine.open()
    })
    afterAll(async () => h?.done())

    it('bounced by request id: a later answer for the same address (another spelling) is invalid with email_bounced_before; delivered clears it', async () => {
      const first = await call(h, 'POST', '/v1/email', h.live, { email: 'bounce.me@gmail.com' })
      expect(first.status).toBe(200)
      expect(factorsOf(first)).not.toContain('email_bounced_before')
      const rec = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: first.body.data.request.id, outcome: 'bounced', note: 'hard bounce 550' }] })
      expect(rec.status).toBe(200)
      expect(rec.body.data.results).toEqual([{ index: 0, id: expect.stringMatching(/^out_[0-9a-f]{24}$/), status: 'recorded', error: null }])

      // Gmail ignores dots and +tags: the same mailbox
      const again = await call(h, 'POST', '/v1/email', h.live, { email: 'BounceMe+news@gmail.com' })
      expect(factorsOf(again)).toContain('email_bounced_before')
      expect(again.body.data.verdict.status).toBe('invalid')
      expect(again.body.data.recommendation.action).toBe('block')

      const delivered = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ input: 'bounceme@gmail.com', type: 'email', outcome: 'delivered' }] })
      expect(delivered.body.data.results[0].status).toBe('recorded')
      const after = await call(h, 'POST', '/v1/email', h.live, { email: 'bounce.me@gmail.com' })
      expect(factorsOf(after)).not.toContain('email_bounced_before')
      expect(after.body.data.verdict.status).not.toBe('invalid')
    })

    it('fraud on a combined check: the IP and phone of that request get reported_fraud_before on later lookups; other inputs do not', async () => {
      const check = await call(h, 'POST', '/v1/check', h.live, { email: 'ring@gmail.com', phone: '+14155550199', ip: '1.1.1.1' })
      expect(check.status).toBe(200)
      const rec = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: check.body.data.request.id, outcome: 'chargeback' }] })
      expect(rec.body.data.results[0].status).toBe('recorded')
      const ip = await call(h, 'POST', '/v1/ip', h.live, { ip: '1.1.1.1' })
      expect(ip.body.data.metadata.cache_hit).toBe(true) // the check's answer, cached before the label: labelled at answer time
      expect(factorsOf(ip)).toContain('reported_fraud_before')
      expect(['review', 'block']).toContain(ip.body.data.recommendation.action)
      const phone = await call(h, 'POST', '/v1/phone', h.live, { phone: '+1 (415) 555-0199' })
      expect(factorsOf(phone)).toContain('reported_fraud_before')
      const email = await call(h, 'POST', '/v1/email', h.live, { email: 'ring@gmail.com' })
      expect(factorsOf(email)).toContain('reported_fraud_before')
      const later = await call(h, 'POST', '/v1/check', h.live, { ip: '1.1.1.1', email: 'someone.else@gmail.com' })
      expect(factorsOf(later)).toContain('reported_fraud_before')
      const otherIp = await call(h, 'POST', '/v1/ip', h.live, { ip: '9.9.9.9' })
      expect(factorsOf(otherIp)).not.toContain('reported_fraud_before')
      // another org never sees this org's labels
      const theirs = await call(h, 'POST', '/v1/ip', h.otherLive, { ip: '1.1.1.1' })
      expect(factorsOf(theirs)).not.toContain('reported_fraud_before')
    })

    it('the latest label naming an input decides, whichever request it came by: a spam complaint does not revive a bounce, an approve clears a block', async () => {
      // bounced by input; delivered, then a spam complaint, by a later request: the mail arrived, no bounce comes back
      await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ input: 'pat@acme.io', type: 'email', outcome: 'bounced' }] })
      const a = await call(h, 'POST', '/v1/email', h.live, { email: 'pat@acme.io' })
      expect(factorsOf(a)).toContain('email_bounced_before')
      await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: a.body.data.request.id, outcome: 'delivered' }] })
      expect(factorsOf(await call(h, 'POST', '/v1/email', h.live, { email: 'pat@acme.io' }))).not.toContain('email_bounced_before')
      await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: a.body.data.request.id, outcome: 'spam_complaint' }] })
      expect(factorsOf(await call(h, 'POST', '/v1/email', h.live, { email: 'pat@acme.io' }))).not.toContain('email_bounced_before')
      // fraud on one request, legitimate on a later request with the same IP: cleared; fraud again: back
      const first = await call(h, 'POST', '/v1/ip', h.live, { ip: '198.51.100.77' })
      await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: first.body.data.request.id, outcome: 'fraud' }] })
      const second = await call(h, 'POST', '/v1/ip', h.live, { ip: '198.51.100.77' })
      expect(factorsOf(second)).toContain('reported_fraud_before')
      await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: second.body.data.request.id, outcome: 'legitimate' }] })
      const third = await call(h, 'POST', '/v1/ip', h.live, { ip: '198.51.100.77' })
      expect(factorsOf(third)).not.toContain('reported_fraud_before')
      await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: third.body.data.request.id, outcome: 'chargeback' }] })
      expect(factorsOf(await call(h, 'POST', '/v1/ip', h.live, { ip: '198.51.100.77' }))).toContain('reported_fraud_before')
    })

    it('the same outcome twice is one row; a different one supersedes it and both are kept', async () => {
      const a = await call(h, 'POST', '/v1/ip', h.live, { ip: '203.0.113.7' })
      const id = a.body.data.request.id
      const one = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: id, outcome: 'fraud' }, { request_id: id, outcome: 'fraud' }] })
      expect(one.body.data.results.map((r: any) => r.status)).toEqual(['recorded', 'unchanged'])
      expect(one.body.data.results[1].id).toBe(one.body.data.results[0].id)
      const again = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: id, outcome: 'fraud' }] })
      expect(again.body.data.results[0].status).toBe('unchanged')
      let list = await call(h, 'GET', `/v1/outcomes?request_id=${id}`, h.live)
      expect(list.body.data).toHaveLength(1)

      h.clock.advance(1000)
      const legit = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: id, outcome: 'legitimate' }] })
      expect(legit.body.data.results[0].status).toBe('recorded')
      list = await call(h, 'GET', `/v1/outcomes?request_id=${id}`, h.live)
      expect(list.body.data.map((o: any) => [o.outcome, o.superseded_at === null])).toEqual([
        ['legitimate', true],
        ['fraud', false],
      ])
      // legitimate supersedes fraud: the IP is no longer reported
      expect(factorsOf(await call(h, 'POST', '/v1/ip', h.live, { ip: '203.0.113.7' }))).not.toContain('reported_fraud_before')
      const onlyFraud = await call(h, 'GET', `/v1/outcomes?request_id=${id}&outcome=fraud`, h.live)
      expect(onlyFraud.body.data).toHaveLength(1)
    })

    it("another org's request id and the other key mode's are not found, item by item", async () => {
      const mine = await call(h, 'POST', '/v1/ip', h.live, { ip: '198.51.100.1' })
      const theirs = await call(h, 'POST', '/v1/ip', h.otherLive, { ip: '198.51.100.2' })
      const r = await call(h, 'POST', '/v1/outcomes', h.live, {
        outcomes: [
          { request_id: theirs.body.data.request.id, outcome: 'fraud' },
          { request_id: mine.body.data.request.id, outcome: 'fraud' },
          { request_id: 'req_000000000000000000000000', outcome: 'fraud' },
          { input: 'not an address', type: 'email', outcome: 'bounced' },
        ],
      })
      expect(r.status).toBe(200)
      expect(r.body.data.results.map((x: any) => x.status)).toEqual(['not_found', 'recorded', 'not_found', 'invalid_input'])
      expect(r.body.data.results[0].error.code).toBe('NOT_FOUND')
      expect(r.body.data.results[3].error.code).toBe('INVALID_INPUT')
      // the test key: the live request id is not its own, and live labels never reach test answers
      const t = await call(h, 'POST', '/v1/outcomes', h.test, { outcomes: [{ request_id: mine.body.data.request.id, outcome: 'fraud' }] })
      expect(t.body.data.results[0].status).toBe('not_found')
      expect(factorsOf(await call(h, 'POST', '/v1/ip', h.test, { ip: '198.51.100.1' }))).not.toContain('reported_fraud_before')
      const testList = await call(h, 'GET', '/v1/outcomes', h.test)
      expect(testList.body.data).toEqual([])
      // a test-key label applies to test answers only
      await call(h, 'POST', '/v1/outcomes', h.test, { outcomes: [{ input: '198.51.100.9', type: 'ip', outcome: 'account_takeover' }] })
      expect(factorsOf(await call(h, 'POST', '/v1/ip', h.test, { ip: '198.51.100.9' }))).toContain('reported_fraud_before')
      expect(factorsOf(await call(h, 'POST', '/v1/ip', h.live, { ip: '198.51.100.9' }))).not.toContain('reported_fraud_before')
    })

    it('bounds and shapes: 1,001 items, none, both forms or half of one are a 400; pages follow next_cursor', async () => {
      const many = Array.from({ length: 1001 }, (_, i) => ({ input: `u${i}@gmail.com`, type: 'email', outcome: 'delivered' }))
      const over = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: many })
      expect([over.status, over.body.error.code]).toEqual([400, 'INVALID_REQUEST'])
      expect((await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [] })).status).toBe(400)
      const both = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: 'req_x', input: 'a@gmail.com', type: 'email', outcome: 'fraud' }] })
      expect([both.status, both.body.error.code]).toEqual([400, 'INVALID_REQUEST'])
      const half = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ input: 'a@gmail.com', outcome: 'fraud' }] })
      expect([half.status, half.body.error.code]).toEqual([400, 'MISSING_FIELD'])
      const bad = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ input: 'a@gmail.com', type: 'email', outcome: 'stolen' }] })
      expect([bad.status, bad.body.error.code]).toEqual([400, 'INVALID_REQUEST'])
      // 1,000 items with a note of 500 characters each (1.5 MB in UTF-8): within the documented bounds, so within the body limit
      const thousand = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: many.slice(0, 1000).map((o) => ({ ...o, note: '€'.repeat(500) })) })
      expect(thousand.status).toBe(200)
      expect(thousand.body.data.results.filter((r: any) => r.status === 'recorded')).toHaveLength(1000)

      const seen = new Set<string>()
      let cursor: string | null = null
      let pages = 0
      do {
        const page: { body: any } = await call(h, 'GET', `/v1/outcomes?outcome=delivered&limit=100${cursor ? `&cursor=${cursor}` : ''}`, h.live)
        for (const o of page.body.data) seen.add(o.id)
        cursor = page.body.next_cursor
        pages++
      } while (cursor !== null)
      expect(seen.size).toBe(1002) // the 1,000 and the delivered of the first case and of the latest-label case
      expect(pages).toBe(11)
      expect((await call(h, 'GET', '/v1/outcomes?cursor=abc', h.live)).status).toBe(400)
      for (const forged of ['abc', '007', '99999999999999999', '9999999999999999']) {
        expect((await call(h, 'GET', `/v1/outcomes?cursor=${forged}`, h.live)).body.error, forged).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
      }
    })

    it('a cursor holds only with the filters, org and key mode of its page; followed, it walks the filtered outcomes once', async () => {
      const items = [1, 2, 3, 4, 5, 6].map((i) => ({ input: `203.0.113.${i}`, type: 'ip', outcome: i % 2 ? 'chargeback' : 'legitimate' }))
      expect((await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: items })).body.data.results.every((r: any) => r.status === 'recorded')).toBe(true)
      const ids = async (url: string) => (await call(h, 'GET', url, h.live)).body.data.map((o: { id: string }) => o.id) as string[]
      const chargebacks = await ids('/v1/outcomes?outcome=chargeback&limit=100')
      expect(chargebacks.length).toBeGreaterThanOrEqual(3) // and those of the cases above
      const first = await call(h, 'GET', '/v1/outcomes?outcome=chargeback&limit=1', h.live)
      const cursor = first.body.next_cursor as string
      const walked = [first.body.data[0].id]
      for (let next: string | null = cursor; next !== null; ) {
        const page: { body: any } = await call(h, 'GET', `/v1/outcomes?cursor=${next}&outcome=chargeback`, h.live)
        walked.push(...page.body.data.map((o: { id: string }) => o.id))
        next = page.body.next_cursor
      }
      expect(walked).toEqual(chargebacks)
      // another outcome, a filter dropped or added: refused, where a page of the other filter from the old position
      // was answered (the newer legitimate label skipped)
      const changed = '`cursor` was made for other filters: send the same `request_id` and `outcome` as the page it came from, or start again without `cursor`.'
      for (const filters of ['outcome=legitimate', '', 'outcome=chargeback&request_id=req_x']) {
        const r = await call(h, 'GET', `/v1/outcomes?${filters}&cursor=${cursor}`, h.live)
        expect([r.status, r.body.error], filters).toEqual([400, expect.objectContaining({ code: 'INVALID_REQUEST', message: changed })])
      }
      // the same filter from another org, from the org's test key, or on the review queue: no cursor of theirs
      const same = `outcome=chargeback&cursor=${cursor}`
      for (const [key, url] of [[h.otherLive, `/v1/outcomes?${same}`], [h.test, `/v1/outcomes?${same}`], [h.live, `/v1/reviews?cursor=${cursor}`]] as const) {
        const r = await call(h, 'GET', url, key)
        expect([r.status, r.body.error], url).toEqual([400, expect.objectContaining({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })])
      }
    })

    it('the retention sweep deletes outcomes and kept inputs older than the retention', async () => {
      const a = await call(h, 'POST', '/v1/ip', h.live, { ip: '192.0.2.44' })
      const store = outcomeStoreOf(h.app.store)!
      const later = h.clock.now().getTime() + 181 * DAY
      const sweeper = createOutcomeService({ store, nowMs: () => later, retentionDays: 180, warn: () => undefined })
      expect(await sweeper.purge(later)).toBeGreaterThan(1000)
      expect((await call(h, 'GET', '/v1/outcomes', h.live)).body.data).toEqual([])
      const r = await call(h, 'POST', '/v1/outcomes', h.live, { outcomes: [{ request_id: a.body.data.request.id, outcome: 'fraud' }] })
      expect(r.body.data.results[0].status).toBe('not_found')
    })
  })
}

describe('outcomes on the memory store (SQLite on :memory:) and on a store of your own', () => {
  it('the memory store records outcomes and labels later answers like a file', async () => {
    const { createMemoryStore } = await import('../src/server/store/sqlite/memory.js')
    const store = createMemoryStore()
    const app = createServer({ db: store, purgeIntervalMs: 0, riskcheck: { offline: true } })
    await app.ready()
    const org = await store.createOrg({ name: 'Mem', planId: 'starter' }, Date.now())
    const key = (await issueApiKey(store, { orgId: org.id, mode: 'test', name: 't' }, Date.now())).secret
    const h = { app } as Harness
    const post = await call(h, 'POST', '/v1/outcomes', key, { outcomes: [{ input: '192.0.2.1', type: 'ip', outcome: 'fraud' }] })
    expect(post.status).toBe(200)
    expect(post.body.data.results[0].status).toBe('recorded')
    const later = await call(h, 'POST', '/v1/ip', key, { ip: '192.0.2.1' })
    expect(later.body.data.risk.factors).toContain('reported_fraud_before')
    await app.close()
  })

  it('a store without an engine tag has no outcome storage: 503 UPSTREAM_UNAVAILABLE, lookups still answer', async () => {
    const { createMemoryStore } = await import('../src/server/store/sqlite/memory.js')
    const inner = createMemoryStore()
    // a store of the caller's own: the same methods, no engine the server knows
    const store = new Proxy(inner, { get: (t, p) => (p === 'engine' ? undefined : Reflect.get(t, p)) })
    const app = createServer({ db: store, purgeIntervalMs: 0, riskcheck: { offline: true } })
    await app.ready()
    const org = await inner.createOrg({ name: 'Own', planId: 'starter' }, Date.now())
    const key = (await issueApiKey(inner, { orgId: org.id, mode: 'test', name: 't' }, Date.now())).secret
    const h = { app } as Harness
    const post = await call(h, 'POST', '/v1/outcomes', key, { outcomes: [{ input: '192.0.2.1', type: 'ip', outcome: 'fraud' }] })
    expect([post.status, post.body.error.code]).toEqual([503, 'UPSTREAM_UNAVAILABLE'])
    expect((await call(h, 'GET', '/v1/outcomes', key)).status).toBe(503)
    expect((await call(h, 'POST', '/v1/ip', key, { ip: '192.0.2.1' })).status).toBe(200)
    await app.close()
    inner.close()
  })

  it('a retention of less than a day is refused when the server is created', () => {
    expect(() => createServer({ db: ':memory:', outcomeRetentionDays: 0 })).toThrow(TypeError)
  })
})

describe('outcomes across a restart', () => {
  it('a server started later on the same SQLite file applies the labels recorded before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-outcomes-restart-'))
    const file = join(dir, 'restart.sqlite')
    try {
      const first = await harness(file, async () => undefined)
      const a = await call(first, 'POST', '/v1/ip', first.live, { ip: '192.0.2.77' })
      await call(first, 'POST', '/v1/outcomes', first.live, { outcomes: [{ request_id: a.body.data.request.id, outcome: 'account_takeover' }] })
      await first.app.close()
      const second = createServer({ db: file, purgeIntervalMs: 0, riskcheck: { offline: true } })
      await second.ready()
      const again = await call({ app: second } as Harness, 'POST', '/v1/ip', first.live, { ip: '192.0.2.77' })
      expect(factorsOf(again)).toContain('reported_fraud_before')
      await second.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

/**
 * The lists API on an SQLite file: create, list, read and delete lists; add, page, look up and remove items; another
 * org's list is NOT_FOUND; test and live keys see separate lists; 100,000 values in one call are one transaction
 * (one version bump, 100,000 rows); invalid values are named; a change is effective on the next lookup, cached answers
 * included; expired items stop matching; the answer log carries the list factors. Names, reasons, phone numbers and
 * expiries follow the compiler's rules, so what is accepted matches; a stored list it refuses leaves the lookups answering.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { cursorFiltersChanged } from '../src/errors.js'
import { createServer } from '../src/server/app.js'
import { encodePageCursor, type PageScope } from '../src/server/page-cursor.js'
import { createMemoryStore } from '../src/server/store/sqlite/memory.js'
import { listsStoreOf } from '../src/server/store/open-storage.js'
import type { SqliteStore } from '../src/server/store/sqlite/store.js'
import { eachRequestOwnSecond, startTestServer, type TestServer } from './server-helpers.js'

let dir: string
let s: TestServer
let live: string
let test: string
let other: string
let lookupOnly: string

const SCOPES = ['lookup', 'lists'] as const

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-lists-'))
  s = await startTestServer({ db: join(dir, 'lists.sqlite') })
  eachRequestOwnSecond(s) // the rate limits are not what this suite tests
  const now = s.clock.now().getTime()
  live = (await issueApiKey(s.app.store, { orgId: s.org.id, name: 'lists', scopes: [...SCOPES] }, now)).secret
  test = (await issueApiKey(s.app.store, { orgId: s.org.id, name: 'lists-test', mode: 'test', scopes: [...SCOPES] }, now)).secret
  lookupOnly = s.live
  const org2 = await s.app.store.createOrg({ name: 'Other', planId: 'starter' }, now)
  other = (await issueApiKey(s.app.store, { orgId: org2.id, name: 'other', scopes: [...SCOPES] }, now)).secret
})
afterAll(async () => {
  await s?.close()
  rmSync(dir, { recursive: true, force: true })
})

const db = () => (s.app.store as SqliteStore).db
const version = (mode: 'live' | 'test') =>
  (db().prepare('SELECT version FROM list_versions WHERE org_id = ? AND mode = ?').get(s.org.id, mode) as { version: number } | undefined)?.version ?? null
const del = (url: string, key: string) => {
  s.tick(1000)
  return s.request('DELETE', url, { key })
}

async function createList(key: string, body: Record<string, unknown>): Promise<string> {
  const r = await s.post('/v1/lists', body, key)
  expect(r.status, r.raw).toBe(201)
  expect(r.body.data.id).toMatch(/^lst_[0-9a-f]{16}$/)
  return r.body.data.id as string
}

describe('lists API on SQLite', () => {
  it('creates, lists, reads and deletes lists of the org and mode; the lists scope is required', async () => {
    const id = await createList(live, { name: 'Fraud', kind: 'block', item_type: 'email_domain' })
    const all = await s.get('/v1/lists', live)
    expect(all.body.data).toEqual([expect.objectContaining({ id, name: 'Fraud', kind: 'block', item_type: 'email_domain', items: 0 })])
    expect((await s.get(`/v1/lists/${id}`, live)).body.data.id).toBe(id)
    // another org, and the test key of the same org: not found
    for (const key of [other, test]) {
      const r = await s.get(`/v1/lists/${id}`, key)
      expect(r.status).toBe(404)
      expect(r.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } })
      expect((await s.post(`/v1/lists/${id}/items`, { values: ['a.example'] }, key)).status).toBe(404)
      expect((await del(`/v1/lists/${id}`, key)).status).toBe(404)
    }
    expect((await s.get('/v1/lists', test)).body.data).toEqual([])
    const forbidden = await s.get('/v1/lists', lookupOnly)
    expect(forbidden.status).toBe(403)
    expect(forbidden.body.error.code).toBe('FORBIDDEN_SCOPE')
    const bad = await s.post('/v1/lists', { name: 'x', kind: 'deny', item_type: 'email' }, live)
    expect(bad.status).toBe(400)
    expect(bad.body.error.code).toBe('INVALID_REQUEST')
    expect((await del(`/v1/lists/${id}`, live)).body.data).toEqual({ id, deleted: true })
    expect((await s.get(`/v1/lists/${id}`, live)).status).toBe(404)
  })

  it('normalises values, names the invalid ones and adds the valid ones', async () => {
    const id = await createList(live, { name: 'People', kind: 'block', item_type: 'email' })
    const r = await s.post(`/v1/lists/${id}/items`, { values: ['Jane.Doe+x@GMail.com', 'janedoe@gmail.com', 'not an email', 'bob@acme.io'], reason: 'chargeback' }, live)
    expect(r.status, r.raw).toBe(200)
    expect(r.body.data).toEqual({ added: 2, already_present: 1, invalid: [{ value: 'not an email', message: 'not an email address' }] })
    const one = await s.get(`/v1/lists/${id}/items?value=${encodeURIComponent('JANE.doe@googlemail.com')}`, live)
    expect(one.body.data).toEqual([expect.objectContaining({ value: 'janedoe@gmail.com', reason: 'chargeback', expires_at: null })])
    expect((await s.get(`/v1/lists/${id}/items?value=nope`, live)).body.error.code).toBe('INVALID_REQUEST')
    expect((await s.get(`/v1/lists/${id}`, live)).body.data.items).toBe(2)
    // a value too long for a path segment is removed with the body route
    const long = `jane@${'a'.repeat(60)}.${'b'.repeat(60)}.io`
    expect((await s.post(`/v1/lists/${id}/items`, { values: [long] }, live)).body.data.added).toBe(1)
    const removed = await s.post(`/v1/lists/${id}/items/remove`, { values: [long.toUpperCase(), 'bob@acme.io', 'nobody@acme.io', 'nope'] }, live)
    expect(removed.body.data).toEqual({ removed: 2, not_present: 1, invalid: [{ value: 'nope', message: 'not an email address' }] })
    expect((await s.get(`/v1/lists/${id}`, live)).body.data.items).toBe(1)
    // no values at all is refused, as the docs' 1 to 100,000 says (before: 200, nothing added)
    for (const path of [`/v1/lists/${id}/items`, `/v1/lists/${id}/items/remove`]) {
      const none = await s.post(path, { values: [] }, live)
      expect(none.status, path).toBe(400)
      expect(none.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`values` must have at least 1 item.' })
    }
    // the path route takes a value as long as the docs allow, percent-encoded (before: 404 past Fastify's 100 characters)
    const longer = `jane@${'a'.repeat(60)}.${'b'.repeat(60)}.org`
    const unicode = `jane@${'ü'.repeat(40)}.de`
    expect((await s.post(`/v1/lists/${id}/items`, { values: [longer, unicode] }, live)).body.data.added).toBe(2)
    for (const value of [longer, unicode]) {
      const gone = await del(`/v1/lists/${id}/items/${encodeURIComponent(value)}`, live)
      expect(gone.status, gone.raw).toBe(200)
      expect(gone.body.data.deleted).toBe(true)
    }
    expect((await s.get(`/v1/lists/${id}`, live)).body.data.items).toBe(1)
  })

  it('a change is effective on the next lookup, test and live are separate, the answer log carries the factors', async () => {
    const id = await createList(live, { name: 'Chargebacks', kind: 'block', item_type: 'email_domain' })
    const first = await s.post('/v1/email', { email: 'x@mail.fraud-ring.io' }, live)
    expect(first.body.data.details.lists).toEqual([])
    const before = version('live')
    await s.post(`/v1/lists/${id}/items`, { values: ['fraud-ring.io'], reason: 'chargebacks, May' }, live)
    expect(version('live')).toBe((before ?? 0) + 1)
    const second = await s.post('/v1/email', { email: 'x@mail.fraud-ring.io' }, live)
    expect(second.body.data.details.lists).toEqual([
      { list_id: id, name: 'Chargebacks', kind: 'block', item_type: 'email_domain', value: 'fraud-ring.io' },
    ])
    expect(second.body.data.risk.factors).toContain('list_blocked')
    expect(second.body.data.recommendation.action).toBe('block')
    // the test key of the org does not see the live list
    const t = await s.post('/v1/email', { email: 'x@mail.fraud-ring.io' }, test)
    expect(t.body.data.details.lists).toEqual([])
    // the answer log (backtests) carries the factor
    await new Promise((r) => setTimeout(r, 20))
    const logged = db().prepare("SELECT factors FROM org_answers WHERE org_id = ? AND input LIKE '%fraud-ring%' ORDER BY id DESC LIMIT 1").get(s.org.id) as { factors: string }
    expect(logged.factors).toContain('list_blocked')
    // removed: the next (cached) answer no longer matches
    expect((await del(`/v1/lists/${id}/items/${encodeURIComponent('FRAUD-ring.io')}`, live)).body.data).toEqual({ value: 'fraud-ring.io', deleted: true })
    const third = await s.post('/v1/email', { email: 'x@mail.fraud-ring.io' }, live)
    expect(third.body.data.details.lists).toEqual([])
    expect((await del(`/v1/lists/${id}/items/fraud-ring.io`, live)).status).toBe(404)
  })

  it('a cached answer meets the lists in force', async () => {
    const id = await createList(live, { name: 'Networks', kind: 'block', item_type: 'ip' })
    expect((await s.post('/v1/ip', { ip: '8.8.8.8' }, live)).body.data.details.lists).toEqual([])
    await s.post(`/v1/lists/${id}/items`, { values: ['8.8.8.0/24'] }, live)
    const hit = await s.post('/v1/ip', { ip: '8.8.8.8' }, live)
    expect(hit.body.data.metadata.cache_hit).toBe(true)
    expect(hit.body.data.details.lists).toEqual([expect.objectContaining({ list_id: id, value: '8.8.8.0/24' })])
    expect(hit.body.data.recommendation.action).toBe('block')
    await del(`/v1/lists/${id}`, live)
    const after = await s.post('/v1/ip', { ip: '8.8.8.8' }, live)
    expect(after.body.data.metadata.cache_hit).toBe(true)
    expect(after.body.data.details.lists).toEqual([])
  })

  it('a test-key list matches test-key lookups', async () => {
    const id = await createList(test, { name: 'Office', kind: 'allow', item_type: 'ip' })
    const add = await s.post(`/v1/lists/${id}/items`, { values: ['203.0.113.9/24', '2001:db8::/32', '300.1.1.1'] }, test)
    expect(add.body.data.added).toBe(2)
    expect(add.body.data.invalid).toHaveLength(1)
    const r = await s.post('/v1/ip', { ip: '203.0.113.77' }, test)
    expect(r.body.data.details.lists).toEqual([expect.objectContaining({ list_id: id, kind: 'allow', value: '203.0.113.0/24' })])
    const l = await s.post('/v1/ip', { ip: '203.0.113.77' }, live)
    expect(l.body.data.details.lists).toEqual([])
    expect((await del(`/v1/lists/${id}/items/${encodeURIComponent('203.0.113.0/24')}`, test)).body.data.deleted).toBe(true)
  })

  it('expired items stop matching at their expiry', async () => {
    const id = await createList(live, { name: 'Temp', kind: 'block', item_type: 'email' })
    const expires = new Date(s.clock.now().getTime() + 3_600_000).toISOString()
    const r = await s.post(`/v1/lists/${id}/items`, { values: ['temp@acme.io'], expires_at: expires }, live)
    expect(r.body.data.added).toBe(1)
    expect((await s.post('/v1/email', { email: 'temp@acme.io' }, live)).body.data.details.lists).toHaveLength(1)
    s.clock.advance(3_600_000)
    expect((await s.post('/v1/email', { email: 'temp@acme.io' }, live)).body.data.details.lists).toEqual([])
    const item = await s.get(`/v1/lists/${id}/items`, live)
    expect(item.body.data[0].expires_at).toBe(expires)
    expect((await s.post(`/v1/lists/${id}/items`, { values: ['a@b.io'], expires_at: 'tomorrow' }, live)).body.error.code).toBe('INVALID_REQUEST')
  })

  it('pages items in value order with cursors', async () => {
    const id = await createList(live, { name: 'Many', kind: 'block', item_type: 'asn' })
    await s.post(`/v1/lists/${id}/items`, { values: Array.from({ length: 250 }, (_, i) => `AS${64500 + i}`) }, live)
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const r: { body: any } = await s.get(`/v1/lists/${id}/items?limit=100${cursor ? `&cursor=${cursor}` : ''}`, live)
      seen.push(...r.body.data.map((i: { value: string }) => i.value))
      cursor = r.body.next_cursor
      pages++
    } while (cursor)
    expect(pages).toBe(3)
    expect(seen).toHaveLength(250)
    expect([...seen].sort()).toEqual(seen)
    expect(new Set(seen).size).toBe(250)
    expect((await s.get(`/v1/lists/${id}/items?cursor=!!`, live)).body.error.code).toBe('INVALID_REQUEST')
  })

  it('takes `limit` as every route takes a number in its query: plain decimal, no leading zero (`limit=01` was taken here)', async () => {
    const id = await createList(live, { name: 'Limits', kind: 'block', item_type: 'asn' })
    await s.post(`/v1/lists/${id}/items`, { values: ['AS64500', 'AS64501'] }, live)
    for (const limit of ['01', '0001', '1001', '0', '+1']) {
      const r = await s.get(`/v1/lists/${id}/items?limit=${encodeURIComponent(limit)}`, live)
      expect(r.status, limit).toBe(400)
      expect(r.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`limit` must be a whole number from 1 to 1000.' })
    }
    expect((await s.get(`/v1/lists/${id}/items?limit=1`, live)).body.data).toHaveLength(1)
    expect((await s.get(`/v1/lists/${id}/items?limit=1000`, live)).body.data).toHaveLength(2)
  })

  it('takes only a cursor of the form its pages give: a value of the list, normalised, with its list’s digests', async () => {
    const id = await createList(live, { name: 'Cursors', kind: 'block', item_type: 'asn' })
    await s.post(`/v1/lists/${id}/items`, { values: ['AS64500', 'AS64501', 'AS64502'] }, live)
    const scope: PageScope = { listing: `list_items ${id}`, orgId: s.org.id, mode: 'live', filters: { value: undefined } }
    // a cursor of this list's form with text that is no normalised ASN (each was a page of odd contents), and the
    // bare base64url value cursors once were: each a 400
    const odd = ['hello world', 'as64500', '64500', 'AS64500 ', 'AS'].map((text) => encodePageCursor(text, scope))
    for (const cursor of [...odd, Buffer.from('AS64500', 'utf8').toString('base64url')]) {
      const r = await s.get(`/v1/lists/${id}/items?cursor=${cursor}`, live)
      expect(r.status, cursor).toBe(400)
      expect(r.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
    }
    const first = await s.get(`/v1/lists/${id}/items?limit=1`, live)
    expect(first.body.next_cursor).toBe(encodePageCursor('AS64500', scope))
    const next = await s.get(`/v1/lists/${id}/items?limit=1&cursor=${first.body.next_cursor}`, live)
    expect(next.body.data.map((i: { value: string }) => i.value)).toEqual(['AS64501'])
  })

  it('takes a cursor only on the list and with the `value` it came from (one of list A paged list B from A’s place)', async () => {
    const a = await createList(live, { name: 'Pages A', kind: 'block', item_type: 'asn' })
    const b = await createList(live, { name: 'Pages B', kind: 'block', item_type: 'asn' })
    const values = Array.from({ length: 6 }, (_, i) => `AS${64500 + i}`)
    for (const id of [a, b]) await s.post(`/v1/lists/${id}/items`, { values }, live)
    const page = await s.get(`/v1/lists/${a}/items?limit=2`, live)
    const cursor = page.body.next_cursor as string
    expect((await s.get(`/v1/lists/${a}/items?limit=2&cursor=${cursor}`, live)).body.data.map((i: { value: string }) => i.value)).toEqual(['AS64502', 'AS64503'])
    const foreign = await s.get(`/v1/lists/${b}/items?limit=2&cursor=${cursor}`, live)
    expect(foreign.status).toBe(400)
    expect(foreign.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
    const filtered = await s.get(`/v1/lists/${a}/items?value=AS64505&cursor=${cursor}`, live)
    expect(filtered.status).toBe(400)
    expect(filtered.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: cursorFiltersChanged(['value']).message })
  })

  it('adds 100,000 values in one call, in one transaction; more is 413', async () => {
    const id = await createList(live, { name: 'Big', kind: 'block', item_type: 'email' })
    const values = Array.from({ length: 100_000 }, (_, i) => `user${i}@bigcorp.io`)
    const before = version('live')
    const r = await s.post(`/v1/lists/${id}/items`, { values }, live)
    expect(r.status, r.raw.slice(0, 300)).toBe(200)
    expect(r.body.data).toEqual({ added: 100_000, already_present: 0, invalid: [] })
    expect(version('live')).toBe((before ?? 0) + 1)
    expect((db().prepare('SELECT COUNT(*) AS n FROM list_items WHERE list_id = ?').get(id) as { n: number }).n).toBe(100_000)
    expect((await s.post('/v1/email', { email: 'user99999@bigcorp.io' }, live)).body.data.details.lists).toHaveLength(1)
    const over = await s.post(`/v1/lists/${id}/items`, { values: [...values, 'one@more.example'] }, live)
    expect(over.status).toBe(413)
    expect(over.body.error.code).toBe('INPUT_LIMIT_EXCEEDED')
  })

  it('names, reasons, phone numbers and expiries: one rule with the compiler, so what is accepted matches', async () => {
    // a blank name is refused; 150 emoji (300 UTF-16 units) are 150 characters, as the schema counts them
    const blank = await s.post('/v1/lists', { name: '   ', kind: 'allow', item_type: 'country' }, live)
    expect(blank.status).toBe(400)
    expect(blank.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('`name`') })
    const emojiList = await createList(live, { name: '😀'.repeat(150), kind: 'block', item_type: 'email' })
    // a reason of 300 emoji is added and matches; one of 501 characters is refused whole
    expect((await s.post(`/v1/lists/${emojiList}/items`, { values: ['emoji@acme.io'], reason: '😀'.repeat(300) }, live)).body.data.added).toBe(1)
    const long = await s.post(`/v1/lists/${emojiList}/items`, { values: ['other@acme.io'], reason: 'x'.repeat(501) }, live)
    expect(long.status).toBe(400)
    expect(long.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('`reason`') })
    const matched = await s.post('/v1/email', { email: 'emoji@acme.io' }, live)
    expect(matched.status).toBe(200)
    expect(matched.body.data.details.lists).toEqual([expect.objectContaining({ list_id: emojiList, value: 'emoji@acme.io' })])
    // a trunk 0 after the calling code is stored as the lookup's E.164 form (+44 020 … is +44 20 …)
    const phones = await createList(live, { name: 'Phones', kind: 'block', item_type: 'phone' })
    expect((await s.post(`/v1/lists/${phones}/items`, { values: ['+44 020 7946 0958', '+39 06 1234 5678'] }, live)).body.data.added).toBe(2)
    for (const [phone, e164] of [['+44 020 7946 0958', '+442079460958'], ['+39 06 1234 5678', '+390612345678']] as const) {
      const r = await s.post('/v1/phone', { phone }, live)
      expect(r.body.data.details.e164).toBe(e164)
      expect(r.body.data.details.lists).toEqual([expect.objectContaining({ list_id: phones, value: e164 })])
    }
    // an expiry without an offset would be read in the server's time zone: refused
    const local = await s.post(`/v1/lists/${phones}/items`, { values: ['+1 201 555 0123'], expires_at: '2030-12-31T00:00:00' }, live)
    expect(local.status).toBe(400)
    expect(local.body.error.message).toContain('`expires_at`')
    const offset = await s.post(`/v1/lists/${phones}/items`, { values: ['+1 201 555 0123'], expires_at: '2030-12-31T00:00:00+05:00' }, live)
    expect(offset.status).toBe(200)
    const item = await s.get(`/v1/lists/${phones}/items?value=${encodeURIComponent('+12015550123')}`, live)
    expect(item.body.data[0].expires_at).toBe('2030-12-30T19:00:00.000Z')
  })

  it('a stored list the compiler refuses as a whole is left out; the lookups of the org still answer', async () => {
    // written before the rule reached the API: a blank name, straight into the store
    const lists = listsStoreOf(s.app.store)!
    const bad = await lists.createList({ orgId: s.org.id, mode: 'live' }, { name: '   ', kind: 'block', itemType: 'ip' }, s.clock.now().getTime())
    await lists.addItems({ orgId: s.org.id, mode: 'live' }, bad.id, [{ value: '203.0.113.0/24', reason: null, expiresAt: null }], s.clock.now().getTime())
    const good = await createList(live, { name: 'Good', kind: 'block', item_type: 'ip' })
    expect((await s.post(`/v1/lists/${good}/items`, { values: ['198.51.100.7'] }, live)).body.data.added).toBe(1)
    for (const [ip, lists] of [['203.0.113.9', []], ['198.51.100.7', [expect.objectContaining({ list_id: good })]]] as const) {
      const r = await s.post('/v1/ip', { ip }, live)
      expect(r.status, r.raw.slice(0, 200)).toBe(200)
      expect(r.body.data.details.lists).toEqual(lists)
    }
    await lists.deleteList({ orgId: s.org.id, mode: 'live' }, bad.id)
  })

  it('the memory store (SQLite on :memory:) keeps lists like a file', async () => {
    const store = createMemoryStore()
    const app = createServer({ db: store, dashboard: false, purgeIntervalMs: 0, riskcheck: { offline: true } })
    await app.ready()
    try {
      const org = await store.createOrg({ name: 'M', planId: 'starter' }, Date.now())
      const k = (await issueApiKey(store, { orgId: org.id, name: 'k', scopes: ['lookup', 'lists'] }, Date.now())).secret
      const headers = { authorization: `Bearer ${k}`, 'content-type': 'application/json' }
      const r = await app.inject({ method: 'POST', url: '/v1/lists', headers, payload: JSON.stringify({ name: 'x', kind: 'block', item_type: 'ip' }) })
      expect(r.statusCode).toBe(201)
      const id = JSON.parse(r.body).data.id as string
      const added = await app.inject({ method: 'POST', url: `/v1/lists/${id}/items`, headers, payload: JSON.stringify({ values: ['8.8.8.0/24'] }) })
      expect(JSON.parse(added.body).data.added).toBe(1)
      const l = await app.inject({ method: 'POST', url: '/v1/ip', headers, payload: JSON.stringify({ ip: '8.8.8.8' }) })
      expect(JSON.parse(l.body).data.details.lists).toEqual([expect.objectContaining({ list_id: id, value: '8.8.8.0/24' })])
    } finally {
      await app.close()
    }
  })
})

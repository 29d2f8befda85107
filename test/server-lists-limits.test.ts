/**
 * What an org's lists may hold, and what an instance keeps compiled: at most 1,000,000 items per list and per org in
 * each mode (the API, the dashboard through it, `riskcheck admin list add` and review decisions refuse more, naming the
 * limit); the compiled lists an instance keeps are bounded by their items, the least recently used owner dropped first;
 * large lists compile a few thousand items a turn, in the service and in the library's reloads, so other requests and
 * lookups are answered meanwhile (counted in turns and requests, not timed).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { runAdmin } from '../src/cli/admin-command.js'
import { createRiskcheck } from '../src/riskcheck.js'
import { createServer } from '../src/server/app.js'
import { createOrgLists, listRoom, MAX_ITEMS_PER_OWNER } from '../src/server/org-lists.js'
import type { ListOwner, ListRecord, ListRoom } from '../src/server/store/contracts/lists.js'
import { listsStoreOf } from '../src/server/store/open-storage.js'
import { createMemoryStore } from '../src/server/store/sqlite/memory.js'
import { memoryIO } from './helpers.js'
import { eachRequestOwnSecond, startTestServer, type TestServer } from './server-helpers.js'

const M = MAX_ITEMS_PER_OWNER.toLocaleString('en-US')
const rec = (id: string, items: number): ListRecord => ({ id, name: id, kind: 'block', itemType: 'email', createdAt: 0, items })

describe('listRoom', () => {
  const limits = { perList: 10, perOwner: 15 }
  it('counts the list and every other list of the owner; exactly at a limit fits', () => {
    const a = rec('a', 6)
    const b = rec('b', 4)
    expect(listRoom([a, b], a, 4, limits)).toBeNull() // a: 10 of 10, owner 14 of 15
    expect(listRoom([a, b], a, 5, limits)).toBe('A list holds at most 10 items; this one holds 6.')
    expect(listRoom([a, b], b, 5, limits)).toBeNull() // owner 15 of 15
    expect(listRoom([a, b], b, 6, limits)).toBe('The lists of an org hold at most 15 items together in each mode; they hold 10.')
  })
  it('uses the list as given when the owner’s lists were read before it (or without it)', () => {
    expect(listRoom([rec('a', 2)], rec('a', 9), 1, limits)).toBeNull()
    expect(listRoom([rec('a', 2)], rec('a', 9), 2, limits)).toMatch(/^A list holds at most 10/)
    expect(listRoom([rec('b', 12)], rec('a', 2), 2, limits)).toMatch(/^The lists of an org hold at most 15/) // 14 + 2
  })
})

describe('the limits in the adding transaction (SQLite)', () => {
  it('adds that together pass a limit: the first fits, the next is refused whole with INPUT_LIMIT_EXCEEDED', async () => {
    const store = createMemoryStore()
    const lists = listsStoreOf(store)!
    const owner: ListOwner = { orgId: (await store.createOrg({ name: 'o', planId: 'starter' }, 1)).id, mode: 'live' }
    const x = await lists.createList(owner, { name: 'X', kind: 'block', itemType: 'email' }, 1)
    const y = await lists.createList(owner, { name: 'Y', kind: 'block', itemType: 'email' }, 1)
    const values = (p: string, n: number) => Array.from({ length: n }, (_, i) => ({ value: `${p}${i}@room.io`, reason: null, expiresAt: null }))
    await lists.addItems(owner, x.id, values('a', 900), 1)
    const room: ListRoom = (all, list, n) => listRoom(all, list, n, { perList: 1000, perOwner: 1000 })
    const settled = await Promise.allSettled([lists.addItems(owner, x.id, values('x', 60), 1, room), lists.addItems(owner, y.id, values('y', 60), 1, room)])
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'rejected'])
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'INPUT_LIMIT_EXCEEDED', message: 'The lists of an org hold at most 1,000 items together in each mode; they hold 960.' })
    const held = Object.fromEntries((await lists.listLists(owner)).map((l) => [l.id, l.items]))
    expect(held).toEqual({ [x.id]: 960, [y.id]: 0 })
    expect(await lists.addItems(owner, 'lst_nope', values('z', 1), 1, room)).toBeNull()
    await store.close()
  })
})

describe('the compiled lists an instance keeps', () => {
  it('are bounded by items: the least recently used owner goes first, and is compiled again when asked', async () => {
    const store = createMemoryStore()
    const lists = listsStoreOf(store)!
    const owners: ListOwner[] = []
    for (const name of ['a', 'b', 'c']) {
      const o: ListOwner = { orgId: (await store.createOrg({ name, planId: 'starter' }, 1)).id, mode: 'live' }
      owners.push(o)
      const l = await lists.createList(o, { name: 'x', kind: 'block', itemType: 'email' }, 1)
      await lists.addItems(o, l.id, Array.from({ length: 6 }, (_, i) => ({ value: `u${i}@${name}.example`, reason: null, expiresAt: null })), 1)
    }
    const warnings: string[] = []
    const org = createOrgLists(store, () => 2, (m) => warnings.push(m), 12) // room for two owners of 6 items
    const [a, b, c] = owners as [ListOwner, ListOwner, ListOwner]
    const resolve = async (o: ListOwner) => expect((await org.resolve(o, undefined))!.email.size).toBe(6)
    await resolve(a)
    await resolve(b)
    expect(org.loads).toBe(2)
    await resolve(a) // a used after b: b is now the least recently used
    expect(org.loads).toBe(2)
    await resolve(c) // 18 items: b goes
    expect(org.loads).toBe(3)
    // said once; a second drop within the minute is not said again
    expect(warnings).toEqual([
      "lists: an org's compiled lists (6 items) were dropped to keep this instance within 12 compiled items; its next request compiles them again. If this repeats, raise --lists-compiled-items (about 100 bytes an item)",
    ])
    await resolve(a)
    await resolve(c)
    expect(org.loads).toBe(3)
    await resolve(b) // compiled again; a (used before c) goes
    expect(org.loads).toBe(4)
    await resolve(c)
    expect(org.loads).toBe(4)
    await resolve(a)
    expect(org.loads).toBe(5)
    expect(warnings).toHaveLength(1)
    await store.close()
  })

  it('an owner larger than the bound alone is still kept (its lookups need it), and alone', async () => {
    const store = createMemoryStore()
    const lists = listsStoreOf(store)!
    const big: ListOwner = { orgId: (await store.createOrg({ name: 'big', planId: 'starter' }, 1)).id, mode: 'live' }
    const small: ListOwner = { orgId: (await store.createOrg({ name: 'small', planId: 'starter' }, 1)).id, mode: 'live' }
    for (const [o, n, name] of [[big, 20, 'big'], [small, 2, 'small']] as const) {
      const l = await lists.createList(o, { name: 'x', kind: 'block', itemType: 'email' }, 1)
      await lists.addItems(o, l.id, Array.from({ length: n }, (_, i) => ({ value: `u${i}@${name}.example`, reason: null, expiresAt: null })), 1)
    }
    const org = createOrgLists(store, () => 2, () => {}, 12)
    await org.resolve(small, undefined)
    expect((await org.resolve(big, undefined))!.email.size).toBe(20)
    await org.resolve(big, undefined)
    expect(org.loads).toBe(2)
    await org.resolve(small, undefined)
    expect(org.loads).toBe(3)
    await store.close()
  })

  it('the bound is the server’s `listsCompiledItems`: past it, the dropped org is said in the log; a bad bound is refused', async () => {
    const lines: string[] = []
    const app = createServer({ db: ':memory:', purgeIntervalMs: 0, listsCompiledItems: 12, logger: { level: 'warn', stream: { write: (l: string) => void lines.push(l) } }, riskcheck: { offline: true } })
    try {
      await app.ready()
      const lists = listsStoreOf(app.store)!
      const keys: string[] = []
      for (const name of ['a', 'b', 'c']) {
        const org = await app.store.createOrg({ name, planId: 'starter' }, Date.now())
        keys.push((await issueApiKey(app.store, { orgId: org.id, name: 'k' }, Date.now())).secret)
        const l = await lists.createList({ orgId: org.id, mode: 'live' }, { name: 'x', kind: 'block', itemType: 'email' }, 1)
        await lists.addItems({ orgId: org.id, mode: 'live' }, l.id, Array.from({ length: 6 }, (_, i) => ({ value: `u${i}@${name}-corp.io`, reason: null, expiresAt: null })), 1)
      }
      for (const [i, key] of keys.entries()) {
        const r = await app.inject({ method: 'POST', url: '/v1/email', headers: { authorization: `Bearer ${key}` }, payload: { email: `u1@${'abc'[i]}-corp.io`, smtp: false } })
        expect(r.json().data.details.lists).toHaveLength(1)
      }
      const dropped = lines.map((l) => JSON.parse(l) as { msg: string }).filter((l) => l.msg.startsWith('lists: an org'))
      expect(dropped.map((l) => l.msg)).toEqual([expect.stringContaining('(6 items) were dropped to keep this instance within 12 compiled items')])
    } finally {
      await app.close()
    }
    expect(() => createServer({ db: ':memory:', listsCompiledItems: 0 })).toThrow(/option `listsCompiledItems` must be/)
    expect(() => createServer({ db: ':memory:', listsCompiledItems: 2.5 })).toThrow(TypeError)
  })
})

describe('an org’s lists compile a few thousand items a turn', () => {
  it('another org’s request is answered while a large list compiles; the large org’s answer then matches it', { timeout: 120_000 }, async () => {
    const store = createMemoryStore()
    let rateMs = 0 // every request in a rate-limit second of its own
    const app = createServer({ db: store, dashboard: false, purgeIntervalMs: 0, rateLimitNow: () => (rateMs += 1000), riskcheck: { offline: true } })
    await app.ready()
    try {
      const keyOf = async (name: string) => {
        const org = await store.createOrg({ name, planId: 'starter' }, Date.now())
        return { org, key: (await issueApiKey(store, { orgId: org.id, name: 'k', scopes: ['lookup', 'lists'] }, Date.now())).secret }
      }
      const big = await keyOf('Big')
      const small = await keyOf('Small')
      const owner: ListOwner = { orgId: big.org.id, mode: 'live' }
      const lists = listsStoreOf(store)!
      const l = await lists.createList(owner, { name: 'many', kind: 'block', itemType: 'email' }, Date.now())
      await lists.addItems(owner, l.id, Array.from({ length: 300_000 }, (_, i) => ({ value: `u${i}@manycorp.io`, reason: null, expiresAt: null })), Date.now())
      const lookup = (key: string, email: string) =>
        app.inject({ method: 'POST', url: '/v1/email', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify({ email }) })
      // the other org asks again and again, one request after the other, while the large org's first request waits
      let pending = true
      const first = lookup(big.key, 'u299999@manycorp.io').finally(() => (pending = false))
      let answered = 0
      while (pending) {
        const o = await lookup(small.key, `u${answered}@manycorp.io`)
        expect(JSON.parse(o.body).data?.details.lists, o.body).toEqual([])
        if (pending) answered++
      }
      // compiled in one turn, none (or the one or two asked before the compile began) would be answered meanwhile
      expect(answered).toBeGreaterThanOrEqual(10)
      expect(JSON.parse((await first).body).data.details.lists).toEqual([expect.objectContaining({ list_id: l.id, value: 'u299999@manycorp.io' })])
    } finally {
      await app.close()
    }
  })
})

describe('an SQLite snapshot of an org’s lists is read a page a turn, at one version', () => {
  const setup = async (n: number) => {
    const store = createMemoryStore()
    const lists = listsStoreOf(store)!
    const owner: ListOwner = { orgId: (await store.createOrg({ name: 'o', planId: 'starter' }, 1)).id, mode: 'live' }
    const l = await lists.createList(owner, { name: 'x', kind: 'block', itemType: 'email' }, 1)
    const items = Array.from({ length: n }, (_, i) => ({ value: `u${String(i).padStart(6, '0')}@snap.io`, reason: null, expiresAt: i % 1000 === 0 ? 5 : null }))
    await lists.addItems(owner, l.id, items, 1)
    return { store, lists, owner, list: l }
  }
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

  it('takes turns for a large list and leaves out expired items', async () => {
    const { store, lists, owner } = await setup(40_000)
    let pending = true
    const read = lists.snapshot(owner, 10).finally(() => (pending = false))
    let turns = 0
    while (pending) {
      await turn()
      if (pending) turns++
    }
    expect(turns).toBeGreaterThanOrEqual(5) // 40,000 items, 4,096 a page (read at once: none)
    const snap = await read
    expect(snap.lists[0]!.items).toHaveLength(39_960)
    expect(snap.lists[0]!.items.some((i) => i.value === 'u000000@snap.io')).toBe(false)
    await store.close()
  })

  it('a change between two pages is never half seen: the snapshot is read again, at the new version', async () => {
    const { store, lists, owner, list } = await setup(20_000)
    const before = await lists.version(owner)
    const read = lists.snapshot(owner, 1)
    await turn()
    await lists.addItems(owner, list.id, [{ value: 'late@snap.io', reason: null, expiresAt: null }], 1)
    await lists.removeItems(owner, list.id, ['u019999@snap.io'])
    const snap = await read
    expect(snap.version).toBe(before! + 2)
    const values = new Set(snap.lists[0]!.items.map((i) => i.value))
    expect(values.has('late@snap.io')).toBe(true)
    expect(values.has('u019999@snap.io')).toBe(false)
    expect(values.size).toBe(20_000)
    await store.close()
  })

  it('lists that change on every turn are read in one transaction after a few tries', async () => {
    const { store, lists, owner, list } = await setup(20_000)
    const v0 = (await lists.version(owner))!
    let changing = true
    let added = 0
    const churn = (async () => {
      while (changing) {
        await lists.addItems(owner, list.id, [{ value: `churn${added++}@snap.io`, reason: null, expiresAt: null }], 1)
        await turn()
      }
    })()
    const snap = await lists.snapshot(owner, 1)
    changing = false
    await churn
    // the version read with the items: every item added before it is there, none after
    const churned = snap.lists[0]!.items.filter((i) => i.value.startsWith('churn')).length
    expect(added).toBeGreaterThan(3)
    expect(snap.version).toBe(v0 + churned)
    expect(snap.lists[0]!.items).toHaveLength(20_000 + churned)
    await store.close()
  })
})

describe('the library’s lists reload a few thousand items a turn', () => {
  it('lookups go on with the lists in force while a reload compiles; then the new lists are in force', { timeout: 120_000 }, async () => {
    const rc = createRiskcheck({ offline: true, cache: false, lists: [{ name: 'old', kind: 'block', itemType: 'email', items: ['a@oldcorp.io'] }] })
    let pending = true
    const reload = rc
      .reloadLists([{ name: 'many', kind: 'block', itemType: 'email', items: Array.from({ length: 300_000 }, (_, i) => `u${i}@manycorp.io`) }])
      .finally(() => (pending = false))
    let turns = 0
    while (pending) {
      expect((await rc.email('a@oldcorp.io')).details.lists).toHaveLength(1)
      await new Promise<void>((resolve) => setImmediate(resolve)) // one turn of the event loop
      if (pending) turns++
    }
    expect(turns).toBeGreaterThanOrEqual(10) // a reload compiled in one turn leaves none
    expect((await reload)[0]).toMatchObject({ name: 'many', items: 300_000 })
    expect((await rc.email('u1@manycorp.io')).details.lists).toHaveLength(1)
    expect((await rc.email('a@oldcorp.io')).details.lists).toEqual([])
    await rc.close()
  })
})

describe('an org’s lists hold at most 1,000,000 items in each mode (SQLite, over HTTP and the admin command)', () => {
  let dir: string
  let s: TestServer
  let live: string
  let test: string
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'riskcheck-list-limits-'))
    s = await startTestServer({ db: join(dir, 'lists.sqlite') })
    eachRequestOwnSecond(s) // the rate limits are not what this suite tests
    const now = s.clock.now().getTime()
    live = (await issueApiKey(s.app.store, { orgId: s.org.id, name: 'l', scopes: ['lookup', 'lists'] }, now)).secret
    test = (await issueApiKey(s.app.store, { orgId: s.org.id, name: 't', mode: 'test', scopes: ['lookup', 'lists'] }, now)).secret
  })
  afterAll(async () => {
    await s?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('refuses values past the org’s total with 413 and the limit named, adds nothing; the other mode and freed room take them', { timeout: 120_000 }, async () => {
    const create = async (key: string, name: string) => (await s.post('/v1/lists', { name, kind: 'block', item_type: 'email' }, key)).body.data.id as string
    const a = await create(live, 'A')
    const b = await create(live, 'B')
    // filled through the store (1,000,000 values over HTTP would be ten calls of 32 MiB): 600,000 + 400,000
    const lists = listsStoreOf(s.app.store)!
    const owner: ListOwner = { orgId: s.org.id, mode: 'live' }
    const fill = (id: string, from: number, n: number) =>
      lists.addItems(owner, id, Array.from({ length: n }, (_, i) => ({ value: `u${from + i}@fill.example`, reason: null, expiresAt: null })), 1)
    expect((await fill(a, 0, 600_000))!.added).toBe(600_000)
    expect((await fill(b, 600_000, 400_000))!.added).toBe(400_000)

    const over = await s.post(`/v1/lists/${b}/items`, { values: ['one@more.example'] }, live)
    expect(over.status).toBe(413)
    expect(over.body.error.code).toBe('INPUT_LIMIT_EXCEEDED')
    expect(over.body.error.message).toBe(`The lists of an org hold at most ${M} items together in each mode; they hold ${M}.`)
    expect((await s.get(`/v1/lists/${b}/items?value=one@more.example`, live)).body.data).toEqual([])
    expect((await s.get(`/v1/lists/${b}`, live)).body.data.items).toBe(400_000)

    // the operator's command applies the same limit
    const io = memoryIO()
    const code = await runAdmin(['list', 'add', b, '--org', s.org.id, 'one@more.example', '--db', join(dir, 'lists.sqlite')], io)
    expect(code).toBe(64)
    expect(io.err()).toContain(`hold at most ${M} items together`)

    // test keys' lists are another owner's
    const t = await create(test, 'T')
    expect((await s.post(`/v1/lists/${t}/items`, { values: ['one@more.example'] }, test)).status).toBe(200)

    // room freed on one list is room for the other
    expect((await s.post(`/v1/lists/${a}/items/remove`, { values: ['u0@fill.example'] }, live)).body.data.removed).toBe(1)
    const ok = await s.post(`/v1/lists/${b}/items`, { values: ['one@more.example'] }, live)
    expect(ok.status, ok.raw).toBe(200)
    expect(ok.body.data.added).toBe(1)
    expect((await s.post(`/v1/lists/${a}/items`, { values: ['two@more.example'] }, live)).status).toBe(413)
  })

  it('a review decision that would add to a full org’s list is refused (400, nothing decided) until there is room', { timeout: 120_000 }, async () => {
    // test mode (its answers are deterministic): 192.0.2.8 is a Tor exit, whose answer is queued for review
    const owner: ListOwner = { orgId: s.org.id, mode: 'test' }
    const lists = listsStoreOf(s.app.store)!
    const emails = (await s.post('/v1/lists', { name: 'E', kind: 'block', item_type: 'email' }, test)).body.data.id as string
    const ips = (await s.post('/v1/lists', { name: 'Reviewed', kind: 'block', item_type: 'ip' }, test)).body.data.id as string
    const held = (await s.get('/v1/lists', test)).body.data.reduce((n: number, l: { items: number }) => n + l.items, 0) as number
    const room = MAX_ITEMS_PER_OWNER - held
    await lists.addItems(owner, emails, Array.from({ length: room }, (_, i) => ({ value: `r${i}@fill.example`, reason: null, expiresAt: null })), 1)
    expect((await s.post('/v1/ip', { ip: '192.0.2.8' }, test)).body.data.recommendation.action).toBe('review')
    const entry = (await s.get('/v1/reviews', test)).body.data[0]
    const refused = await s.post(`/v1/reviews/${entry.id}/decision`, { decision: 'block', add_to_list: ips }, test)
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toBe(`add_to_list: The lists of an org hold at most ${M} items together in each mode; they hold ${M}.`)
    expect((await s.get('/v1/reviews?status=pending', test)).body.data).toHaveLength(1)

    expect((await s.post(`/v1/lists/${emails}/items/remove`, { values: ['r0@fill.example'] }, test)).body.data.removed).toBe(1)
    const decided = await s.post(`/v1/reviews/${entry.id}/decision`, { decision: 'block', add_to_list: ips }, test)
    expect(decided.status, decided.raw).toBe(200)
    expect((await s.get(`/v1/lists/${ips}/items`, test)).body.data.map((i: { value: string }) => i.value)).toEqual(['192.0.2.8'])
  })
})

/**
 * The lists API on PostgreSQL with two servers on one database (a schema of the suite's own, dropped after): a list
 * change made through instance A is effective on the next request on instance B, a cached answer included; another
 * org's list is NOT_FOUND and test/live lists are apart on B too; 100,000 values are one transaction of 5 inserts; a
 * snapshot is fetched through a cursor a page a statement, at one version; a page cursor of one list is taken on
 * either instance for that list and `value` alone;
 * and a lookup on B costs the same statements whether its org has lists or not, once B compiled them (the lists
 * version comes with the API key). Needs RISKCHECK_TEST_DATABASE_URL (and with RISKCHECK_TEST_REDIS_URL the two share a
 * Redis as well, as a scaled-out deployment does).
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { cursorFiltersChanged } from '../src/errors.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { listRoom } from '../src/server/org-lists.js'
import type { ListRoom } from '../src/server/store/contracts/lists.js'
import { createPostgresListsStore, ITEMS_PER_STATEMENT } from '../src/server/store/postgres/lists.js'
import { createPostgresStore, type PostgresStore } from '../src/server/store/postgres/store.js'
import { createRateLimiter } from '../src/server/rate-limit.js'
import { fakeClock } from './clock.js'
import { deleteKeys, testRedis, uniquePrefix } from './redis-env.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
if (!url) console.log('[skipped] lists on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')
const schema = `rc_lists_${randomBytes(5).toString('hex')}`
// with RISKCHECK_TEST_REDIS_URL both instances also share a Redis (queues), as a scaled-out deployment does
const redisUrl = process.env.RISKCHECK_TEST_REDIS_URL
const redisPrefix = uniquePrefix()
const clock = fakeClock('2026-11-22T00:00:00Z')

/** Statements sent by the clients of each counted pool (patched on the client prototype: every round trip). */
const counters = new WeakMap<object, { n: number }>()
const clientQuery = pg.Client.prototype.query
function countPool(pool: pg.Pool): { pool: pg.Pool; counter: { n: number } } {
  const counter = { n: 0 }
  pool.on('connect', (c) => counters.set(c, counter))
  return { pool, counter }
}
let bStatements: { n: number }

let pools: pg.Pool[] = []
let stores: PostgresStore[] = []
let a: RiskcheckServer
let b: RiskcheckServer
let keys: { live: string; test: string; other: string; plain: string; plainOrg: string }
let rate = 1_000_000

async function call(app: RiskcheckServer, method: string, path: string, key: string, body?: unknown) {
  rate += 1000 // each request in a rate-limit second of its own
  const r = await app.inject({
    method: method as 'GET',
    url: path,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  })
  return { status: r.statusCode, body: JSON.parse(r.body) }
}

describe.skipIf(!url)('lists on PostgreSQL, two instances', () => {
  beforeAll(async () => {
    pg.Client.prototype.query = function (this: object, ...args: unknown[]) {
      const c = counters.get(this)
      if (c) c.n++
      return (clientQuery as (...a: unknown[]) => unknown).apply(this, args)
    } as typeof clientQuery
    const options = `-c search_path=${schema}`
    for (let i = 0; i < 2; i++) {
      const { pool, counter } = countPool(new pg.Pool({ connectionString: url, options, max: 4 }))
      bStatements = counter
      pools.push(pool)
      stores.push(await createPostgresStore({ pool, schema }))
    }
    const server = (store: PostgresStore) =>
      createServer({
        db: store,
        dashboard: false,
        purgeIntervalMs: 0,
        webhookIntervalMs: 0,
        instanceLeaseMs: 3_600_000,
        // rate limits are not what this suite tests: counted per instance on a clock of its own
        rateLimiter: createRateLimiter({ now: () => rate }),
        ...(redisUrl ? { queue: { redisUrl, prefix: redisPrefix, workers: false } } : {}),
        riskcheck: { offline: true, now: clock.now },
      })
    a = server(stores[0]!)
    b = server(stores[1]!)
    await a.ready()
    await b.ready()
    const now = clock.now().getTime()
    const org = await stores[0]!.createOrg({ name: 'Acme', planId: 'starter' }, now)
    const org2 = await stores[0]!.createOrg({ name: 'Other', planId: 'starter' }, now)
    const org3 = await stores[0]!.createOrg({ name: 'Plain', planId: 'starter' }, now)
    const scopes = ['lookup', 'lists'] as const
    keys = {
      live: (await issueApiKey(stores[0]!, { orgId: org.id, name: 'l', scopes: [...scopes] }, now)).secret,
      test: (await issueApiKey(stores[0]!, { orgId: org.id, name: 't', mode: 'test', scopes: [...scopes] }, now)).secret,
      other: (await issueApiKey(stores[0]!, { orgId: org2.id, name: 'o', scopes: [...scopes] }, now)).secret,
      plain: (await issueApiKey(stores[0]!, { orgId: org3.id, name: 'p', scopes: [...scopes] }, now)).secret,
      plainOrg: org3.id,
    }
  })
  afterAll(async () => {
    pg.Client.prototype.query = clientQuery
    await a?.close()
    await b?.close()
    for (const s of stores) await s.close()
    const admin = new pg.Pool({ connectionString: url })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
    for (const p of pools) await p.end().catch(() => undefined)
    if (redisUrl) {
      const redis = testRedis(redisUrl)
      await deleteKeys(redis, redisPrefix)
      await redis.quit()
    }
  })

  it('a change through A is effective on the next request on B, cached answers included', async () => {
    const first = await call(b, 'POST', '/v1/ip', keys.live, { ip: '8.8.8.8' })
    expect(first.body.data.details.lists).toEqual([])
    const created = await call(a, 'POST', '/v1/lists', keys.live, { name: 'Networks', kind: 'block', item_type: 'ip' })
    expect(created.status).toBe(201)
    const id = created.body.data.id as string
    // another org and the test key see nothing of it, on either instance
    expect((await call(b, 'GET', `/v1/lists/${id}`, keys.other)).body.error.code).toBe('NOT_FOUND')
    expect((await call(b, 'GET', `/v1/lists/${id}`, keys.test)).status).toBe(404)
    expect((await call(a, 'POST', `/v1/lists/${id}/items`, keys.live, { values: ['8.8.8.0/24', 'no ip'] })).body.data).toEqual({
      added: 1,
      already_present: 0,
      invalid: [{ value: 'no ip', message: 'not an IP address or CIDR network' }],
    })
    const hit = await call(b, 'POST', '/v1/ip', keys.live, { ip: '8.8.8.8' })
    expect(hit.body.data.metadata.cache_hit).toBe(true)
    expect(hit.body.data.details.lists).toEqual([{ list_id: id, name: 'Networks', kind: 'block', item_type: 'ip', value: '8.8.8.0/24' }])
    expect(hit.body.data.recommendation.action).toBe('block')
    expect((await call(b, 'POST', '/v1/ip', keys.test, { ip: '8.8.8.8' })).body.data.details.lists).toEqual([])
    // removed through A: B's next (cached) answer no longer matches
    expect((await call(a, 'DELETE', `/v1/lists/${id}/items/8.8.8.0%2F24`, keys.live)).body.data.deleted).toBe(true)
    const after = await call(b, 'POST', '/v1/ip', keys.live, { ip: '8.8.8.8' })
    expect(after.body.data.metadata.cache_hit).toBe(true)
    expect(after.body.data.details.lists).toEqual([])
    // added again, then the list deleted through B: A's next answer follows
    await call(b, 'POST', `/v1/lists/${id}/items`, keys.live, { values: ['8.8.8.8'] })
    expect((await call(a, 'POST', '/v1/ip', keys.live, { ip: '8.8.8.8' })).body.data.details.lists).toHaveLength(1)
    await call(b, 'DELETE', `/v1/lists/${id}`, keys.live)
    expect((await call(a, 'POST', '/v1/ip', keys.live, { ip: '8.8.8.8' })).body.data.details.lists).toEqual([])
  })

  it('a page cursor holds on either instance for its own list and `value` alone', async () => {
    const made = async (name: string) => (await call(a, 'POST', '/v1/lists', keys.live, { name, kind: 'block', item_type: 'email_domain' })).body.data.id as string
    const [x, y] = [await made('Pages X'), await made('Pages Y')]
    const values = Array.from({ length: 5 }, (_, i) => `d${i}.example.org`)
    for (const id of [x, y]) await call(a, 'POST', `/v1/lists/${id}/items`, keys.live, { values })
    const cursor = (await call(a, 'GET', `/v1/lists/${x}/items?limit=2`, keys.live)).body.next_cursor as string
    // B continues A's page of X; the cursor on Y, or with `value`, is refused (it paged Y from X's place)
    expect((await call(b, 'GET', `/v1/lists/${x}/items?limit=2&cursor=${cursor}`, keys.live)).body.data.map((i: { value: string }) => i.value)).toEqual(values.slice(2, 4))
    const foreign = await call(b, 'GET', `/v1/lists/${y}/items?limit=2&cursor=${cursor}`, keys.live)
    expect(foreign.status).toBe(400)
    expect(foreign.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: '`cursor` is not one this API gave.' })
    const filtered = await call(b, 'GET', `/v1/lists/${x}/items?value=d4.example.org&cursor=${cursor}`, keys.live)
    expect(filtered.status).toBe(400)
    expect(filtered.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: cursorFiltersChanged(['value']).message })
  })

  it('a lookup costs no extra statement for the lists once compiled', async () => {
    const id = (await call(a, 'POST', '/v1/lists', keys.live, { name: 'Staff', kind: 'allow', item_type: 'ip' })).body.data.id
    await call(a, 'POST', `/v1/lists/${id}/items`, keys.live, { values: ['1.1.1.1'] })
    const cost = async (key: string) => {
      const before = bStatements.n
      const r = await call(b, 'POST', '/v1/ip', key, { ip: '1.1.1.1' })
      expect(r.status).toBe(200)
      return { n: bStatements.n - before, lists: r.body.data.details.lists as unknown[] }
    }
    // warm both orgs (cache filled, B compiled the lists at their version; last-use writes done)
    await cost(keys.plain)
    const compiling = await cost(keys.live)
    expect(compiling.lists).toHaveLength(1)
    const plain = await cost(keys.plain)
    const listed = await cost(keys.live)
    expect(listed.lists).toHaveLength(1)
    expect(plain.lists).toEqual([])
    if (process.env.RISKCHECK_PRINT_COUNTS) console.log('statements per lookup on B:', { plain: plain.n, listed: listed.n, compiling: compiling.n })
    expect(listed.n).toBe(plain.n)
    // the request after a change reads the lists once (one snapshot transaction), then none again
    await call(a, 'POST', `/v1/lists/${id}/items`, keys.live, { values: ['1.0.0.1'] })
    const changed = await cost(keys.live)
    if (process.env.RISKCHECK_PRINT_COUNTS) console.log('after a change:', changed.n)
    expect(changed.n).toBeGreaterThan(plain.n)
    expect((await cost(keys.live)).n).toBe(plain.n)
  })

  it('a snapshot is fetched a page a statement, at one version: expired items left out, a change made meanwhile not seen', async () => {
    const { pool: own, counter } = countPool(new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 1 }))
    pools.push(own)
    // before the snapshot's first fetch, another connection adds an item and commits
    const other = createPostgresListsStore(pools[0]!)
    let change: (() => Promise<unknown>) | null = null
    own.on('connect', (c) => {
      const query = c.query.bind(c) as (...a: unknown[]) => Promise<unknown>
      ;(c as unknown as { query: unknown }).query = async (...args: unknown[]) => {
        if (change && typeof args[0] === 'string' && args[0].startsWith('FETCH')) {
          const run = change
          change = null
          await run()
        }
        return query(...args)
      }
    })
    const store = createPostgresListsStore(own)
    const owner = { orgId: keys.plainOrg, mode: 'test' as const }
    const list = await store.createList(owner, { name: 'Paged', kind: 'block', itemType: 'email' }, 1)
    await store.addItems(owner, list.id, Array.from({ length: 40_000 }, (_, i) => ({ value: `p${i}@paged.io`, reason: null, expiresAt: i < 5 ? 10 : null })), 1)
    const version = await store.version(owner)
    let changed = false
    change = async () => {
      await other.addItems(owner, list.id, [{ value: 'late@paged.io', reason: null, expiresAt: null }], 1)
      changed = true
    }
    const before = counter.n
    const snap = await store.snapshot(owner, 100)
    expect(changed).toBe(true)
    expect(snap.version).toBe(version)
    const items = snap.lists.find((l) => l.id === list.id)!.items
    expect(items).toHaveLength(39_995)
    expect(items.some((i) => i.value === 'late@paged.io' || i.value === 'p0@paged.io')).toBe(false)
    // BEGIN, isolation, version, lists, DECLARE, ceil(39,995 / 8,192) = 5 fetches, COMMIT
    expect(counter.n - before).toBe(6 + Math.ceil(39_995 / 8192))
    const after = await store.snapshot(owner, 100)
    expect(after.version).toBe(version! + 1)
    expect(after.lists.find((l) => l.id === list.id)!.items).toHaveLength(39_996)
  })

  it('concurrent adds to two lists of an org cannot pass its limit together: the lists are counted in the adding transaction', async () => {
    const store = createPostgresListsStore(pools[0]!)
    const org = await stores[0]!.createOrg({ name: 'Racing', planId: 'starter' }, clock.now().getTime())
    const owner = { orgId: org.id, mode: 'live' as const }
    const [x, y] = [await store.createList(owner, { name: 'X', kind: 'block', itemType: 'email' }, 1), await store.createList(owner, { name: 'Y', kind: 'block', itemType: 'email' }, 1)]
    const values = (p: string, n: number) => Array.from({ length: n }, (_, i) => ({ value: `${p}${i}@race.io`, reason: null, expiresAt: null }))
    await store.addItems(owner, x.id, values('a', 900), 1)
    const room: ListRoom = (all, list, n) => listRoom(all, list, n, { perList: 1000, perOwner: 1000 })
    for (let round = 0; round < 3; round++) {
      const settled = await Promise.allSettled([store.addItems(owner, x.id, values(`x${round}-`, 60), 1, room), store.addItems(owner, y.id, values(`y${round}-`, 60), 1, room)])
      const held = (await store.listLists(owner)).reduce((n, l) => n + l.items, 0)
      expect(held).toBeLessThanOrEqual(1000)
      if (round === 0) {
        expect(settled.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
        expect(held).toBe(960)
      } else expect(settled.every((r) => r.status === 'rejected')).toBe(true)
      for (const r of settled) if (r.status === 'rejected') expect((r.reason as { code: string }).code).toBe('INPUT_LIMIT_EXCEEDED')
    }
    // the stored counts the limits read are the rows, after adds that raced
    const { rows } = await pools[0]!.query('SELECT l.item_count::int AS stored, (SELECT COUNT(*)::int FROM list_items i WHERE i.list_id = l.id) AS n FROM lists l WHERE l.org_id = $1', [org.id])
    expect(rows.map((r) => r.stored)).toEqual(rows.map((r) => r.n))
  })

  it('100,000 values in one call: one transaction, 5 insert statements, 100,000 rows', async () => {
    const id = (await call(a, 'POST', '/v1/lists', keys.live, { name: 'Big', kind: 'block', item_type: 'email' })).body.data.id as string
    const values = Array.from({ length: 100_000 }, (_, i) => `user${i}@bigcorp.io`)
    const r = await call(a, 'POST', `/v1/lists/${id}/items`, keys.live, { values })
    expect(r.body.data).toEqual({ added: 100_000, already_present: 0, invalid: [] })
    const { rows } = await pools[0]!.query('SELECT COUNT(*)::int AS n FROM list_items WHERE list_id = $1', [id])
    expect(rows[0].n).toBe(100_000)
    expect((await call(b, 'POST', '/v1/email', keys.live, { email: 'user77777@bigcorp.io' })).body.data.details.lists).toHaveLength(1)
    const removed = await call(b, 'POST', `/v1/lists/${id}/items/remove`, keys.live, { values: ['user77777@bigcorp.io', 'USER2@bigcorp.io', 'nobody@bigcorp.io'] })
    expect(removed.body.data).toEqual({ removed: 2, not_present: 1, invalid: [] })
    expect((await call(a, 'POST', '/v1/email', keys.live, { email: 'user77777@bigcorp.io' })).body.data.details.lists).toEqual([])
    // the store alone, on a pool of its own: BEGIN, the list's lock, ceil(n / ITEMS_PER_STATEMENT) inserts, the version, COMMIT
    const { pool: own, counter } = countPool(new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 1 }))
    pools.push(own)
    const store = createPostgresListsStore(own)
    const owner = { orgId: keys.plainOrg, mode: 'live' as const }
    const list = await store.createList(owner, { name: 'Direct', kind: 'block', itemType: 'email' }, clock.now().getTime())
    const before = counter.n
    const added = await store.addItems(owner, list.id, values.map((value) => ({ value, reason: null, expiresAt: null })), clock.now().getTime())
    expect(added).toEqual({ added: 100_000, alreadyPresent: 0 })
    expect(counter.n - before).toBe(4 + Math.ceil(100_000 / ITEMS_PER_STATEMENT))
    const again = await store.addItems(owner, list.id, values.slice(0, 10).map((value) => ({ value, reason: null, expiresAt: null })), clock.now().getTime())
    expect(again).toEqual({ added: 0, alreadyPresent: 10 })
  })
})

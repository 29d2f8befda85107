/**
 * What only a networked store has to show: several processes (pools) sharing one org's credits, several instances
 * migrating at once, the schema checks on open, and how many round trips the hot path costs. (The contracts run on
 * PostgreSQL from ./contracts.test.ts.) Needs RISKCHECK_TEST_DATABASE_URL (e.g.
 * postgres://postgres@127.0.0.1:5432/test); every case gets a fresh schema of its own, dropped afterwards.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createPostgresStore,
  DEFAULT_PLANS,
  migratePostgres,
  POSTGRES_MIGRATIONS,
  postgresSchemaStatus,
  type PostgresStore,
} from '../../src/server/index.js'
import { createPostgresOutcomeStore } from '../../src/server/store/postgres/outcomes.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
if (!url) {
  console.log('PostgreSQL store suite skipped: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')
}

const T0 = Date.parse('2026-11-22T00:00:00Z')

/** A fresh schema name and how to drop it. */
const freshSchema = () => {
  const schema = `rc_store_${randomBytes(6).toString('hex')}`
  const drop = async () => {
    const admin = new pg.Pool({ connectionString: url })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
  }
  return { schema, drop }
}

/** A pool whose connections use `schema` (as a second server process would open one). */
const poolIn = (schema: string, max = 10) => new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max })

describe.skipIf(!url)('Store on PostgreSQL', () => {
  const cleanups: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })
  const schemaForCase = () => {
    const s = freshSchema()
    cleanups.push(s.drop)
    return s.schema
  }
  const openStore = async (options: Parameters<typeof createPostgresStore>[0]) => {
    const store = await createPostgresStore(options)
    cleanups.push(() => store.close())
    return store
  }
  const openPool = (schema: string, max?: number) => {
    const pool = poolIn(schema, max)
    cleanups.push(() => pool.end())
    return pool
  }

  it('two processes (two pools) racing on one org never overspend its credits', async () => {
    const schema = schemaForCase()
    const a = await openStore({ pool: openPool(schema), schema })
    const b = await openStore({ pool: openPool(schema), schema })
    const org = await a.createOrg({ name: 'Race', planId: 'free' }, T0)
    await a.setOrgPlan(org.id, { planId: 'free', monthlyCredits: 30 }, T0)
    await b.addCredits(org.id, 20, 'top_up', T0)
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const store = i % 2 ? a : b
        const r = await store.reserveCredits(org.id, 1, T0)
        await store.settleCredits(org.id, r ? 1 : 0, T0)
        return r
      }),
    )
    const granted = results.filter((r) => r !== null)
    expect(granted).toHaveLength(50)
    expect(granted.reduce((n, r) => n + r!.fromPurchased, 0)).toBe(20)
    expect(await b.balance(org.id, T0)).toBe(0)
    const o = (await a.getOrg(org.id, T0))!
    expect([o.usage.periodCredits, o.usage.periodLookups]).toEqual([50, 50])
    // the alerts of the fall, once each, whichever process saw it
    expect((await a.listEvents({ orgId: org.id })).map((e) => e.type)).toEqual(['credits.added', 'credits.low', 'credits.low', 'credits.depleted'])
    // the next period: both processes find it ended at once; it is renewed once and its 30 credits spent once
    const next = Date.parse('2026-12-22T00:00:00Z')
    const renewed = await Promise.all(Array.from({ length: 100 }, async (_, i) => (i % 2 ? a : b).reserveCredits(org.id, 1, next)))
    expect(renewed.filter((r) => r !== null)).toHaveLength(30)
    expect((await a.listEvents({ orgId: org.id })).map((e) => e.type).slice(4)).toEqual(['credits.added'])
    expect(await a.balance(org.id, next)).toBe(0)
  })

  it('one Idempotency-Key given to two processes at once runs once', async () => {
    const schema = schemaForCase()
    const a = await openStore({ pool: openPool(schema), schema })
    const b = await openStore({ pool: openPool(schema), schema })
    const answers = await Promise.all(Array.from({ length: 40 }, async (_, i) => (i % 2 ? a : b).beginIdempotent('s', 'k', 'fp', T0, 60_000)))
    expect(answers.filter((x) => x.state === 'new')).toHaveLength(1)
  })

  it('four instances migrating at once migrate once; the status then matches', async () => {
    const schema = schemaForCase()
    const pools = Array.from({ length: 4 }, () => openPool(schema))
    expect(await postgresSchemaStatus(pools[0]!, { schema })).toEqual({ current: 0, expected: POSTGRES_MIGRATIONS.length })
    const applied = await Promise.all(pools.map((p) => migratePostgres(p, { schema, nowMs: 7 })))
    expect(applied.flat()).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version))
    const { rows } = await pools[1]!.query('SELECT version, name, applied_at FROM riskcheck_migrations ORDER BY version')
    expect(rows).toEqual(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, name: m.name, applied_at: '7' })))
    expect(await postgresSchemaStatus(pools[2]!, { schema })).toEqual({ current: POSTGRES_MIGRATIONS.length, expected: POSTGRES_MIGRATIONS.length })
    expect(await migratePostgres(pools[3]!, { schema })).toEqual([])
  })

  it('a later module appends a version; a list out of order is refused', async () => {
    const schema = schemaForCase()
    const pool = openPool(schema)
    const next = [...POSTGRES_MIGRATIONS, { version: POSTGRES_MIGRATIONS.length + 1, name: 'extra', sql: 'CREATE TABLE extra_things (id TEXT PRIMARY KEY)' }]
    expect(await migratePostgres(pool, { schema })).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version))
    expect(await migratePostgres(pool, { schema, migrations: next })).toEqual([next.length])
    await expect(migratePostgres(pool, { schema })).rejects.toThrow(/newer than this server/)
    const gap = POSTGRES_MIGRATIONS.length + 2
    const skipping = [...POSTGRES_MIGRATIONS, { version: gap, name: 'skips', sql: 'SELECT 1' }]
    await expect(migratePostgres(pool, { schema, migrations: skipping })).rejects.toThrow(new RegExp(`has version ${gap}, expected`))
  })

  it('with migrate: false it opens a current schema and refuses one that is behind or newer, saying what to do', async () => {
    const schema = schemaForCase()
    await expect(createPostgresStore({ connectionString: url!, schema, migrate: false })).rejects.toThrow(
      /schema is at version 0, this server needs \d+: run riskcheck admin migrate --database-url/,
    )
    const pool = openPool(schema)
    await migratePostgres(pool, { schema })
    const store = await openStore({ connectionString: url!, schema, migrate: false })
    expect(await store.probe()).toEqual({ schemaVersion: POSTGRES_MIGRATIONS.length, expectedVersion: POSTGRES_MIGRATIONS.length })
    await pool.query('INSERT INTO riskcheck_migrations (version, name, applied_at) VALUES (999, $1, 0)', ['from the future'])
    await expect(createPostgresStore({ connectionString: url!, schema, migrate: false })).rejects.toThrow(/newer than this server/)
    await expect(createPostgresStore({ connectionString: url!, schema })).rejects.toThrow(/newer than this server/)
    expect(await store.probe()).toEqual({ schemaVersion: 999, expectedVersion: POSTGRES_MIGRATIONS.length })
  })

  it('seeds one key-hash secret and catalogue, kept across restarts; refuses a pool that points elsewhere or a bad schema name', async () => {
    const schema = schemaForCase()
    // instances starting at once on an empty database agree on one secret and seed the catalogue once
    const [first, ...others] = await Promise.all(Array.from({ length: 3 }, () => createPostgresStore({ connectionString: url!, schema })))
    const secret = await first!.keyHashSecret()
    for (const other of others) {
      expect(await other.keyHashSecret()).toBe(secret)
      await other.close()
    }
    expect(await first!.listPlans()).toEqual(DEFAULT_PLANS)
    await first!.upsertPlans([{ id: 'gold', name: 'Gold', monthly_price: 1, monthly_credits: 5, rate_per_second: 1 }])
    const org = await first!.createOrg({ name: 'Kept', planId: 'gold' }, T0)
    await first!.close()
    await first!.close() // twice is fine
    const again = await openStore({ connectionString: url!, schema })
    expect(await again.keyHashSecret()).toBe(secret)
    expect((await again.listPlans()).map((p) => p.id)).toContain('gold')
    expect(await again.getOrg(org.id, T0)).toEqual(org)
    const elsewhere = new pg.Pool({ connectionString: url })
    cleanups.push(() => elsewhere.end())
    await expect(createPostgresStore({ pool: elsewhere, schema })).rejects.toThrow(/use schema public, not rc_store_/)
    await expect(createPostgresStore({ connectionString: url!, schema: 'Bad-Name' })).rejects.toThrow(/plain lower-case identifier/)
  })

  it('the hot path is one round trip per operation', async () => {
    const schema = schemaForCase()
    const pool = openPool(schema)
    const store: PostgresStore = await openStore({ pool, schema })
    const org = await store.createOrg({ name: 'Trips', planId: 'starter' }, T0)
    await store.insertKey({ id: 'key_t', orgId: org.id, name: 'n', mode: 'live', scopes: ['lookup'], hash: 'h', last4: 'abcd', createdAt: T0, revokedAt: null, lastUsedAt: null })
    let statements = 0
    for (const client of await Promise.all(Array.from({ length: 3 }, () => pool.connect()))) client.release()
    pool.on('acquire', (client: pg.PoolClient & { counted?: boolean }) => {
      if (client.counted) return
      client.counted = true
      const query = client.query.bind(client) as (...args: unknown[]) => unknown
      ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => (statements++, query(...args))
    })
    const trips = async (op: () => Promise<unknown>) => {
      statements = 0
      await op()
      return statements
    }
    const entry = { outcome: { details: {}, factors: [], partial: false, dataSources: [] }, storedAt: T0 }
    const counted = {
      getAuth: await trips(() => store.getAuth('key_t')),
      reserve: await trips(() => store.reserveCredits(org.id, 1, T0)),
      refund: await trips(() => store.refundCredits(org.id, { amount: 1, fromSubscription: 1, fromPurchased: 0, periodStart: T0 }, 1, T0)),
      settle: await trips(() => store.settleCredits(org.id, 1, T0)),
      touchKey: await trips(() => store.touchKey('key_t', T0)),
      cacheGet: await trips(async () => store.resultCache.get('k', T0)),
      cacheSet: await trips(async () => store.resultCache.set('k', entry, 1000)),
      beginIdempotent: await trips(() => store.beginIdempotent('s', 'k', 'f', T0, 1000)),
      completeIdempotent: await trips(() => store.completeIdempotent('s', 'k', 200, '{}')),
    }
    expect(counted).toEqual({ getAuth: 1, reserve: 1, refund: 1, settle: 1, touchKey: 1, cacheGet: 1, cacheSet: 1, beginIdempotent: 1, completeIdempotent: 1 })
    // a settle that crosses an alert threshold writes the alert in one more statement
    await store.reserveCredits(org.id, 9_000, T0)
    expect(await trips(() => store.settleCredits(org.id, 1, T0))).toBe(2)

    // Requests arriving together share their statements: 40 requests of two keys, each an auth read, a cache read, a
    // reservation and a settlement with a cache write — four statements in all, every answer its own.
    await store.insertKey({ id: 'key_u', orgId: org.id, name: 'u', mode: 'test', scopes: ['lookup'], hash: 'h2', last4: 'efgh', createdAt: T0, revokedAt: T0, lastUsedAt: null })
    await store.resultCache.set('hit', entry, 10_000)
    const hot = store.grouped!
    const before = (await store.getOrg(org.id, T0))!
    statements = 0
    const requests = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const [auth, cached] = await Promise.all([store.getAuth(i % 2 ? 'key_t' : 'key_u'), store.resultCache.get(i % 4 ? 'hit' : 'miss', T0 + i)])
        const reserved = await hot.reserveCredits(org.id, 1, T0 + i)
        await hot.settleCredits(org.id, 1, T0 + i, [{ key: `new-${i}`, entry, ttlMs: 10_000 }])
        return { key: auth!.key.id, revoked: auth!.key.revokedAt !== null, hit: cached !== undefined, reserved: reserved !== null }
      }),
    )
    expect(statements).toBe(4)
    expect(requests.filter((r) => r.key === 'key_t' && !r.revoked)).toHaveLength(20)
    expect(requests.filter((r) => r.key === 'key_u' && r.revoked)).toHaveLength(20)
    expect(requests.filter((r) => r.hit)).toHaveLength(30)
    expect(requests.every((r) => r.reserved)).toBe(true)
    const after = (await store.getOrg(org.id, T0))!
    expect(after.subscriptionCredits).toBe(before.subscriptionCredits - 40)
    expect(after.usage.periodLookups).toBe(before.usage.periodLookups + 40)
    expect(await store.resultCache.get('new-39', T0 + 1)).toEqual(entry)

    // With instance leases: a lease renewal, a held reservation and a close (refund, usage, cache entry and keyed
    // answer together) are one statement each; 40 keyed requests together, two statements (one per turn each).
    const leases = store.leases!
    statements = 0
    expect(await leases.renewLease('inst_t', T0, 10_000)).toEqual({ held: false, expired: false })
    expect(statements).toBe(1)
    await store.beginIdempotent('s', 'h', 'f', T0, 1000, 'inst_t')
    statements = 0
    await leases.reserveHeld(org.id, 2, T0, { id: 'inst_t.1', instanceId: 'inst_t' })
    const close = { holdId: 'inst_t.1', lookups: 1, refund: { fromSubscription: 1, fromPurchased: 0 }, cacheWrites: [{ key: 'held', entry, ttlMs: 10_000 }] }
    expect(await leases.closeHeld(org.id, { ...close, idempotent: { scope: 's', key: 'h', owner: 'inst_t', status: 200, body: '{}' } }, T0)).toBe(true)
    expect(statements).toBe(2)
    statements = 0
    const held = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        await leases.reserveHeld(org.id, 1, T0 + i, { id: `inst_t.h${i}`, instanceId: 'inst_t' })
        return leases.closeHeld(org.id, { holdId: `inst_t.h${i}`, lookups: 1, refund: { fromSubscription: 0, fromPurchased: 0 } }, T0 + i)
      }),
    )
    expect(statements).toBe(2)
    expect(held.every((c) => c)).toBe(true)

    // An auth read asked in the turn of a reservation or a close rides on its statement: no round trip of its own; it
    // reads what was there when the statement began (the balance before the reservation).
    const balance = (await store.getOrg(org.id, T0))!
    statements = 0
    const [rider, carrier] = await Promise.all([store.getAuth('key_t'), leases.reserveHeld(org.id, 1, T0, { id: 'inst_t.r', instanceId: 'inst_t' })])
    expect(statements).toBe(1)
    expect(rider!.key.id).toBe('key_t')
    expect(rider!.org.balance).toBe(balance.subscriptionCredits + balance.purchasedCredits)
    expect(carrier).not.toBeNull()
    statements = 0
    const [closedWith, riderOfClose, unknown] = await Promise.all([
      leases.closeHeld(org.id, { holdId: 'inst_t.r', lookups: 1, refund: { fromSubscription: 0, fromPurchased: 0 } }, T0),
      store.getAuth('key_u'),
      store.getAuth('key_none'),
    ])
    expect(statements).toBe(1)
    expect([closedWith, riderOfClose!.key.revokedAt, unknown]).toEqual([true, T0, null])

    // Calls made one turn after another while a statement is in flight wait for it and share the next: a reservation
    // held up by a lock on the org's row, then ten more in ten turns — two statements
    const locker = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` })
    await locker.connect()
    await locker.query('BEGIN')
    await locker.query('SELECT 1 FROM orgs WHERE id = $1 FOR UPDATE', [org.id])
    statements = 0
    const waiting: unknown[] = [leases.reserveHeld(org.id, 1, T0, { id: 'inst_t.w', instanceId: 'inst_t' })]
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setImmediate(r))
      waiting.push(leases.reserveHeld(org.id, 1, T0, { id: `inst_t.w${i}`, instanceId: 'inst_t' }))
    }
    await locker.query('COMMIT')
    await locker.end()
    expect((await Promise.all(waiting)).every((r) => r !== null)).toBe(true)
    expect(statements).toBe(2)
    expect(await leases.releaseHolds(['inst_t.w', ...Array.from({ length: 10 }, (_, i) => `inst_t.w${i}`)], T0)).toBe(11)
    expect(await leases.releaseExpired(T0 + 20_000)).toBe(0)

    // The input hashes of answers (outcomes) kept in a turn ride on that turn's close: 40 cache hits, each keeping its
    // row then closing, are one statement; rows kept in a turn without a close go out alone, one statement.
    const outcomes = createPostgresOutcomeStore(pool, store.answerInputs)
    const row = (i: number) => ({ orgId: org.id, mode: 'live' as const, requestId: `req_${i}`, at: T0, email: null, phone: null, ip: `h${i}` })
    statements = 0
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        Promise.all([outcomes.recordInputs([row(i)]), leases.closeHeld(org.id, { lookups: 1, refund: { fromSubscription: 0, fromPurchased: 0 } }, T0 + i)]),
      ),
    )
    expect(statements).toBe(1)
    statements = 0
    await Promise.all([outcomes.recordInputs([row(40)]), outcomes.recordInputs([row(41)])])
    expect(statements).toBe(1)
    const kept = await outcomes.inputsOf(org.id, 'live', Array.from({ length: 42 }, (_, i) => `req_${i}`))
    expect([...kept.keys()].sort()).toEqual(Array.from({ length: 42 }, (_, i) => `req_${i}`).sort())
    expect(kept.get('req_41')).toEqual({ email: null, phone: null, ip: 'h41' })
  })

  it('reservations asked in the turn of a close ride on it: one statement, granted from the balance after its refunds', async () => {
    const schema = schemaForCase()
    const pool = openPool(schema)
    const store: PostgresStore = await openStore({ pool, schema })
    const org = await store.createOrg({ name: 'Ride', planId: 'free' }, T0)
    await store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: 3 }, T0)
    await store.addCredits(org.id, 7, 'top_up', T0)
    const leases = store.leases!
    await leases.renewLease('inst_r', T0, 10_000)
    const hold = (n: number) => ({ id: `inst_r.${n}`, instanceId: 'inst_r' })
    expect(await leases.reserveHeld(org.id, 4, T0, hold(1))).toMatchObject({ fromSubscription: 3, fromPurchased: 1 })
    let statements = 0
    pool.on('acquire', (client: pg.PoolClient & { counted?: boolean }) => {
      if (client.counted) return
      client.counted = true
      const query = client.query.bind(client) as (...args: unknown[]) => unknown
      ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => (statements++, query(...args))
    })
    // the close gives back 2 + 1 (balance 0 + 6 → 2 + 7); then 8 fit (2 from the subscription), and 2 more do not
    const [closed, fits, refused] = await Promise.all([
      leases.closeHeld(org.id, { holdId: 'inst_r.1', lookups: 1, refund: { fromSubscription: 2, fromPurchased: 1 } }, T0),
      leases.reserveHeld(org.id, 8, T0, hold(2)),
      leases.reserveHeld(org.id, 2, T0, hold(3)),
    ])
    expect(statements).toBe(1)
    expect(closed).toBe(true)
    expect(fits).toEqual({ amount: 8, fromSubscription: 2, fromPurchased: 6, periodStart: expect.any(Number), balanceAfter: 1 })
    expect(refused).toBeNull()
    const credits = async () => {
      const o = (await store.getOrg(org.id, T0))!
      return [o.subscriptionCredits, o.purchasedCredits, o.usage.totalLookups, o.usage.totalCredits]
    }
    expect(await credits()).toEqual([0, 1, 1, 9])
    // asked first, the reservation waits for the close queued in its turn (one statement again)
    statements = 0
    const [first, closedAfter] = await Promise.all([
      leases.reserveHeld(org.id, 1, T0, hold(4)),
      leases.closeHeld(org.id, { holdId: 'inst_r.2', lookups: 1, refund: { fromSubscription: 2, fromPurchased: 0 } }, T0),
    ])
    expect(statements).toBe(1)
    expect([first?.fromSubscription, closedAfter]).toEqual([1, true])
    expect(await credits()).toEqual([1, 1, 2, 8])
    // a statement that fails fails its riders too, and writes nothing of either (a lookup count PostgreSQL refuses)
    statements = 0
    const failed = await Promise.allSettled([
      leases.closeHeld(org.id, { holdId: 'inst_r.4', lookups: Number.NaN, refund: { fromSubscription: 1, fromPurchased: 0 } }, T0),
      leases.reserveHeld(org.id, 1, T0, hold(5)),
    ])
    expect([statements, ...failed.map((r) => r.status)]).toEqual([1, 'rejected', 'rejected'])
    expect(await credits()).toEqual([1, 1, 2, 8])
    expect(await leases.releaseHolds(['inst_r.5'], T0)).toBe(0)
    // the granted reservation's hold holds exactly its parts; the refused one wrote none
    expect(await leases.releaseHolds(['inst_r.3', 'inst_r.4'], T0)).toBe(1)
    expect(await credits()).toEqual([2, 1, 2, 7])
  })
})

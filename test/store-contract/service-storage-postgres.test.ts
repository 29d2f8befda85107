/**
 * What only a database shared by several processes has to show of the bulk and delivery storage: two pools (two
 * server processes) claiming deliveries, pumping the outbox, reserving one org's credits and finishing one job at the
 * same time. (The contracts run on PostgreSQL from ./contracts.test.ts.) Needs RISKCHECK_TEST_DATABASE_URL (e.g.
 * postgres://postgres@127.0.0.1:5432/test); every case gets a fresh schema of its own, dropped afterwards.
 */
import { describe, expect, it } from 'vitest'
import { storageOf } from '../../src/server/store/open-storage.js'
import { POSTGRES_BULK_MIGRATIONS, POSTGRES_MIGRATIONS } from '../../src/server/store/postgres/migrations.js'
import type { Store } from '../../src/server/store/contracts/store.js'
import { jobRecord, pendingRows } from './bulk-contract.js'
import { addEndpoint, creditsEvent } from './delivery-contract.js'
import { freshPostgres as freshSchema, PG_URL as url, pgHarness } from './engines.js'
import { NOW } from './service-harness.js'

if (!url) {
  console.log('PostgreSQL bulk/delivery storage suite skipped: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')
}

/** Two "processes" on one fresh schema: a harness per pool. */
async function twoProcesses() {
  const s = await freshSchema()
  return { a: pgHarness(s.store, s.drop), b: pgHarness(s.store, async () => undefined, s.poolIn()), drop: s.drop }
}

describe.skipIf(!url)('bulk and delivery storage on PostgreSQL, several processes', () => {
  it("the bulk and webhook migrations are versions of the store's one list, so every start applies them", () => {
    const versions = POSTGRES_MIGRATIONS.map((m) => m.version)
    expect(versions).toEqual(versions.map((_, i) => i + 1))
    const first = POSTGRES_BULK_MIGRATIONS[0]!.version - 1
    expect(POSTGRES_MIGRATIONS.slice(first, first + POSTGRES_BULK_MIGRATIONS.length)).toEqual(POSTGRES_BULK_MIGRATIONS)
  })

  it('the server picks the PostgreSQL storage from a store that exposes its pool, and bills through its settlement', async () => {
    const s = await freshSchema()
    const h = pgHarness(s.store, s.drop)
    try {
      const settled: Array<[string, number]> = []
      const store = { engine: 'postgres', pool: s.pool, settleCredits: (orgId: string, lookups: number) => void settled.push([orgId, lookups]) } as unknown as Store
      const picked = storageOf(store)!
      expect(picked.engine).toBe('postgres')
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      await picked.webhooks.deliveries.createEndpoint({ orgId: org, url: 'https://hooks.example.test/in', description: null, events: ['*'], format: 'json', secret: 'whsec_x' }, NOW)
      await picked.bulk.insertEvent(creditsEvent(org))
      expect(await picked.webhooks.pumpOutbox(() => new Date(NOW))).toBe(1)
      expect(await h.count('webhook_deliveries')).toBe(1)
      await picked.bulk.settleCredits(org, 3, NOW)
      expect(settled).toEqual([[org, 3]])
      expect(storageOf({} as Store)).toBeUndefined()
      expect(storageOf(s.store)?.engine).toBe('postgres')
    } finally {
      await h.done()
    }
  })

  it('two pools claiming due deliveries at once never take the same one, and together take them all', async () => {
    const { a, b, drop } = await twoProcesses()
    try {
      const org = await a.createOrg({ subscription: 0, purchased: 0 })
      for (let i = 0; i < 4; i++) await addEndpoint(a, org)
      for (let i = 0; i < 50; i++) await a.webhooks.insertEvent(creditsEvent(org))
      expect(await a.webhooks.pumpOutbox(() => new Date(NOW))).toBe(50)
      // rounds in which both claim at once (7 each): concurrent or one after the other, the sets must not overlap
      const byA: string[] = []
      const byB: string[] = []
      for (;;) {
        const [ga, gb] = await Promise.all([a, b].map((h) => h.webhooks.deliveries.leaseDue(new Date(NOW), 7, new Date(NOW + 60_000))))
        if (ga!.length === 0 && gb!.length === 0) break
        byA.push(...ga!.map((d) => d.id))
        byB.push(...gb!.map((d) => d.id))
      }
      expect(byA.length).toBeGreaterThan(0)
      expect(byB.length).toBeGreaterThan(0)
      expect(byA.filter((id) => byB.includes(id))).toEqual([])
      expect(new Set([...byA, ...byB]).size).toBe(200)
      expect(byA.length + byB.length).toBe(200)
    } finally {
      await drop()
    }
  })

  it('two pools pumping the outbox at once fan each event out once', async () => {
    const { a, b, drop } = await twoProcesses()
    try {
      const org = await a.createOrg({ subscription: 0, purchased: 0 })
      for (let i = 0; i < 3; i++) await addEndpoint(a, org)
      for (let i = 0; i < 120; i++) await a.webhooks.insertEvent(creditsEvent(org))
      const pumpAll = async (h: typeof a) => {
        let taken = 0
        for (let k; (k = await h.webhooks.pumpOutbox(() => new Date(NOW), 10)) > 0; ) taken += k
        return taken
      }
      const [byA, byB] = await Promise.all([pumpAll(a), pumpAll(b)])
      expect(byA + byB).toBe(120)
      expect(await a.count('webhook_deliveries')).toBe(360)
      expect(await a.count('events', 'pumped_at IS NULL')).toBe(0)
    } finally {
      await drop()
    }
  })

  it('an event committed after a later one was pumped is still pumped (no cursor to skip it)', async () => {
    const s = await freshSchema()
    const h = pgHarness(s.store, s.drop)
    try {
      const org = await h.createOrg({ subscription: 0, purchased: 0 })
      const ep = await addEndpoint(h, org)
      const slow = await s.poolIn().connect()
      const early = creditsEvent(org)
      await slow.query('BEGIN')
      await slow.query('INSERT INTO events (id, org_id, type, created, payload) VALUES ($1, $2, $3, $4, $5)', [early.id, org, early.type, early.created, JSON.stringify(early)])
      await h.webhooks.insertEvent(creditsEvent(org)) // a higher seq, committed first
      expect(await h.webhooks.pumpOutbox(() => new Date(NOW))).toBe(1)
      await slow.query('COMMIT')
      slow.release()
      expect(await h.webhooks.pumpOutbox(() => new Date(NOW))).toBe(1)
      expect((await h.webhooks.deliveries.listDeliveries({ endpointId: ep.id })).map((d) => d.eventId)).toContain(early.id)
    } finally {
      await h.done()
    }
  })

  it("two pools creating jobs against one org's credits at once never overspend", async () => {
    const { a, b, drop } = await twoProcesses()
    try {
      const org = await a.createOrg({ subscription: 20, purchased: 10 })
      const create = (h: typeof a) => {
        const rec = jobRecord(5, 5)
        const ledger = h.bulk.ledger(org, () => NOW)
        return h.bulk.jobStore({ orgId: org, mode: 'live' }).insertJobCharged!(rec, pendingRows(5), (tx) => ledger.reserveFor!(rec.job.id, 5, tx))
      }
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => create(i % 2 ? a : b)))
      expect(results.filter((r) => r !== null)).toHaveLength(6)
      expect(await a.balance(org)).toBe(0)
      expect([await a.count('bulk_jobs'), await a.count('bulk_reservations'), await a.count('bulk_rows')]).toEqual([6, 6, 30])
    } finally {
      await drop()
    }
  })

  it('two pools finishing the same job at once refund it once', async () => {
    const { a, b, drop } = await twoProcesses()
    try {
      const org = await a.createOrg({ subscription: 50, purchased: 0 })
      const rec = jobRecord(20, 20)
      const ledgerA = a.bulk.ledger(org, () => NOW)
      await a.bulk.jobStore({ orgId: org, mode: 'live' }).insertJobCharged!(rec, pendingRows(20), (tx) => ledgerA.reserveFor!(rec.job.id, 20, tx))
      const done = { ...rec.job, status: 'completed' as const, credits_used: 8, completed_at: new Date(NOW).toISOString() }
      const finish = (h: typeof a) => {
        const ledger = h.bulk.ledger(org, () => NOW)
        return h.bulk.jobStore({ orgId: org, mode: 'live' }).finishJob!(rec.job.id, done, (tx) => ledger.settleFor!(rec.job.id, 12, tx))
      }
      await Promise.all([finish(a), finish(b), finish(a), finish(b)])
      expect(await a.balance(org)).toBe(50 - 8)
      expect(await a.count('bulk_reservations')).toBe(0)
    } finally {
      await drop()
    }
  })
})

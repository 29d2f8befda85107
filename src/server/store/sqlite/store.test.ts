import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_PLANS } from '../../../accounts/plans.js'
import { MIGRATIONS } from './migrations.js'
import { createSqliteStore, type SqliteStore } from './store.js'

const T0 = Date.parse('2026-11-22T00:00:00Z')
const DAY = 24 * 60 * 60 * 1000
let dir: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-store-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function withStore(run: (store: SqliteStore) => void | Promise<void>) {
  return async () => {
    const store = createSqliteStore(':memory:')
    try {
      await run(store)
    } finally {
      store.close()
    }
  }
}

describe('opening', () => {
  it('creates a WAL database, migrates it, seeds the plans and a key-hash secret, and reopens it', () => {
    const file = join(dir, 'open.sqlite')
    const a = createSqliteStore(file)
    expect(a.db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(a.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length)
    expect(a.db.pragma('foreign_keys', { simple: true })).toBe(1)
    expect(a.listPlans()).toEqual(DEFAULT_PLANS)
    const secret = a.keyHashSecret()
    expect(secret).toMatch(/^[0-9a-f]{64}$/)
    const org = a.createOrg({ name: 'Kept', planId: 'growth' }, T0)
    a.close()
    const b = createSqliteStore(file)
    expect(b.keyHashSecret()).toBe(secret)
    expect(b.getOrg(org.id, T0)).toEqual(org)
    b.close()
  })

  it('applies extra migrations after the core ones, once', () => {
    const file = join(dir, 'extra.sqlite')
    const extra = [{ name: '900_extra', sql: 'CREATE TABLE extra_things (id TEXT PRIMARY KEY) STRICT;' }]
    createSqliteStore(file, { migrations: extra }).close()
    const again = createSqliteStore(file, { migrations: extra })
    expect(again.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length + 1)
    again.close()
  })

  it('waits for another connection writing a new file in rollback mode, which SQLite answers at once with SQLITE_BUSY', async () => {
    const file = join(dir, 'busy.sqlite')
    // a worker thread holds the write lock of a rollback-journal file for a moment, as a process migrating it does
    const holder = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads')
       const db = new (require(workerData.sqlite))(workerData.file)
       db.exec('CREATE TABLE held (a)')
       db.exec('BEGIN IMMEDIATE')
       db.exec('INSERT INTO held VALUES (1)')
       parentPort.postMessage('locked')
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100)
       db.exec('COMMIT')
       db.close()`,
      { eval: true, workerData: { file, sqlite: createRequire(import.meta.url).resolve('better-sqlite3') } },
    )
    await new Promise((resolve) => holder.once('message', resolve))
    // before the switch was tried again, this threw `database is locked` at once, busy timeout or not
    const store = createSqliteStore(file)
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(store.db.prepare('SELECT COUNT(*) FROM held').pluck().get()).toBe(1)
    store.close()
    await holder.terminate()
  })

  it('refuses a database from a newer version', () => {
    const file = join(dir, 'newer.sqlite')
    const raw = new Database(file)
    raw.pragma(`user_version = ${MIGRATIONS.length + 5}`)
    raw.close()
    expect(() => createSqliteStore(file)).toThrow(/newer than this server/)
  })
})

describe('credits', () => {
  it(
    'reserve takes subscription credits first and refuses (taking nothing) when short',
    withStore((store) => {
      const org = store.createOrg({ name: 'A', planId: 'free' }, T0)
      store.addCredits(org.id, 10, 'top_up', T0)
      const r = store.reserveCredits(org.id, 105, T0)
      expect(r).toEqual({ amount: 105, fromSubscription: 100, fromPurchased: 5, periodStart: T0, balanceAfter: 5 })
      expect(store.reserveCredits(org.id, 6, T0)).toBeNull()
      expect(store.balance(org.id, T0)).toBe(5)
      expect(store.reserveCredits('org_missing', 1, T0)).toBeNull()
      // The purchased part goes back first.
      store.refundCredits(org.id, r!, 3, T0)
      const o = store.getOrg(org.id, T0)!
      expect([o.subscriptionCredits, o.purchasedCredits]).toEqual([0, 8])
      expect(o.usage).toEqual({ periodLookups: 0, periodCredits: 102, totalLookups: 0, totalCredits: 102 })
    }),
  )

  it(
    'a refund after the period ended does not give back expired subscription credits',
    withStore((store) => {
      const org = store.createOrg({ name: 'B', planId: 'free' }, T0)
      const r = store.reserveCredits(org.id, 40, T0)!
      const later = T0 + 31 * DAY
      store.refundCredits(org.id, r, 40, later)
      const o = store.getOrg(org.id, later)!
      expect(o.subscriptionCredits).toBe(100)
      expect(o.usage.periodCredits).toBe(0)
    }),
  )

  it(
    'the balance can never go below zero, even by a direct update',
    withStore((store) => {
      const org = store.createOrg({ name: 'C', planId: 'free' }, T0)
      expect(() => store.db.prepare('UPDATE orgs SET subscription_credits = -1 WHERE id = ?').run(org.id)).toThrow(/CHECK constraint/)
    }),
  )

  it('two connections to one file spend each credit once', () => {
    const file = join(dir, 'race.sqlite')
    const a = createSqliteStore(file)
    const b = createSqliteStore(file)
    try {
      const org = a.createOrg({ name: 'Race', planId: 'free' }, T0)
      let granted = 0
      for (let i = 0; i < 150; i++) if ((i % 2 ? a : b).reserveCredits(org.id, 1, T0)) granted++
      expect(granted).toBe(100)
      expect(a.balance(org.id, T0)).toBe(0)
      expect(b.getOrg(org.id, T0)!.usage.periodCredits).toBe(100)
    } finally {
      a.close()
      b.close()
    }
  })

  it(
    'roll-over: subscription reset, period usage reset, one credits.added per renewal',
    withStore((store) => {
      const org = store.createOrg({ name: 'D', planId: 'free' }, T0)
      store.reserveCredits(org.id, 60, T0)
      store.settleCredits(org.id, 60, T0)
      const skipped = T0 + 95 * DAY // three periods later
      const o = store.getOrg(org.id, skipped)!
      expect(new Date(o.periodStart).toISOString()).toBe('2027-02-22T00:00:00.000Z')
      expect(o.subscriptionCredits).toBe(100)
      expect(o.usage).toEqual({ periodLookups: 0, periodCredits: 0, totalLookups: 60, totalCredits: 60 })
      const added = store.listEvents({ orgId: org.id }).filter((e) => e.type === 'credits.added')
      expect(added.map((e) => e.payload.data)).toEqual([{ amount: 100, balance: 100, reason: 'period_renewal' }])
    }),
  )

  it(
    'a downgrade caps the subscription credits without an event',
    withStore((store) => {
      const org = store.createOrg({ name: 'E', planId: 'growth' }, T0)
      const o = store.setOrgPlan(org.id, { planId: 'free' }, T0)!
      expect([o.planId, o.monthlyCredits, o.ratePerSecond, o.subscriptionCredits]).toEqual(['free', 100, 5, 100])
      expect(store.listEvents({ orgId: org.id })).toEqual([])
      expect(() => store.setOrgPlan(org.id, { planId: 'gold' }, T0)).toThrow(/unknown plan/)
      expect(store.setOrgPlan('org_none', { planId: 'free' }, T0)).toBeNull()
    }),
  )

  it(
    'events page by id',
    withStore((store) => {
      const org = store.createOrg({ name: 'F', planId: 'free' }, T0)
      for (let i = 1; i <= 5; i++) store.addCredits(org.id, i, 'top_up', T0)
      const first = store.listEvents({ orgId: org.id, limit: 2 })
      expect(first.map((e) => e.payload.data.amount)).toEqual([1, 2])
      const next = store.listEvents({ orgId: org.id, afterId: first[1]!.id })
      expect(next.map((e) => e.payload.data.amount)).toEqual([3, 4, 5])
      expect(store.listEvents({}).length).toBe(5)
    }),
  )
})

describe('keys', () => {
  it(
    'stores, lists, revokes and rescopes keys',
    withStore((store) => {
      const org = store.createOrg({ name: 'K', planId: 'scale' }, T0)
      const key = { id: 'key_abc', orgId: org.id, name: 'n', mode: 'live' as const, scopes: ['lookup' as const], hash: 'ff', last4: 'abcd', createdAt: T0, revokedAt: null, lastUsedAt: null }
      store.insertKey(key)
      expect(store.getAuth('key_abc')).toEqual({
        key,
        org: { id: org.id, suspended: false, ratePerSecond: 100, policyVersion: null, balance: org.subscriptionCredits, periodEnd: org.periodEnd, listsVersion: null, outcomesVersion: null },
      }) // no policy of its own (org-policy-store.ts)
      store.touchKey('key_abc', T0 + 1000)
      store.touchKey('key_abc', T0 + 2000) // within a minute: not written
      expect(store.getKey('key_abc')!.lastUsedAt).toBe(T0 + 1000)
      expect(store.setKeyScopes('key_abc', ['lookup', 'webhooks'])!.scopes).toEqual(['lookup', 'webhooks'])
      expect(store.revokeKey('key_abc', T0 + 5)!.revokedAt).toBe(T0 + 5)
      expect(store.revokeKey('key_abc', T0 + 9)!.revokedAt).toBe(T0 + 5)
      expect(store.listKeys(org.id)).toHaveLength(1)
      expect(store.getAuth('key_none')).toBeNull()
      expect(() => store.insertKey({ ...key, id: 'key_x', orgId: 'org_missing' })).toThrow(/FOREIGN KEY/)
    }),
  )
})

describe('idempotency records and the result cache', () => {
  it(
    'begin → complete → replay; other body → mismatch; unfinished → in progress; expiry',
    withStore((store) => {
      expect(store.beginIdempotent('k POST /v1/ip', 'x', 'fp1', T0, DAY)).toEqual({ state: 'new' })
      expect(store.beginIdempotent('k POST /v1/ip', 'x', 'fp1', T0, DAY)).toEqual({ state: 'in_progress' })
      expect(store.beginIdempotent('k POST /v1/ip', 'x', 'fp2', T0, DAY)).toEqual({ state: 'mismatch' })
      // A record left "in progress" by a process that died is taken over once it is 2 minutes old.
      expect(store.beginIdempotent('k POST /v1/ip', 'dead', 'fp1', T0, DAY)).toEqual({ state: 'new' })
      expect(store.beginIdempotent('k POST /v1/ip', 'dead', 'fp1', T0 + 119_999, DAY)).toEqual({ state: 'in_progress' })
      expect(store.beginIdempotent('k POST /v1/ip', 'dead', 'fp2', T0 + 120_000, DAY)).toEqual({ state: 'mismatch' })
      expect(store.beginIdempotent('k POST /v1/ip', 'dead', 'fp1', T0 + 120_000, DAY)).toEqual({ state: 'new' })
      expect(store.beginIdempotent('k POST /v1/ip', 'dead', 'fp1', T0 + 120_001, DAY)).toEqual({ state: 'in_progress' })
      store.completeIdempotent('k POST /v1/ip', 'x', 200, '{"ok":1}')
      expect(store.beginIdempotent('k POST /v1/ip', 'x', 'fp1', T0 + 1, DAY)).toEqual({ state: 'replay', status: 200, body: '{"ok":1}' })
      expect(store.beginIdempotent('k POST /v1/ip', 'x', 'fp2', T0 + DAY, DAY)).toEqual({ state: 'new' })
      expect(store.beginIdempotent('k POST /v1/ip', 'y', 'fp', T0, DAY)).toEqual({ state: 'new' })
      store.abandonIdempotent('k POST /v1/ip', 'y')
      expect(store.beginIdempotent('k POST /v1/ip', 'y', 'fp', T0, DAY)).toEqual({ state: 'new' })
    }),
  )

  it(
    'the result cache keeps entries for their TTL; purge deletes the expired ones',
    withStore(async (store) => {
      const cache = store.resultCache
      const entry = { outcome: { details: { a: 1 }, factors: [], partial: false, dataSources: ['x'] }, storedAt: T0 }
      await cache.set('ip:1.2.3.4', entry, DAY)
      expect(await cache.get('ip:1.2.3.4', T0 + DAY - 1)).toEqual(entry)
      expect(await cache.get('ip:1.2.3.4', T0 + DAY)).toBeUndefined()
      await cache.set('ip:5.6.7.8', { ...entry, storedAt: T0 + DAY }, DAY)
      store.beginIdempotent('s', 'k', 'f', T0, DAY)
      expect(store.purgeExpired(T0 + DAY)).toBe(2)
      expect(await cache.get('ip:5.6.7.8', T0 + DAY)).toBeDefined()
      await cache.clear?.()
      expect(await cache.get('ip:5.6.7.8', T0 + DAY)).toBeUndefined()
    }),
  )
})

/**
 * A billed lookup whose server process is SIGKILLed in the middle, on SQLite and on PostgreSQL, with and without an
 * Idempotency-Key. Instance A is a real child process (./children/lookup-crash.ts) that kills itself at one boundary
 * of the request: its credits held (`reserved`), its answer ready but nothing settled (`looked-up`), its settlement
 * committed (`settled`), or in the last hook before the answer is written (`responding`). Instance B, on the same
 * database, is the one left; the client retries there — with its key following `Retry-After`, without one as a new
 * request — until it gets a 200.
 *
 * Afterwards, exactly: no credit hold is left (B refunded A's once A's lease ended, or the settlement closed it);
 * usage counts as many lookups as credits; the balance dropped by exactly what was settled — with a key the one
 * answer the client got (a settled answer is replayed, an unsettled request runs again once); without a key also the
 * answer settled just before the crash, which the client never saw (the settlement is the commit point: a server
 * cannot tell a retry without a key from a new request). While A's lease runs a retry gets 409 IDEMPOTENCY_CONFLICT
 * whose `Retry-After` adds up to at most the lease; with the default lease (10 s) the client has its answer within
 * 15 s of the crash.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createPostgresStore } from '../src/server/store/postgres.js'
import { createSqliteStore } from '../src/server/store/sqlite.js'
import type { Store } from '../src/server/store/types.js'

const here = dirname(fileURLToPath(import.meta.url))
const url = process.env.RISKCHECK_TEST_DATABASE_URL
if (!url) console.log('[skipped] lookup crash points on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run them')
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-lookup-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The lease of the matrix's instances (short, so each case waits ~1 s for a dead instance, not 10). */
const LEASE_MS = 1200
const POINTS = ['reserved', 'looked-up', 'settled', 'responding'] as const
type Point = (typeof POINTS)[number]
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A fresh database: how the child opens it, the test's own store on it, its open holds, and how to drop it. */
interface Db {
  args: string[]
  store: Store
  holds(): Promise<number>
  drop(): Promise<void>
}

const engines: Array<{ name: string; enabled: boolean; open(): Promise<Db> }> = [
  {
    name: 'SQLite',
    enabled: true,
    async open() {
      const file = join(dir, `crash-${randomBytes(4).toString('hex')}.sqlite`)
      const store = createSqliteStore(file)
      return {
        args: ['sqlite', file],
        store,
        holds: async () => (store.db.prepare('SELECT COUNT(*) AS n FROM credit_holds').get() as { n: number }).n,
        drop: async () => store.close(),
      }
    },
  },
  {
    name: 'PostgreSQL',
    enabled: Boolean(url),
    async open() {
      const schema = `rc_crash_${randomBytes(5).toString('hex')}`
      const store = await createPostgresStore({ connectionString: url!, schema })
      return {
        args: ['postgres', url!, schema],
        store,
        holds: async () => Number((await store.pool.query<{ n: string }>('SELECT COUNT(*) AS n FROM credit_holds')).rows[0]!.n),
        async drop() {
          await store.close()
          const admin = new pg.Pool({ connectionString: url })
          await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
          await admin.end()
        },
      }
    },
  },
]

/** Starts instance A; resolves with its port once it listens. */
async function startA(db: Db, point: Point | '', leaseMs?: number): Promise<{ child: ChildProcess; port: number }> {
  const env = { ...process.env, RISKCHECK_CRASH_AT: point, ...(leaseMs ? { RISKCHECK_LEASE_MS: String(leaseMs) } : {}) }
  const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'children', 'lookup-crash.ts'), ...db.args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr!.on('data', (d: Buffer) => (err += String(d)))
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve((JSON.parse(String(d)) as { port: number }).port))
    child.once('exit', (code) => reject(new Error(`instance A exited ${code} before it listened: ${err}`)))
  })
  return { child, port }
}

const BODY = { phone: '+14155552671' }
const headers = (secret: string, key: string | undefined) => ({
  authorization: `Bearer ${secret}`,
  'content-type': 'application/json',
  ...(key ? { 'idempotency-key': key } : {}),
})

/**
 * One crash: A dies at `point` during the client's first request; the client retries on B until it gets a 200.
 * Returns what B answered, the Retry-After values it was told on the way, and the org's state once A's holds are gone.
 */
async function crashAndRetry(db: Db, point: Point, keyed: boolean, leaseMs: number | undefined) {
  const now = Date.now()
  const org = await db.store.createOrg({ name: 'Crash', planId: 'starter' }, now)
  const { secret } = await issueApiKey(db.store, { orgId: org.id }, now)
  const initial = await db.store.balance(org.id, now)
  const b: RiskcheckServer = createServer({
    db: db.store,
    purgeIntervalMs: 0,
    webhookIntervalMs: 0,
    dashboard: false,
    ...(leaseMs ? { instanceLeaseMs: leaseMs } : {}),
    riskcheck: { offline: true },
  })
  await b.ready()
  try {
    const a = await startA(db, point, leaseMs)
    const exited = once(a.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    const key = keyed ? `crash-${point}` : undefined
    const first = await fetch(`http://127.0.0.1:${a.port}/v1/phone/type`, { method: 'POST', headers: headers(secret, key), body: JSON.stringify(BODY) }).then(
      (r) => `answered ${r.status}`,
      () => 'cut off',
    )
    expect(first, `A died at ${point} before answering`).toBe('cut off')
    expect((await exited)[1]).toBe('SIGKILL')
    const crashed = Date.now()
    const retryAfter: number[] = []
    for (;;) {
      const r = await b.inject({ method: 'POST', url: '/v1/phone/type', headers: headers(secret, key), payload: BODY })
      if (r.statusCode === 200) {
        const waitedMs = Date.now() - crashed
        // B sweeps A's holds once A's lease has ended (a takeover of A's key already did)
        for (let i = 0; i < 100 && (await db.holds()) > 0; i++) await sleep(100)
        const after = (await db.store.getOrg(org.id, Date.now()))!
        const again = keyed ? await b.inject({ method: 'POST', url: '/v1/phone/type', headers: headers(secret, key), payload: BODY }) : undefined
        return { answer: r, again, retryAfter, waitedMs, initial, after, holds: await db.holds() }
      }
      expect(r.statusCode, r.body).toBe(409)
      expect(r.json().error.code).toBe('IDEMPOTENCY_CONFLICT')
      retryAfter.push(Number(r.headers['retry-after']))
      await sleep(retryAfter.at(-1)! * 1000)
    }
  } finally {
    await b.close()
  }
}

for (const engine of engines) {
  describe.skipIf(!engine.enabled)(`a lookup whose process is SIGKILLed (${engine.name})`, () => {
    for (const point of POINTS) {
      for (const keyed of [true, false]) {
        // without a key, an answer settled before the crash was counted; the retry is then a free cache hit
        const lookups = keyed || point === 'reserved' || point === 'looked-up' ? 1 : 2
        it(`${point}, ${keyed ? 'with' : 'without'} an Idempotency-Key: the retry is answered, no hold is kept, 1 credit charged, ${lookups} lookup${lookups > 1 ? 's' : ''} counted`, { timeout: 60_000 }, async () => {
          const db = await engine.open()
          try {
            const r = await crashAndRetry(db, point, keyed, LEASE_MS)
            expect(r.answer.statusCode).toBe(200)
            expect(r.holds).toBe(0)
            expect(r.after.usage.totalLookups).toBe(lookups)
            expect(r.after.usage.totalCredits).toBe(1)
            expect(r.after.subscriptionCredits + r.after.purchasedCredits).toBe(r.initial - 1)
            expect(r.answer.json().data.metadata.credits_used).toBe(lookups === 2 ? 0 : 1)
            // while A's lease ran, each 409 said how long at most: together no longer than the lease
            expect(r.retryAfter.reduce((s, x) => s + x, 0)).toBeLessThanOrEqual(Math.ceil(LEASE_MS / 1000) + 1)
            if (keyed) {
              // settled before the crash: replayed at once; else run again by B after a takeover
              expect(r.answer.headers['idempotent-replayed']).toBe(point === 'settled' || point === 'responding' ? 'true' : undefined)
              // the answer is the one charged: the balance it reports is the balance after it
              expect(r.answer.json().data.metadata.credits_remaining).toBe(r.initial - 1)
              expect(r.again!.headers['idempotent-replayed']).toBe('true')
              expect(r.again!.json()).toEqual(r.answer.json())
            } else {
              expect(r.retryAfter).toEqual([])
            }
          } finally {
            await db.drop()
          }
        })
      }
    }

    it('with the default lease (10 s) the retrying client has its answer within 15 s of the crash', { timeout: 60_000 }, async () => {
      const db = await engine.open()
      try {
        const r = await crashAndRetry(db, 'looked-up', true, undefined)
        expect(r.answer.statusCode).toBe(200)
        expect(r.retryAfter.length).toBeGreaterThan(0)
        expect(r.retryAfter.reduce((s, x) => s + x, 0)).toBeLessThanOrEqual(11)
        expect(r.after.usage).toMatchObject({ totalLookups: 1, totalCredits: 1 })
        expect(r.holds).toBe(0)
        console.log(`${engine.name}: answered ${r.waitedMs} ms after the crash (Retry-After ${r.retryAfter.join(', ')} s)`)
      } finally {
        await db.drop()
      }
    })
  })
}

/**
 * The harness of test/lookup-crash-points.test.ts and scripts/bench/takeover.ts: a fresh SQLite file or PostgreSQL
 * schema, instance A as a child process (./children/lookup-crash.ts) that SIGKILLs itself at a named boundary of a
 * billed lookup, and instance B in this process on the same database, where the client retries until it has a 200.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createPostgresStore } from '../src/server/store/postgres/store.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { nodeArgs } from './child-process.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-lookup-crash-'))
/** Removes the SQLite files of this run. */
export const removeFiles = () => rmSync(dir, { recursive: true, force: true })

/** The boundaries of a billed lookup where instance A dies. */
export const POINTS = ['reserved', 'looked-up', 'settled', 'responding'] as const
export type Point = (typeof POINTS)[number]
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A fresh database: how the child opens it, the test's own store on it, its open holds, and how to drop it. */
export interface Db {
  args: string[]
  store: Store
  holds(): Promise<number>
  drop(): Promise<void>
}

export const engines: Array<{ name: string; enabled: boolean; open(): Promise<Db> }> = [
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

/** What instance A said as it died: whether its settlement closed its hold, or the answer it was writing. */
export interface AReport {
  settled?: boolean
  status?: number
  code?: string
}

type StartedA = { child: ChildProcess; port: number; report: Promise<AReport | undefined> }

/**
 * Starts instance A; resolves with its port once it listens, and `report` with the line it writes as it dies. A start
 * the database did not answer in time (a loaded machine: the first lease renewal past its statement bound) is tried
 * again, as `riskcheck serve` does at start.
 */
async function startA(db: Db, point: Point | '', leaseMs?: number, stallMs?: number): Promise<StartedA> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(db, point, leaseMs, stallMs)
    } catch (e) {
      if (attempt === 3 || !/RISKCHECK_DEPENDENCY_DOWN/.test((e as Error).message)) throw e
    }
  }
}

async function startOnce(db: Db, point: Point | '', leaseMs?: number, stallMs?: number): Promise<StartedA> {
  const env = {
    ...process.env,
    RISKCHECK_CRASH_AT: point,
    ...(leaseMs ? { RISKCHECK_LEASE_MS: String(leaseMs) } : {}),
    ...(stallMs ? { RISKCHECK_STALL_MS: String(stallMs) } : {}),
  }
  const child = spawn(process.execPath, [...nodeArgs('test/children/lookup-crash.ts'), ...db.args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  let out = ''
  const lines: string[] = []
  child.stderr!.on('data', (d: Buffer) => (err += String(d)))
  const exited = once(child, 'exit')
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += String(d)
      for (let i = out.indexOf('\n'); i >= 0; i = out.indexOf('\n')) {
        lines.push(out.slice(0, i))
        out = out.slice(i + 1)
        if (lines.length === 1) resolve((JSON.parse(lines[0]!) as { port: number }).port)
      }
    })
    child.once('exit', (code) => reject(new Error(`instance A exited ${code} before it listened: ${err}`)))
  })
  const report = exited.then(() => (lines[1] ? (JSON.parse(lines[1]) as AReport) : undefined))
  return { child, port, report }
}

const BODY = { phone: '+14155552671' }
const headers = (secret: string, key: string | undefined) => ({
  authorization: `Bearer ${secret}`,
  'content-type': 'application/json',
  ...(key ? { 'idempotency-key': key } : {}),
})

/** Told when A has died, and when the client has its answer (for timing them). */
export interface CrashHooks {
  crashed?(): void
  answered?(): void
}

/**
 * One crash: A dies at `point` during the client's first request; the client retries on B until it gets a 200,
 * following `Retry-After`. Returns what B answered (and a repeat with the key), the Retry-After values it was told on
 * the way, the org's state once A's holds are gone, and what A said as it died (`stallMs`: A's event loop blocks
 * that long just before its settlement).
 */
export async function crashAndRetry(db: Db, point: Point, keyed: boolean, leaseMs: number | undefined, hooks: CrashHooks = {}, stallMs?: number) {
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
  let a: Awaited<ReturnType<typeof startA>> | undefined
  try {
    a = await startA(db, point, leaseMs, stallMs)
    const exited = once(a.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    const key = keyed ? `crash-${point}` : undefined
    const first = await fetch(`http://127.0.0.1:${a.port}/v1/phone/type`, { method: 'POST', headers: headers(secret, key), body: JSON.stringify(BODY) }).then(
      (r) => `answered ${r.status}`,
      () => 'cut off',
    )
    const signal = (await exited)[1]
    const report = await a.report
    if (first !== 'cut off' || signal !== 'SIGKILL') throw new Error(`instance A was to die at ${point} before answering: ${first}, ${signal}`)
    hooks.crashed?.()
    const retryAfter: number[] = []
    for (;;) {
      const r = await b.inject({ method: 'POST', url: '/v1/phone/type', headers: headers(secret, key), payload: BODY })
      if (r.statusCode === 200) {
        hooks.answered?.()
        // B sweeps A's holds once A's lease has ended (a takeover of A's key already did)
        for (let i = 0; i < 100 && (await db.holds()) > 0; i++) await sleep(100)
        const after = (await db.store.getOrg(org.id, Date.now()))!
        const again = keyed ? await b.inject({ method: 'POST', url: '/v1/phone/type', headers: headers(secret, key), payload: BODY }) : undefined
        return { answer: r, again, retryAfter, initial, after, holds: await db.holds(), report }
      }
      if (r.statusCode !== 409 || r.json().error.code !== 'IDEMPOTENCY_CONFLICT') throw new Error(`the retry got ${r.statusCode}: ${r.body}`)
      retryAfter.push(Number(r.headers['retry-after']))
      await sleep(retryAfter.at(-1)! * 1000)
    }
  } finally {
    if (a && a.child.exitCode === null && a.child.signalCode === null) a.child.kill('SIGKILL')
    await b.close()
  }
}

/**
 * The storage engines on the service's hot paths, for the choice recorded in docs/decisions.md ("Storage engines"):
 * the memory store against the SQLite store opened on `:memory:` (and on a file, for scale), call by call and as
 * requests through the server; and what the typed SQL builder Kysely adds per query over hand-written statements.
 * Since that choice the memory store is the SQLite store on `:memory:` (its maps are gone), so its rows now time
 * the same engine as `sqlite :memory:` plus `createMemoryStore`'s policy store.
 *
 *   npx tsx scripts/bench/storage-engines.ts [--ops 20000] [--rounds 5] [--requests 3000] [--kysely DIR] [--database-url URL]
 *
 * --kysely DIR: a folder where kysely is installed (`npm install --prefix DIR kysely@0.28`); without it that part is
 * skipped. --database-url: also times Kysely against hand-written queries on PostgreSQL (a schema of its own, dropped).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import os, { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { issueApiKey } from '../../src/accounts/keys.js'
import type { AccountStore } from '../../src/accounts/types.js'
import { createServer, type RiskcheckServer } from '../../src/server/app.js'
import { createMemoryStore } from '../../src/server/store/sqlite/memory.js'
import { createPostgresStore } from '../../src/server/store/postgres/store.js'
import { createSqliteStore, type SqliteStore } from '../../src/server/store/sqlite/store.js'
import type { Store } from '../../src/server/store/contracts/store.js'
import { startDnsServer } from '../../test/fake-internet/dns-server.js'

const { values } = parseArgs({
  options: {
    ops: { type: 'string' },
    rounds: { type: 'string' },
    requests: { type: 'string' },
    kysely: { type: 'string' },
    'database-url': { type: 'string' },
  },
})
const OPS = Number(values.ops ?? 20_000)
const ROUNDS = Number(values.rounds ?? 5)
const REQUESTS = Number(values.requests ?? 3_000)
const IN_FLIGHT = 16
const DAY = 24 * 60 * 60 * 1000

type EngineName = 'memory' | 'sqlite :memory:' | 'sqlite file'
const ENGINES: EngineName[] = ['memory', 'sqlite :memory:', 'sqlite file']

function openStore(engine: EngineName, dir: string): Store {
  if (engine === 'memory') return createMemoryStore()
  return createSqliteStore(engine === 'sqlite file' ? join(dir, `bench-${Math.random().toString(36).slice(2)}.sqlite`) : ':memory:')
}

/** An org with credits and a rate limit out of the way, and a live key. */
async function seed(store: Store, now: number): Promise<{ orgId: string; keyId: string; secret: string }> {
  const org = await store.createOrg({ name: 'Bench', planId: 'scale' }, now)
  await store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: 1_000_000_000, ratePerSecond: 1_000_000 }, now)
  const { secret, key } = await issueApiKey(store, { orgId: org.id }, now)
  return { orgId: org.id, keyId: key.id, secret }
}

/** Median of the rounds' microseconds per operation (rounds alternate engines, so load spreads over all). */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Microseconds per operation, of the wall clock and of this process's CPU (user + system). */
interface Cost {
  wall: number
  cpu: number
}

/**
 * Starts a measurement of `n` operations; the function returned ends it. The CPU time is the figure to compare on a
 * shared machine: other processes' load stretches the wall clock, not the work done here.
 */
function startClock(n: number): () => Cost {
  const wall = performance.now()
  const cpu = process.cpuUsage()
  return () => {
    const used = process.cpuUsage(cpu)
    return { wall: ((performance.now() - wall) * 1000) / n, cpu: (used.user + used.system) / n }
  }
}

const medianCost = (xs: Cost[]): Cost => ({ wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)) })

/** A cached lookup answer of about the size the server stores. */
function cacheEntry(now: number) {
  const details = { ip: '8.8.8.8', version: 4, location: { country_code: 'US', city: 'Mountain View' }, asn: { number: 15169, organization: 'GOOGLE' } }
  return { outcome: { ok: true, value: details, partial: false, factors: [] } as never, storedAt: now }
}

interface StoreOp {
  name: string
  /** Runs `n` operations; resolves when they are done. */
  run(store: Store, ctx: { orgId: string; keyId: string; now: number; round: number }, n: number): Promise<void> | void
}

const STORE_OPS: StoreOp[] = [
  {
    name: 'key lookup (getAuth)',
    run: (s, c, n) => {
      for (let i = 0; i < n; i++) s.getAuth(c.keyId)
    },
  },
  {
    name: 'reserve + settle, 1 credit + 1 cache write',
    run: (s, c, n) => {
      for (let i = 0; i < n; i++) {
        s.reserveCredits(c.orgId, 1, c.now)
        s.settleCredits(c.orgId, 1, c.now, [{ key: `ip:${c.round}:${i}`, entry: cacheEntry(c.now), ttlMs: DAY }])
      }
    },
  },
  {
    name: `the same, ${IN_FLIGHT} requests in one turn (server path)`,
    run: async (s, c, n) => {
      const g = (s as AccountStore).grouped ?? s
      for (let i = 0; i < n; i += IN_FLIGHT)
        await Promise.all(
          Array.from({ length: IN_FLIGHT }, async (_, j) => {
            await g.reserveCredits(c.orgId, 1, c.now)
            await g.settleCredits(c.orgId, 1, c.now, [{ key: `ipg:${c.round}:${i + j}`, entry: cacheEntry(c.now), ttlMs: DAY }])
          }),
        )
    },
  },
  {
    name: 'idempotency begin + complete (new key)',
    run: (s, c, n) => {
      const body = JSON.stringify({ success: true, data: cacheEntry(c.now) })
      for (let i = 0; i < n; i++) {
        s.beginIdempotent(`key:${c.keyId}:POST /v1/ip`, `k${c.round}-${i}`, 'fp', c.now, DAY)
        s.completeIdempotent(`key:${c.keyId}:POST /v1/ip`, `k${c.round}-${i}`, 200, body)
      }
    },
  },
  {
    name: 'idempotency replay (begin on a stored key)',
    run: (s, c, n) => {
      for (let i = 0; i < n; i++) s.beginIdempotent(`key:${c.keyId}:POST /v1/ip`, `k${c.round}-${i % 100}`, 'fp', c.now, DAY)
    },
  },
  {
    name: 'result cache hit',
    run: (s, c, n) => {
      for (let i = 0; i < n; i++) s.resultCache.get(`ip:${c.round}:${i % 100}`, c.now)
    },
  },
]

/** Microseconds per store operation, per engine: the median of ROUNDS rounds of OPS operations. */
async function storeOps(dir: string): Promise<Map<string, Map<EngineName, Cost>>> {
  const now = Date.now()
  const stores = new Map<EngineName, { store: Store; orgId: string; keyId: string }>()
  for (const e of ENGINES) {
    const store = openStore(e, dir)
    stores.set(e, { store, ...(await seed(store, now)) })
  }
  const out = new Map<string, Map<EngineName, Cost>>()
  for (const op of STORE_OPS) {
    const samples = new Map<EngineName, Cost[]>(ENGINES.map((e) => [e, []]))
    for (let round = -1; round < ROUNDS; round++) {
      for (const e of ENGINES) {
        const { store, orgId, keyId } = stores.get(e)!
        const n = round < 0 ? 2000 : OPS
        const stop = startClock(n)
        await op.run(store, { orgId, keyId, now, round }, n)
        if (round >= 0) samples.get(e)!.push(stop())
      }
    }
    out.set(op.name, new Map(ENGINES.map((e) => [e, medianCost(samples.get(e)!)])))
  }
  for (const { store } of stores.values()) await store.close()
  return out
}

/** Cost per request through the server (`app.inject`, IN_FLIGHT at a time): billed POST /v1/ip, with and without an Idempotency-Key. */
async function serverRequests(dir: string, dnsServer: string): Promise<Map<string, Map<EngineName, Cost>>> {
  const scenarios = [
    { name: 'POST /v1/ip billed (bypass_cache)', idempotent: false },
    { name: 'POST /v1/ip billed, Idempotency-Key', idempotent: true },
  ]
  const apps = new Map<EngineName, { app: RiskcheckServer; secret: string }>()
  for (const e of ENGINES) {
    const store = openStore(e, dir)
    const { secret } = await seed(store, Date.now())
    const app = createServer({ db: store, riskcheck: { dns: { servers: [dnsServer] }, smtp: { enabled: false }, rdap: { enabled: false } }, purgeIntervalMs: 0 })
    await app.ready()
    apps.set(e, { app, secret })
  }
  const out = new Map<string, Map<EngineName, Cost>>()
  let serial = 0
  for (const s of scenarios) {
    const samples = new Map<EngineName, Cost[]>(ENGINES.map((e) => [e, []]))
    for (let round = -1; round < ROUNDS; round++) {
      for (const e of ENGINES) {
        const { app, secret } = apps.get(e)!
        // the first rounds of a server run its JIT in: about 8,000 requests before its cost per request settles
        const n = round < 0 ? 8000 : REQUESTS
        const one = async () => {
          const headers: Record<string, string> = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }
          if (s.idempotent) headers['idempotency-key'] = `bench-${serial++}`
          const r = await app.inject({ method: 'POST', url: '/v1/ip', headers, payload: { ip: '8.8.8.8', bypass_cache: true } })
          if (r.statusCode !== 200) throw new Error(`${e}: ${r.statusCode} ${r.body.slice(0, 200)}`)
        }
        const stop = startClock(n)
        for (let i = 0; i < n; i += IN_FLIGHT) await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, n - i) }, one))
        if (round >= 0) samples.get(e)!.push(stop())
      }
    }
    out.set(s.name, new Map(ENGINES.map((e) => [e, medianCost(samples.get(e)!)])))
  }
  for (const { app } of apps.values()) await app.close()
  return out
}

function table(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  for (const r of rows) console.log('  ' + r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '))
}

/** CPU µs of `a` over those of `b`. */
const ratio = (a: Cost, b: Cost) => `${(a.cpu / b.cpu).toFixed(2)}×`

// ---------------------------------------------------------------------------------------------------------------
// Kysely

/* eslint-disable @typescript-eslint/no-explicit-any -- Kysely is loaded from a folder outside the project, untyped */
type Kysely = any

async function loadKysely(dir: string): Promise<{ mod: Kysely; version: string; engines: string }> {
  const require = createRequire(join(dir, 'package.json'))
  const main = require.resolve('kysely')
  const pkgPath = join(main.slice(0, main.lastIndexOf(`${join('node_modules', 'kysely')}`)), 'node_modules', 'kysely', 'package.json')
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string; engines?: { node?: string } }
  return { mod: await import(main), version: pkg.version, engines: pkg.engines?.node ?? '(none)' }
}

/** Cost per call of `fn` (sync or async), median of ROUNDS rounds of `n` calls. */
async function timeCalls(n: number, fn: (i: number) => unknown): Promise<Cost> {
  const samples: Cost[] = []
  for (let round = -1; round < ROUNDS; round++) {
    const stop = startClock(n)
    for (let i = 0; i < n; i++) {
      const r = fn(i)
      if (r instanceof Promise) await r
    }
    if (round >= 0) samples.push(stop())
  }
  return medianCost(samples)
}

/** The auth read of the hot path, written with Kysely's builder (the same SQL as the stores' hand-written one). */
function authQuery(db: Kysely, keyId: string, sql: Kysely) {
  return db
    .selectFrom('api_keys as k')
    .innerJoin('orgs as o', 'o.id', 'k.org_id')
    .leftJoin('org_policies as p', 'p.org_id', 'k.org_id')
    .selectAll('k')
    .select([
      'o.suspended as org_suspended',
      'o.rate_per_second as org_rate',
      'p.version as org_policy',
      sql`o.subscription_credits + o.purchased_credits`.as('org_balance'),
      'o.period_end as org_period_end',
    ])
    .where('k.id', '=', keyId)
}

/** The credit take of a reservation (a conditional UPDATE), written with Kysely's builder. */
function takeQuery(db: Kysely, orgId: string) {
  return db
    .updateTable('orgs')
    .set((eb: Kysely) => ({
      subscription_credits: eb('subscription_credits', '-', 1),
      purchased_credits: eb('purchased_credits', '-', 0),
      period_credits: eb('period_credits', '+', 1),
      total_credits: eb('total_credits', '+', 1),
    }))
    .where('id', '=', orgId)
    .where('subscription_credits', '>=', 1)
    .where('purchased_credits', '>=', 0)
}

const AUTH_SQL = `SELECT k.*, o.suspended AS org_suspended, o.rate_per_second AS org_rate, p.version AS org_policy,
  o.subscription_credits + o.purchased_credits AS org_balance, o.period_end AS org_period_end
FROM api_keys k JOIN orgs o ON o.id = k.org_id LEFT JOIN org_policies p ON p.org_id = k.org_id WHERE k.id = `
const TAKE_SQL = `UPDATE orgs SET subscription_credits = subscription_credits - 1, purchased_credits = purchased_credits - 0,
  period_credits = period_credits + 1, total_credits = total_credits + 1
WHERE id = ? AND subscription_credits >= 1 AND purchased_credits >= 0`

async function kyselySqlite(k: Kysely, dir: string): Promise<string[][]> {
  const store = createSqliteStore(join(dir, 'kysely.sqlite'))
  try {
    const { keyId, orgId } = await seed(store, Date.now())
    const db = (store as SqliteStore).db
    const kdb = new k.mod.Kysely({ dialect: new k.mod.SqliteDialect({ database: db }) })
    const authStmt = db.prepare(`${AUTH_SQL}?`)
    const takeStmt = db.prepare(TAKE_SQL)
    const cached = new Map<string, ReturnType<typeof db.prepare>>()
    const viaCache = (q: { sql: string; parameters: readonly unknown[] }) => {
      let s = cached.get(q.sql)
      if (!s) cached.set(q.sql, (s = db.prepare(q.sql)))
      return s
    }
    if (JSON.stringify(authStmt.get(keyId)) !== JSON.stringify(await authQuery(kdb, keyId, k.mod.sql).executeTakeFirst())) throw new Error('Kysely auth read differs')
    const n = Math.max(2000, Math.floor(OPS / 4))
    const rows: string[][] = [['SQLite (file, WAL)', 'hand-written', 'Kysely execute', 'build+compile', 'compiled → cached stmt', 'execute ÷ hand (CPU)']]
    const hand = await timeCalls(n, () => authStmt.get(keyId))
    const exec = await timeCalls(n, () => authQuery(kdb, keyId, k.mod.sql).executeTakeFirst())
    const compile = await timeCalls(n, () => authQuery(kdb, keyId, k.mod.sql).compile())
    const compiled = await timeCalls(n, () => {
      const q = authQuery(kdb, keyId, k.mod.sql).compile()
      return viaCache(q).get(...(q.parameters as [string]))
    })
    rows.push(['auth read (join of 3 tables)', us(hand), us(exec), us(compile), us(compiled), ratio(exec, hand)])
    const handT = await timeCalls(n, () => takeStmt.run(orgId))
    const execT = await timeCalls(n, () => takeQuery(kdb, orgId).execute())
    const compileT = await timeCalls(n, () => takeQuery(kdb, orgId).compile())
    const compiledT = await timeCalls(n, () => {
      const q = takeQuery(kdb, orgId).compile()
      return viaCache(q).run(...(q.parameters as [string]))
    })
    rows.push(['credit take (conditional UPDATE)', us(handT), us(execT), us(compileT), us(compiledT), ratio(execT, handT)])
    await kdb.destroy().catch(() => undefined)
    return rows
  } finally {
    try {
      store.close()
    } catch {
      // Kysely's destroy closed the database already
    }
  }
}

async function kyselyPostgres(k: Kysely, url: string): Promise<string[][]> {
  const schema = `rc_kysely_${process.pid}`
  const store = await createPostgresStore({ connectionString: url, schema })
  const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 1 })
  try {
    const { keyId, orgId } = await seed(store, Date.now())
    const kdb = new k.mod.Kysely({ dialect: new k.mod.PostgresDialect({ pool }) })
    const n = Math.max(500, Math.floor(OPS / 20))
    const rows: string[][] = [['PostgreSQL (one connection)', 'hand-written', 'Kysely execute', 'build+compile', 'execute − hand (CPU µs)', 'execute ÷ hand (CPU)']]
    const hand = await timeCalls(n, () => pool.query(`${AUTH_SQL}$1`, [keyId]))
    const exec = await timeCalls(n, () => authQuery(kdb, keyId, k.mod.sql).executeTakeFirst())
    const compile = await timeCalls(n, () => authQuery(kdb, keyId, k.mod.sql).compile())
    rows.push(['auth read (join of 3 tables)', us(hand), us(exec), us(compile), (exec.cpu - hand.cpu).toFixed(1), ratio(exec, hand)])
    const takeText = TAKE_SQL.replace('?', '$1')
    const handT = await timeCalls(n, () => pool.query(takeText, [orgId]))
    const execT = await timeCalls(n, () => takeQuery(kdb, orgId).execute())
    const compileT = await timeCalls(n, () => takeQuery(kdb, orgId).compile())
    rows.push(['credit take (conditional UPDATE)', us(handT), us(execT), us(compileT), (execT.cpu - handT.cpu).toFixed(1), ratio(execT, handT)])
    return rows
  } finally {
    await pool.end().catch(() => undefined)
    await store.close()
    const admin = new pg.Pool({ connectionString: url })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
  }
}

/** CPU µs (wall µs). */
const us = (x: Cost) => `${x.cpu.toFixed(1)} (${x.wall.toFixed(0)})`

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-engines-'))
  const dns = await startDnsServer({ zones: {} })
  try {
    console.log(`riskcheck storage engines — Node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(1)}; median of ${ROUNDS} rounds (engines alternate)`)
    console.log('Figures: CPU µs of this process per operation (wall-clock µs in brackets, stretched by the load of other processes)')
    console.log(`\nStore calls (${OPS} per round; SQLite file = WAL, synchronous NORMAL, as the server opens it)`)
    const ops = await storeOps(dir)
    const rows = [['operation', ...ENGINES, 'sqlite :memory: ÷ memory']]
    for (const [name, by] of ops) rows.push([name, ...ENGINES.map((e) => us(by.get(e)!)), ratio(by.get('sqlite :memory:')!, by.get('memory')!)])
    table(rows)
    console.log(`\nRequests through the server, per request (app.inject, ${IN_FLIGHT} in flight, ${REQUESTS} per round)`)
    const reqs = await serverRequests(dir, dns.address)
    const rrows = [['scenario', ...ENGINES, 'sqlite :memory: ÷ memory']]
    for (const [name, by] of reqs) rrows.push([name, ...ENGINES.map((e) => us(by.get(e)!)), ratio(by.get('sqlite :memory:')!, by.get('memory')!)])
    table(rrows)
    if (values.kysely) {
      const k = await loadKysely(values.kysely)
      console.log(`\nKysely ${k.version} (engines: node ${k.engines}), running on Node ${process.version}: per query`)
      table(await kyselySqlite(k, dir))
      if (values['database-url']) table(await kyselyPostgres(k, values['database-url']))
    } else console.log('\nKysely: skipped (--kysely DIR, a folder where `npm install --prefix DIR kysely@0.28` ran)')
    console.log(`\nload after the runs: ${os.loadavg()[0]!.toFixed(1)}`)
  } finally {
    await dns.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((e: unknown) => {
  console.error(e)
  process.exitCode = 1
})

/**
 * Benchmark of the HTTP API against the same lookups called in-process, so the cost of HTTP + auth + credits
 * (+ the persistent SQLite cache write) is a measured ratio.
 *
 *   npx tsx scripts/bench/server.ts [--seconds 4] [--connections 16] [--rounds 2] [--database-url postgres://…] [--only ip] [--no-velocity] [--addresses 200000]
 *
 * With `--database-url` the server runs on the PostgreSQL store (a fresh schema, dropped at the end) instead of SQLite,
 * and the benchmark also counts the database round trips (queries sent) per request of each scenario. `--only ip`
 * runs the scenarios whose path contains the text (here the two `/v1/ip` ones).
 *
 * - Server: createServer on a temporary SQLite file, DNS pointed at the loopback fake DNS server (in a process of its
 *   own, ./support/dns-process.ts, as a real resolver is), a live key of an org with plenty of credits and a rate limit
 *   out of the way, listening on 127.0.0.1.
 * - Load: autocannon in a separate process, POST /v1/ip and POST /v1/email (smtp false), each with
 *   `bypass_cache: true` so every request is a fresh, billed lookup (reserve + refund/settle in SQLite), and once
 *   without it (the cache-hit path). The billed `/v1/ip` requests each ask about another address (`--addresses`
 *   distinct ones in turn, as a service's callers do; `--addresses 1`: 8.8.8.8 every time, whose velocity counts
 *   make every answer from the 50th a block); the other scenarios send one body.
 * - Bare HTTP: the same lookups behind a minimal Fastify app (no auth, no credits, no SQLite, plain JSON.stringify),
 *   loaded the same way — the floor that HTTP itself costs on this machine, so the part added by auth + credits +
 *   rate limits + idempotency + schema serialization is separated from transport.
 * - In-process: the same lookups through `createRiskcheck(...)` with the same options, `connections` callers in a
 *   closed loop for the same time.
 * The machine's cores are shared between the server and the load generator in the HTTP runs; the in-process runs have
 * the process to themselves. Numbers are relative.
 */
import Fastify from 'fastify'
import { mkdtempSync, rmSync } from 'node:fs'
import os, { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { createRiskcheck } from '../../src/riskcheck.js'
import { createServer } from '../../src/server/app.js'
import { addressBodies, autocannon, benchCaller, bodyStream, type Bodies } from './support/server-load.js'
import { createPostgresStore, type PostgresStore } from '../../src/server/store/postgres/store.js'
import pg from 'pg'
import { startDnsProcess } from './support/dns-process.js'

const { values } = parseArgs({
  options: { seconds: { type: 'string' }, connections: { type: 'string' }, rounds: { type: 'string' }, 'database-url': { type: 'string' }, only: { type: 'string' }, 'no-velocity': { type: 'boolean' }, addresses: { type: 'string' } },
})
const DATABASE_URL = values['database-url']
const SECONDS = Number(values.seconds ?? 4)
const CONNECTIONS = Number(values.connections ?? 16)
/** Distinct addresses the billed `/v1/ip` requests ask about in turn. */
const ADDRESSES = Number(values.addresses ?? 200_000)
/** HTTP runs alternate server/bare this many times; the best run of each counts (the least disturbed by other load). */
const ROUNDS = Number(values.rounds ?? 2)


interface Run {
  rps: number
  p50: number
  p99: number
  requests: number
  errors: number
}

/** Runs autocannon in a child process and reads its JSON summary: `body`, or each of `bodies` in turn. */
async function loadTest(url: string, body: unknown, key: string, bodies?: Bodies): Promise<Run> {
  const r = await autocannon({ url, secret: key, ...(bodies ? { bodies } : { body }), connections: CONNECTIONS, seconds: SECONDS })
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total, errors: r.non2xx + r.errors }
}

/** `CONNECTIONS` callers calling `fn` in a loop for SECONDS; per-call latency percentiles. */
async function inProcess(fn: () => Promise<unknown>): Promise<Run> {
  const latencies: number[] = []
  let errors = 0
  const end = performance.now() + SECONDS * 1000
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) {
        const s = performance.now()
        try {
          await fn()
        } catch {
          errors++
        }
        latencies.push(performance.now() - s)
      }
    }),
  )
  const seconds = (performance.now() - t0) / 1000
  latencies.sort((a, b) => a - b)
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0
  return { rps: latencies.length / seconds, p50: pct(50), p99: pct(99), requests: latencies.length, errors }
}

async function main(): Promise<void> {
  // the fake DNS server in a process of its own: its answers cost the server's process nothing, as a real resolver's
  const dns = await startDnsProcess({
      'shop-example.com': { MX: [{ priority: 10, exchange: 'mx.shop-example.com' }], TXT: ['v=spf1 mx -all'] },
      'mx.shop-example.com': { A: ['192.0.2.25'] },
      '_dmarc.shop-example.com': { TXT: ['v=DMARC1; p=reject'] },
  })
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bench-'))
  // No SMTP, no RDAP: every answer comes from local data and the loopback DNS server (no internet).
  const riskcheck = { dns: { servers: [dns.address] }, smtp: { enabled: false }, rdap: { enabled: false } }
  // PostgreSQL: a schema of its own; every query of the store's pool is counted (round trips).
  const schema = `rc_bench_${process.pid}`
  let queries = 0
  const byName = new Map<string, number>()
  const countQuery = (args: unknown[]) => {
    queries++
    const q = args[0] as string | { name?: string; text: string }
    const name = typeof q === 'string' ? q.slice(0, 40) : (q.name ?? q.text.slice(0, 40))
    byName.set(name, (byName.get(name) ?? 0) + 1)
  }
  let pgStore: PostgresStore | undefined
  if (DATABASE_URL) {
    // Every query of every client is one round trip (pool.query too runs on a client): count them at the class.
    const clientQuery = pg.Client.prototype.query as (...a: unknown[]) => unknown
    pg.Client.prototype.query = function (this: pg.Client, ...a: unknown[]) {
      countQuery(a)
      return clientQuery.apply(this, a)
    } as typeof pg.Client.prototype.query
    pgStore = await createPostgresStore({ connectionString: DATABASE_URL, schema })
  }
  const app = createServer({ db: pgStore ?? join(dir, 'bench.sqlite'), riskcheck, purgeIntervalMs: 0, ...(values['no-velocity'] ? { velocity: false } : {}) })
  const rc = createRiskcheck({ ...riskcheck, cache: { maxEntries: 100_000 } })
  const bare = Fastify()
  bare.post('/v1/ip', async (req) => {
    const b = req.body as { ip: string; bypass_cache?: boolean }
    return { success: true, data: await rc.ip(b.ip, { bypassCache: b.bypass_cache === true }) }
  })
  bare.post('/v1/email', async (req) => {
    const b = req.body as { email: string; smtp?: boolean; bypass_cache?: boolean }
    return { success: true, data: await rc.email(b.email, { smtp: b.smtp ?? null, bypassCache: b.bypass_cache === true }) }
  })
  try {
    await app.listen({ host: '127.0.0.1', port: 0 })
    await bare.listen({ host: '127.0.0.1', port: 0 })
    const bareBase = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`
    const { orgId, secret } = await benchCaller(app.store)
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

    // the billed IP requests' addresses: the server's and the bare route's runs each go on from where the last stopped
    const addresses = ADDRESSES > 1 ? addressBodies(ADDRESSES, { bypass_cache: true }) : [{ ip: '8.8.8.8', bypass_cache: true }]
    let inProcessNext = 0
    const nextAddress = () => addresses[inProcessNext++ % addresses.length]!.ip
    const all: Array<{ name: string; path: string; body: unknown; bodies?: { server: Bodies; bare: Bodies }; call: () => Promise<unknown> }> = [
      {
        name: `POST /v1/ip (fresh, billed${addresses.length > 1 ? `, ${addresses.length.toLocaleString('en-US')} addresses` : ''})`,
        path: '/v1/ip',
        body: addresses[0],
        ...(addresses.length > 1 ? { bodies: { server: bodyStream(addresses), bare: bodyStream(addresses) } } : {}),
        call: () => rc.ip(nextAddress(), { bypassCache: true }),
      },
      { name: 'POST /v1/ip (cache hit)', path: '/v1/ip', body: { ip: '1.1.1.1' }, call: () => rc.ip('1.1.1.1') },
      {
        name: 'POST /v1/email smtp:false (fresh, billed)',
        path: '/v1/email',
        body: { email: 'jane@shop-example.com', smtp: false, bypass_cache: true },
        call: () => rc.email('jane@shop-example.com', { smtp: false, bypassCache: true }),
      },
      {
        name: 'POST /v1/email smtp:false (cache hit)',
        path: '/v1/email',
        body: { email: 'john@shop-example.com', smtp: false },
        call: () => rc.email('john@shop-example.com', { smtp: false }),
      },
    ]
    const scenarios = all.filter((s) => values.only === undefined || s.path.includes(values.only))

    // Warm up: data files loaded, DNS answers cached, cache entries present, JIT warm.
    for (const s of scenarios) {
      for (let i = 0; i < 200; i++) await s.call()
      const r = await fetch(`${base}${s.path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(s.body),
      })
      const body = (await r.json()) as { success: boolean; data?: { partial: boolean } }
      if (r.status !== 200 || !body.success || body.data?.partial) throw new Error(`warm-up of ${s.path} failed: ${r.status} ${JSON.stringify(body)}`)
    }

    console.log(`riskcheck server benchmark — ${SECONDS} s per run, best of ${ROUNDS} alternating HTTP runs, ${CONNECTIONS} connections / in-process callers, Node ${process.version}, load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs`)
    console.log(`HTTP: autocannon in a separate process → loopback server (live key, ${pgStore ? 'PostgreSQL' : 'SQLite'} ledger + cache, DNS on a loopback fake)`)
    console.log('bare HTTP: the same library calls behind a minimal Fastify route (no auth, credits, SQLite or schemas)')
    console.log('in-process: createRiskcheck().ip()/.email() with the same options (memory cache, unmetered)\n')
    const rows: string[][] = [
      ['scenario', 'server req/s', 'p50 ms', 'p99 ms', 'bare HTTP req/s', 'p99 ms', 'in-process/s', 'p99 ms', 'in-proc ÷ server', 'server ÷ bare', 'CPU µs/req', 'bare CPU µs/req', 'bare ÷ server CPU', ...(pgStore ? ['db trips/req'] : [])],
    ]
    for (const s of scenarios) {
      const local = await inProcess(s.call)
      let floor: Run | undefined
      let http: Run | undefined
      let trips = 0
      let served = 0
      // CPU of this process (the server under load, or the bare route) per request: what the load of other work on
      // the machine changes least
      const cpu = { server: 0, bare: 0, bareRequests: 0 }
      const cpuMs = () => {
        const u = process.cpuUsage()
        return (u.user + u.system) / 1000
      }
      for (let round = 0; round < ROUNDS; round++) {
        let c0 = cpuMs()
        const f = await loadTest(`${bareBase}${s.path}`, s.body, secret, s.bodies?.bare)
        cpu.bare += cpuMs() - c0
        cpu.bareRequests += f.requests
        const before = queries
        byName.clear()
        // requests answered, as the store counted them (autocannon's totals leave out some of the run)
        const lookupsBefore = (await app.store.getOrg(orgId, Date.now()))!.usage.totalLookups
        c0 = cpuMs()
        const h = await loadTest(`${base}${s.path}`, s.body, secret, s.bodies?.server)
        cpu.server += cpuMs() - c0
        const answered = (await app.store.getOrg(orgId, Date.now()))!.usage.totalLookups - lookupsBefore
        trips += queries - before - 2 // the two usage reads around the run
        served += answered
        if (pgStore) console.log(`  ${s.name}: ${[...byName].map(([n, c]) => `${n} ${(c / Math.max(1, answered)).toFixed(2)}`).join(', ')} per request`)
        if (!floor || f.rps > floor.rps) floor = f
        if (!http || h.rps > http.rps) http = h
      }
      if (!floor || !http) throw new Error('no runs')
      if (http.errors + floor.errors + local.errors > 0) console.warn(`  ! ${s.name}: ${http.errors} server errors, ${floor.errors} bare errors, ${local.errors} in-process errors`)
      rows.push([
        s.name,
        http.rps.toFixed(0),
        http.p50.toFixed(1),
        http.p99.toFixed(1),
        floor.rps.toFixed(0),
        floor.p99.toFixed(1),
        local.rps.toFixed(0),
        local.p99.toFixed(2),
        `${(local.rps / http.rps).toFixed(1)}×`,
        `${((100 * http.rps) / floor.rps).toFixed(0)} %`,
        ((1000 * cpu.server) / Math.max(1, served)).toFixed(0),
        ((1000 * cpu.bare) / Math.max(1, cpu.bareRequests)).toFixed(0),
        `${((100 * cpu.bare) / Math.max(1, cpu.bareRequests) / (cpu.server / Math.max(1, served))).toFixed(0)} %`,
        ...(pgStore ? [(trips / Math.max(1, served)).toFixed(2)] : []),
      ])
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
    for (const r of rows) console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '))
    console.log(`\nload average after the runs: ${os.loadavg()[0]!.toFixed(1)} (the machine is shared; HTTP numbers vary with it)`)
    const account = await app.store.getOrg(orgId, Date.now())
    console.log(`\ncredits spent over HTTP: ${account!.usage.totalCredits} for ${account!.usage.totalLookups} lookups (cache hits are free)`)
  } finally {
    await app.close()
    if (pgStore) {
      await pgStore.close()
      const admin = new pg.Pool({ connectionString: DATABASE_URL })
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    }
    await bare.close()
    await rc.close()
    dns.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((e: unknown) => {
  console.error(e)
  process.exitCode = 1
})

/**
 * PostgreSQL outages as they happen, against a server answering on a private cluster (test/pg-cluster.ts): the
 * cluster crashed (`stop -m immediate`) and started again, and the database hung behind a frozen TCP proxy (a
 * partition: connections stay open, nothing answers). While it lasts every request gets 503 UPSTREAM_UNAVAILABLE in
 * the envelope with Retry-After — never 500, never 429 — while still frozen (so no request waits the partition out),
 * GET /readyz says not ready, the log says so once and once more when it is back, the dashboard answers a 503 page
 * with its security headers; afterwards the balance dropped by exactly the credits of the answers given. One cluster
 * serves the file (creating one is most of a suite's CPU): the crash in its database `postgres`, the partition in a
 * database of its own.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { DependencyDown } from '../src/server/outage.js'
import { boundedPoolSettings, guardPool } from '../src/server/store/postgres/guard.js'
import { openPostgresServerStores, type PostgresServerStores } from '../src/server/store/postgres/server.js'
import { createPgCluster, freezableProxy, pgClusterAvailable, type FreezableProxy, type PgCluster } from './pg-cluster.js'

const RUN = pgClusterAvailable('test/outage-postgres.test.ts')
const STARTING_CREDITS = 1000
/** The set-up hook's budget: creating and starting a private cluster takes seconds idle, a minute or more loaded. */
const HOOK_MS = 300_000

interface Answer {
  status: number
  retryAfter: string | null
  body: { success: boolean; data?: { metadata?: { credits_used?: number } }; error?: { code: string; message: string; docs_url: string; request_id: string } }
}

/**
 * A server on `url` whose stores bound each statement by `timeoutMs`, listening. Its start reads the database (the
 * org policies): on a loaded machine a fresh cluster's first statements can outlast a short bound, and the server
 * then takes the database for down — so a start that fails so is tried again with fresh stores, until one listens
 * (the hook's budget bounds it). The IP data is loaded before it listens, as `riskcheck serve` does: its load on the
 * first lookup blocks the event loop past the bound of statements in flight.
 */
async function listenWhenReady(url: string, timeoutMs: number) {
  for (;;) {
    const stores: PostgresServerStores = await openPostgresServerStores({ connectionString: url }, { migrate: false, timeoutMs })
    const log: string[] = []
    const app: RiskcheckServer = createServer({
      db: stores.store,
      orgPolicies: stores.orgPolicies,
      dashboard: { teamStore: await stores.teamStore() },
      riskcheck: { offline: true },
      purgeIntervalMs: 0,
      logger: { level: 'warn', stream: { write: (line: string) => void log.push(line) } },
    })
    try {
      app.riskcheck.env.ctx.sources.ip.warm()
      await app.listen({ host: '127.0.0.1', port: 0 })
      return { app, stores, log }
    } catch (e) {
      await app.close().catch(() => undefined)
      await stores.close().catch(() => undefined)
      if (!(e instanceof DependencyDown)) throw e
    }
  }
}

/**
 * A server in this process on the cluster (through `viaPort` when given), an org and a live key; log lines kept. The
 * set-up (migrations, the org, its key) goes straight to the cluster with a bound as long as the hook's: on a loaded
 * machine a fresh cluster's first statements are slow, and only the serving stores need the short bound `timeoutMs`
 * (an outage answered at once).
 */
async function startServer(cluster: PgCluster, viaPort: number | undefined, timeoutMs: number, database = 'postgres') {
  const direct = cluster.url.replace(/\/postgres$/, `/${database}`)
  const url = viaPort ? direct.replace(`:${cluster.port}/`, `:${viaPort}/`) : direct
  const setup = await openPostgresServerStores({ connectionString: direct }, { timeoutMs: HOOK_MS })
  const now = Date.now()
  const org = await setup.store.createOrg({ name: 'Outage', planId: 'starter' }, now)
  await setup.store.addCredits(org.id, STARTING_CREDITS, 'top_up', now)
  const { secret } = await issueApiKey(setup.store, { orgId: org.id, name: 'outage' }, now)
  await setup.teamStore()
  await setup.close()
  const { app, stores, log } = await listenWhenReady(url, timeoutMs)
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  let n = 0
  const lookup = async (): Promise<Answer> => {
    n++
    const res = await fetch(`${base}/v1/ip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ip: `11.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` }),
    })
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Answer['body'] }
  }
  const readyz = async () => {
    const res = await fetch(`${base}/readyz`)
    return { status: res.status, body: (await res.json()) as { status: string; checks: Array<{ name: string; ok: boolean; message?: string }> } }
  }
  const balance = async () => (await stores.store.balance(org.id, Date.now())) as number
  const close = async () => {
    await app.close()
    await stores.close()
  }
  return { app, base, log, lookup, readyz, balance, close }
}

/** What every request during an outage gets: 503 UPSTREAM_UNAVAILABLE in the envelope, with Retry-After. */
function expectUnavailable(answers: Answer[]): void {
  for (const a of answers) {
    expect(a.status).toBe(503)
    expect(a.retryAfter).toMatch(/^[1-9][0-9]*$/)
    expect(a.body.success).toBe(false)
    expect(a.body.error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' })
    expect(a.body.error!.docs_url).toMatch(/#upstream_unavailable$/)
    expect(a.body.error!.request_id).toMatch(/^req_/)
  }
}

const credits = (answers: Answer[]) => answers.filter((a) => a.status === 200).reduce((n, a) => n + (a.body.data?.metadata?.credits_used ?? 0), 0)
const lines = (log: string[], text: string) => log.filter((l) => l.includes(text))

/**
 * `n` answered lookups (200) outside an outage the test makes. On a loaded machine a statement can outlast the short
 * bound of the serving stores, and the server takes the database for down until it answers again: a 503 then is
 * waited out (readiness says when) and the lookup asked again. Returns every answer (a 503 charges nothing).
 */
async function served(server: Awaited<ReturnType<typeof startServer>>, n: number): Promise<Answer[]> {
  const all: Answer[] = []
  while (all.filter((a) => a.status === 200).length < n) {
    const a = await server.lookup()
    all.push(a)
    if (a.status === 503 && a.body.error?.code === 'UPSTREAM_UNAVAILABLE') await until(server.readyz, 200)
    else expect(a.status).toBe(200)
  }
  return all
}

/** Asks `readyz` until it answers `status`, 200 ms apart (as long as it takes: the test's budget bounds it). */
async function until(readyz: () => Promise<{ status: number }>, status: number): Promise<void> {
  while ((await readyz()).status !== status) await new Promise((r) => setTimeout(r, 200))
}

let cluster: PgCluster
beforeAll(async () => {
  if (RUN) cluster = await createPgCluster()
}, HOOK_MS)
afterAll(() => cluster?.drop())

describe.skipIf(!RUN)('PostgreSQL crashed and started again under a serving server', () => {
  let server: Awaited<ReturnType<typeof startServer>>
  /** Set while the test has the cluster down: the next suite's cluster is started again after a failure. */
  let crashed = false
  beforeAll(async () => {
    server = await startServer(cluster, undefined, 2000)
  }, HOOK_MS)
  afterAll(async () => {
    await server?.close().catch(() => undefined)
    if (crashed) {
      cluster.start()
      await cluster.ready()
    }
  }, HOOK_MS)

  it('answers 503 UPSTREAM_UNAVAILABLE with Retry-After (never 500 or 429), says not ready, logs it once, and bills exactly what it answered', async () => {
    const before = await server.balance()
    const answers = await served(server, 5)
    server.log.splice(0) // what the test's outage logs, from here on
    expect((await server.readyz()).status).toBe(200)

    crashed = true
    cluster.crash()
    // more requests than the anonymous limit (20 a second) allows: a key that cannot be read is no failed sign-in
    const during = await Promise.all(Array.from({ length: 30 }, () => server.lookup()))
    for (let i = 0; i < 10; i++) during.push(await server.lookup())
    expectUnavailable(during)
    const ready = await server.readyz()
    expect(ready.status).toBe(503)
    expect(ready.body.status).toBe('not_ready')
    expect(ready.body.checks.find((c) => c.name === 'database')).toMatchObject({ ok: false })
    // the dashboard: a page that reads the session answers a 503 page with its security headers
    const page = await fetch(`${server.base}/dashboard/`, { headers: { cookie: 'rc_session=abc' }, redirect: 'manual' })
    expect(page.status).toBe(503)
    expect(page.headers.get('content-type')).toMatch(/text\/html/)
    expect(page.headers.get('content-security-policy')).toBeTruthy()
    expect(page.headers.get('x-frame-options')).toBe('DENY')
    expect(page.headers.get('x-content-type-options')).toBe('nosniff')
    expect(page.headers.get('retry-after')).toMatch(/^[1-9]/)

    cluster.start()
    await cluster.ready()
    crashed = false
    await until(server.readyz, 200)
    const logged = [...server.log] // (a slow statement after it would be an outage of its own)
    const after = await served(server, 5)

    expect(lines(logged, 'is unreachable')).toHaveLength(1)
    expect(lines(logged, 'answers again after')).toHaveLength(1)
    expect(lines(server.log, 'internal error')).toHaveLength(0)
    expect(logged.length).toBeLessThanOrEqual(3)
    expect(before - (await server.balance())).toBe(credits([...answers, ...during, ...after]))
  }, 120_000)
})

describe.skipIf(!RUN)('PostgreSQL hung behind a frozen proxy', () => {
  let proxy: FreezableProxy
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    // a database of its own: nothing the crash suite stored is read here
    const admin = new pg.Client({ connectionString: cluster.url })
    await admin.connect()
    await admin.query('CREATE DATABASE rc_partition')
    await admin.end()
    proxy = await freezableProxy(cluster.port)
    server = await startServer(cluster, proxy.port, 1000, 'rc_partition')
  }, HOOK_MS)
  afterAll(async () => {
    await server?.close().catch(() => undefined)
    await proxy?.close()
  })

  it('answers every request 503 while the partition lasts — more of them at once than the pool holds — and recovers with money exact', async () => {
    const before = await server.balance()
    const answers = await served(server, 5)
    server.log.splice(0) // what the test's outage logs, from here on

    proxy.freeze()
    // 30 at once (the pool holds 10), then more one by one: each answered while the proxy is still frozen
    const during = await Promise.all(Array.from({ length: 30 }, () => server.lookup()))
    for (let i = 0; i < 5; i++) during.push(await server.lookup())
    expectUnavailable(during)
    const ready = await server.readyz()
    expect(ready.status).toBe(503)
    expect(ready.body.checks.find((c) => c.name === 'database')).toMatchObject({ ok: false })

    proxy.thaw()
    await until(server.readyz, 200)
    const logged = [...server.log] // (a slow statement after it would be an outage of its own)
    const after = await served(server, 5)
    expect(lines(logged, 'is unreachable')).toHaveLength(1)
    expect(lines(logged, 'answers again after')).toHaveLength(1)
    expect(lines(server.log, 'internal error')).toHaveLength(0)
    expect(before - (await server.balance())).toBe(credits([...answers, ...during, ...after]))
  }, 120_000)

  it('a statement lost in the partition whose bound ends after the database answered again starts no second outage', async () => {
    const url = cluster.url.replace(`:${cluster.port}/`, `:${proxy.port}/`)
    const { pool, availability } = guardPool(new pg.Pool({ connectionString: url, max: 4, ...boundedPoolSettings(1500) }))
    const changes: string[] = []
    availability.onChange((c) => changes.push(c.state))
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
    try {
      await Promise.all([pool.query('SELECT 1'), pool.query('SELECT 1')]) // two connections open before the partition
      // Conclusive when the late statement fails after the recovery (the probe is quicker than the rest of its
      // bound); on a loaded machine it may fail while still down, and counts there: the scenario is run again.
      for (let attempt = 1; ; attempt++) {
        changes.splice(0)
        proxy.freeze()
        const first = pool.query('SELECT 1').catch((e: Error) => e) // lost: its bound starts the outage
        await sleep(750)
        let afterRecovery = false
        const late = pool.query('SELECT 2').catch((e: Error) => {
          afterRecovery = changes.includes('up')
          return e
        })
        expect(((await first) as Error).message).toMatch(/Query read timeout/)
        expect(availability.down).toBe(true)
        proxy.thaw()
        while (!(await availability.check()).ok) await sleep(100)
        const lateErr = (await late) as Error
        expect(lateErr.message).toMatch(/Query read timeout/)
        if (afterRecovery) {
          availability.failed(lateErr) // reported again, as the server's error handler does: still stale
          expect(changes).toEqual(['down', 'up'])
          expect(availability.down).toBe(false)
          expect((await pool.query('SELECT 3 AS n')).rows).toEqual([{ n: 3 }])
          break
        }
        expect(attempt, 'the late statement never failed after the recovery').toBeLessThan(5)
      }
    } finally {
      availability.close()
      await pool.end()
    }
  }, 120_000)
})

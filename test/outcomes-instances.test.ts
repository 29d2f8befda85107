/**
 * Outcomes across instances: a label recorded on one instance is applied by the very next request of the org on
 * another — two `riskcheck serve` processes on one SQLite file; two on one PostgreSQL schema and one Redis
 * (./scale-out-harness.ts; needs RISKCHECK_TEST_DATABASE_URL and RISKCHECK_TEST_REDIS_URL); and two servers in this
 * process on one PostgreSQL schema, counting statements: once an instance read the org's labels at their version,
 * a lookup of a labelled org costs the statements of an org without outcomes (the version comes with the API key).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createRateLimiter } from '../src/server/rate-limit.js'
import { createPostgresStore, type PostgresStore } from '../src/server/store/postgres/store.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { fakeClock } from './clock.js'
import { call, scaleOut, type Instance } from './scale-out-harness.js'
import { nodeArgs } from './child-process.js'

type Answer = { success: boolean; data: { request: { id: string }; risk: { factors: string[] }; details: Record<string, unknown> } }
const factorsOf = (r: { body: Answer }) => r.body.data.risk.factors
const record = (base: string, secret: string, outcomes: unknown[]) => call<{ data: { results: Array<{ status: string }> } }>(base, secret, 'POST', '/v1/outcomes', { outcomes })

/** The shared scenario: labels recorded on A apply on B's very next request, and the reverse clears them. */
async function acrossInstances(a: string, b: string, secret: string): Promise<void> {
  // B answers the org first (it holds the org's labels: none)
  const first = await call<Answer>(b, secret, 'POST', '/v1/email', { email: 'jane.doe@gmail.com' })
  expect(first.status).toBe(200)
  expect(factorsOf(first)).not.toContain('email_bounced_before')
  expect((await record(a, secret, [{ input: 'JaneDoe+x@gmail.com', type: 'email', outcome: 'bounced' }])).body.data.results[0]!.status).toBe('recorded')
  const bounced = await call<Answer>(b, secret, 'POST', '/v1/email', { email: 'jane.doe@gmail.com' })
  expect(factorsOf(bounced)).toContain('email_bounced_before')
  // by request id, recorded on B about an answer A gave: A's next answer for its IP carries fraud
  const ipAnswer = await call<Answer>(a, secret, 'POST', '/v1/ip', { ip: '203.0.113.9' })
  expect(factorsOf(ipAnswer)).not.toContain('reported_fraud_before')
  expect((await record(b, secret, [{ request_id: ipAnswer.body.data.request.id, outcome: 'chargeback' }])).body.data.results[0]!.status).toBe('recorded')
  expect(factorsOf(await call<Answer>(a, secret, 'POST', '/v1/ip', { ip: '203.0.113.9' }))).toContain('reported_fraud_before')
  // cleared on the other instance: delivered on B, legitimate on A
  await record(b, secret, [{ input: 'jane.doe@gmail.com', type: 'email', outcome: 'delivered' }])
  expect(factorsOf(await call<Answer>(a, secret, 'POST', '/v1/email', { email: 'jane.doe@gmail.com' }))).not.toContain('email_bounced_before')
  await record(a, secret, [{ request_id: ipAnswer.body.data.request.id, outcome: 'legitimate' }])
  expect(factorsOf(await call<Answer>(b, secret, 'POST', '/v1/ip', { ip: '203.0.113.9' }))).not.toContain('reported_fraud_before')
}

describe('two `riskcheck serve` processes on one SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-outcomes-'))
  const file = join(dir, 'shared.sqlite')
  const children: ReturnType<typeof spawn>[] = []
  let secret: string
  let urls: string[] = []

  const serve = () =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), 'serve', '--port', '0', '--json', '--offline', '--log-level', 'warn', '--db', file], { stdio: ['ignore', 'pipe', 'pipe'] })
      children.push(child)
      let out = ''
      let err = ''
      child.stderr!.on('data', (d) => (err += d))
      child.stdout!.on('data', (d) => {
        out += d
        const m = /"url":"([^"]+)"/.exec(out)
        if (m) resolve(m[1]!)
      })
      child.on('close', (code) => reject(new Error(`serve exited ${code}: ${err}`)))
    })

  beforeAll(async () => {
    const store = createSqliteStore(file)
    const now = Date.now()
    const org = await store.createOrg({ name: 'Acme', planId: 'starter' }, now)
    secret = (await issueApiKey(store, { orgId: org.id, name: 'live' }, now)).secret
    store.close()
    urls = await Promise.all([serve(), serve()])
  }, 120_000)

  afterAll(async () => {
    await Promise.all(
      children.map((c) => {
        if (c.exitCode !== null || c.signalCode !== null) return undefined
        const gone = new Promise((r) => c.once('close', r))
        c.kill('SIGTERM')
        return gone
      }),
    )
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('a label recorded on A applies on the next request on B; clearing it on either applies on the other', async () => {
    await acrossInstances(urls[0]!, urls[1]!, secret)
  }, 60_000)
})

const h = scaleOut('outcomes across instances')

describe.skipIf(!h.enabled)('two `riskcheck serve` processes on one PostgreSQL and one Redis', () => {
  let a: Instance
  let b: Instance
  beforeAll(async () => {
    await h.open()
    // a wide database bound: the shared test machine may be busy while the processes start
    a = await h.serve(['--database-timeout', '30s'])
    b = await h.serve(['--database-timeout', '30s'])
  }, 120_000)
  afterAll(() => h.close(), 60_000)

  it('a label recorded on A applies on the next request on B; clearing it on either applies on the other', async () => {
    const { secret } = await h.orgWithKey(1000)
    await acrossInstances(a.url, b.url, secret)
  }, 60_000)
})

const url = process.env.RISKCHECK_TEST_DATABASE_URL

describe.skipIf(!url)('two servers on one PostgreSQL schema: statements of a lookup', () => {
  const schema = `rc_outc_${randomBytes(5).toString('hex')}`
  const clock = fakeClock('2026-11-22T00:00:00Z')
  const counters = new WeakMap<object, { n: number }>()
  const clientQuery = pg.Client.prototype.query
  const pools: pg.Pool[] = []
  const stores: PostgresStore[] = []
  const servers: RiskcheckServer[] = []
  const bStatements = { n: 0 }
  let rate = 1_000_000
  let keys: { labelled: string; plain: string }

  const inject = async (app: RiskcheckServer, path: string, key: string, body: unknown) => {
    rate += 1000
    const r = await app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) })
    return { status: r.statusCode, body: JSON.parse(r.body) as Answer }
  }

  beforeAll(async () => {
    pg.Client.prototype.query = function (this: object, ...args: unknown[]) {
      const c = counters.get(this)
      const text = String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text)
      // the review queue is written for answers whose action is review: the plain org's, not the labelled org's
      // (its label blocks), so it is left out of a comparison of the statements labels cost
      if (c && !text.startsWith('INSERT INTO reviews')) c.n++
      return (clientQuery as (...a: unknown[]) => unknown).apply(this, args)
    } as typeof clientQuery
    for (let i = 0; i < 2; i++) {
      const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 4 })
      if (i === 1) pool.on('connect', (c) => counters.set(c, bStatements))
      pools.push(pool)
      stores.push(await createPostgresStore({ pool, schema }))
      servers.push(
        createServer({
          db: stores[i]!,
          dashboard: false,
          purgeIntervalMs: 0,
          webhookIntervalMs: 0,
          instanceLeaseMs: 3_600_000,
          rateLimiter: createRateLimiter({ now: () => rate }),
          riskcheck: { offline: true, now: clock.now },
        }),
      )
      await servers[i]!.ready()
    }
    const now = clock.now().getTime()
    const org = await stores[0]!.createOrg({ name: 'Acme', planId: 'starter' }, now)
    const plain = await stores[0]!.createOrg({ name: 'Plain', planId: 'starter' }, now)
    keys = {
      labelled: (await issueApiKey(stores[0]!, { orgId: org.id, name: 'l' }, now)).secret,
      plain: (await issueApiKey(stores[0]!, { orgId: plain.id, name: 'p' }, now)).secret,
    }
  }, 60_000)

  afterAll(async () => {
    pg.Client.prototype.query = clientQuery
    for (const s of servers) await s.close()
    for (const s of stores) await s.close()
    const admin = new pg.Pool({ connectionString: url })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
    for (const p of pools) await p.end().catch(() => undefined)
  })

  it('B reads the labels once per version: the next lookups cost what they cost for an org without outcomes', async () => {
    const [a, b] = servers as [RiskcheckServer, RiskcheckServer]
    const cost = async (key: string) => {
      const before = bStatements.n
      const r = await inject(b, '/v1/ip', key, { ip: '198.51.100.7' })
      expect(r.status).toBe(200)
      // a turn's writes (the answer's input hashes, the last-use marks) may follow the response: count them with it
      for (let seen = -1; seen !== bStatements.n; ) {
        seen = bStatements.n
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      return { n: bStatements.n - before, factors: r.body.data.risk.factors }
    }
    // warm: the cache holds the answer, last-use writes are done
    await cost(keys.plain)
    await cost(keys.labelled)
    const recorded = await inject(a, '/v1/outcomes', keys.labelled, { outcomes: [{ input: '198.51.100.7', type: 'ip', outcome: 'fraud' }] })
    expect(recorded.status).toBe(200)
    const reading = await cost(keys.labelled)
    expect(reading.factors).toContain('reported_fraud_before')
    // the fewest of three lookups: a background write (a key's last use, a usage tally) may land in any one of them
    const fewest = async (key: string) => {
      const runs = [await cost(key), await cost(key), await cost(key)]
      return { n: Math.min(...runs.map((x) => x.n)), factors: runs[2]!.factors }
    }
    const plain = await fewest(keys.plain)
    const labelled = await fewest(keys.labelled)
    expect(labelled.factors).toContain('reported_fraud_before')
    expect(plain.factors).not.toContain('reported_fraud_before')
    if (process.env.RISKCHECK_PRINT_COUNTS) console.log('statements per lookup on B:', { plain: plain.n, labelled: labelled.n, reading: reading.n })
    expect(labelled.n).toBe(plain.n)
    expect(reading.n).toBe(plain.n + 1) // the one read of the labels with their version
    // the next change: one read again, then none
    await inject(a, '/v1/outcomes', keys.labelled, { outcomes: [{ input: '198.51.100.7', type: 'ip', outcome: 'legitimate' }] })
    const cleared = await cost(keys.labelled)
    expect(cleared.factors).not.toContain('reported_fraud_before')
    expect(cleared.n).toBe(plain.n + 1)
    expect((await cost(keys.labelled)).n).toBe(plain.n)
  }, 60_000)
})

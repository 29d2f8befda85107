/**
 * Velocity in the HTTP service on SQLite: live checks of an org counted per IP, network, email domain, email and
 * phone on the combined check and the single lookups; test keys and other orgs counted apart; the factor of the org's
 * policy past its threshold; only keyed hashes in the file, deleted once out of the day window; two servers on one
 * file count exactly (in one process, and as two `serve` processes under concurrent requests); the serve flags.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { runServe } from '../src/cli/serve-command.js'
import { parsePolicy } from '../src/scoring/index.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createSqliteOrgPolicyStore } from '../src/server/store/sqlite/org-policies.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import { createSqliteVelocityStore } from '../src/server/store/sqlite/velocity.js'
import { DAY_MS, HOUR_MS } from '../src/velocity/store.js'
import { memoryIO } from './helpers.js'
import { serveInProcess, startTestServer, type TestServer } from './server-helpers.js'
import { nodeArgs } from './child-process.js'

const vel = (s: { body: any }) => s.body.data.details.velocity
const factors = (s: { body: any }) => s.body.data.risk.factors as string[]
const rows = (app: RiskcheckServer) => (app.store as SqliteStore).db.prepare('SELECT key, at FROM velocity_hits').all() as Array<{ key: string; at: number }>

describe('velocity in the service (SQLite)', () => {
  const servers: TestServer[] = []
  const dir = mkdtempSync(join(tmpdir(), 'rc-velocity-'))
  afterAll(async () => {
    for (const s of servers) await s.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const start = async (options: Parameters<typeof startTestServer>[0] = {}) => {
    const s = await startTestServer(options)
    servers.push(s)
    return s
  }

  it('counts each kind for the combined check and the ip, email and phone lookups', async () => {
    const s = await start()
    const check = (i: number) => s.post('/v1/check', { ip: `81.2.69.${10 + i}`, email: `user${i}@acme-corp.com`, phone: '+442079460958', context: 'signup' })
    await check(0)
    await check(1)
    const third = await check(2)
    expect(third.status).toBe(200)
    expect(vel(third)).toEqual({
      ip: { hour: 1, day: 1 },
      network: { hour: 3, day: 3 },
      email_domain: { hour: 3, day: 3 },
      email: { hour: 1, day: 1 },
      phone: { hour: 3, day: 3 },
    })
    // single lookups count their own kinds, in the same space as the combined check
    expect(vel(await s.post('/v1/ip', { ip: '81.2.69.12' }))).toEqual({ ip: { hour: 2, day: 2 }, network: { hour: 4, day: 4 }, email_domain: null, email: null, phone: null })
    expect(vel(await s.post('/v1/email', { email: 'User2@ACME-corp.com' }))).toMatchObject({ email: { hour: 2, day: 2 }, email_domain: { hour: 4, day: 4 }, ip: null })
    expect(vel(await s.post('/v1/phone', { phone: '+44 20 7946 0958' }))).toMatchObject({ phone: { hour: 4, day: 4 }, ip: null })
    expect(vel(await s.post('/v1/phone/type', { phone: '+442079460958' }))).toMatchObject({ phone: { hour: 5, day: 5 } })
    // free providers' domains are not counted; domain lookups carry no velocity
    expect(vel(await s.post('/v1/email', { email: 'someone@gmail.com' }))).toMatchObject({ email: { hour: 1, day: 1 }, email_domain: null })
    expect((await s.post('/v1/domain/age', { domain: 'acme-corp.com' })).body.data.details.velocity).toBeUndefined()
  })

  it('test keys count in a space of their own; another org counts apart', async () => {
    const s = await start()
    for (let i = 0; i < 3; i++) await s.post('/v1/ip', { ip: '81.2.70.1' })
    const test = await s.post('/v1/ip', { ip: '81.2.70.1' }, s.test)
    expect(test.body.data.metadata.test_mode).toBe(true)
    expect(vel(test).ip).toEqual({ hour: 1, day: 1 })
    expect(vel(await s.post('/v1/ip', { ip: '81.2.70.1' }, s.test)).ip).toEqual({ hour: 2, day: 2 })
    expect(vel(await s.post('/v1/ip', { ip: '81.2.70.1' })).ip).toEqual({ hour: 4, day: 4 }) // test checks did not count here

    const now = s.clock.now().getTime()
    const other = await s.app.store.createOrg({ name: 'Other', planId: 'starter' }, now)
    const key = (await issueApiKey(s.app.store, { orgId: other.id, name: 'k' }, now)).secret
    const otherTest = (await issueApiKey(s.app.store, { orgId: other.id, mode: 'test', name: 't' }, now)).secret
    expect(vel(await s.post('/v1/ip', { ip: '81.2.70.1' }, key)).ip).toEqual({ hour: 1, day: 1 })
    expect(vel(await s.post('/v1/ip', { ip: '81.2.70.1' }, otherTest)).ip).toEqual({ hour: 1, day: 1 })
    expect(vel(await s.post('/v1/ip', { ip: '81.2.70.1' })).ip).toEqual({ hour: 5, day: 5 })
  })

  it('the factor fires past the threshold of the org policy (defaults per context without one)', async () => {
    const s = await start()
    // default single-lookup threshold: more than 10 an hour
    let last
    for (let i = 0; i < 11; i++) last = await s.post('/v1/ip', { ip: '81.2.71.9' })
    expect(factors(last!)).toContain('velocity_ip_high')
    expect(vel(last!).ip.hour).toBe(11)
    // an org policy: a sign-up burst from one network is blocked from the 4th check of the hour
    const file = await parsePolicy(
      `contexts:\n  signup:\n    velocity:\n      network: { hour: 3 }\n    rules:\n      - name: network_burst_blocks\n        when: { any: [velocity_network_high] }\n        action: block\n`,
      { format: 'yaml' },
    )
    createSqliteOrgPolicyStore((s.app.store as SqliteStore).db).setOrgPolicy({ orgId: s.org.id, version: file.version, canonical: file.canonical, description: null, source: null, setAt: 0 })
    const actions: string[] = []
    for (let i = 0; i < 5; i++) {
      const r = await s.post('/v1/check', { ip: `81.2.72.${i + 1}`, email: `u${i}@acme-corp.com`, context: 'signup' })
      actions.push(`${r.body.data.recommendation.action}${factors(r).includes('velocity_network_high') ? '+velocity' : ''}`)
    }
    expect(actions).toEqual(['approve', 'approve', 'approve', 'block+velocity', 'block+velocity'])
    // the same burst in the `lead` context: the org's policy leaves lead's default (30 an hour)
    const lead = await s.post('/v1/check', { ip: '81.2.72.9', context: 'lead' })
    expect(vel(lead).network.hour).toBe(6)
    expect(factors(lead)).not.toContain('velocity_network_high')
  })

  it('keeps only keyed hashes, never returned; rows leave with the day window', async () => {
    const s = await start()
    const inputs = { ip: '81.2.73.44', email: 'Jane.Doe@acme-corp.com', phone: '+442079460958', context: 'signup' as const }
    await s.post('/v1/check', inputs)
    const stored = rows(s.app)
    expect(stored).toHaveLength(5)
    const text = JSON.stringify(stored).toLowerCase()
    for (const raw of ['81.2.73', 'jane', 'acme', '442079460958', '7946']) expect(text).not.toContain(raw)
    for (const r of stored) expect(r.key).toMatch(/^l[inedp]:[A-Za-z0-9_-]{22}$/)
    // the answer carries counts only
    const again = await s.post('/v1/check', inputs)
    expect(again.raw).not.toContain(stored[0]!.key.slice(2))

    s.clock.advance(HOUR_MS + 1)
    expect(vel(await s.post('/v1/ip', { ip: '81.2.73.44' })).ip).toEqual({ hour: 1, day: 3 })
    s.clock.advance(DAY_MS)
    expect(vel(await s.post('/v1/ip', { ip: '81.2.73.44' })).ip).toEqual({ hour: 1, day: 1 })
    // the checked keys lost their old rows at once; the others go with the sweep
    const velocity = createSqliteVelocityStore((s.app.store as SqliteStore).db)
    expect(velocity.purge(s.clock.now().getTime())).toBe(6)
    expect(rows(s.app)).toHaveLength(2)
  })

  it("the server's sweeps delete counts that left the day window though no check comes again", async () => {
    // before the sweeps did, rows of values never checked again stayed in the file until later hits swept them
    const s = await start({ purgeIntervalMs: 20 })
    for (let i = 0; i < 5; i++) expect((await s.post('/v1/ip', { ip: `81.2.${60 + i}.1` })).status).toBe(200)
    expect(rows(s.app)).toHaveLength(10) // an address and its network each
    s.clock.advance(DAY_MS - 1)
    await new Promise((r) => setTimeout(r, 100))
    expect(rows(s.app)).toHaveLength(10) // still within the day
    s.clock.advance(2)
    await vi.waitFor(() => expect(rows(s.app)).toHaveLength(0), { timeout: 30_000, interval: 20 })
  })

  it('two servers on one SQLite file count exactly: 100 checks split across them, the 100th sees 100', async () => {
    const file = join(dir, 'shared.sqlite')
    const a = await start({ db: file })
    let rateMs = 0
    const b = createServer({ db: file, purgeIntervalMs: 0, rateLimitNow: () => (rateMs += 1000), riskcheck: { offline: true, now: a.clock.now }, dashboard: false })
    await b.ready()
    const seen: number[] = []
    for (let i = 0; i < 99; i++) {
      a.tick()
      const r = await (i % 2 === 0 ? a.app : b).inject({
        method: 'POST',
        url: '/v1/ip',
        headers: { authorization: `Bearer ${a.live}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ ip: '81.2.74.5' }),
      })
      expect(r.statusCode, r.body).toBe(200)
      seen.push(JSON.parse(r.body).data.details.velocity.ip.hour)
    }
    expect(seen).toEqual(Array.from({ length: 99 }, (_, i) => i + 1))
    const last = await b.inject({
      method: 'POST',
      url: '/v1/check',
      headers: { authorization: `Bearer ${a.live}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ ip: '81.2.74.5', email: 'x@acme-corp.com' }),
    })
    expect(JSON.parse(last.body).data.details.velocity).toMatchObject({ ip: { hour: 100, day: 100 }, network: { hour: 100, day: 100 } })
    await b.close()
  })

  it('two serve processes on one SQLite file, 100 checks in waves of 20 at once across them: each check gets a number of its own, none lost', async () => {
    const file = join(dir, 'processes.sqlite')
    const store = createSqliteStore(file)
    const now = Date.now()
    const org = store.createOrg({ name: 'Processes', planId: 'scale' }, now)
    store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: 100_000, ratePerSecond: 10_000 }, now)
    const key = (await issueApiKey(store, { orgId: org.id, name: 'k' }, now)).secret
    store.close()
    const children: ChildProcess[] = []
    const serve = () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), 'serve', '--db', file, '--port', '0', '--json', '--offline', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] })
        children.push(child)
        let out = ''
        let err = ''
        child.stderr!.on('data', (d) => (err += d))
        child.stdout!.on('data', (d) => {
          out += d
          const line = out.split('\n').find((l) => l.startsWith('{'))
          if (line) resolve((JSON.parse(line) as { url: string }).url)
        })
        child.on('close', (code) => reject(new Error(`serve exited ${code}: ${err}`)))
      })
    let refused = 0
    const seen: number[] = []
    try {
      const urls = await Promise.all([serve(), serve()])
      const send = (i: number) =>
        fetch(`${urls[i % 2]}/v1/ip`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ip: '81.2.76.9' }) })
      const check = async (i: number) => {
        // a client follows a 503 (the file busy past its timeout on a loaded machine) by sending again, as often as
        // it takes (the case's timeout bounds it)
        let res = await send(i)
        while (res.status === 503) {
          refused++
          await new Promise((r) => setTimeout(r, 200))
          res = await send(i)
        }
        expect(res.status).toBe(200)
        return ((await res.json()) as { data: { details: { velocity: { ip: { hour: number } } } } }).data.details.velocity.ip.hour
      }
      // Five waves of 20 at once, 10 on each process: every wave has both processes numbering the same key at the
      // same time (what exact counting across processes is about), without 100 writers queueing on one file's lock,
      // which on a loaded machine made most of them wait past the busy timeout and retry again and again.
      for (let wave = 0; wave < 5; wave++) seen.push(...(await Promise.all(Array.from({ length: 20 }, (_, i) => check(wave * 20 + i)))))
    } finally {
      for (const c of children) c.kill('SIGTERM')
      await Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once('exit', r)))))
    }
    // Counted exactly: no two checks got the same number, and the file holds one numbered row per counted check. A
    // request refused with a 503 after its check was counted (the settlement met the busy file) keeps its number, so
    // its retry gets the next one: the numbers then run past 100 by at most the refusals. Without a refusal (a quiet
    // machine) the answers saw exactly 1 … 100.
    const counted = createSqliteStore(file)
    const numbered = counted.db.prepare('SELECT MAX(seq) FROM velocity_hits').pluck().get() as number
    counted.close()
    seen.sort((a, b) => a - b)
    expect(new Set(seen).size, JSON.stringify({ seen, refused })).toBe(100)
    expect(seen[99]).toBeLessThanOrEqual(numbered)
    expect(numbered - 100, JSON.stringify({ seen, refused, numbered })).toBeLessThanOrEqual(refused)
    if (refused === 0) expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => i + 1))
  }, 120_000)

  it('velocity: false and --no-velocity switch it off; --velocity-secret sets the key', async () => {
    const s = await start({ velocity: false })
    expect(vel(await s.post('/v1/ip', { ip: '81.2.75.1' }))).toBeNull()
    expect(rows(s.app)).toHaveLength(0)
    expect(() => createServer({ db: ':memory:', velocity: { secret: 'short' } })).toThrow(/velocity.secret/)
    expect(() => createServer({ db: ':memory:', riskcheck: { velocity: true } })).toThrow(/server option `velocity`/)

    const usage = async (args: string[]) => {
      const io = memoryIO()
      return { code: await runServe(args, io), err: io.err() }
    }
    expect(await usage(['--velocity-secret', 'short'])).toMatchObject({ code: 64, err: expect.stringContaining('at least 16 characters') })
    expect(await usage(['--no-velocity', '--velocity-secret', 'a secret of the deployment'])).toMatchObject({ code: 64, err: expect.stringContaining('exclude each other') })

    const file = join(dir, 'serve.sqlite')
    const store = createSqliteStore(file)
    const org = store.createOrg({ name: 'Serve', planId: 'starter' }, Date.now())
    const key = (await issueApiKey(store, { orgId: org.id, name: 'k' }, Date.now())).secret
    store.close()
    for (const [flags, expected] of [[['--no-velocity'], null], [['--velocity-secret', 'a secret of the deployment'], { hour: 1, day: 1 }]] as const) {
      const server = await serveInProcess(['--port', '0', '--offline', '--log-level', 'warn', '--db', file, ...flags])
      const res = await fetch(`${server.url}/v1/ip`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ip: '81.2.75.3' }) })
      const body = (await res.json()) as { data: { details: { velocity: { ip: unknown } | null } } }
      expect(body.data.details.velocity === null ? null : body.data.details.velocity.ip).toEqual(expected)
      server.stop()
      await server.exit
    }

  })
})

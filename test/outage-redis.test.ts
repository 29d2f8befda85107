/**
 * Redis down under `riskcheck serve --database-url … --redis-url …` (run in this process, workers included), with a
 * Redis of this suite's own that it shuts down and starts again: requests are still answered — rate limits counted by
 * the instance alone meanwhile — so GET /readyz stays ready and reports the `redis` check as degraded; the log says
 * so once when Redis goes and once when it is back, however many reconnection attempts and requests there were; a bulk
 * job created meanwhile is answered at once and runs once Redis is back.
 * Needs RISKCHECK_TEST_DATABASE_URL (a schema of its own) and redis-server on the PATH.
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { openPostgresServerStores } from '../src/server/store/postgres/server.js'
import { outagePort } from './pg-cluster.js'
import { serveInProcess } from './server-helpers.js'

const databaseUrl = process.env.RISKCHECK_TEST_DATABASE_URL
const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0
if (!databaseUrl || !hasRedisServer) {
  console.log('[skipped] test/outage-redis.test.ts: needs RISKCHECK_TEST_DATABASE_URL and redis-server on the PATH (or .ci/run).')
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.skipIf(!databaseUrl || !hasRedisServer)('Redis down under a serving server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-redis-outage-'))
  const schema = `rc_redis_outage_${randomBytes(5).toString('hex')}`
  let port = 0
  const startRedis = () =>
    spawnSync('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'yes', '--save', '', '--appendonly', 'no', '--dir', dir, '--pidfile', join(dir, 'redis.pid')])
  const stopRedis = () => spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave'])
  const stops: Array<() => unknown> = []

  afterAll(async () => {
    startRedis() // (when a failure left it down) so that the server's queues can close
    for (const s of stops.reverse()) await s()
    stopRedis()
    rmSync(dir, { recursive: true, force: true })
    const admin = new pg.Pool({ connectionString: databaseUrl })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
  })

  it('answers every request (limits per instance), stays ready with `redis` degraded, and logs the outage once each way', async () => {
    port = await outagePort(2)
    expect(startRedis().status).toBe(0)
    const stores = await openPostgresServerStores({ connectionString: databaseUrl!, schema })
    const now = Date.now()
    const org = await stores.store.createOrg({ name: 'Redis down', planId: 'starter' }, now)
    const live = await issueApiKey(stores.store, { orgId: org.id, name: 'live' }, now)
    const test = await issueApiKey(stores.store, { orgId: org.id, mode: 'test', name: 'test' }, now)
    await stores.close()
    const u = new URL(databaseUrl!)
    u.searchParams.set('schema', schema)
    const server = await serveInProcess([
      '--port', '0', '--offline', '--log-level', 'warn', '--database-url', u.toString(),
      '--redis-url', `redis://127.0.0.1:${port}`, '--redis-prefix', schema,
    ])
    stops.push(async () => {
      server.stop()
      await server.exit
    })
    let n = 0
    const lookup = async (key: string) => {
      n++
      const res = await fetch(`${server.url}/v1/ip`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ip: `11.1.${(n >> 8) & 255}.${n & 255}` }),
      })
      await res.arrayBuffer()
      return res.status
    }
    const readyz = async () => {
      const res = await fetch(`${server.url}/readyz`)
      return { status: res.status, body: (await res.json()) as { status: string; checks: Array<{ name: string; ok: boolean; degraded?: boolean }> } }
    }
    const redisCheck = async () => (await readyz()).body.checks.find((c) => c.name === 'redis')
    for (let i = 0; i < 3; i++) expect(await lookup(live.secret)).toBe(200)
    expect(await redisCheck()).toMatchObject({ ok: true })

    stopRedis()
    // reconnection attempts go on meanwhile (each an 'error' of every Redis connection of the process)
    await sleep(3000)
    const during: number[] = []
    for (let i = 0; i < 20; i++) during.push(await lookup(live.secret))
    expect(during.every((s) => s === 200)).toBe(true)
    // a test key's limit (10 a second) is still kept, by this instance alone
    const burst = await Promise.all(Array.from({ length: 15 }, () => lookup(test.secret)))
    expect(burst.filter((s) => s === 429).length).toBeGreaterThan(0)
    expect(burst.every((s) => s === 200 || s === 429)).toBe(true)
    // a bulk job is stored and answered at once; its message reaches the queue once Redis is back (sent once the
    // live key's second of 20 lookups above has passed, so that its rate limit does not answer instead)
    await sleep(1100)
    const created = await fetch(`${server.url}/v1/bulk/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${live.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'ip', inputs: ['11.2.0.1', '11.2.0.2', '11.2.0.3'] }),
    })
    expect(created.status).toBe(202)
    const job = ((await created.json()) as { data: { id: string } }).data
    const ready = await readyz()
    expect(ready.status).toBe(200)
    expect(ready.body.status).toBe('ready')
    expect(ready.body.checks.find((c) => c.name === 'redis')).toMatchObject({ ok: false, degraded: true })

    expect(startRedis().status).toBe(0)
    let tries = 0
    while (!(await redisCheck())?.ok) {
      if (++tries > 100) throw new Error('Redis never reported back')
      await sleep(200)
    }
    await sleep(1500) // the availability's probe runs every second
    expect(await lookup(live.secret)).toBe(200)
    let status = ''
    for (let i = 0; i < 100 && status !== 'completed'; i++) {
      const res = await fetch(`${server.url}/v1/bulk/jobs/${job.id}`, { headers: { authorization: `Bearer ${live.secret}` } })
      status = ((await res.json()) as { data: { status: string } }).data.status
      if (status !== 'completed') await sleep(200)
    }
    expect(status).toBe('completed')
    const log = server.io.err().split('\n').filter((l) => l.trim() !== '')
    expect(log.filter((l) => l.includes('Redis is unreachable'))).toHaveLength(1)
    expect(log.filter((l) => l.includes('Redis answers again after'))).toHaveLength(1)
    expect(log.length).toBeLessThanOrEqual(4)
  }, 60_000)
})

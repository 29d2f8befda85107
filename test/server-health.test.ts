/**
 * GET /healthz and GET /readyz (src/server/health.ts; docs/deployment.md): no key, no rate limit, no secrets; the
 * store's checks (a real round trip and the schema version), checks an application adds, a time limit on each, the
 * data's freshness reported without failing readiness. (`draining` while the server shuts down: server-socket.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest'
import { readiness, storeChecks, type ReadinessCheck } from '../src/server/health.js'
import type { SqliteStore } from '../src/server/store/sqlite/store.js'
import type { DataStatus } from '../src/data/status.js'
import { startTestServer, type TestServer } from './server-helpers.js'

let s: TestServer | undefined
afterEach(async () => {
  await s?.close()
  s = undefined
})

const FRESH: DataStatus = {
  data_dir: '/srv/riskcheck-data',
  set: 'set-1',
  created_at: '2026-11-22T00:00:00Z',
  stale: false,
  stale_sources: [],
  problem: null,
  sources: [
    {
      name: 'tor',
      label: 'tor-exits@2026-11-22',
      version: '2026-11-22',
      origin: 'update',
      upstream: 'http://127.0.0.1:1/tor',
      data_date: '2026-11-22T00:00:00Z',
      fetched_at: '2026-11-22T00:00:00Z',
      age_seconds: 60,
      max_age_seconds: 86_400,
      stale: false,
    },
  ],
} as unknown as DataStatus

describe('GET /healthz', () => {
  it('answers without a key, without rate-limit headers, whatever the request rate', async () => {
    s = await startTestServer()
    for (let i = 0; i < 50; i++) {
      const r = await s.get('/healthz', null)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ status: 'ok', version: expect.any(String) })
      expect(r.headers['ratelimit-policy']).toBeUndefined()
    }
    // the same address is limited on an ordinary public route long before 50 requests in one (frozen) second
    const statuses: number[] = []
    for (let i = 0; i < 50; i++) statuses.push((await s.get('/v1/pricing', null)).status)
    expect(statuses).toContain(429)
  })
})

describe('GET /readyz', () => {
  it('is ready with the store reachable and migrated; stale data is reported, not failing', async () => {
    s = await startTestServer()
    const r = await s.get('/readyz', null)
    expect(r.status).toBe(200)
    expect(r.body.status).toBe('ready')
    expect(r.body.checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok])).toEqual([
      ['database', true],
      ['migrations', true],
    ])
    const data = s.app.riskcheck.dataStatus()
    expect(data.stale).toBe(true) // the bundled lists are older than their maximum ages at the test clock
    expect(r.body.data.stale).toBe(true)
    expect(r.body.data.stale_sources).toEqual(data.stale_sources)
    expect(r.body.data.set).toBe('bundled')
    expect(r.body.data.sources.map((x: { name: string }) => x.name)).toEqual(data.sources.map((x) => x.name))
    // nothing secret in it
    expect(r.raw).not.toMatch(/svc_|whsec_|secret/i)
  })

  it('is not ready when the schema is older or newer than this code, and says what to do', async () => {
    s = await startTestServer()
    const db = (s.app.store as SqliteStore).db
    const version = db.pragma('user_version', { simple: true }) as number
    db.pragma(`user_version = ${version - 1}`)
    let r = await s.get('/readyz', null)
    expect(r.status).toBe(503)
    expect(r.body.status).toBe('not_ready')
    expect(r.body.checks.find((c: { name: string }) => c.name === 'migrations')).toMatchObject({
      ok: false,
      message: expect.stringContaining('riskcheck admin migrate'),
    })
    db.pragma(`user_version = ${version + 1}`)
    r = await s.get('/readyz', null)
    expect(r.status).toBe(503)
    expect(r.body.checks.find((c: { name: string }) => c.name === 'migrations').message).toContain('upgrade riskcheck')
    db.pragma(`user_version = ${version}`)
    expect((await s.get('/readyz', null)).status).toBe(200)
  })

  it('is not ready when the database cannot be read', async () => {
    s = await startTestServer()
    await s.app.store.close()
    const r = await s.get('/readyz', null)
    expect(r.status).toBe(503)
    expect(r.body.checks.find((c: { name: string }) => c.name === 'database')).toMatchObject({ ok: false, message: expect.any(String) })
    expect(r.raw).not.toContain('    at ') // no stack
  })

  it("runs the application's own checks: a failing one makes the server unready, with its first line only and no password", async () => {
    let up = false
    const redis: ReadinessCheck = {
      name: 'redis',
      run: () => {
        if (!up) throw new Error('connect ECONNREFUSED 127.0.0.1:6379 (redis://default:hunter2@127.0.0.1:6379)\n    at TCPConnectWrap.afterConnect')
        return { ok: true }
      },
    }
    s = await startTestServer({ readinessChecks: [redis] })
    let r = await s.get('/readyz', null)
    expect(r.status).toBe(503)
    expect(r.body.checks.find((c: { name: string }) => c.name === 'redis')).toMatchObject({ ok: false, message: 'connect ECONNREFUSED 127.0.0.1:6379 (redis://***@127.0.0.1:6379)' })
    up = true
    r = await s.get('/readyz', null)
    expect(r.status).toBe(200)
    expect(r.body.checks.map((c: { name: string }) => c.name)).toEqual(['database', 'migrations', 'redis'])
  })

})

describe('readiness()', () => {
  it('gives a check that never answers a time limit, and runs the checks concurrently', async () => {
    const started: string[] = []
    const hang: ReadinessCheck = { name: 'hang', run: () => (started.push('hang'), new Promise(() => {})) }
    const ok: ReadinessCheck = { name: 'ok', run: () => (started.push('ok'), { ok: true }) }
    const r = await readiness([hang, ok], FRESH, { draining: false, timeoutMs: 20 })
    expect(started).toEqual(['hang', 'ok'])
    expect(r.status).toBe('not_ready')
    expect(r.checks).toEqual([
      { name: 'hang', ok: false, message: 'no answer within 20 ms', duration_ms: expect.any(Number) },
      { name: 'ok', ok: true, duration_ms: expect.any(Number) },
    ])
    expect(r.data).toMatchObject({ set: 'set-1', stale: false, stale_sources: [], problem: null })
  })

  it('reports a store without a schema version as reachable through a read', async () => {
    let reads = 0
    const store = { listPlans: () => (reads++, []) } as never
    const r = await readiness(storeChecks(store), FRESH, { draining: true })
    expect(r.status).toBe('draining')
    expect(r.checks).toEqual([{ name: 'database', ok: true, duration_ms: expect.any(Number) }])
    expect(reads).toBe(1)
  })
})

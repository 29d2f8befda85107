/**
 * GET /healthz and GET /readyz (src/server/health.ts): public, not rate limited, not billed; readiness runs a real
 * query on the database, checks its schema version and the checks a deployment adds, names stale data sources
 * without failing, and never shows credentials.
 */
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { readiness, sqliteReadinessCheck } from '../src/server/health.js'
import { MIGRATIONS } from '../src/server/store/migrations.js'
import { startTestServer, type TestServer } from './server-helpers.js'

let server: TestServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('GET /healthz and /readyz', () => {
  it('answer without a key, past the anonymous rate limit, and bill nothing', async () => {
    server = await startTestServer({ anonymousRatePerSecond: 2 })
    const before = (await server.get('/v1/account')).body.data
    for (let i = 0; i < 10; i++) {
      const h = await server.get('/healthz', null)
      expect(h.status).toBe(200)
      expect(h.body).toEqual({ status: 'ok' })
      expect(h.headers['ratelimit-limit']).toBeUndefined()
      expect((await server.get('/readyz', null)).status).toBe(200)
    }
    // the anonymous limit is 2 a second: a public /v1 route is limited, health routes were not
    const limited = [await server.get('/v1/pricing', null), await server.get('/v1/pricing', null), await server.get('/v1/pricing', null)]
    expect(limited.map((r) => r.status)).toEqual([200, 200, 429])
    const after = (await server.get('/v1/account')).body.data
    expect(after.credits).toEqual(before.credits)
  })

  it('readyz: database and accepting checks pass; stale bundled data is named but does not fail readiness', async () => {
    server = await startTestServer()
    const r = await server.get('/readyz', null)
    expect(r.status).toBe(200)
    expect(r.body.status).toBe('ready')
    expect(r.body.checks).toEqual([
      { name: 'database', ok: true },
      { name: 'accepting', ok: true },
    ])
    // the bundled Tor list is from 2024; the test clock is 2026-11-22
    expect(r.body.data.stale).toBe(true)
    expect(r.body.data.stale_sources).toContain('tor')
    expect(r.body.data.set).toBe('bundled')
    expect(r.body.data.sources.find((s: { name: string }) => s.name === 'tor').stale).toBe(true)
  })

  it('readyz: a failing added check gives 503 with its name and a reason without credentials', async () => {
    let redisUp = false
    server = await startTestServer({
      readinessChecks: [
        {
          name: 'redis',
          check: async () => {
            if (!redisUp) throw new Error('connect ECONNREFUSED redis://admin:hunter2@127.0.0.1:6379')
          },
        },
      ],
    })
    const down = await server.get('/readyz', null)
    expect(down.status).toBe(503)
    expect(down.body.status).toBe('not_ready')
    const redis = down.body.checks.find((c: { name: string }) => c.name === 'redis')
    expect(redis.ok).toBe(false)
    expect(redis.error).toContain('ECONNREFUSED')
    expect(down.raw).not.toContain('hunter2')
    expect(down.raw).not.toContain('admin:')
    redisUp = true
    expect((await server.get('/readyz', null)).status).toBe(200)
  })

  it('the SQLite check runs SELECT 1 and refuses a schema behind this server', async () => {
    const db = new Database(':memory:')
    expect(() => sqliteReadinessCheck(db).check()).toThrow(/schema at migration 0, this server needs/)
    db.pragma(`user_version = ${MIGRATIONS.length}`)
    expect(() => sqliteReadinessCheck(db).check()).not.toThrow()
    db.close()
    expect(() => sqliteReadinessCheck(db).check()).toThrow(/not open/)
  })

  it('a check that never answers fails after the timeout; the others still report', async () => {
    const r = await readiness(
      [
        { name: 'hangs', check: () => new Promise<void>(() => undefined) },
        { name: 'fine', check: () => undefined },
      ],
      { data_dir: null, set: 'bundled', created_at: null, stale: false, stale_sources: [], sources: [], problem: null },
      5,
    )
    expect(r.status).toBe('not_ready')
    expect(r.checks).toEqual([
      { name: 'hangs', ok: false, error: 'no answer within 5 ms' },
      { name: 'fine', ok: true },
    ])
  })
})

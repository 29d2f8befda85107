/**
 * The server's structure as Fastify plugins (src/server/plugins/): they load in the order createServer registers
 * them, their hooks reach every route (the API's and the dashboard's encapsulated ones), and what createServer
 * promises before the server starts still holds — bad options throw from it, its services are there at once.
 */
import { describe, expect, it } from 'vitest'
import { createMemoryStore, createServer } from '../src/server/index.js'

describe('createServer as plugins', () => {
  it('throws a bad dashboard option from createServer itself, and has its services before it starts', async () => {
    const bad = { invite: [{ per: 'team' as const, limit: 0, windowMs: 60_000 }] }
    expect(() => createServer({ db: createMemoryStore(), riskcheck: { offline: true }, dashboard: { mailLimits: bad } })).toThrow(TypeError)
    const app = createServer({ db: createMemoryStore(), riskcheck: { offline: true }, purgeIntervalMs: 0, webhookIntervalMs: 0, dashboard: { noticeIntervalMs: 0 } })
    try {
      expect(app.dashboard).toBeDefined()
      expect(app.bulk).toBeDefined()
      expect(app.webhooks).toBeDefined()
      expect(app.metrics).toBeUndefined()
    } finally {
      await app.close()
    }
  })

  it('loads the plugins in the order createServer registers them, the dashboard among them', async () => {
    const app = createServer({ db: createMemoryStore(), riskcheck: { offline: true }, purgeIntervalMs: 0, webhookIntervalMs: 0, dashboard: { noticeIntervalMs: 0 } })
    try {
      await app.ready()
      const tree = app.printPlugins()
      const order = ['riskcheck-envelope', 'riskcheck-rate-limits', 'riskcheck-auth', 'riskcheck-metrics', 'riskcheck-idempotency', 'riskcheck-routes', 'riskcheck-dashboard', 'riskcheck-lifecycle']
      const at = order.map((name) => tree.indexOf(name))
      expect(at.every((i) => i >= 0)).toBe(true)
      expect([...at].sort((a, b) => a - b)).toEqual(at)
    } finally {
      await app.close()
    }
  })

  it('applies the root hooks to every route: unknown paths, the API, and the dashboard', async () => {
    const app = createServer({ db: createMemoryStore(), riskcheck: { offline: true }, purgeIntervalMs: 0, webhookIntervalMs: 0, anonymousRatePerSecond: 3, rateLimitNow: () => 1_800_000_000_000, dashboard: { noticeIntervalMs: 0 } })
    try {
      const missing = await app.inject({ method: 'GET', url: '/v1/nothing' })
      expect(missing.statusCode).toBe(404)
      expect(missing.headers['cache-control']).toBe('no-store')
      expect(missing.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } })
      const wrongMethod = await app.inject({ method: 'DELETE', url: '/v1/email' })
      expect(wrongMethod.statusCode).toBe(405)
      const unauthorized = await app.inject({ method: 'POST', url: '/v1/email', payload: { email: 'a@example.com' } })
      expect(unauthorized.statusCode).toBe(401)
      expect(unauthorized.headers['ratelimit-policy']).toBeDefined()
      // the anonymous limit (3 a second, on a fixed clock) counts every request of the address, the dashboard's pages too
      const page = await app.inject({ method: 'GET', url: '/dashboard/signin' })
      expect(page.statusCode).toBe(429)
    } finally {
      await app.close()
    }
  })
})

/**
 * The HTTP API driven in-process (`app.inject`): every endpoint's success, and every error code each route can
 * answer with (the list comes from the route declarations, so a new code without a test here fails), the envelope for
 * framework failures, rate-limit headers, idempotency, revocation.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ERROR_STATUS, type ErrorCode } from '../src/errors.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { routeErrorCodes } from '../src/server/openapi.js'
import { DEFAULT_PLANS } from '../src/accounts/plans.js'
import { ROUTES } from '../src/server/routes/index.js'
import type { RouteDef } from '../src/server/routes/types.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { AccountSchema, ErrorEnvelopeSchema, PricingSchema, type LookupType } from '../src/schema.js'
import { burstAcrossEdge, maxInAnySpan } from './rate-limit-model.js'
import { startTestServer, type Res, type TestServer } from './server-helpers.js'
import { resultErrors, schemaErrors } from './validate.js'

/** A good body of each lookup route (documented test-mode magic inputs; also fine offline for live keys). */
const GOOD: Record<string, Record<string, unknown>> = {
  '/v1/email': { email: 'deliverable@example.com', smtp: false },
  '/v1/phone': { phone: '+12015550100', country: 'us' },
  '/v1/phone/type': { phone: '+1 201 555 0100' },
  '/v1/ip': { ip: '192.0.2.1' },
  '/v1/domain/age': { domain: 'old-domain.example' },
  '/v1/domain/email-auth': { domain: 'grade-a.example' },
  '/v1/check': { email: 'deliverable@example.com', ip: '192.0.2.1', phone: '+12015550100', context: 'signup' },
}
const TYPE_OF: Record<string, LookupType> = {
  '/v1/email': 'email',
  '/v1/phone': 'phone',
  '/v1/phone/type': 'phone_type',
  '/v1/ip': 'ip',
  '/v1/domain/age': 'domain_age',
  '/v1/domain/email-auth': 'email_auth',
  '/v1/check': 'check',
}
/** A body each lookup cannot look up at all (422 INVALID_INPUT), where the route has one. */
const UNUSABLE: Record<string, Record<string, unknown>> = {
  '/v1/phone': { phone: '' },
  '/v1/phone/type': { phone: '+1'.padEnd(41, '2') },
  '/v1/ip': { ip: 'not-an-ip' },
  '/v1/domain/age': { domain: 'not a domain' },
  '/v1/domain/email-auth': { domain: 'not a domain' },
  '/v1/check': { ip: '999.1.1.1' },
}

const flags = { failStore: false, maintenance: false, failClock: false }

/** The store with a switch that makes one method fail like a broken disk would. */
function breakableStore(base: SqliteStore): Store {
  return new Proxy(base, {
    get(target, prop, receiver) {
      if (prop === 'getAuth') {
        return (...args: Parameters<Store['getAuth']>) => {
          if (flags.failStore) throw new Error('SQLITE_IOERR: disk I/O error at /secret/path.sqlite')
          return target.getAuth(...args)
        }
      }
      return Reflect.get(target, prop, receiver) as unknown
    },
  })
}

let s: TestServer
let base: SqliteStore
const keys = { noScope: '', revoked: '', suspended: '', broke: '', otherOrgTest: '' }
let rateMs = 0

function expectEnvelope(r: Res, code: ErrorCode): void {
  expect(r.status, r.raw).toBe(ERROR_STATUS[code])
  expect(r.body.success).toBe(false)
  expect(r.body.error.code).toBe(code)
  expect(schemaErrors(ErrorEnvelopeSchema, r.body)).toEqual([])
  expect(r.body.error.request_id).toMatch(/^req_[0-9a-f]{24,32}$/)
  expect(r.headers['content-type']).toMatch(/^application\/json/)
}

function expectRateHeaders(r: Res): void {
  expect(r.headers['ratelimit-policy']).toMatch(/^"(key|ip)";q=\d+;w=1$/)
  expect(r.headers['ratelimit']).toMatch(/^"(key|ip)";r=\d+;t=\d+$/)
  expect(Number(r.headers['x-ratelimit-limit'])).toBeGreaterThan(0)
  expect(r.headers['x-ratelimit-remaining']).toMatch(/^\d+$/)
  expect(Number(r.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1)
}

function call(route: RouteDef, key: string | null, body?: unknown, headers: Record<string, string> = {}): Promise<Res> {
  if (route.method === 'GET') return s.get(route.url, key, headers)
  return s.post(route.url, body ?? GOOD[route.url] ?? {}, key, headers)
}

beforeAll(async () => {
  base = createSqliteStore(':memory:')
  s = await startTestServer({
    db: breakableStore(base),
    maintenance: () => flags.maintenance,
    rateLimitNow: () => {
      if (flags.failClock) throw new TypeError("Cannot read properties of undefined (reading 'internal')")
      return rateMs
    },
  })
  const now = s.clock.now().getTime()
  keys.noScope = (await issueApiKey(base, { orgId: s.org.id, mode: 'test', scopes: ['bulk'] }, now)).secret
  const revoked = await issueApiKey(base, { orgId: s.org.id, mode: 'test' }, now)
  await base.revokeKey(revoked.key.id, now)
  keys.revoked = revoked.secret
  const suspendedOrg = await base.createOrg({ name: 'Gone', planId: 'free' }, now)
  keys.suspended = (await issueApiKey(base, { orgId: suspendedOrg.id, mode: 'test', scopes: ['lookup', 'account:read', 'bulk', 'webhooks'] }, now)).secret
  await base.setOrgSuspended(suspendedOrg.id, true, now)
  const brokeOrg = await base.createOrg({ name: 'Broke', planId: 'free' }, now)
  await base.setOrgPlan(brokeOrg.id, { planId: 'free', monthlyCredits: 0 }, now)
  keys.broke = (await issueApiKey(base, { orgId: brokeOrg.id }, now)).secret
})

afterAll(async () => {
  await s.close()
  base.close()
})

beforeEach(() => {
  rateMs += 10_000 // a fresh rate-limit window for every test
  flags.failStore = flags.maintenance = flags.failClock = false
})

describe('success of every endpoint', () => {
  const lookups = ROUTES.filter((r) => r.scope === 'lookup' && r.url !== '/v1/outcomes' && !r.url.startsWith('/v1/reviews'))

  it('declares the documented routes', () => {
    expect(ROUTES.map((r) => `${r.method} ${r.url}`).sort()).toEqual(
      [
        'POST /v1/email',
        'POST /v1/phone',
        'POST /v1/phone/type',
        'POST /v1/ip',
        'POST /v1/domain/age',
        'POST /v1/domain/email-auth',
        'POST /v1/check',
        'GET /v1/account',
        'GET /v1/pricing',
        'GET /v1/openapi.json',
        'GET /docs/errors',
        'GET /healthz',
        'GET /readyz',
        'POST /v1/bulk/jobs',
        'GET /v1/bulk/jobs',
        'GET /v1/bulk/jobs/:id',
        'DELETE /v1/bulk/jobs/:id',
        'POST /v1/bulk/jobs/:id/retry',
        'GET /v1/bulk/jobs/:id/results',
        'GET /v1/bulk/jobs/:id/results.csv',
        'POST /v1/webhook-endpoints',
        'GET /v1/webhook-endpoints',
        'POST /v1/outcomes',
        'GET /v1/outcomes',
        'GET /v1/reviews',
        'POST /v1/reviews/:id/decision',
        'POST /v1/webhook-endpoints/:id/rotate-secret',
        'DELETE /v1/webhook-endpoints/:id',
        'POST /v1/lists',
        'GET /v1/lists',
        'GET /v1/lists/:id',
        'DELETE /v1/lists/:id',
        'POST /v1/lists/:id/items',
        'POST /v1/lists/:id/items/remove',
        'GET /v1/lists/:id/items',
        'DELETE /v1/lists/:id/items/:value',
      ].sort(),
    )
  })

  it.each(lookups.map((r) => [r.url, r] as const))('%s with a test key: the test answer, no credits', async (url, route) => {
    const r = await call(route, s.test)
    expect(r.status, r.raw).toBe(200)
    expect(r.body.success).toBe(true)
    expect(resultErrors(r.body.data, TYPE_OF[url])).toEqual([])
    expect(r.body.data.metadata).toMatchObject({ test_mode: true, credits_used: 0, credits_remaining: null, api_version: '1' })
    expect(r.body.data.request.id).toMatch(/^req_[0-9a-f]{24,32}$/)
    expect(r.body.data.request.input).toEqual(url === '/v1/check' ? GOOD[url] : Object.values(GOOD[url]!)[0])
    expect(r.headers['x-ratelimit-limit']).toBe('10')
    expectRateHeaders(r)
  })

  it('test answers follow the magic inputs', async () => {
    const bad = await s.post('/v1/email', { email: 'undeliverable@example.com' }, s.test)
    expect(bad.body.data.verdict.status).toBe('invalid')
    expect(bad.body.data.details.smtp_check).toBe('undeliverable')
    const tor = await s.post('/v1/ip', { ip: '192.0.2.3' }, s.test)
    expect(tor.body.data.details.ip).toBe('192.0.2.3')
    const unregistered = await s.post('/v1/domain/age', { domain: 'unregistered.example' }, s.test)
    expect(unregistered.body.data.details.registered).toBe(false)
  })

  it.each(lookups.map((r) => [r.url, r] as const))('%s with a live key (offline): billed from the org balance', async (url, route) => {
    const before = await base.balance(s.org.id, s.clock.now().getTime())
    const r = await call(route, s.live, { ...GOOD[url], bypass_cache: true })
    expect(r.status, r.raw).toBe(200)
    expect(resultErrors(r.body.data, TYPE_OF[url])).toEqual([])
    const m = r.body.data.metadata
    expect(m.test_mode).toBe(false)
    expect(m.credits_remaining).toBe(before - m.credits_used)
    expect(await base.balance(s.org.id, s.clock.now().getTime())).toBe(before - m.credits_used)
    expect(r.headers['x-ratelimit-limit']).toBe('20') // the starter plan's rate
  })

  it('POST /v1/ip with a live key costs 1 credit even offline (local data)', async () => {
    const r = await s.post('/v1/ip', { ip: '8.8.8.8' }, s.live)
    expect(r.body.data.metadata.credits_used).toBe(1)
    expect(r.body.data.partial).toBe(false) // reverse DNS is not asked offline: a complete answer
  })

  it('GET /v1/account: the account object of the calling key', async () => {
    const r = await s.get('/v1/account', s.live)
    expect(r.status).toBe(200)
    expect(r.body.success).toBe(true)
    expect(schemaErrors(AccountSchema, r.body.data)).toEqual([])
    expect(r.body.data.org).toEqual({ id: s.org.id, name: 'Acme' })
    expect(r.body.data.plan).toMatchObject({ id: 'starter', name: 'Starter', credits_per_period: 10_000, status: 'active' })
    expect(r.body.data.plan.period_start).toBe('2026-11-22T00:00:00.000Z')
    expect(r.body.data.plan.period_end).toBe('2026-12-22T00:00:00.000Z')
    expect(r.body.data.key).toEqual({ id: s.liveKeyId, name: 'server', mode: 'live', scopes: ['lookup', 'bulk', 'account:read'] })
    const { credits, usage } = r.body.data
    expect(credits.total_available).toBe(credits.subscription + credits.purchased)
    expect(usage.period.credits).toBe(10_000 - credits.total_available)
    expect(usage.all_time).toEqual(usage.period)
    const t = await s.get('/v1/account', s.test)
    expect(t.body.data.key).toMatchObject({ id: s.testKeyId, mode: 'test' })
  })

  it('GET /v1/pricing: public, not wrapped, the default plans and every product', async () => {
    const r = await s.get('/v1/pricing', null)
    expect(r.status).toBe(200)
    expect(r.body.success).toBeUndefined()
    expect(schemaErrors(PricingSchema, r.body)).toEqual([])
    expect(r.body.plans).toEqual(DEFAULT_PLANS.map(({ id, name, monthly_price, monthly_credits }) => ({ id, name, monthly_price, monthly_credits })))
    expect(r.body.plans.map((p: { id: string; monthly_price: number; monthly_credits: number }) => [p.id, p.monthly_price, p.monthly_credits])).toEqual([
      ['free', 0, 100],
      ['starter', 49, 10_000],
      ['growth', 199, 50_000],
      ['scale', 499, 200_000],
    ])
    expect(r.body.products.map((p: { endpoint: string }) => p.endpoint).sort()).toEqual(Object.keys(GOOD).sort())
    expect(r.body.products.every((p: { credits: number }) => p.credits === 1)).toBe(true)
    expectRateHeaders(r)
    expect(r.headers['ratelimit-policy']).toBe('"ip";q=20;w=1')
  })

  it('GET /v1/openapi.json: public, the OpenAPI 3.1 document', async () => {
    const r = await s.get('/v1/openapi.json', null)
    expect(r.status).toBe(200)
    expect(r.body.openapi).toBe('3.1.0')
    expect(Object.keys(r.body.paths)).toContain('/v1/email')
  })

  it('HEAD of a GET route answers like GET without a body', async () => {
    const r = await s.request('HEAD', '/v1/pricing')
    expect(r.status).toBe(200)
    expect(r.raw).toBe('')
  })
})

/** How to provoke each error code on a route. */
const PRODUCE: Record<ErrorCode, ((route: RouteDef) => Promise<Res>) | null> = {
  INVALID_REQUEST: (route) => call(route, s.test, { ...GOOD[route.url], unexpected: 1 }),
  MISSING_FIELD: (route) => call(route, s.test, {}),
  INVALID_INPUT: (route) => call(route, s.test, UNUSABLE[route.url]),
  UNAUTHORIZED: (route) => call(route, null),
  // (an email with smtp false is free, so it is asked with the mailbox check on)
  INSUFFICIENT_CREDITS: (route) => call(route, keys.broke, { ...GOOD[route.url], ...(route.url === '/v1/email' ? { smtp: true } : {}), bypass_cache: true }),
  FORBIDDEN_SCOPE: (route) => call(route, keys.noScope),
  ACCOUNT_SUSPENDED: (route) => call(route, keys.suspended),
  NOT_FOUND: null, // not a route's answer: unknown paths and methods (tested below)
  IDEMPOTENCY_CONFLICT: async (route) => {
    const key = `conflict-${route.url}`
    const first = await call(route, s.test, GOOD[route.url], { 'idempotency-key': key })
    expect(first.status).toBe(200)
    return call(route, s.test, { ...GOOD[route.url], bypass_cache: true }, { 'idempotency-key': key })
  },
  CONFLICT: null, // not a lookup's answer: a review decided the other way (test/server-reviews.test.ts)
  INPUT_LIMIT_EXCEEDED: (route) => call(route, s.test, { ...GOOD[route.url], padding: 'x'.repeat(70 * 1024) }),
  RATE_LIMITED: async (route) => {
    const key = route.scope === null ? null : s.test
    const limit = route.scope === null ? 20 : 10
    for (let i = 0; i < limit; i++) expect((await call(route, key)).status).toBe(200)
    const r = await call(route, key)
    expect(r.headers['retry-after']).toBe('1')
    expect(r.headers['x-ratelimit-remaining']).toBe('0')
    return r
  },
  INTERNAL_ERROR: (route) => {
    if (route.scope === null) flags.failClock = true
    else flags.failStore = true
    return call(route, s.test)
  },
  UPSTREAM_UNAVAILABLE: null, // a lookup whose source fails is a partial 200 result, never this error
  MAINTENANCE: async (route) => {
    flags.maintenance = true
    const r = await call(route, s.test)
    expect(r.headers['retry-after']).toBe('30')
    return r
  },
}

describe('every error code of every route', () => {
  // The bulk, webhook, list, outcome and review routes have their own error suites (test/server-bulk*.test.ts,
  // test/server-webhooks.test.ts, test/server-lists*.test.ts, test/server-outcomes.test.ts, test/server-reviews.test.ts).
  // GET /healthz and /readyz: test/server-health.test.ts.
  const cases = ROUTES.filter((r) => !r.url.startsWith('/v1/bulk/') && !r.url.startsWith('/v1/webhook-endpoints') && !r.url.startsWith('/v1/lists') && r.url !== '/v1/outcomes' && !r.url.startsWith('/v1/reviews') && !r.probe).flatMap((route) => routeErrorCodes(route).map((code) => [`${route.method} ${route.url}`, code, route] as const))

  it('has a way to provoke every code a route declares', () => {
    for (const [, code] of cases) expect(PRODUCE[code], code).not.toBeNull()
  })

  it.each(cases)('%s → %s', async (_name, code, route) => {
    const r = await PRODUCE[code]!(route)
    expectEnvelope(r, code)
    if (code === 'INTERNAL_ERROR') {
      expect(r.raw).not.toMatch(/SQLITE|secret|internal'|TypeError/)
    } else {
      expectRateHeaders(r)
    }
  })
})

describe('failures outside the routes still get the envelope', () => {
  it('malformed JSON → 400 INVALID_REQUEST', async () => {
    const r = await s.post('/v1/ip', '{"ip": "1.2.3.4"', s.test)
    expectEnvelope(r, 'INVALID_REQUEST')
    expect(r.body.error.message).toMatch(/not valid JSON/)
  })

  it('wrong types, non-object bodies, empty and missing bodies → 400', async () => {
    expectEnvelope(await s.post('/v1/ip', { ip: 42 }, s.test), 'INVALID_REQUEST')
    expectEnvelope(await s.post('/v1/email', { email: 'a@b.co', smtp: 'yes' }, s.test), 'INVALID_REQUEST')
    expectEnvelope(await s.post('/v1/ip', '[1,2]', s.test), 'INVALID_REQUEST')
    expectEnvelope(await s.post('/v1/ip', '"1.2.3.4"', s.test), 'INVALID_REQUEST')
    expectEnvelope(await s.post('/v1/ip', '', s.test), 'INVALID_REQUEST')
    expectEnvelope(await s.request('POST', '/v1/ip', { key: s.test }), 'INVALID_REQUEST')
    const form = await s.post('/v1/ip', 'ip=1.2.3.4', s.test, { 'content-type': 'application/x-www-form-urlencoded' })
    expect(form.status).toBe(415)
    expect(form.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('application/json') })
    expectEnvelope(await s.post('/v1/check', { email: 'a@b.co', context: 'party' }, s.test), 'INVALID_REQUEST')
  })

  it('field limits: the library judges lookup values (422 INVALID_INPUT naming the field); the check keeps its 400s', async () => {
    const r = await s.post('/v1/phone', { phone: '1'.repeat(41) }, s.test)
    expectEnvelope(r, 'INVALID_INPUT')
    expect(r.body.error.message).toMatch(/phone must be at most 40 characters/)
    expectEnvelope(await s.post('/v1/ip', { ip: '1'.repeat(65) }, s.test), 'INVALID_INPUT')
    expectEnvelope(await s.post('/v1/phone', { phone: '+12015550100', country: 'USA' }, s.test), 'INVALID_INPUT')
    expectEnvelope(await s.post('/v1/phone', { phone: '' }, s.test), 'INVALID_INPUT')
    const check = await s.post('/v1/check', { email: `${'a'.repeat(315)}@b.com` }, s.test)
    expectEnvelope(check, 'INVALID_REQUEST')
    expect(check.body.error.message).toBe('`email` must be at most 320 characters.')
  })

  it('the phone limit counts code points on both routes: 21 emoji (42 UTF-16 units) pass it, 41 do not', async () => {
    const fits = '😀'.repeat(21)
    const single = await s.post('/v1/phone', { phone: fits }, s.test)
    expect(single.status).toBe(200)
    const check = await s.post('/v1/check', { phone: fits }, s.test)
    expect(check.status).toBe(200)
    expect(check.body.data.details.phone.valid).toBe(false)
    expectEnvelope(await s.post('/v1/check', { phone: '😀'.repeat(41) }, s.test), 'INVALID_REQUEST')
    expectEnvelope(await s.post('/v1/phone', { phone: '😀'.repeat(41) }, s.test), 'INVALID_INPUT')
  })

  it('a missing required field → 400 MISSING_FIELD naming it', async () => {
    const r = await s.post('/v1/email', { smtp: false }, s.test)
    expectEnvelope(r, 'MISSING_FIELD')
    expect(r.body.error.message).toBe('`email` is required.')
    expectEnvelope(await s.post('/v1/check', { country: 'US', context: 'lead' }, s.test), 'MISSING_FIELD')
  })

  it('prototype-poisoning JSON is refused', async () => {
    const r = await s.post('/v1/ip', '{"ip":"192.0.2.1","__proto__":{"admin":true}}', s.test)
    expectEnvelope(r, 'INVALID_REQUEST')
  })

  it('unknown paths → 404 NOT_FOUND; a known path with another method → 405 with Allow', async () => {
    const r = await s.get('/v1/nothing-here', s.test)
    expectEnvelope(r, 'NOT_FOUND')
    expectRateHeaders(r)
    const root = await s.get('/', null)
    expectEnvelope(root, 'NOT_FOUND')
    const wrong = await s.get('/v1/email', s.test)
    expect(wrong.status).toBe(405)
    expect(wrong.body.error.code).toBe('INVALID_REQUEST')
    expect(wrong.headers.allow).toBe('POST')
    expect(wrong.body.error.message).toMatch(/use POST/)
    const del = await s.request('DELETE', '/v1/account', { key: s.test })
    expect(del.status).toBe(405)
    expect(del.headers.allow).toBe('GET, HEAD')
  })

  it('an oversized body → 413 INPUT_LIMIT_EXCEEDED before anything runs', async () => {
    const r = await s.post('/v1/email', { email: `${'a'.repeat(100_000)}@example.com` }, s.test)
    expectEnvelope(r, 'INPUT_LIMIT_EXCEEDED')
  })

  it('does not leak framework pages for a malformed URL', async () => {
    const r = await s.request('GET', '/v1/%E0%A4%A', { key: s.test })
    expectEnvelope(r, 'INVALID_REQUEST')
    expect(r.body.error.message).toBe('The URL is malformed.')
  })
})

describe('authentication', () => {
  const ip = ROUTES.find((r) => r.url === '/v1/ip')!

  it('rejects malformed, unknown and forged keys with 401', async () => {
    const otherLast = s.live.endsWith('A') ? 'B' : 'A' // (replacing the last character by itself would be the key)
    for (const header of ['Bearer', 'Bearer ', 'Basic abc', `Bearer ${s.live}x`, `Bearer ${s.live.slice(0, -1)}${otherLast}`, `Token ${s.live}`]) {
      const r = await s.post('/v1/ip', GOOD['/v1/ip'], null, { authorization: header })
      expectEnvelope(r, 'UNAUTHORIZED')
    }
    // A well-formed key whose id exists but whose secret differs.
    const forged = s.live.slice(0, 21) + 'A'.repeat(40)
    expectEnvelope(await call(ip, forged), 'UNAUTHORIZED')
    // The id of a live key presented as a test key.
    expectEnvelope(await call(ip, s.live.replace('svc_live_', 'svc_test_')), 'UNAUTHORIZED')
    expectEnvelope(await call(ip, keys.revoked), 'UNAUTHORIZED')
    // a header that was sent is not called missing (before: a 300-character key was "Missing API key")
    const long = await s.post('/v1/ip', GOOD['/v1/ip'], null, { authorization: `Bearer svc_live_${'x'.repeat(300)}` })
    expect(long.body.error.message).toBe('Invalid Authorization header: send `Authorization: Bearer <key>` with an API key.')
    expect((await s.post('/v1/ip', GOOD['/v1/ip'], null, { authorization: `Basic abc` })).body.error.message).toMatch(/^Invalid Authorization header/)
    expect((await s.post('/v1/ip', GOOD['/v1/ip'], null)).body.error.message).toBe('Missing API key: send `Authorization: Bearer <key>`.')
  })

  it('the bearer scheme is case-insensitive', async () => {
    const r = await s.post('/v1/ip', GOOD['/v1/ip'], null, { authorization: `bearer ${s.test}` })
    expect(r.status).toBe(200)
  })

  it('a revoked key fails on its very next request', async () => {
    const now = s.clock.now().getTime()
    const k = await issueApiKey(base, { orgId: s.org.id, mode: 'test' }, now)
    expect((await call(ip, k.secret)).status).toBe(200)
    await base.revokeKey(k.key.id, now)
    const r = await call(ip, k.secret)
    expectEnvelope(r, 'UNAUTHORIZED')
    expect(r.body.error.message).toMatch(/revoked/)
  })

  it('suspension and unsuspension take effect on the next request', async () => {
    const now = s.clock.now().getTime()
    const org = await base.createOrg({ name: 'Flaky', planId: 'free' }, now)
    const k = await issueApiKey(base, { orgId: org.id, mode: 'test' }, now)
    expect((await call(ip, k.secret)).status).toBe(200)
    await base.setOrgSuspended(org.id, true, now)
    expectEnvelope(await call(ip, k.secret), 'ACCOUNT_SUSPENDED')
    await base.setOrgSuspended(org.id, false, now)
    expect((await call(ip, k.secret)).status).toBe(200)
  })

  it('a 401 is answered before validation and scope checks', async () => {
    expectEnvelope(await s.post('/v1/ip', '{broken', null), 'UNAUTHORIZED')
    expectEnvelope(await s.get('/v1/account', null), 'UNAUTHORIZED')
  })

  it('scopes: account:read is needed for the account, lookup for lookups', async () => {
    const now = s.clock.now().getTime()
    const lookupOnly = await issueApiKey(base, { orgId: s.org.id, mode: 'test', scopes: ['lookup'] }, now)
    expect((await call(ip, lookupOnly.secret)).status).toBe(200)
    const r = await s.get('/v1/account', lookupOnly.secret)
    expectEnvelope(r, 'FORBIDDEN_SCOPE')
    expect(r.body.error.message).toMatch(/account:read/)
  })
})

describe('rate limits', () => {
  it('test keys get 10 a second; a second later all 10 are free again', async () => {
    const ip = ROUTES.find((r) => r.url === '/v1/ip')!
    const statuses: number[] = []
    let last: Res | undefined
    for (let i = 0; i < 12; i++) {
      last = await call(ip, s.test)
      statuses.push(last.status)
    }
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429])
    expect(last!.headers['ratelimit']).toBe('"key";r=0;t=1')
    rateMs += 1000
    const again = await call(ip, s.test)
    expect(again.status).toBe(200)
    expect(again.headers['ratelimit']).toBe('"key";r=9;t=1')
    expect(again.headers['ratelimit-policy']).toBe('"key";q=10;w=1')
  })

  it('30 requests across a second’s edge with a test key (10 a second): 10 answered, never more than 10 in one second', async () => {
    const ip = ROUTES.find((r) => r.url === '/v1/ip')!
    const accepted: number[] = []
    for (const t of burstAcrossEdge(rateMs + 700)) {
      rateMs = t
      const r = await call(ip, s.test)
      if (r.status === 200) accepted.push(t)
      else expect([r.status, r.headers['retry-after']]).toEqual([429, '1'])
    }
    expect(accepted).toHaveLength(10)
    expect(maxInAnySpan(accepted)).toBe(10)
  })

  it('keys are limited separately; a live key follows its org plan and override', async () => {
    const now = s.clock.now().getTime()
    const org = await base.createOrg({ name: 'Custom', planId: 'free' }, now)
    const k = await issueApiKey(base, { orgId: org.id }, now)
    const r = await s.get('/v1/account', k.secret)
    expect(r.headers['x-ratelimit-limit']).toBe('5')
    await base.setOrgPlan(org.id, { planId: 'free', ratePerSecond: 3 }, now)
    rateMs += 1000
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) statuses.push((await s.get('/v1/account', k.secret)).status)
    expect(statuses).toEqual([200, 200, 200, 429])
    // Another key of the same window is unaffected.
    expect((await s.get('/v1/account', s.live)).status).toBe(200)
  })

  it('failed authentications count against the client address', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 21; i++) statuses.push((await s.get('/v1/account', 'svc_live_nope')).status)
    expect(statuses.slice(0, 20).every((x) => x === 401)).toBe(true)
    expect(statuses[20]).toBe(429)
  })
})

describe('idempotency', () => {
  it('replays the stored answer for the same key and body, without charging again', async () => {
    const body = { ip: '192.0.2.44', bypass_cache: true }
    const h = { 'idempotency-key': '"8e03978e-40d5-43e8-bc93-6894a57f9324"' }
    const first = await s.post('/v1/ip', body, s.live, h)
    expect(first.status).toBe(200)
    const balance = await base.balance(s.org.id, s.clock.now().getTime())
    const again = await s.post('/v1/ip', { bypass_cache: true, ip: '192.0.2.44' }, s.live, { 'idempotency-key': '8e03978e-40d5-43e8-bc93-6894a57f9324' })
    expect(again.status).toBe(200)
    expect(again.raw).toBe(first.raw)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(await base.balance(s.org.id, s.clock.now().getTime())).toBe(balance)
    expectRateHeaders(again)
  })

  it('replays stored errors too (422), but not 402', async () => {
    // (A cached answer is free, so a zero balance still gets it: the 402 needs bypass_cache.)
    expect((await s.post('/v1/ip', { ip: '192.0.2.1' }, s.live)).status).toBe(200)
    const cached = await s.post('/v1/ip', { ip: '192.0.2.1' }, keys.broke)
    expect(cached.status).toBe(200)
    expect(cached.body.data.metadata).toMatchObject({ cache_hit: true, credits_used: 0, credits_remaining: 0 })
    const h = { 'idempotency-key': 'bad-ip-1' }
    const first = await s.post('/v1/ip', { ip: 'nope' }, s.test, h)
    expectEnvelope(first, 'INVALID_INPUT')
    const again = await s.post('/v1/ip', { ip: 'nope' }, s.test, h)
    expect(again.raw).toBe(first.raw)
    expect(again.headers['idempotent-replayed']).toBe('true')

    const h2 = { 'idempotency-key': 'broke-1' }
    const body = { ip: '192.0.2.1', bypass_cache: true }
    expectEnvelope(await s.post('/v1/ip', body, keys.broke, h2), 'INSUFFICIENT_CREDITS')
    const retry = await s.post('/v1/ip', body, keys.broke, h2)
    expectEnvelope(retry, 'INSUFFICIENT_CREDITS')
    expect(retry.headers['idempotent-replayed']).toBeUndefined()
  })

  it('keys are scoped to the API key and path', async () => {
    const h = { 'idempotency-key': 'shared-key' }
    const a = await s.post('/v1/ip', { ip: '192.0.2.1' }, s.test, h)
    const b = await s.post('/v1/ip', { ip: '192.0.2.2' }, s.live, h)
    expect(b.status).toBe(200)
    expect(b.headers['idempotent-replayed']).toBeUndefined()
    const c = await s.post('/v1/phone/type', { phone: '+1 201 555 0100' }, s.test, h)
    expect(c.status).toBe(200)
    expect(c.headers['idempotent-replayed']).toBeUndefined()
    expect(a.body.data.request.id).not.toBe(b.body.data.request.id)
  })

  it('a percent-encoded spelling of the path is the same path: replayed, not charged again', async () => {
    // before, the scope was the raw URL: POST /v1/%69p with the key of a POST /v1/ip ran and was charged again
    const h = { 'idempotency-key': 'spelled-path' }
    const body = { ip: '192.0.2.45', bypass_cache: true }
    const first = await s.post('/v1/ip', body, s.live, h)
    const balance = await base.balance(s.org.id, s.clock.now().getTime())
    for (const path of ['/v1/%69p', '/v1/i%70', '/v1/%69%70']) {
      const again = await s.post(path, body, s.live, h)
      expect(again.status, path).toBe(200)
      expect(again.headers['idempotent-replayed'], path).toBe('true')
      expect(again.raw).toBe(first.raw)
    }
    expect(await base.balance(s.org.id, s.clock.now().getTime())).toBe(balance)
  })

  it('expires after 24 hours', async () => {
    const h = { 'idempotency-key': 'day-old' }
    const first = await s.post('/v1/ip', { ip: '192.0.2.1' }, s.test, h)
    s.clock.advance(24 * 60 * 60 * 1000 + 1)
    try {
      const later = await s.post('/v1/ip', { ip: '192.0.2.2' }, s.test, h)
      expect(later.status).toBe(200)
      expect(later.body.data.request.id).not.toBe(first.body.data.request.id)
    } finally {
      s.clock.set('2026-11-22T00:00:00Z')
    }
  })

  it('rejects a malformed Idempotency-Key', async () => {
    expectEnvelope(await s.post('/v1/ip', { ip: '192.0.2.1' }, s.test, { 'idempotency-key': 'has space' }), 'INVALID_REQUEST')
    expectEnvelope(await s.post('/v1/ip', { ip: '192.0.2.1' }, s.test, { 'idempotency-key': 'x'.repeat(256) }), 'INVALID_REQUEST')
  })
})

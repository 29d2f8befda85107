/**
 * Many instances give the same answers as one: two `riskcheck serve` processes on one PostgreSQL database (a schema
 * of this run's own, dropped after) and one Redis (a key prefix of this run's own), started by ./scale-out-harness.ts.
 * Needs RISKCHECK_TEST_DATABASE_URL and RISKCHECK_TEST_REDIS_URL (`.ci/run` sets both); without them the suite is
 * skipped with a note. ./scale-out-crash.test.ts kills one of them mid-work.
 *
 * Every case talks to the two processes over HTTP, as a load balancer would spread a client's requests.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scaleOut, type Instance } from './scale-out-harness.js'

const h = scaleOut('scale-out')

describe.skipIf(!h.enabled)('two instances on one PostgreSQL and one Redis', () => {
  let a: Instance
  let b: Instance

  beforeAll(async () => {
    await h.open()
    ;[a, b] = await Promise.all([h.serve(), h.serve()])
  }, 120_000)

  afterAll(() => h.close(), 60_000)

  const lookup = (base: string, secret: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/ip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })

  it('200 concurrent billed lookups split across both against 50 credits: exactly 50 answered and billed, the rest 402', async () => {
    const { orgId, secret } = await h.orgWithKey(50)
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => lookup(i % 2 ? a.url : b.url, secret, { ip: `8.8.${i % 250}.${i % 7}`, bypass_cache: true })),
    )
    const codes = responses.map((r) => r.status)
    await Promise.all(responses.map((r) => r.arrayBuffer()))
    expect(codes.filter((c) => c === 200)).toHaveLength(50)
    expect(codes.filter((c) => c === 402)).toHaveLength(150)
    const org = (await h.store.getOrg(orgId, Date.now()))!
    expect(org.subscriptionCredits + org.purchasedCredits).toBe(0)
    expect(org.usage.periodCredits).toBe(50)
    expect(org.usage.periodLookups).toBe(50)
  })

  it('one Idempotency-Key sent to both at once: one charge, identical answers', async () => {
    const { orgId, secret } = await h.orgWithKey(10)
    const headers = { 'idempotency-key': `scale-${randomBytes(4).toString('hex')}` }
    const body = { ip: '9.9.9.9', bypass_cache: true }
    // Both at once; whichever comes second either waits its turn (409 in progress) or replays the first answer.
    const first = await Promise.all([lookup(a.url, secret, body, headers), lookup(b.url, secret, body, headers)])
    const texts = await Promise.all(first.map((r) => r.text()))
    const ok = first.map((r, i) => [r.status, texts[i]!] as const).filter(([s]) => s === 200)
    expect(ok.length).toBeGreaterThanOrEqual(1)
    expect(first.every((r) => r.status === 200 || r.status === 409)).toBe(true)
    // Replays from either instance are the stored answer, byte for byte.
    const replays = await Promise.all([lookup(a.url, secret, body, headers), lookup(b.url, secret, body, headers)])
    const replayTexts = await Promise.all(replays.map((r) => r.text()))
    expect(replays.map((r) => r.status)).toEqual([200, 200])
    expect(replayTexts[0]).toBe(ok[0]![1])
    expect(replayTexts[1]).toBe(ok[0]![1])
    const org = (await h.store.getOrg(orgId, Date.now()))!
    expect(org.usage.periodCredits).toBe(1)
    expect(org.subscriptionCredits).toBe(9)
  })

  it('a plan of 5 requests a second: the two together accept no more than the plan allows', async () => {
    const { secret } = await h.orgWithKey(1_000, 5)
    // 20 requests at once, 10 to each instance: one window's worth of the key's rate is accepted in all.
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => lookup(i % 2 ? a.url : b.url, secret, { ip: '1.1.1.1' })))
    await Promise.all(responses.map((r) => r.arrayBuffer()))
    const accepted = responses.filter((r) => r.status === 200)
    const limited = responses.filter((r) => r.status === 429)
    expect(accepted.length).toBeGreaterThanOrEqual(1)
    expect(accepted.length).toBeLessThanOrEqual(5)
    expect(accepted.length + limited.length).toBe(20)
    // Both instances answered some of them, and their RateLimit headers count the shared budget.
    expect(Number(limited[0]!.headers.get('ratelimit-remaining') ?? limited[0]!.headers.get('x-ratelimit-remaining'))).toBe(0)
  })

  it('a key revoked through one instance is refused by the other on its next request', async () => {
    const { secret, keyId } = await h.orgWithKey(100)
    expect((await lookup(b.url, secret, { ip: '1.0.0.1' })).status).toBe(200)
    await h.store.revokeKey(keyId, Date.now())
    const refused = await lookup(b.url, secret, { ip: '1.0.0.1' })
    expect(refused.status).toBe(401)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED')
  })
})

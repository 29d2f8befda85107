/**
 * Many instances give the same answers as one: two `riskcheck serve` processes on one PostgreSQL database (a schema
 * of this run's own, dropped after) and one Redis (a key prefix of this run's own). Needs RISKCHECK_TEST_DATABASE_URL
 * and RISKCHECK_TEST_REDIS_URL (`.ci/run` sets both); without them the suite is skipped with a note.
 *
 * Every case talks to the two processes over HTTP, as a load balancer would spread a client's requests.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createPostgresStore, type PostgresStore } from '../src/server/store/postgres.js'
import { deleteKeys, testRedis, testRedisUrl } from './redis-env.js'

const databaseUrl = process.env.RISKCHECK_TEST_DATABASE_URL
if (!databaseUrl) console.log('[skipped] scale-out: needs PostgreSQL. Run it with RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test (or .ci/run).')
const redisUrl = testRedisUrl('scale-out')

const schema = `rc_scale_${randomBytes(5).toString('hex')}`
/** This run's Redis key prefix (`--redis-prefix`): its keys and queues are its own, deleted after. */
const redisPrefix = `rc-scale-${randomBytes(5).toString('hex')}`
/** The database URL the instances get: this run's schema through the connection's search_path. */
const instanceDbUrl = () => {
  const u = new URL(databaseUrl!)
  u.searchParams.set('options', `-c search_path=${schema}`)
  return u.toString()
}

interface Instance {
  child: ChildProcess
  url: string
  err: () => string
}

/** Starts `riskcheck serve` on PostgreSQL + Redis in a child process; resolves once it listens. */
function startInstance(extraEnv: Record<string, string> = {}): Promise<Instance> {
  const bin = fileURLToPath(new URL('../src/cli/bin.ts', import.meta.url))
  const child = spawn(process.execPath, ['--import', 'tsx', bin, 'serve', '--port', '0', '--json', '--offline', '--log-level', 'warn'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RISKCHECK_DATABASE_URL: instanceDbUrl(), RISKCHECK_REDIS_URL: redisUrl!, RISKCHECK_REDIS_PREFIX: redisPrefix, ...extraEnv },
  })
  let out = ''
  let err = ''
  child.stderr!.on('data', (d) => (err += d))
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (line) resolve({ child, url: (JSON.parse(line) as { url: string }).url, err: () => err })
    })
    child.on('close', (code) => reject(new Error(`serve exited ${code} before listening: ${err}`)))
  })
}

async function stop(i: Instance | undefined): Promise<void> {
  if (!i || i.child.exitCode !== null) return
  const closed = new Promise((resolve) => i.child.on('close', resolve))
  i.child.kill('SIGTERM')
  await closed
}

describe.skipIf(!databaseUrl || !redisUrl)('two instances on one PostgreSQL and one Redis', () => {
  let store: PostgresStore
  let a: Instance
  let b: Instance

  beforeAll(async () => {
    store = await createPostgresStore({ connectionString: databaseUrl!, schema })
    ;[a, b] = await Promise.all([startInstance(), startInstance()])
  }, 120_000)

  afterAll(async () => {
    await Promise.all([stop(a), stop(b)])
    await store?.close()
    const admin = new pg.Pool({ connectionString: databaseUrl })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
    const redis = testRedis(redisUrl!)
    await deleteKeys(redis, `${redisPrefix}:`)
    redis.disconnect()
  })

  /** An org with `credits` subscription credits and `rate` requests a second, and a live key of it. */
  async function orgWithKey(credits: number, rate = 10_000): Promise<{ orgId: string; secret: string; keyId: string }> {
    const now = Date.now()
    const org = await store.createOrg({ name: 'Scale', planId: 'scale' }, now)
    await store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: credits, ratePerSecond: rate }, now)
    const { secret, key } = await issueApiKey(store, { orgId: org.id }, now)
    return { orgId: org.id, secret, keyId: key.id }
  }

  const lookup = (base: string, secret: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/ip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })

  it('200 concurrent billed lookups split across both against 50 credits: exactly 50 answered and billed, the rest 402', async () => {
    const { orgId, secret } = await orgWithKey(50)
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => lookup(i % 2 ? a.url : b.url, secret, { ip: `8.8.${i % 250}.${i % 7}`, bypass_cache: true })),
    )
    const codes = responses.map((r) => r.status)
    await Promise.all(responses.map((r) => r.arrayBuffer()))
    expect(codes.filter((c) => c === 200)).toHaveLength(50)
    expect(codes.filter((c) => c === 402)).toHaveLength(150)
    const org = (await store.getOrg(orgId, Date.now()))!
    expect(org.subscriptionCredits + org.purchasedCredits).toBe(0)
    expect(org.usage.periodCredits).toBe(50)
    expect(org.usage.periodLookups).toBe(50)
  })

  it('one Idempotency-Key sent to both at once: one charge, identical answers', async () => {
    const { orgId, secret } = await orgWithKey(10)
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
    const org = (await store.getOrg(orgId, Date.now()))!
    expect(org.usage.periodCredits).toBe(1)
    expect(org.subscriptionCredits).toBe(9)
  })

  it('a plan of 5 requests a second: the two together accept no more than the plan allows', async () => {
    const { secret } = await orgWithKey(1_000, 5)
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
    const { secret, keyId } = await orgWithKey(100)
    expect((await lookup(b.url, secret, { ip: '1.0.0.1' })).status).toBe(200)
    await store.revokeKey(keyId, Date.now())
    const refused = await lookup(b.url, secret, { ip: '1.0.0.1' })
    expect(refused.status).toBe(401)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED')
  })
})

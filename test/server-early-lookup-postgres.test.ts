/**
 * On PostgreSQL a billed lookup starts while its reservation is on its way when the org's balance covers it many
 * times over (`CreditLedger.covers`): its DNS questions go out before the reservation statement has answered. At a
 * low balance it waits, so a request refused for credits asks nothing of DNS. A schema of the suite's own, dropped
 * after; DNS is a loopback fake that records every question. Needs RISKCHECK_TEST_DATABASE_URL.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { COVER_MARGIN } from '../src/accounts/ledger.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createRateLimiter } from '../src/server/rate-limit.js'
import { createPostgresStore, type PostgresStore } from '../src/server/store/postgres/store.js'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { gate, type Gate } from './gate.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
if (!url) console.log('[skipped] early lookups on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')
const schema = `rc_early_${randomBytes(5).toString('hex')}`

/** The reversed address as DNS names carry it (`1.2.3.4` → `4.3.2.1.`), found in its PTR and blocklist questions. */
const reversed = (ip: string) => `${ip.split('.').reverse().join('.')}.`

let store: PostgresStore
let app: RiskcheckServer
let dns: FakeDnsServer
/** What happened, in order: a DNS question about an address, a reservation statement sent or answered. */
const events: string[] = []
/** While set, reservation statements wait for it before they go out. */
let held: Gate<void> | null = null
/** Told the reversed address of each DNS question about an address. */
let onAddressQuestion: (reversedAddress: string) => void = () => undefined
let rate = 1_000_000
const clientQuery = pg.Client.prototype.query

async function orgWith(credits: number): Promise<string> {
  const now = Date.now()
  const org = await store.createOrg({ name: `org-${credits}`, planId: 'free' }, now)
  await store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: credits, ratePerSecond: 1_000_000 }, now)
  return (await issueApiKey(store, { orgId: org.id }, now)).secret
}

async function lookup(key: string, ip: string) {
  rate += 1000
  const r = await app.inject({
    method: 'POST',
    url: '/v1/ip',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ ip, bypass_cache: true }),
  })
  return { status: r.statusCode, body: JSON.parse(r.body) }
}

describe.skipIf(!url)('billed lookups on PostgreSQL start while their reservation is on its way', () => {
  beforeAll(async () => {
    dns = await startDnsServer({
      zones: {},
      everyName: 'nxdomain',
      onQuery: (q) => {
        const m = /^(\d+\.\d+\.\d+\.\d+\.)/.exec(q.name)
        if (m) {
          events.push(`dns ${m[1]}`)
          onAddressQuestion(m[1]!)
        }
      },
    })
    pg.Client.prototype.query = function (this: object, ...args: unknown[]) {
      const q = args[0] as { name?: string } | string
      if (typeof q === 'object' && q?.name === 'riskcheck_reserve_many') {
        const wait = held?.promise ?? Promise.resolve()
        return wait.then(async () => {
          events.push('reserve sent')
          const r = await (clientQuery as (...a: unknown[]) => Promise<unknown>).apply(this, args)
          events.push('reserve answered')
          return r
        })
      }
      return (clientQuery as (...a: unknown[]) => unknown).apply(this, args)
    } as typeof clientQuery
    store = await createPostgresStore({ connectionString: url!, schema })
    app = createServer({
      db: store,
      dashboard: false,
      purgeIntervalMs: 0,
      webhookIntervalMs: 0,
      velocity: false,
      rateLimiter: createRateLimiter({ now: () => rate }),
      riskcheck: { dns: { servers: [dns.address], timeoutMs: 2000 }, smtp: { enabled: false }, rdap: { enabled: false } },
    })
    await app.ready()
  })
  afterAll(async () => {
    pg.Client.prototype.query = clientQuery
    await app?.close()
    await store?.close()
    await dns?.close()
    const admin = new pg.Pool({ connectionString: url })
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
  })

  it("at a balance covering it many times over, the lookup's DNS questions go out before its reservation is sent", async () => {
    const key = await orgWith(COVER_MARGIN * 100)
    await lookup(key, '81.2.69.142') // a first request warms the server; the next one's reservation goes alone
    events.length = 0
    held = gate<void>()
    const asked = new Promise<void>((resolve) => {
      onAddressQuestion = (r) => r === reversed('81.2.69.160') && resolve()
    })
    const pending = lookup(key, '81.2.69.160')
    // the reservation waits until the lookup has asked DNS; on a pipeline that runs the lookup only after its
    // reservation, nothing is asked until it is let go, so it is let go after a while all the same (not to hang)
    const fallback = setTimeout(() => held?.resolve(), 10_000)
    await Promise.race([asked, held.promise])
    held.resolve()
    clearTimeout(fallback)
    const r = await pending
    held = null
    onAddressQuestion = () => undefined
    expect(r.status).toBe(200)
    expect(r.body.data.metadata.credits_used).toBe(1)
    const first = events.findIndex((e) => e === `dns ${reversed('81.2.69.160')}`)
    expect(first).toBeGreaterThanOrEqual(0)
    expect(events.indexOf('reserve sent')).toBeGreaterThan(first)
  })

  it('at a low balance, the lookup waits for its reservation: a request refused for credits asks DNS nothing', async () => {
    const key = await orgWith(3)
    const addresses = Array.from({ length: 12 }, (_, i) => `8.8.${i}.8`)
    events.length = 0
    const answers = await Promise.all(addresses.map((ip) => lookup(key, ip)))
    const served = addresses.filter((_, i) => answers[i]!.status === 200)
    const refused = addresses.filter((_, i) => answers[i]!.status === 402)
    expect(served).toHaveLength(3)
    expect(refused).toHaveLength(9)
    const asked = new Set(events.filter((e) => e.startsWith('dns ')).map((e) => e.slice(4)))
    for (const ip of served) expect(asked.has(reversed(ip))).toBe(true)
    for (const ip of refused) expect(asked.has(reversed(ip))).toBe(false)
  })
})

/**
 * PostgreSQL going down in the middle of a review decision (POST /v1/reviews/{id}/decision), against a server on a
 * private cluster behind a freezable proxy (test/pg-cluster.ts): the key is read, then — before the decision's first
 * statement — the cluster crashes, or the proxy freezes (a partition). The decision is answered 503
 * UPSTREAM_UNAVAILABLE in the envelope with Retry-After, never 500; once the database is back the same decision
 * is recorded, with one outcome.
 */
import type { FastifyRequest } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { openPostgresServerStores, type PostgresServerStores } from '../src/server/store/postgres/server.js'
import { createPgCluster, freezableProxy, pgClusterAvailable, type FreezableProxy, type PgCluster } from './pg-cluster.js'

const RUN = pgClusterAvailable('test/outage-reviews.test.ts')
// test mode, action review (a block of one labels its input: each case decides another)
const TOR = { path: '/v1/ip', body: { ip: '192.0.2.8' } } // a Tor exit
const DISPOSABLE = { path: '/v1/email', body: { email: 'disposable@example.com' } } // email_disposable
const VPN = { path: '/v1/ip', body: { ip: '192.0.2.10' } } // a VPN in a datacenter

interface Answer {
  status: number
  retryAfter: string | null
  body: { success: boolean; data?: any; error?: { code: string; message: string; docs_url: string; request_id: string } }
}

describe.skipIf(!RUN)('PostgreSQL down during a review decision', () => {
  let cluster: PgCluster
  let proxy: FreezableProxy
  let stores: PostgresServerStores
  let app: RiskcheckServer
  let base: string
  let key: string
  const log: string[] = []
  /** Runs once, after the key of the next decision was read and before its handler. */
  let trip: (() => void) | null = null

  beforeAll(async () => {
    cluster = await createPgCluster()
    proxy = await freezableProxy(cluster.port)
    stores = await openPostgresServerStores({ connectionString: cluster.url.replace(`:${cluster.port}/`, `:${proxy.port}/`) }, { timeoutMs: 3000 })
    app = createServer({
      db: stores.store,
      orgPolicies: stores.orgPolicies,
      dashboard: false,
      riskcheck: { offline: true },
      purgeIntervalMs: 0,
      logger: { level: 'warn', stream: { write: (line: string) => void log.push(line) } },
    })
    app.addHook('preHandler', async (request: FastifyRequest) => {
      if (trip && request.url.endsWith('/decision')) {
        const t = trip
        trip = null
        t()
      }
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    const now = Date.now()
    const org = await stores.store.createOrg({ name: 'Reviews outage', planId: 'starter' }, now)
    key = (await issueApiKey(stores.store, { orgId: org.id, mode: 'test', name: 'reviewer' }, now)).secret
  }, 120_000)
  afterAll(async () => {
    await app?.close().catch(() => undefined)
    await stores?.close().catch(() => undefined)
    await proxy?.close()
    cluster?.drop()
  })

  const send = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Answer['body'] }
  }
  const ready = async () => {
    for (let i = 0; i < 100; i++) {
      if ((await fetch(`${base}/readyz`)).status === 200) return
      await new Promise((r) => setTimeout(r, 200))
    }
    throw new Error('GET /readyz never answered 200')
  }
  /** A fresh review: an answer of the test key whose action is review, found in the pending queue. */
  const queued = async (lookup: { path: string; body: unknown }): Promise<{ id: string; requestId: string }> => {
    const answer = await send('POST', lookup.path, lookup.body)
    expect(answer.body.data.recommendation.action).toBe('review')
    const requestId = answer.body.data.request.id as string
    const pending = await send('GET', '/v1/reviews?status=pending')
    expect(pending.status, JSON.stringify(pending.body)).toBe(200)
    const entry = pending.body.data.find((e: { request_id: string }) => e.request_id === requestId)
    return { id: entry.id, requestId }
  }
  const unavailable = (a: Answer) => {
    expect(a.status, JSON.stringify(a.body)).toBe(503)
    expect(a.retryAfter).toMatch(/^[1-9][0-9]*$/)
    expect(a.body.success).toBe(false)
    expect(a.body.error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' })
    expect(a.body.error!.docs_url).toMatch(/#upstream_unavailable$/)
    expect(a.body.error!.request_id).toMatch(/^req_/)
  }
  /** After the outage: the same decision is recorded once, with one outcome. */
  const decidedOnceBack = async (r: { id: string; requestId: string }) => {
    await ready()
    const again = await send('POST', `/v1/reviews/${r.id}/decision`, { decision: 'block', note: 'after the outage' })
    expect(again.status, JSON.stringify(again.body)).toBe(200)
    expect(again.body.data.review).toMatchObject({ id: r.id, decision: 'block', status: 'decided' })
    const outcomes = await send('GET', `/v1/outcomes?request_id=${r.requestId}`)
    expect(outcomes.status, JSON.stringify(outcomes.body)).toBe(200)
    expect(outcomes.body.data.map((o: { outcome: string }) => o.outcome)).toEqual(['fraud'])
  }

  it('the cluster crashes after the key was read: 503, then the decision once it is back', async () => {
    const r = await queued(TOR)
    trip = () => cluster.crash()
    unavailable(await send('POST', `/v1/reviews/${r.id}/decision`, { decision: 'block' }))
    // and while it is down, the queue too
    unavailable(await send('GET', '/v1/reviews'))
    cluster.start()
    await decidedOnceBack(r)
  }, 120_000)

  it('the database hangs (a partition) after the key was read: 503 within the database time-out, then the decision', async () => {
    const r = await queued(DISPOSABLE)
    trip = () => proxy.freeze()
    unavailable(await send('POST', `/v1/reviews/${r.id}/decision`, { decision: 'block' }))
    proxy.thaw()
    await decidedOnceBack(r)
  }, 120_000)

  it('the connection is cut between the claim and the outcome (a decision half done): 503, and the retry finishes it', async () => {
    // The database ends the session that writes the decision's outcome, once (a sequence is not rolled back).
    const admin = await stores.store.pool.connect()
    try {
      await admin.query(`CREATE SEQUENCE rc_cut_once;
        CREATE FUNCTION rc_cut() RETURNS trigger AS $$ BEGIN
          IF nextval('rc_cut_once') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
          RETURN NEW; END $$ LANGUAGE plpgsql;
        CREATE TRIGGER rc_cut BEFORE INSERT ON outcomes FOR EACH ROW EXECUTE FUNCTION rc_cut();`)
    } finally {
      admin.release()
    }
    const r = await queued(VPN)
    unavailable(await send('POST', `/v1/reviews/${r.id}/decision`, { decision: 'block', note: 'cut' }))
    await ready()
    // claimed, not carried out: the queue shows the decision, and no outcome was recorded
    const half = (await send('GET', '/v1/reviews?status=decided')).body.data.find((e: { id: string }) => e.id === r.id)
    expect(half).toMatchObject({ decision: 'block', outcome_id: null })
    expect((await send('GET', `/v1/outcomes?request_id=${r.requestId}`)).body.data).toEqual([])
    await decidedOnceBack(r)
    expect(log.filter((l) => l.includes('internal error'))).toEqual([])
    expect(log.filter((l) => l.includes('"statusCode":500'))).toEqual([])
  }, 120_000)
})

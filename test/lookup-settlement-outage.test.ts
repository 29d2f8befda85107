/**
 * A billed lookup whose hold cannot be written because the database failed at that moment (on the server's SQLite
 * store, the failure injected at the hold's write as the database's own error would come): the request is answered
 * 503 UPSTREAM_UNAVAILABLE and is not charged — its hold is released once the database answers again, also when the
 * failed write had in fact committed (a reply lost) — and a retry with the same Idempotency-Key is run then, not held
 * off with 409 by the failed one's record.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { markDependency } from '../src/server/outage.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import type { InstanceLeases } from '../src/server/store/contracts/store.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const BODY = { phone: '+14155552671', bypass_cache: true }
let open: { app: RiskcheckServer; store: SqliteStore } | undefined
afterEach(async () => {
  await open?.app.close()
  open?.store.close()
  open = undefined
})

/** A server whose store fails the next write named by `fail` once, as a database outage (after the write itself when `lost`). */
async function serverFailing(fail: 'reserveHeld' | 'closeHeld', lost: boolean) {
  const store = createSqliteStore(':memory:')
  const leases = store.leases!
  let armed = true
  const outage = () => markDependency(Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' }), 'database')
  const failing = <K extends 'reserveHeld' | 'closeHeld'>(name: K) =>
    (async (...args: unknown[]) => {
      if (name !== fail || !armed) return (leases[name] as (...a: unknown[]) => unknown)(...args)
      armed = false
      if (lost) await (leases[name] as (...a: unknown[]) => unknown)(...args)
      throw outage()
    }) as InstanceLeases[K]
  const app = createServer({
    db: { ...store, leases: { ...leases, reserveHeld: failing('reserveHeld'), closeHeld: failing('closeHeld') } },
    purgeIntervalMs: 0,
    webhookIntervalMs: 0,
    dashboard: false,
    riskcheck: { offline: true },
  })
  await app.ready()
  open = { app, store }
  const now = Date.now()
  const org = store.createOrg({ name: 'Acme', planId: 'starter' }, now)
  const { secret } = await issueApiKey(store, { orgId: org.id }, now)
  const initial = store.balance(org.id, now)
  const post = (key?: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/phone/type',
      headers: { authorization: `Bearer ${secret}`, ...(key ? { 'idempotency-key': key } : {}) },
      payload: BODY,
    })
  const holds = () => (store.db.prepare('SELECT COUNT(*) AS n FROM credit_holds').get() as { n: number }).n
  /** Waits (at most 10 s) until the database is taken to answer again and the failed request's hold is gone. */
  const settled = async () => {
    for (let i = 0; i < 100 && holds() > 0; i++) await sleep(100)
    return { holds: holds(), spent: initial - store.balance(org.id, Date.now()), usage: store.getOrg(org.id, Date.now())!.usage }
  }
  return { post, settled }
}

describe('a billed lookup whose hold cannot be written (SQLite)', () => {
  for (const [fail, lost] of [
    ['closeHeld', false],
    ['closeHeld', true],
    ['reserveHeld', true],
  ] as const) {
    for (const keyed of [true, false]) {
      it(`${fail === 'closeHeld' ? 'its settlement' : 'its reservation'} fails${lost ? ' after committing (the reply lost)' : ''}, ${keyed ? 'with' : 'without'} an Idempotency-Key: 503, not charged; the retry is answered and charged once`, async () => {
        const s = await serverFailing(fail, lost)
        const key = keyed ? `k-${fail}-${lost}` : undefined
        const first = await s.post(key)
        expect(first.statusCode, first.body).toBe(503)
        expect(first.json().error.code).toBe('UPSTREAM_UNAVAILABLE')
        expect(first.headers['retry-after']).toMatch(/^[1-9]/)
        const after = await s.settled()
        // a settlement that committed before its reply was lost was charged and counted: the answer it settled was
        // never sent, so the only way to tell is the hold — closed, not released
        const charged = fail === 'closeHeld' && lost ? 1 : 0
        expect(after).toEqual({ holds: 0, spent: charged, usage: { periodLookups: charged, periodCredits: charged, totalLookups: charged, totalCredits: charged } })
        let retry = await s.post(key)
        for (let i = 0; i < 50 && retry.statusCode !== 200; i++) {
          await sleep(200)
          retry = await s.post(key)
        }
        expect(retry.statusCode, retry.body).toBe(200)
        // with a key, a settlement that committed stored its answer too: the retry replays it
        const replayed = keyed && charged === 1
        expect(retry.headers['idempotent-replayed']).toBe(replayed ? 'true' : undefined)
        const end = await s.settled()
        expect(end.spent).toBe(replayed ? 1 : charged + 1)
        expect(end.usage.totalLookups).toBe(end.usage.totalCredits)
      })
    }
  }
})

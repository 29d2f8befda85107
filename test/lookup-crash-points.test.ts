/**
 * A billed lookup whose server process is SIGKILLed in the middle, on SQLite and on PostgreSQL, with and without an
 * Idempotency-Key. Instance A is a real child process (./children/lookup-crash.ts) that kills itself at one boundary
 * of the request: its credits held (`reserved`), its answer ready but nothing settled (`looked-up`), its settlement
 * committed (`settled`), or in the last hook before the answer is written (`responding`). Instance B, on the same
 * database, is the one left; the client retries there — with its key following `Retry-After`, without one as a new
 * request — until it gets a 200.
 *
 * Afterwards, exactly: no credit hold is left (B refunded A's once A's lease ended, or the settlement closed it);
 * usage counts as many lookups as credits; the balance dropped by exactly what was settled — with a key the one
 * answer the client got (a settled answer is replayed, an unsettled request runs again once); without a key also the
 * answer settled just before the crash, which the client never saw (the settlement is the commit point: a server
 * cannot tell a retry without a key from a new request). While A's lease runs a retry gets 409 IDEMPOTENCY_CONFLICT
 * whose `Retry-After` adds up to at most the lease; with the default lease (10 s) the client has its answer within
 * 15 s of the crash (scripts/bench/takeover.ts measures how long it takes).
 *
 * A whose event loop stalls past its lease before its settlement (a loaded machine: the matrix's lease is short) has
 * its hold swept by B meanwhile: its settlement is refused, the answer it was writing is a 503 UPSTREAM_UNAVAILABLE
 * that charged nothing, and the retry runs the lookup once — charged, never a free hit on the refused lookup's cache
 * entry. The matrix expects that of a case whose A said so as it died; the stall cases make it happen every time.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { crashAndRetry, engines, POINTS, removeFiles, type AReport } from './lookup-crash-harness.js'

if (!process.env.RISKCHECK_TEST_DATABASE_URL) {
  console.log('[skipped] lookup crash points on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run them')
}
afterAll(removeFiles)

/**
 * The lease of the matrix's instances (short, so each case waits ~1 s for a dead instance, not 10). The cases, of
 * both engines, run at once (each on a database of its own, with a key of its own): most of a case is waiting for a
 * child or a lease.
 */
const LEASE_MS = 1200
/** How long A's event loop stalls in the stall cases: past its lease and B's next sweep. */
const STALL_MS = 3 * LEASE_MS

/** Whether A said, as it died, that its settlement was refused (its hold had been swept while it stalled). */
const refused = (report: AReport | undefined) => report?.settled === false || (report?.status === 503 && report.code === 'UPSTREAM_UNAVAILABLE')

/** A's settlement refused: nothing of A's counted; the retry ran the lookup again, charged once, not replayed. */
function expectRefusedSettlement(r: Awaited<ReturnType<typeof crashAndRetry>>, keyed: boolean) {
  expect(r.answer.statusCode).toBe(200)
  expect(r.answer.headers['idempotent-replayed']).toBeUndefined()
  expect(r.holds).toBe(0)
  expect(r.after.usage).toMatchObject({ totalLookups: 1, totalCredits: 1 })
  expect(r.after.subscriptionCredits + r.after.purchasedCredits).toBe(r.initial - 1)
  expect(r.answer.json().data.metadata).toMatchObject({ credits_used: 1, cache_hit: false, credits_remaining: r.initial - 1 })
  if (keyed) {
    expect(r.again!.headers['idempotent-replayed']).toBe('true')
    expect(r.again!.json()).toEqual(r.answer.json())
  }
}

for (const engine of engines) {
  describe.skipIf(!engine.enabled)(`a lookup whose process is SIGKILLed (${engine.name})`, { concurrent: true }, () => {
    // first: most of it is waiting out the 10 s lease, beside the matrix's cases
    it('with the default lease (10 s) the retrying client has its answer within 15 s of the crash', { timeout: 60_000, concurrent: true }, async () => {
      const db = await engine.open()
      try {
        const r = await crashAndRetry(db, 'looked-up', true, undefined)
        expect(r.answer.statusCode).toBe(200)
        expect(r.retryAfter.length).toBeGreaterThan(0)
        expect(r.retryAfter.reduce((s, x) => s + x, 0)).toBeLessThanOrEqual(11)
        expect(r.after.usage).toMatchObject({ totalLookups: 1, totalCredits: 1 })
        expect(r.holds).toBe(0)
      } finally {
        await db.drop()
      }
    })

    for (const point of POINTS) {
      for (const keyed of [true, false]) {
        // without a key, an answer settled before the crash was counted; the retry is then a free cache hit
        const lookups = keyed || point === 'reserved' || point === 'looked-up' ? 1 : 2
        it(`${point}, ${keyed ? 'with' : 'without'} an Idempotency-Key: the retry is answered, no hold is kept, 1 credit charged, ${lookups} lookup${lookups > 1 ? 's' : ''} counted`, { timeout: 120_000, concurrent: true }, async () => {
          const db = await engine.open()
          try {
            const r = await crashAndRetry(db, point, keyed, LEASE_MS)
            // A stalled past its lease before it settled (its hold swept): the stall cases below say what follows
            if (refused(r.report)) return expectRefusedSettlement(r, keyed)
            expect(r.answer.statusCode).toBe(200)
            expect(r.holds).toBe(0)
            expect(r.after.usage.totalLookups).toBe(lookups)
            expect(r.after.usage.totalCredits).toBe(1)
            expect(r.after.subscriptionCredits + r.after.purchasedCredits).toBe(r.initial - 1)
            expect(r.answer.json().data.metadata.credits_used).toBe(lookups === 2 ? 0 : 1)
            // while A's lease ran, each 409 said how long at most: together no longer than the lease
            expect(r.retryAfter.reduce((s, x) => s + x, 0)).toBeLessThanOrEqual(Math.ceil(LEASE_MS / 1000) + 1)
            if (keyed) {
              // settled before the crash: replayed at once; else run again by B after a takeover
              expect(r.answer.headers['idempotent-replayed']).toBe(point === 'settled' || point === 'responding' ? 'true' : undefined)
              // the answer is the one charged: the balance it reports is the balance after it
              expect(r.answer.json().data.metadata.credits_remaining).toBe(r.initial - 1)
              expect(r.again!.headers['idempotent-replayed']).toBe('true')
              expect(r.again!.json()).toEqual(r.answer.json())
            } else {
              expect(r.retryAfter).toEqual([])
            }
          } finally {
            await db.drop()
          }
        })
      }
    }

    for (const point of ['settled', 'responding'] as const) {
      for (const keyed of [true, false]) {
        it(`A stalls past its lease before its settlement, dies ${point}, ${keyed ? 'with' : 'without'} an Idempotency-Key: its settlement is refused, the retry runs once, 1 credit charged`, { timeout: 120_000, concurrent: true }, async () => {
          const db = await engine.open()
          try {
            const r = await crashAndRetry(db, point, keyed, LEASE_MS, {}, STALL_MS)
            expect(refused(r.report)).toBe(true)
            expectRefusedSettlement(r, keyed)
          } finally {
            await db.drop()
          }
        })
      }
    }
  })
}

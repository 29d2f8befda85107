/**
 * An Idempotency-Key taken over while its first instance is alive but stalled past its lease (a process that stops
 * renewing — a stalled event loop, a database it cannot reach): instance B runs the retry and charges it; when A
 * resumes, reserves and settles, its settlement is refused — A answers 503 UPSTREAM_UNAVAILABLE, its hold is refunded —
 * so the key is charged once and a repeat replays B's answer. On SQLite and PostgreSQL, two servers in this process.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer } from '../src/server/app.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { createPostgresStore } from '../src/server/store/postgres/store.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-takeover-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const LEASE_MS = 600

/** A gate: `wait()` resolves once `open()` was called. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((r) => (open = r))
  return { open, wait: () => opened }
}

const engines = [
  {
    name: 'SQLite',
    enabled: true,
    async open() {
      const file = join(dir, `t-${randomBytes(4).toString('hex')}.sqlite`)
      const a = createSqliteStore(file)
      const b = createSqliteStore(file)
      return { a: a as Store, b: b as Store, holds: async () => (b.db.prepare('SELECT COUNT(*) AS n FROM credit_holds').get() as { n: number }).n, close: async () => (a.close(), b.close()) }
    },
  },
  {
    name: 'PostgreSQL',
    enabled: Boolean(url),
    async open() {
      const schema = `rc_takeover_${randomBytes(5).toString('hex')}`
      const a = await createPostgresStore({ connectionString: url!, schema })
      const b = await createPostgresStore({ connectionString: url!, schema })
      return {
        a: a as Store,
        b: b as Store,
        holds: async () => Number((await b.pool.query<{ n: string }>('SELECT COUNT(*) AS n FROM credit_holds')).rows[0]!.n),
        async close() {
          await a.close()
          await b.close()
          const admin = new pg.Pool({ connectionString: url })
          await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
          await admin.end()
        },
      }
    },
  },
]

for (const engine of engines) {
  describe.skipIf(!engine.enabled)(`an Idempotency-Key taken over from a stalled instance (${engine.name})`, () => {
    it('the stalled instance settles after the takeover: refused and refunded, the key charged once', { timeout: 60_000 }, async () => {
      const db = await engine.open()
      const leases = db.a.leases!
      const renewals = { stalled: false, resume: gate(), renewed: gate() }
      const reserved = gate()
      const reserving = gate()
      // A's store: its lease renewals stop while it is stalled; its reservation waits until the takeover is done.
      const stalled: Store = {
        ...db.a,
        leases: {
          ...leases,
          async renewLease(...args) {
            if (!renewals.stalled) return leases.renewLease(...args)
            await renewals.resume.wait()
            const r = await leases.renewLease(...args)
            renewals.renewed.open()
            return r
          },
          async reserveHeld(...args) {
            reserving.open()
            await reserved.wait()
            return leases.reserveHeld(...args)
          },
        },
      }
      const options = { purgeIntervalMs: 0, webhookIntervalMs: 0, dashboard: false, instanceLeaseMs: LEASE_MS, riskcheck: { offline: true } } as const
      const a = createServer({ ...options, db: stalled })
      const b = createServer({ ...options, db: db.b })
      try {
        await a.ready()
        await b.ready()
        const now = Date.now()
        const org = await db.b.createOrg({ name: 'Stalled', planId: 'starter' }, now)
        const { secret } = await issueApiKey(db.b, { orgId: org.id }, now)
        const initial = await db.b.balance(org.id, now)
        const request = { method: 'POST' as const, url: '/v1/phone/type', headers: { authorization: `Bearer ${secret}`, 'idempotency-key': 'stalled-1' }, payload: { phone: '+14155552671' } }

        const first = a.inject(request)
        await reserving.wait()
        renewals.stalled = true
        // B's retry: a 409 while A's lease runs, then B takes the key over and answers it
        let retry = await b.inject(request)
        for (let i = 0; retry.statusCode === 409 && i < 100; i++) {
          await sleep(LEASE_MS / 4)
          retry = await b.inject(request)
        }
        expect(retry.statusCode).toBe(200)
        expect(retry.headers['idempotent-replayed']).toBeUndefined()

        // A resumes: its lease renewed (it had run out), then its reservation and settlement go ahead
        renewals.resume.open()
        await renewals.renewed.wait()
        renewals.stalled = false
        reserved.open()
        const late = await first
        expect(late.statusCode).toBe(503)
        expect(late.json().error.code).toBe('UPSTREAM_UNAVAILABLE')

        // A's hold refunded (by its next renewal), the key charged once, a repeat replays B's answer
        for (let i = 0; i < 100 && (await db.holds()) > 0; i++) await sleep(50)
        expect(await db.holds()).toBe(0)
        const after = (await db.b.getOrg(org.id, Date.now()))!
        expect(after.usage).toMatchObject({ totalLookups: 1, totalCredits: 1 })
        expect(after.subscriptionCredits + after.purchasedCredits).toBe(initial - 1)
        const again = await b.inject(request)
        expect(again.headers['idempotent-replayed']).toBe('true')
        expect(again.json()).toEqual(retry.json())
      } finally {
        renewals.resume.open()
        reserved.open()
        await a.close()
        await b.close()
        await db.close()
      }
    })
  })
}

/**
 * Bulk rows meet the org's own allow/block lists, as its single lookups do: on SQLite and on PostgreSQL (a schema of
 * the suite's own, dropped after; needs RISKCHECK_TEST_DATABASE_URL), an org's block list blocks the rows of its bulk
 * jobs, while another org's jobs over the same inputs are not blocked by it; a list added later applies to later jobs.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { BULK_LISTS_RECHECK_MS } from '../src/server/org-lists.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { createPostgresStore } from '../src/server/store/postgres/store.js'
import { fakeClock } from './clock.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
if (!url) console.log('[skipped] bulk lists on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')

interface Engine {
  db: string | Store
  close(): Promise<void>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function bulkListsSuite(name: string, open: () => Promise<Engine>) {
  describe(`bulk rows and the org's lists (${name})`, () => {
    let engine: Engine | undefined
    let app: RiskcheckServer | undefined
    afterAll(async () => {
      await app?.close()
      await engine?.close()
    })

    it("an org's block list blocks its bulk rows; another org's list does not", async () => {
      engine = await open()
      const clock = fakeClock('2026-11-22T00:00:00Z')
      let rate = 1_000_000
      app = createServer({
        db: engine.db,
        dashboard: false,
        purgeIntervalMs: 0,
        webhookIntervalMs: 0,
        rateLimitNow: () => (rate += 1000),
        riskcheck: { offline: true, cache: false, now: clock.now },
      })
      await app.ready()
      const server = app
      const now = clock.now().getTime()
      const scopes = ['lookup', 'lists', 'bulk'] as const
      const keyOf = async (orgName: string) => {
        const org = await server.store.createOrg({ name: orgName, planId: 'starter' }, now)
        return (await issueApiKey(server.store, { orgId: org.id, name: 'k', scopes: [...scopes] }, now)).secret
      }
      const acme = await keyOf('Acme')
      const other = await keyOf('Other')
      const call = async (method: string, path: string, key: string, body?: unknown) => {
        const r = await server.inject({
          method: method as 'GET',
          url: path,
          headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
          ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
        })
        return { status: r.statusCode, body: JSON.parse(r.body) }
      }
      /** The inputs a job of `key` over `inputs` blocked. */
      const blocked = async (key: string, inputs: string[]) => {
        await sleep(BULK_LISTS_RECHECK_MS + 50) // past the time a job's rows keep the lists version they read
        const created = await call('POST', '/v1/bulk/jobs', key, { type: 'ip', inputs })
        expect(created.status, JSON.stringify(created.body)).toBe(202)
        const id = created.body.data.id as string
        for (let i = 0; i < 500; i++) {
          const job = (await call('GET', `/v1/bulk/jobs/${id}`, key)).body.data
          if (job.status !== 'queued' && job.status !== 'running') break
          await sleep(10)
        }
        const rows = (await call('GET', `/v1/bulk/jobs/${id}/results?limit=100`, key)).body.data as Array<{ input: string; action: string }>
        expect(rows).toHaveLength(inputs.length)
        return rows.filter((r) => r.action === 'block').map((r) => r.input)
      }
      const inputs = ['8.8.8.8', '1.1.1.1']
      // no list anywhere: nothing blocked
      expect(await blocked(acme, inputs)).toEqual([])
      const list = await call('POST', '/v1/lists', acme, { name: 'Networks', kind: 'block', item_type: 'ip' })
      expect(list.status).toBe(201)
      expect((await call('POST', `/v1/lists/${list.body.data.id}/items`, acme, { values: ['8.8.8.0/24'] })).body.data.added).toBe(1)
      // the org's list blocks its rows (as it blocks its single lookups) …
      expect(await blocked(acme, inputs)).toEqual(['8.8.8.8'])
      expect((await call('POST', '/v1/ip', acme, { ip: '8.8.8.8' })).body.data.recommendation.action).toBe('block')
      // … and not another org's
      expect(await blocked(other, inputs)).toEqual([])
      // the other org's own list blocks its rows only
      const own = await call('POST', '/v1/lists', other, { name: 'Resolvers', kind: 'block', item_type: 'ip' })
      await call('POST', `/v1/lists/${own.body.data.id}/items`, other, { values: ['1.1.1.1'] })
      expect(await blocked(other, inputs)).toEqual(['1.1.1.1'])
      expect(await blocked(acme, inputs)).toEqual(['8.8.8.8'])
    }, 90_000)
  })
}

bulkListsSuite('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bulk-lists-'))
  return { db: join(dir, 'bulk.sqlite'), close: async () => rmSync(dir, { recursive: true, force: true }) }
})

if (url)
  bulkListsSuite('PostgreSQL', async () => {
    const schema = `rc_bulk_lists_${randomBytes(5).toString('hex')}`
    const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 4 })
    const store = await createPostgresStore({ pool, schema })
    return {
      db: store,
      async close() {
        await store.close()
        const admin = new pg.Pool({ connectionString: url })
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        await admin.end()
        await pool.end().catch(() => undefined)
      },
    }
  })

/**
 * The storage factory: the engine a deployment names gives every store of that engine, over one database, tagged
 * with the engine; a store an engine made finds its storage by its tag.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../../accounts/keys.js'
import { createServer } from '../app.js'
import type { Store } from './contracts/store.js'
import { openStorage, storageOf } from './open-storage.js'
import { createMemoryStore } from './sqlite/memory.js'
import { createSqliteStore } from './sqlite/store.js'

const dir = mkdtempSync(join(tmpdir(), 'rc-open-storage-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const NOW = Date.UTC(2026, 4, 1)
const policy = (orgId: string) => ({ orgId, version: 'pol_0123456789abcdef', canonical: '{}', description: null, source: null, setAt: NOW })

describe('openStorage', () => {
  it('memory: every store over one :memory: database, tagged memory', async () => {
    const s = openStorage({ memory: true })
    expect(s.engine).toBe('memory')
    const org = s.store.createOrg({ name: 'A', planId: 'starter' }, NOW)
    await s.orgPolicies.setOrgPolicy(policy(org.id))
    const { key } = await issueApiKey(s.store, { orgId: org.id }, NOW)
    // the auth read joins the policy table: the same database
    expect(s.store.getAuth(key.id)?.org.policyVersion).toBe('pol_0123456789abcdef')
    const endpoint = await s.webhooks.deliveries.createEndpoint({ orgId: org.id, url: 'https://h.example.test/x', description: null, events: ['*'], format: 'json', secret: 'whsec_x' }, NOW)
    expect(await s.webhooks.deliveries.countEndpoints(org.id)).toBe(1)
    expect(endpoint.id).toMatch(/^we_/)
    expect(s.teamStore()).toBe(s.teamStore())
    expect(await s.bulk.unfinishedCount()).toBe(0)
    s.probeWrite()
    await s.close()
    expect(() => s.store.listPlans()).toThrow()
  })

  it('sqlite: a file that keeps every store across a reopen', async () => {
    const file = join(dir, 'a.sqlite')
    const first = openStorage({ sqlite: file })
    expect(first.engine).toBe('sqlite')
    const org = first.store.createOrg({ name: 'B', planId: 'starter' }, NOW)
    await first.orgPolicies.setOrgPolicy(policy(org.id))
    first.teamStore().createAccount({ id: 'u1', email: 'a@x.test', passwordHash: 'h' }, { orgId: org.id, role: 'owner' }, NOW)
    await first.close()
    const again = openStorage({ sqlite: file })
    expect(await again.orgPolicies.getOrgPolicyVersion(org.id)).toBe('pol_0123456789abcdef')
    expect((await again.teamStore().getUserByEmail('a@x.test'))?.id).toBe('u1')
    await again.close()
  })

  it('createServer runs over what it opened: bulk jobs and webhooks on, the store not closed with the server', async () => {
    const s = openStorage({ memory: true })
    const app = createServer({ db: s, purgeIntervalMs: 0, riskcheck: { offline: true } })
    await app.ready()
    expect(app.bulk).toBeDefined()
    expect(app.webhooks).toBeDefined()
    expect(app.store).toBe(s.store)
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200)
    await app.close()
    expect(s.store.listPlans().length).toBeGreaterThan(0)
    await s.close()
  })
})

describe('storageOf', () => {
  it("finds a store's storage by its engine tag, and none for a store of your own", async () => {
    const sqlite = createSqliteStore(':memory:')
    const memory = createMemoryStore()
    expect(storageOf(sqlite)?.engine).toBe('sqlite')
    expect(storageOf(memory)?.engine).toBe('memory')
    expect(storageOf({} as Store)).toBeUndefined()
    // the storage of a memory store sees its tables: a policy set through the store's own policies
    const org = memory.createOrg({ name: 'C', planId: 'starter' }, NOW)
    memory.orgPolicies.setOrgPolicy(policy(org.id))
    expect(await storageOf(memory)!.orgPolicies.getOrgPolicy(org.id)).toMatchObject({ orgId: org.id })
    sqlite.close()
    memory.close()
  })
})

const url = process.env.RISKCHECK_TEST_DATABASE_URL
describe.skipIf(!url)('openStorage on PostgreSQL', () => {
  it('migrates a schema of its own and opens every store on one pool, tagged postgres', async () => {
    const schema = `rc_open_${randomBytes(5).toString('hex')}`
    const admin = new pg.Pool({ connectionString: url, max: 1 })
    await admin.query(`CREATE SCHEMA ${schema}`)
    try {
      const s = await openStorage({ postgres: url!, schema })
      expect(s.engine).toBe('postgres')
      expect(storageOf(s.store)?.engine).toBe('postgres')
      const org = await s.store.createOrg({ name: 'P', planId: 'starter' }, NOW)
      await s.orgPolicies.setOrgPolicy(policy(org.id))
      expect(await s.orgPolicies.getOrgPolicyVersion(org.id)).toBe('pol_0123456789abcdef')
      expect(await (await s.teamStore()).getUserByEmail('nobody@x.test')).toBeNull()
      expect(await s.bulk.unfinishedCount()).toBe(0)
      await s.close()
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    }
  })
})

/**
 * `riskcheck admin list …` on an SQLite file a running server uses (and on PostgreSQL with
 * RISKCHECK_TEST_DATABASE_URL): create, add from arguments, a file and standard input (invalid values named), show,
 * remove, delete; the server applies each change from the org's next request; errors exit 64 / 1.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { runAdmin } from '../src/cli/admin-command.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { DELETE_CHUNK } from '../src/server/store/sqlite/lists.js'
import { listsStoreOf } from '../src/server/store/open-storage.js'
import Database from 'better-sqlite3'
import { memoryIO } from './helpers.js'

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-admin-lists-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function admin(target: string[], args: string[], stdin?: string) {
  const io = memoryIO()
  if (stdin !== undefined) {
    const s = new PassThrough()
    s.end(stdin)
    io.stdin = s
  }
  const code = await runAdmin([...args, ...target, '--json'], io)
  return { code, json: code === 0 ? JSON.parse(io.out()) : undefined, err: io.err() }
}

async function scenario(target: string[], app: RiskcheckServer, orgId: string, key: string) {
  const lookup = async (email: string) => {
    const r = await app.inject({ method: 'POST', url: '/v1/email', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify({ email }) })
    return JSON.parse(r.body).data.details.lists as unknown[]
  }
  const created = await admin(target, ['list', 'create', '--org', orgId, '--name', 'Fraud', '--kind', 'block', '--type', 'email_domain'])
  expect(created.code, created.err).toBe(0)
  const id = created.json.id as string
  expect(await lookup('a@fraud-ring.io')).toEqual([])
  const file = join(dir, `values-${randomBytes(3).toString('hex')}.txt`)
  writeFileSync(file, '# domains\nfraud-ring.io\n\nBad Domain!\nother-ring.io\n')
  const added = await admin(target, ['list', 'add', id, '--org', orgId, 'third-ring.io', '--file', file, '--reason', 'chargebacks'])
  expect(added.json).toEqual({ added: 3, already_present: 0, invalid: [{ value: 'Bad Domain!', message: 'not a domain name' }] })
  expect(await lookup('a@fraud-ring.io')).toEqual([expect.objectContaining({ list_id: id, value: 'fraud-ring.io' })])
  const piped = await admin(target, ['list', 'add', id, '--org', orgId, '--file', '-'], 'fourth-ring.io\nfraud-ring.io\n')
  expect(piped.json).toMatchObject({ added: 1, already_present: 1 })
  const shown = await admin(target, ['list', 'show', id, '--org', orgId])
  expect(shown.json.items).toBe(4)
  expect(shown.json.first_items.map((i: { value: string }) => i.value)).toEqual(['fourth-ring.io', 'fraud-ring.io', 'other-ring.io', 'third-ring.io'])
  expect((await admin(target, ['list', 'show', '--org', orgId])).json).toEqual([expect.objectContaining({ id, items: 4 })])
  expect((await admin(target, ['list', 'show', '--org', orgId, '--mode', 'test'])).json).toEqual([])
  const removed = await admin(target, ['list', 'remove', id, '--org', orgId, 'FRAUD-RING.io', 'nope.io'])
  expect(removed.json).toEqual([{ value: 'fraud-ring.io', removed: true }, { value: 'nope.io', removed: false }])
  expect(await lookup('a@fraud-ring.io')).toEqual([])
  expect(await lookup('a@x.other-ring.io')).toHaveLength(1)
  expect((await admin(target, ['list', 'delete', id, '--org', orgId])).code).toBe(0)
  expect(await lookup('a@x.other-ring.io')).toEqual([])
  // errors: a bad kind is usage (64); an unknown list or org is not found (1)
  expect((await admin(target, ['list', 'create', '--org', orgId, '--name', 'x', '--kind', 'deny', '--type', 'ip'])).code).toBe(64)
  // the compiler's rules: a blank name, a reason over 500 characters, an expiry without an offset are usage errors
  expect((await admin(target, ['list', 'create', '--org', orgId, '--name', '   ', '--kind', 'block', '--type', 'ip'])).code).toBe(64)
  const fresh = (await admin(target, ['list', 'create', '--org', orgId, '--name', 'Rules', '--kind', 'block', '--type', 'ip'])).json as { id: string }
  expect((await admin(target, ['list', 'add', fresh.id, '--org', orgId, '--reason', 'x'.repeat(501), '192.0.2.1'])).code).toBe(64)
  expect((await admin(target, ['list', 'add', fresh.id, '--org', orgId, '--expires', '2030-12-31T00:00:00', '192.0.2.1'])).code).toBe(64)
  expect((await admin(target, ['list', 'add', fresh.id, '--org', orgId, '--expires', '2030-12-31', '192.0.2.1'])).json).toMatchObject({ added: 1 })
  expect((await admin(target, ['list', 'delete', fresh.id, '--org', orgId])).code).toBe(0)
  expect((await admin(target, ['list', 'show', id, '--org', orgId])).code).toBe(1)
  expect((await admin(target, ['list', 'show', '--org', 'org_nope'])).code).toBe(1)
}

describe('admin list', () => {
  it('on SQLite, with the server running on the same file', async () => {
    const db = join(dir, 'admin.sqlite')
    let rate = 0
    const app = createServer({ db, dashboard: false, purgeIntervalMs: 0, rateLimitNow: () => (rate += 1000), riskcheck: { offline: true } })
    await app.ready()
    try {
      const org = await app.store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
      const key = (await issueApiKey(app.store, { orgId: org.id, name: 'k' }, Date.now())).secret
      await scenario(['--db', db], app, org.id, key)
    } finally {
      await app.close()
    }
    // the file is the server's: still readable by the store alone
    createSqliteStore(db).close()
  })

  it('on SQLite, deletes a list of more items than one deletion step takes before the command ends', async () => {
    // such a list is emptied a step a turn after the deletion answered; the command closes the file when it ends
    const db = join(dir, 'large.sqlite')
    const store = createSqliteStore(db)
    const org = await store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
    const lists = listsStoreOf(store)!
    const owner = { orgId: org.id, mode: 'live' as const }
    const list = await lists.createList(owner, { name: 'Large', kind: 'block', itemType: 'email_domain' }, Date.now())
    const items = Array.from({ length: 3 * DELETE_CHUNK }, (_, i) => ({ value: `d${i}.example.org`, reason: null, expiresAt: null }))
    expect(await lists.addItems(owner, list.id, items, Date.now())).toMatchObject({ added: 3 * DELETE_CHUNK })
    store.close()
    expect((await admin(['--db', db], ['list', 'delete', list.id, '--org', org.id])).code).toBe(0)
    const file = new Database(db, { readonly: true })
    try {
      expect(file.prepare('SELECT COUNT(*) FROM list_items WHERE list_id = ?').pluck().get(list.id)).toBe(0)
      expect(file.prepare('SELECT COUNT(*) FROM lists WHERE id = ?').pluck().get(list.id)).toBe(0)
    } finally {
      file.close()
    }
  })

  /** A database file `name` with an org and an email-domain block list made by the command. */
  const domainListOnFile = async (name: string) => {
    const db = join(dir, name)
    const store = createSqliteStore(db)
    const org = await store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
    store.close()
    const id = (await admin(['--db', db], ['list', 'create', '--org', org.id, '--name', 'F', '--kind', 'block', '--type', 'email_domain'])).json.id as string
    return { db, org, id }
  }

  it('remove: an invalid value among valid ones refuses the command with nothing removed', async () => {
    const { db, org, id } = await domainListOnFile('remove.sqlite')
    expect((await admin(['--db', db], ['list', 'add', id, '--org', org.id, 'a.io', 'b.io'])).json).toMatchObject({ added: 2 })
    const refused = await admin(['--db', db], ['list', 'remove', id, '--org', org.id, 'a.io', 'Bad Domain!', 'b.io'])
    expect(refused.code).toBe(64)
    expect(refused.err).toContain('"Bad Domain!" is not a domain name (nothing was removed)')
    expect((await admin(['--db', db], ['list', 'show', id, '--org', org.id])).json.items).toBe(2)
  })

  it('add: the text output names every invalid value with why, one a line, as the JSON does (it named the first 20)', async () => {
    const { db, org, id } = await domainListOnFile('add-text.sqlite')
    const bad = Array.from({ length: 25 }, (_, i) => `bad domain ${i}!`)
    const io = memoryIO()
    const code = await runAdmin(['list', 'add', id, '--org', org.id, 'ok.example', ...bad, '--db', db], io)
    expect(code, io.err()).toBe(0)
    expect(io.out().trimEnd().split('\n')).toEqual(['1 added, 0 already present, 25 invalid', ...bad.map((v) => `  invalid ${JSON.stringify(v)}: not a domain name`)])
  })

  const url = process.env.RISKCHECK_TEST_DATABASE_URL
  it.skipIf(!url)('on PostgreSQL', async () => {
    const schema = `rc_alists_${randomBytes(5).toString('hex')}`
    const u = new URL(url!)
    u.searchParams.set('schema', schema)
    const { createPostgresStore } = await import('../src/server/store/postgres/store.js')
    const store = await createPostgresStore({ connectionString: url!, schema })
    let rate = 0
    const app = createServer({ db: store, dashboard: false, purgeIntervalMs: 0, webhookIntervalMs: 0, rateLimitNow: () => (rate += 1000), riskcheck: { offline: true } })
    await app.ready()
    try {
      const org = await store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
      const key = (await issueApiKey(store, { orgId: org.id, name: 'k' }, Date.now())).secret
      await scenario(['--database-url', u.toString()], app, org.id, key)
    } finally {
      await app.close()
      await store.close()
      const p = new pg.Pool({ connectionString: url })
      await p.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await p.end()
    }
  })
})

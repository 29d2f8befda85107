/**
 * The command line on PostgreSQL + Redis: `riskcheck serve --database-url … --redis-url …` answers billed lookups
 * while `riskcheck admin … --database-url …` changes the same database (the running server sees each change on its
 * next request), `riskcheck admin migrate [--check]`, `--no-migrate` on a schema that is behind, /readyz when the
 * schema falls behind, `riskcheck admin webhook …` and `notices list` on the endpoints the server keeps there, and
 * `riskcheck worker`. Needs RISKCHECK_TEST_DATABASE_URL and RISKCHECK_TEST_REDIS_URL; every
 * case gets a fresh schema of its own (named in the URL, as operators do), dropped afterwards.
 */
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { runAdmin } from '../src/cli/admin-command.js'
import { runServe } from '../src/cli/serve-command.js'
import { runWorker } from '../src/cli/worker-command.js'
import { PG_DASHBOARD_MIGRATIONS, POSTGRES_MIGRATIONS } from '../src/server/store/postgres/migrations.js'
import { createPostgresDeliveryStorage } from '../src/server/store/postgres/deliveries.js'
import { verifyWebhook } from '../src/webhooks/signature.js'
import { memoryIO } from './helpers.js'
import { testRedisUrl } from './redis-env.js'

const url = process.env.RISKCHECK_TEST_DATABASE_URL
const redisUrl = testRedisUrl('PostgreSQL command line')
if (!url) console.log('[skipped] PostgreSQL command line: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')

const CORE = POSTGRES_MIGRATIONS.length
const DASHBOARD = PG_DASHBOARD_MIGRATIONS.length

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-pg-cli-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const drops: string[] = []
afterEach(async () => {
  const admin = new pg.Pool({ connectionString: url })
  for (const s of drops.splice(0)) await admin.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`)
  await admin.end()
})

/** A fresh schema (dropped after the case) and the database URL naming it. */
function freshSchema(): { schema: string; databaseUrl: string } {
  const schema = `rc_cli_${randomBytes(6).toString('hex')}`
  drops.push(schema)
  const u = new URL(url!)
  u.searchParams.set('schema', schema)
  return { schema, databaseUrl: u.toString() }
}

async function admin(args: string[], env: Record<string, string> = {}) {
  const io = memoryIO(env)
  const code = await runAdmin([...args, '--json'], io)
  return { code, json: code === 0 ? JSON.parse(io.out()) : undefined, out: io.out(), err: io.err() }
}

async function serve(args: string[], env: Record<string, string> = {}) {
  const io = memoryIO(env)
  const stop = new AbortController()
  let base = ''
  let listened = () => undefined as void
  const listening = new Promise<void>((resolve) => (listened = resolve))
  // A loaded machine (other suites, other databases) can take longer than the default 5 s to hand out a connection:
  // these cases are about the commands, not the database's time limits (test/outage-postgres.test.ts has those).
  const exit = runServe(['--port', '0', '--offline', '--json', '--log-level', 'silent', '--database-timeout', '60s', ...args], io, {
    signal: stop.signal,
    onListening: (u) => {
      base = u
      listened()
    },
  })
  await Promise.race([listening, exit.then((code) => Promise.reject(new Error(`serve exited ${code}: ${io.err()}`)))])
  return { url: base, io, exit, stop: () => stop.abort() }
}

async function lookupIp(base: string, key: string, ip = '1.1.1.1') {
  const res = await fetch(`${base}/v1/ip`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ip }),
  })
  return { status: res.status, body: (await res.json()) as any }
}

/**
 * A webhook receiver on 127.0.0.1 answering 204; records each body with its signature header. `delivered()` resolves
 * once a delivery has come (the case's own timeout bounds the wait, not a count of polls).
 */
async function startReceiver() {
  const received: Array<{ body: string; signature: string }> = []
  let arrived = () => undefined as void
  const first = new Promise<void>((resolve) => (arrived = resolve))
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(req.headers['svc-signature']) })
      res.writeHead(204).end()
      arrived()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    received,
    delivered: () => first,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

async function sql(schema: string, text: string) {
  const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}` })
  try {
    return (await pool.query(text)).rows
  } finally {
    await pool.end()
  }
}

describe.skipIf(!url || !redisUrl)('riskcheck on PostgreSQL + Redis', () => {
  it('serve answers billed lookups while admin --database-url creates the org and key, adds credits, sets a policy and revokes the key', async () => {
    const { databaseUrl } = freshSchema()
    const s = await serve(['--database-url', databaseUrl, '--redis-url', redisUrl!])
    try {
      expect(JSON.parse(s.io.out())).toEqual({ url: s.url, database_url: databaseUrl, dashboard_url: `${s.url}/dashboard` })
      const org = await admin(['org', 'create', '--name', 'Pg', '--database-url', databaseUrl])
      expect(org.code).toBe(0)
      expect(org.json).toMatchObject({ plan: 'free', credits: { total_available: 100 } })
      // The variables work as the flags do.
      const key = await admin(['key', 'create', '--org', org.json.id], { DATABASE_URL: databaseUrl })
      expect(key.code).toBe(0)

      const first = await lookupIp(s.url, key.json.secret)
      expect(first.status).toBe(200)
      expect(first.body.data.metadata.credits_remaining).toBe(99)
      expect(first.body.data.recommendation.action).toBe('approve')

      expect((await admin(['credits', 'add', '--org', org.json.id, '--amount', '50'], { RISKCHECK_DATABASE_URL: databaseUrl })).code).toBe(0)
      expect((await lookupIp(s.url, key.json.secret, '1.0.0.1')).body.data.metadata.credits_remaining).toBe(148) // a new input: not a cache hit

      // An org policy set through PostgreSQL applies from the org's next request (8.8.8.8 is a datacenter address).
      const policy = join(dir, 'block-datacenters.yaml')
      writeFileSync(policy, 'rules:\n  - { name: datacenter_blocks, when: { any: [ip_datacenter] }, action: block }\n')
      const set = await admin(['policy', 'set', '--org', org.json.id, policy, '--database-url', databaseUrl])
      expect(set.code).toBe(0)
      expect(set.json).toMatchObject({ applied: true, answers: { read: 2 } })
      expect((await lookupIp(s.url, key.json.secret, '8.8.8.8')).body.data.recommendation.action).toBe('block')

      const shown = await admin(['org', 'show', org.json.id, '--database-url', databaseUrl])
      expect(shown.json.usage.all_time).toEqual({ lookups: 3, credits: 3 })

      expect((await admin(['key', 'revoke', key.json.id, '--database-url', databaseUrl])).code).toBe(0)
      expect((await lookupIp(s.url, key.json.secret)).status).toBe(401)

      const ready = await fetch(`${s.url}/readyz`)
      expect(ready.status).toBe(200)
      const checks = ((await ready.json()) as any).checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok])
      expect(checks).toEqual([
        ['database', true],
        ['migrations', true],
        ['redis', true],
      ])
    } finally {
      s.stop()
    }
    expect(await s.exit).toBe(0)
  }, 60_000)

  it('admin migrate applies the pending versions once and prints them; --check exits 1 while behind', async () => {
    const { databaseUrl } = freshSchema()
    const behind = await admin(['migrate', '--check', '--database-url', databaseUrl])
    expect(behind.code).toBe(1)
    expect(JSON.parse(behind.out)).toMatchObject({ current: 0, expected: CORE, dashboard: { current: 0, expected: DASHBOARD }, up_to_date: false })
    const text = memoryIO()
    expect(await runAdmin(['migrate', '--check', '--database-url', databaseUrl], text)).toBe(1)
    expect(text.out()).toContain(`version 0 (dashboard 0); this riskcheck expects ${CORE} (dashboard ${DASHBOARD}): behind: run riskcheck admin migrate`)

    const first = await admin(['migrate', '--database-url', databaseUrl])
    expect(first.code).toBe(0)
    expect(first.json).toMatchObject({
      applied: POSTGRES_MIGRATIONS.map((m) => m.version),
      dashboard_applied: PG_DASHBOARD_MIGRATIONS.map((m) => m.version),
      current: CORE,
    })
    expect((await admin(['migrate', '--database-url', databaseUrl])).json).toMatchObject({ applied: [], dashboard_applied: [] })
    const current = await admin(['migrate', '--check', '--database-url', databaseUrl])
    expect(current.code).toBe(0)
    expect(current.json).toMatchObject({ current: CORE, expected: CORE, up_to_date: true })
  }, 60_000)

  it("--no-migrate refuses a schema that is behind (exit 1, what to run); after admin migrate it starts; libpq's options=-c search_path names the same schema", async () => {
    const { schema, databaseUrl } = freshSchema()
    const io = memoryIO({ RISKCHECK_NO_MIGRATE: '1' })
    expect(await runServe(['--port', '0', '--database-url', databaseUrl, '--redis-url', redisUrl!, '--log-level', 'silent'], io)).toBe(1)
    expect(io.err()).toContain('riskcheck serve: cannot start: the PostgreSQL schema is behind: version 0 of')
    expect(io.err()).toContain('run riskcheck admin migrate')
    const worker = memoryIO()
    expect(await runWorker(['--database-url', databaseUrl, '--redis-url', redisUrl!, '--no-migrate'], worker)).toBe(1)
    expect(worker.err()).toContain('riskcheck worker: cannot start: the PostgreSQL schema is behind')
    const adminRefused = await admin(['org', 'list', '--no-migrate', '--database-url', databaseUrl])
    expect(adminRefused.code).toBe(1)
    expect(adminRefused.err).toContain('the PostgreSQL schema is behind')
    expect(await sql('public', `SELECT schema_name FROM information_schema.schemata WHERE schema_name = '${schema}'`)).toEqual([])

    const libpq = new URL(url!)
    libpq.searchParams.set('options', `-c search_path=${schema}`)
    expect((await admin(['migrate', '--database-url', libpq.toString()])).code).toBe(0)
    const s = await serve(['--no-migrate', '--database-url', databaseUrl, '--redis-url', redisUrl!])
    s.stop()
    expect(await s.exit).toBe(0)
  }, 60_000)

  it('/readyz says the schema is behind when the database holds an older version than the server', async () => {
    const { schema, databaseUrl } = freshSchema()
    const s = await serve(['--database-url', databaseUrl, '--redis-url', redisUrl!])
    try {
      await sql(schema, `DELETE FROM riskcheck_migrations WHERE version = ${CORE}`)
      const res = await fetch(`${s.url}/readyz`)
      expect(res.status).toBe(503)
      const body = (await res.json()) as any
      expect(body.status).toBe('not_ready')
      expect(body.checks.find((c: { name: string }) => c.name === 'migrations')).toMatchObject({
        ok: false,
        message: `schema version ${CORE - 1} is behind this server's ${CORE}: run riskcheck admin migrate`,
      })
    } finally {
      s.stop()
    }
    expect(await s.exit).toBe(0)
  }, 60_000)

  it('admin user list reads the dashboard accounts from PostgreSQL', async () => {
    const { databaseUrl } = freshSchema()
    const users = await admin(['user', 'list', '--database-url', databaseUrl])
    expect(users.code).toBe(0)
    expect(users.json).toEqual([])
  }, 60_000)

  it('admin webhook list / ping / enable / resend and notices list work on the endpoints a running server keeps in PostgreSQL', async () => {
    const { schema, databaseUrl } = freshSchema()
    const rx = await startReceiver()
    const s = await serve(['--database-url', databaseUrl, '--redis-url', redisUrl!, '--unsafe-allow-loopback-webhooks'])
    try {
      const org = await admin(['org', 'create', '--name', 'Hooks', '--database-url', databaseUrl])
      const key = await admin(['key', 'create', '--org', org.json.id, '--scopes', 'webhooks', '--database-url', databaseUrl])
      const created = await fetch(`${s.url}/v1/webhook-endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.json.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: rx.url, events: ['credits.low'], description: 'ops' }),
      })
      expect(created.status).toBe(201)
      const endpoint = ((await created.json()) as any).data

      const list = await admin(['webhook', 'list', '--org', org.json.id, '--database-url', databaseUrl])
      expect(list.code).toBe(0)
      expect(list.json).toEqual([
        expect.objectContaining({ id: endpoint.id, org_id: org.json.id, url: rx.url, description: 'ops', events: ['credits.low'], status: 'enabled', last_success_at: null }),
      ])

      // The ping is only written to the outbox; the running server fans it out and delivers it, signed.
      const ping = await admin(['webhook', 'ping', endpoint.id, '--database-url', databaseUrl])
      expect(ping.code).toBe(0)
      expect(ping.json).toMatchObject({ type: 'ping', data: { endpoint_id: endpoint.id } })
      await rx.delivered()
      expect(rx.received).toHaveLength(1)
      const delivered = rx.received[0]!
      expect(JSON.parse(delivered.body)).toMatchObject({ id: ping.json.id, type: 'ping', data: { endpoint_id: endpoint.id } })
      expect(verifyWebhook(delivered.body, delivered.signature, endpoint.secret).ok).toBe(true)

      const enabled = await admin(['webhook', 'enable', endpoint.id, '--database-url', databaseUrl])
      expect(enabled.json).toMatchObject({ id: endpoint.id, status: 'enabled', disabled_reason: null })
      // The ping was delivered: nothing is missed, so nothing is queued again.
      const resend = await admin(['webhook', 'resend', endpoint.id, '--database-url', databaseUrl])
      expect(resend.code).toBe(0)
      expect(resend.json).toEqual([])
      expect((await admin(['webhook', 'ping', 'wh_missing', '--database-url', databaseUrl])).code).toBe(1)

      expect((await admin(['notices', 'list', '--database-url', databaseUrl])).json).toEqual([])
      const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}` })
      try {
        const storage = createPostgresDeliveryStorage({ pool })
        await storage.deliveries.addNotice({ at: Date.parse('2030-01-02T03:04:05Z'), orgId: org.json.id, subject: endpoint.id, kind: 'webhook_endpoint_disabled', message: 'disabled' })
      } finally {
        await pool.end()
      }
      const notices = await admin(['notices', 'list', '--database-url', databaseUrl])
      expect(notices.code).toBe(0)
      expect(notices.json).toEqual([
        { id: expect.any(Number), at: '2030-01-02T03:04:05.000Z', org_id: org.json.id, subject: endpoint.id, kind: 'webhook_endpoint_disabled', message: 'disabled' },
      ])
    } finally {
      s.stop()
      await rx.close()
    }
    expect(await s.exit).toBe(0)
  }, 60_000)

  it('riskcheck worker opens the store and the queue without a port, and stops cleanly', async () => {
    const { databaseUrl } = freshSchema()
    const io = memoryIO({ DATABASE_URL: databaseUrl, REDIS_URL: redisUrl! })
    const stop = new AbortController()
    const exit = runWorker(['--log-level', 'silent'], io, { signal: stop.signal })
    // waits for the line itself (or the worker's end), however long a loaded machine takes to open both
    await new Promise<void>((resolve) => {
      const seen = () => {
        if (!io.out().includes('riskcheck worker running')) return
        io.stdout.off('data', seen)
        resolve()
      }
      io.stdout.on('data', seen)
      void exit.then(() => resolve())
      seen()
    })
    expect(io.out()).toContain(`riskcheck worker running`)
    expect(io.out()).toContain(databaseUrl)
    expect(await sql('public', `SELECT 1 FROM information_schema.tables WHERE table_schema = '${new URL(databaseUrl).searchParams.get('schema')}' AND table_name = 'orgs'`)).toHaveLength(1)
    stop.abort()
    expect(await exit).toBe(0)
  }, 60_000)

  it('refuses a schema that is not a plain identifier, and --db with --database-url (usage, exit 64)', async () => {
    const bad = new URL(url!)
    bad.searchParams.set('schema', 'Robert"; DROP')
    const io = memoryIO()
    expect(await runServe(['--database-url', bad.toString(), '--redis-url', redisUrl!], io)).toBe(64)
    expect(io.err()).toContain('the schema must be a plain lower-case identifier')
    expect((await admin(['org', 'list', '--database-url', bad.toString()])).code).toBe(64)
    const both = await admin(['org', 'list', '--db', join(dir, 'x.sqlite'), '--database-url', url!])
    expect(both.code).toBe(64)
    expect(both.err).toContain('--db and --database-url exclude each other')
    // A flag beats the other database's variable: RISKCHECK_DB in the environment does not stop --database-url.
    const { databaseUrl } = freshSchema()
    expect((await admin(['org', 'list', '--database-url', databaseUrl], { RISKCHECK_DB: join(dir, 'y.sqlite') })).json).toEqual([])
  }, 60_000)
})

/**
 * The operator commands (`riskcheck admin …`) and `riskcheck serve`, run in-process against a database file.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminCommand, runAdmin } from '../src/cli/admin-command.js'
import { runServe, serveCommand } from '../src/cli/serve-command.js'
import { memoryIO } from './helpers.js'
import { serveInProcess } from './server-helpers.js'

let dir: string
let db: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-cli-'))
  db = join(dir, 'ops.sqlite')
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))


async function admin(...args: string[]): Promise<{ code: number; json: any; out: string; err: string }> {
  const io = memoryIO()
  const code = await runAdmin([...args, '--db', db, '--json'], io)
  const out = io.out()
  return { code, json: code === 0 ? JSON.parse(out) : undefined, out, err: io.err() }
}

describe('riskcheck admin', () => {
  it('exports the commands under their fixed names', () => {
    expect(adminCommand.name).toBe('admin')
    expect(serveCommand.name).toBe('serve')
  })

  it('org create / show / list, with the default plan and a named one', async () => {
    const free = await admin('org', 'create', '--name', 'Acme')
    expect(free.code).toBe(0)
    expect(free.json).toMatchObject({ name: 'Acme', plan: 'free', monthly_credits: 100, rate_per_second: 5, credits: { total_available: 100 } })
    expect(free.json.id).toMatch(/^org_[0-9a-f]{16}$/)
    const scale = await admin('org', 'create', '--name', 'Big', '--plan', 'scale')
    expect(scale.json).toMatchObject({ plan: 'scale', monthly_credits: 200_000, rate_per_second: 100 })
    expect((await admin('org', 'show', free.json.id)).json.id).toBe(free.json.id)
    const list = await admin('org', 'list')
    expect(list.json.map((o: { id: string }) => o.id)).toEqual(expect.arrayContaining([free.json.id, scale.json.id]))
    const unknownPlan = await admin('org', 'create', '--name', 'X', '--plan', 'platinum')
    expect(unknownPlan.code).toBe(64)
    expect(unknownPlan.err).toMatch(/unknown plan platinum \(known: free, starter, growth, scale\)/)
  })

  it('key create prints the secret once; list never shows it; revoke and grant', async () => {
    const org = (await admin('org', 'create', '--name', 'Keys')).json
    const created = await admin('key', 'create', '--org', org.id, '--mode', 'test', '--name', 'ci')
    expect(created.code).toBe(0)
    expect(created.json).toMatchObject({ org_id: org.id, name: 'ci', mode: 'test', scopes: ['lookup', 'bulk', 'account:read'], revoked_at: null })
    expect(created.json.secret).toMatch(/^svc_test_[0-9A-Za-z]{52}$/)
    expect(created.json.id).toBe(`key_${created.json.secret.slice(9, 21)}`)
    expect(created.json.last4).toBe(created.json.secret.slice(-4))
    const scoped = await admin('key', 'create', '--org', org.id, '--scopes', 'lookup,webhooks')
    expect(scoped.json).toMatchObject({ mode: 'live', scopes: ['lookup', 'webhooks'] })
    expect(scoped.json.secret).toMatch(/^svc_live_/)

    const list = await admin('key', 'list', '--org', org.id)
    expect(list.json.map((k: { id: string }) => k.id)).toEqual([created.json.id, scoped.json.id])
    expect(list.out).not.toContain(created.json.secret)
    expect(list.out).not.toContain(created.json.secret.slice(21))
    expect(list.json[0]).not.toHaveProperty('secret')
    expect(list.json[0]).not.toHaveProperty('hash')

    const granted = await admin('key', 'grant', created.json.id, '--scopes', 'webhooks')
    expect(granted.json.scopes).toEqual(['lookup', 'bulk', 'account:read', 'webhooks'])
    const revoked = await admin('key', 'revoke', created.json.id)
    expect(revoked.json.revoked_at).toMatch(/^\d{4}-/)

    expect((await admin('key', 'create', '--org', org.id, '--scopes', 'lookup,admin')).code).toBe(64)
    expect((await admin('key', 'create', '--org', 'org_nope')).code).toBe(1)
    expect((await admin('key', 'revoke', 'key_nope')).code).toBe(1)
  })

  it('credits add, plan set with overrides, suspend / unsuspend, events list', async () => {
    const org = (await admin('org', 'create', '--name', 'Money')).json
    const topped = await admin('credits', 'add', '--org', org.id, '--amount', '250')
    expect(topped.json.credits).toEqual({ subscription: 100, purchased: 250, total_available: 350 })
    const deal = await admin('plan', 'set', '--org', org.id, '--plan', 'starter', '--monthly-credits', '12000', '--rate-per-second', '42')
    expect(deal.json).toMatchObject({ plan: 'starter', monthly_credits: 12_000, rate_per_second: 42, credits: { subscription: 12_000, purchased: 250 } })
    const back = await admin('plan', 'set', '--org', org.id, '--plan', 'starter')
    expect(back.json).toMatchObject({ monthly_credits: 10_000, rate_per_second: 20, credits: { subscription: 10_000 } })
    expect((await admin('org', 'suspend', org.id)).json).toMatchObject({ suspended: true, status: 'suspended' })
    expect((await admin('org', 'unsuspend', org.id)).json).toMatchObject({ suspended: false, status: 'active' })
    const events = await admin('events', 'list', '--org', org.id)
    expect(events.json.map((e: { type: string; data: { reason: string } }) => [e.type, e.data.reason])).toEqual([
      ['credits.added', 'top_up'],
      ['credits.added', 'upgrade'],
    ])
    expect((await admin('plan', 'list')).json.map((p: { id: string }) => p.id)).toEqual(['free', 'starter', 'growth', 'scale'])
  })

  it('usage errors exit 64 with a message; human output without --json', async () => {
    expect((await admin('credits', 'add', '--org', 'x', '--amount', '-5')).code).toBe(64)
    expect((await admin('credits', 'add', '--org', 'x', '--amount', '1.5')).code).toBe(64)
    expect((await admin('org', 'create')).err).toMatch(/--name is required/)
    expect((await admin('org', 'fly')).code).toBe(64)
    expect((await admin('org')).code).toBe(64)
    const io = memoryIO()
    expect(await runAdmin(['--bogus'], io)).toBe(64)
    const human = memoryIO()
    expect(await runAdmin(['org', 'create', '--name', 'Plain', '--db', db], human)).toBe(0)
    expect(human.out()).toMatch(/^org_[0-9a-f]{16} {2}Plain {2}plan free \(100 credits\/period, 5 req\/s\)/)
    const help = memoryIO()
    expect(await runAdmin(['--help'], help)).toBe(0)
    expect(help.out()).toMatch(/key create --org ORG_ID/)
  })
})

describe('riskcheck admin migrate on SQLite', () => {
  it('--check reads the file without changing it (exit 1 while behind); migrate applies every version once', async () => {
    const { MIGRATIONS } = await import('../src/server/store/sqlite/migrations.js')
    const file = join(dir, 'migrate.sqlite')
    const run = async (...args: string[]) => {
      const io = memoryIO({ RISKCHECK_DB: file })
      const code = await runAdmin(['migrate', ...args, '--json'], io)
      return { code, json: JSON.parse(io.out()) }
    }
    expect(await run('--check')).toEqual({ code: 1, json: { db: file, current: 0, expected: MIGRATIONS.length, up_to_date: false } })
    expect(await run()).toEqual({ code: 0, json: { db: file, applied: MIGRATIONS.map((_, i) => i + 1), current: MIGRATIONS.length } })
    expect((await run()).json.applied).toEqual([])
    expect((await run('--check')).code).toBe(0)
    const io = memoryIO()
    expect(await runAdmin(['migrate', 'now', '--db', file], io)).toBe(64)
    expect(await runAdmin(['org', 'list', '--check', '--db', file], io)).toBe(64)
    expect(await runAdmin(['org', 'list', '--no-migrate', '--db', file], io)).toBe(64)
  })
})

describe('riskcheck serve', () => {
  it('serves the API on the database the admin commands prepared, and stops cleanly', async () => {
    const org = (await admin('org', 'create', '--name', 'Served', '--plan', 'starter')).json
    const key = (await admin('key', 'create', '--org', org.id)).json.secret as string
    const { url, io, stop, exit } = await serveInProcess(['--port', '0', '--db', db, '--offline', '--json', '--log-level', 'silent'])
    expect(JSON.parse(io.out())).toEqual({ url, db, dashboard_url: `${url}/dashboard` })
    const res = await fetch(`${url}/v1/ip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ip: '8.8.8.8' }),
    })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { data: { metadata: { credits_remaining: number; data_sources: string[] }; partial: boolean } }
    expect(body.data.metadata.credits_remaining).toBe(9_999)
    expect(body.data.metadata.data_sources).not.toContain('dns') // --offline reached the lookups: no reverse DNS
    expect(body.data.partial).toBe(false)
    stop()
    expect(await exit).toBe(0)
    await expect(fetch(`${url}/v1/pricing`)).rejects.toThrow()
    // The usage is in the database for the operator.
    expect((await admin('org', 'show', org.id)).json.usage.all_time).toEqual({ lookups: 1, credits: 1 })
  })

  it('rejects bad flags with exit code 64', async () => {
    const io = memoryIO()
    expect(await runServe(['--port', '99999'], io)).toBe(64)
    expect(io.err()).toMatch(/--port must be/)
    expect(await runServe(['--dns-timeout', 'soon'], memoryIO())).toBe(64)
    expect(await runServe(['--what'], memoryIO())).toBe(64)
    const mode = memoryIO()
    expect(await runServe(['--mode', 'test'], mode)).toBe(64)
    expect(mode.err()).toMatch(/decided per request by the key/)
    const help = memoryIO()
    expect(await runServe(['--help'], help)).toBe(0)
    expect(help.out()).toMatch(/riskcheck serve \[--host 127\.0\.0\.1\] \[--port 8080\]/)
    for (const name of ['RISKCHECK_HOST', 'RISKCHECK_PORT', 'RISKCHECK_DB', 'RISKCHECK_LOG_LEVEL', 'RISKCHECK_JSON', 'RISKCHECK_UNSAFE_ALLOW_LOOPBACK_WEBHOOKS', 'RISKCHECK_<FLAG>']) {
      expect(help.out()).toContain(name)
    }
    const retention = memoryIO()
    expect(await runServe(['--outcome-retention-days', '0'], retention)).toBe(64)
    expect(retention.err()).toMatch(/--outcome-retention-days must be a number of days, 1–3650/)
    const retentionEnv = { ...memoryIO(), env: { RISKCHECK_OUTCOME_RETENTION_DAYS: 'half a year' } }
    expect(await runServe([], retentionEnv)).toBe(64)
    expect(retentionEnv.err()).toMatch(/RISKCHECK_OUTCOME_RETENTION_DAYS must be/)
    const compiled = memoryIO()
    expect(await runServe(['--lists-compiled-items', '0'], compiled)).toBe(64)
    expect(compiled.err()).toMatch(/--lists-compiled-items must be a number of items, 1–1000000000 \(got 0\)/)
    const compiledEnv = { ...memoryIO(), env: { RISKCHECK_LISTS_COMPILED_ITEMS: '4M' } }
    expect(await runServe([], compiledEnv)).toBe(64)
    expect(compiledEnv.err()).toMatch(/RISKCHECK_LISTS_COMPILED_ITEMS must be a number of items/)
    const dns = memoryIO()
    expect(await runServe(['--dns-server', 'nope::'], dns)).toBe(64)
    expect(dns.err()).toMatch(/^riskcheck serve: --dns-server must be an IP address/)
  })

  /** Starts serve with `args` and `env`, returns what it printed once listening, then stops it. */
  async function serveWith(args: string[], env: Record<string, string>): Promise<{ code: number; out: string; url: string; err: string }> {
    const io = { ...memoryIO(), env }
    const stop = new AbortController()
    let url = ''
    const exit = runServe(args, io, { signal: stop.signal, onListening: (u) => ((url = u), stop.abort()) })
    const code = await exit
    return { code, out: io.out(), url, err: io.err() }
  }

  it('reads every setting from the environment too; a flag wins over its variable', async () => {
    const envDb = join(dir, 'from-env.sqlite')
    const flagDb = join(dir, 'from-flag.sqlite')
    const env = { RISKCHECK_PORT: '0', RISKCHECK_DB: envDb, RISKCHECK_JSON: '1', RISKCHECK_LOG_LEVEL: 'silent', RISKCHECK_OFFLINE: 'true', RISKCHECK_HOST: '127.0.0.1' }
    const fromEnv = await serveWith([], env)
    expect(fromEnv.code).toBe(0)
    expect(JSON.parse(fromEnv.out)).toEqual({ url: fromEnv.url, db: envDb, dashboard_url: `${fromEnv.url}/dashboard` })
    expect(fromEnv.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const flagWins = await serveWith(['--db', flagDb], env)
    expect(JSON.parse(flagWins.out).db).toBe(flagDb)
    // The conventional PORT (platforms set it) when RISKCHECK_PORT is absent.
    const plain = await serveWith([], { PORT: '0', RISKCHECK_JSON: 'yes', RISKCHECK_LOG_LEVEL: 'silent', RISKCHECK_DB: ':memory:' })
    expect(plain.code).toBe(0)
    expect(JSON.parse(plain.out).db).toBe(':memory:')
    // Logs at the level from the environment (info: Fastify's "Server listening" line on stderr).
    const logged = await serveWith([], { PORT: '0', RISKCHECK_DB: ':memory:', RISKCHECK_LOG_LEVEL: 'info' })
    expect(logged.err).toContain('Server listening')
  })

  it('names the variable when a value from the environment is bad', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ RISKCHECK_PORT: 'eighty' }, /^riskcheck serve: RISKCHECK_PORT must be 0–65535/],
      [{ PORT: '70000' }, /^riskcheck serve: PORT must be 0–65535/],
      [{ RISKCHECK_LOG_LEVEL: 'loud' }, /^riskcheck serve: RISKCHECK_LOG_LEVEL must be/],
      [{ RISKCHECK_OFFLINE: 'maybe' }, /^riskcheck serve: RISKCHECK_OFFLINE must be 1\/true\/yes\/on/],
      [{ RISKCHECK_DNS_TIMEOUT: 'soon' }, /^riskcheck serve: RISKCHECK_DNS_TIMEOUT must be a whole number/],
      [{ RISKCHECK_DNS_SERVER: '1.1.1.1, nope::' }, /^riskcheck serve: RISKCHECK_DNS_SERVER must be an IP address .*\(got "nope::"\)/],
    ]
    for (const [env, message] of cases) {
      const io = { ...memoryIO(), env }
      expect(await runServe([], io), JSON.stringify(env)).toBe(64)
      expect(io.err()).toMatch(message)
    }
  })
})

/**
 * The sign-in limit under a parallel burst, on every engine of the dashboard's store (memory, SQLite, PostgreSQL, and
 * two servers sharing one PostgreSQL), and behind a reverse proxy (`serve --trust-proxy`): per-client limits count
 * the X-Forwarded-For client of a trusted hop only, and the cookies are Secure when a trusted hop says https.
 * Plain HTTP against in-process servers on loopback (no browser needed).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { runServe } from '../../src/cli/serve-command.js'
import type { Mailer } from '../../src/dashboard/mail.js'
import { hashPassword } from '../../src/dashboard/password.js'
import { createMemoryTeamStore } from '../../src/server/store/sqlite/memory.js'
import { createPgTeamStore } from '../../src/server/store/postgres/dashboard.js'
import type { TeamStore } from '../../src/server/store/contracts/team-store.js'
import { createServer, type RiskcheckServer, type ServerOptions } from '../../src/server/app.js'
import { memoryIO } from '../helpers.js'

const pgUrl = process.env.RISKCHECK_TEST_DATABASE_URL
if (!pgUrl) console.log('dashboard sign-in limits on PostgreSQL skipped: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run them')

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-signin-'))
const cleanups: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
  rmSync(dir, { recursive: true, force: true })
})

const silentMailer: Mailer = { configured: true, send: async () => undefined, close: () => undefined }

/** A server on loopback with the sign-in limit at `loginAttempts` (client limit ten times that). */
async function start(opts: { teamStore?: TeamStore; loginAttempts?: number; trustProxy?: ServerOptions['trustProxy'] } = {}) {
  const app = createServer({
    db: join(dir, `${randomBytes(4).toString('hex')}.sqlite`),
    riskcheck: { offline: true },
    purgeIntervalMs: 0,
    webhookIntervalMs: 0,
    anonymousRatePerSecond: 10_000,
    ...(opts.trustProxy !== undefined ? { trustProxy: opts.trustProxy } : {}),
    dashboard: { mailer: silentMailer, noticeIntervalMs: 0, loginAttempts: opts.loginAttempts ?? 5, ...(opts.teamStore ? { teamStore: opts.teamStore } : {}) },
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  cleanups.push(() => app.close())
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` }
}

/** A signed-out browser's cookie and CSRF token, then sign-in POSTs with them. */
async function client(base: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/dashboard/signin`, { headers })
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await res.text())![1]!
  return {
    preCookie: res.headers.getSetCookie().find((c) => c.startsWith('rc_pre='))!,
    signIn: (email: string, password: string, extra: Record<string, string> = {}) =>
      fetch(`${base}/dashboard/signin`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers, ...extra },
        body: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
      }),
  }
}

const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((t, s) => ({ ...t, [s]: (t[s] ?? 0) + 1 }), {})

/** 15 wrong passwords at once, then the right one: at most 5 were checked (401), the rest and the right one 429. */
async function burst(bases: string[], teams: TeamStore) {
  await teams.createUser({ id: `usr_${randomBytes(6).toString('hex')}`, email: 'burst@example.test', passwordHash: await hashPassword('the right password') }, Date.now())
  const clients = await Promise.all(bases.map((b) => client(b)))
  const statuses = await Promise.all(Array.from({ length: 15 }, (_, i) => clients[i % clients.length]!.signIn('burst@example.test', `wrong password ${i}`).then((r) => r.status)))
  expect(tally(statuses)).toEqual({ 401: 5, 429: 10 })
  expect((await clients[0]!.signIn('burst@example.test', 'the right password')).status).toBe(429)
}

describe('dashboard sign-in limit under a parallel burst', () => {
  it('in memory', async () => {
    const teams = createMemoryTeamStore()
    const { base } = await start({ teamStore: teams })
    await burst([base], teams)
  })

  it('on SQLite', async () => {
    const { app, base } = await start()
    await burst([base], app.dashboard!.teams)
  })

  describe.skipIf(!pgUrl)('on PostgreSQL', () => {
    const schema = `rc_signin_${randomBytes(5).toString('hex')}`
    if (pgUrl) cleanups.push(async () => {
      const admin = new pg.Pool({ connectionString: pgUrl })
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    })

    it('two servers sharing the database count together', async () => {
      const a = await start({ teamStore: await createPgTeamStore({ connectionString: pgUrl!, schema }) })
      const b = await start({ teamStore: await createPgTeamStore({ connectionString: pgUrl!, schema }) })
      await burst([a.base, b.base], a.app.dashboard!.teams)
    })
  })
})

describe('passwords with surrounding spaces', () => {
  it('sign in as they were set at sign-up: the same on both sides', async () => {
    const { base } = await start()
    const pre = await client(base)
    const signup = await fetch(`${base}/dashboard/signup`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: pre.preCookie.split(';')[0]!, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: decodeURIComponent(/rc_pre=([^;]+)/.exec(pre.preCookie)![1]!), email: 'spaces@example.test', password: '  padded password  ', team: 'Spaces' }).toString(),
    })
    expect(signup.status).toBe(303)
    expect((await pre.signIn('spaces@example.test', '  padded password  ')).status).toBe(303)
    // the trimmed password is another password
    expect((await pre.signIn('spaces@example.test', 'padded password')).status).toBe(401)
  })
})

describe('behind a reverse proxy (--trust-proxy)', () => {
  const proxied = (xff: string, proto = 'http') => ({ 'x-forwarded-for': xff, 'x-forwarded-proto': proto })

  it('counts the client a trusted proxy names, each on its own', async () => {
    // limit 1 per address, so 10 per client address
    const { base } = await start({ loginAttempts: 1, trustProxy: ['127.0.0.1'] })
    const alice = await client(base, proxied('198.51.100.7'))
    const bob = await client(base, proxied('203.0.113.9'))
    const statuses: number[] = []
    for (let i = 0; i < 11; i++) statuses.push((await alice.signIn(`nobody${i}@example.test`, 'wrong password')).status)
    expect(tally(statuses)).toEqual({ 401: 10, 429: 1 })
    // another client behind the same proxy is not locked out
    expect((await bob.signIn('someone@example.test', 'wrong password')).status).toBe(401)
  })

  it('ignores X-Forwarded-For from a hop it does not trust: the proxy address is the client', async () => {
    const { base } = await start({ loginAttempts: 1, trustProxy: ['10.0.0.1'] })
    const alice = await client(base, proxied('198.51.100.7'))
    const bob = await client(base, proxied('203.0.113.9'))
    for (let i = 0; i < 10; i++) expect((await alice.signIn(`nobody${i}@example.test`, 'wrong password')).status).toBe(401)
    expect((await bob.signIn('someone@example.test', 'wrong password')).status).toBe(429)
  })

  it('sets Secure cookies when a trusted hop says https, and not when an untrusted one does', async () => {
    const trusted = await start({ trustProxy: ['127.0.0.1'] })
    const untrusted = await start()
    await trusted.app.dashboard!.teams.createUser({ id: 'usr_tls', email: 'tls@example.test', passwordHash: await hashPassword('the right password') }, Date.now())
    const viaTls = await client(trusted.base, proxied('198.51.100.7', 'https'))
    expect(viaTls.preCookie).toMatch(/; Secure/)
    const signedIn = await viaTls.signIn('tls@example.test', 'the right password')
    expect(signedIn.status).toBe(303)
    expect(signedIn.headers.getSetCookie().find((c) => c.startsWith('rc_session='))).toMatch(/; Secure/)
    expect((await client(trusted.base, proxied('198.51.100.7', 'http'))).preCookie).not.toMatch(/Secure/)
    expect((await client(untrusted.base, proxied('198.51.100.7', 'https'))).preCookie).not.toMatch(/Secure/)
  })

  it('serve --trust-proxy / RISKCHECK_TRUST_PROXY reach the server, and bad values are usage errors', async () => {
    for (const [args, env] of [
      [['--trust-proxy', '127.0.0.0/8'], {}],
      [[], { RISKCHECK_TRUST_PROXY: '1' }],
    ] as const) {
      const stop = new AbortController()
      let url = ''
      const exit = runServe(['--port', '0', '--db', join(dir, `serve-${randomBytes(3).toString('hex')}.sqlite`), '--offline', '--log-level', 'silent', ...args], memoryIO(env), {
        signal: stop.signal,
        onListening: (u) => (url = u),
      })
      try {
        for (let i = 0; i < 500 && url === ''; i++) await new Promise((r) => setTimeout(r, 10))
        expect((await client(url, proxied('198.51.100.7', 'https'))).preCookie).toMatch(/; Secure/)
      } finally {
        stop.abort()
        expect(await exit).toBe(0)
      }
    }
    for (const [value, message] of [
      ['10.0.0.0/33', '--trust-proxy must be true, a hop count or comma-separated addresses/CIDR ranges: "10.0.0.0/33" has a prefix length that is not 0–32'],
      ['proxy.internal', '"proxy.internal" is not an IP address'],
      ['99', '--trust-proxy hop count must be 1–32'],
    ] as const) {
      const io = memoryIO({ RISKCHECK_TRUST_PROXY: value })
      expect(await runServe(['--offline'], io)).toBe(64)
      expect(io.err()).toContain(message.replace('--trust-proxy', 'RISKCHECK_TRUST_PROXY'))
    }
  })
})

/**
 * Links in the dashboard's mails come from the configured public URL (`serve --public-url`, RISKCHECK_PUBLIC_URL),
 * else from the address the server listens on — never from a request header. Run against `riskcheck serve` as a
 * process (through tsx) with a loopback SMTP server, with a forged Host (and X-Forwarded-*) on every request.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SMTPServer } from 'smtp-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runServe } from '../../src/cli/serve-command.js'
import { createServer } from '../../src/server/app.js'
import { memoryIO } from '../helpers.js'
import type { MailMessage } from '../../src/dashboard/mail.js'
import { Client } from './http.js'
import { nodeArgs } from '../child-process.js'

const FORGED = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }

interface Mail {
  to: string
  text: string
}

let dir: string
let smtp: SMTPServer
let smtpPort: number
const mails: Mail[] = []
const children = new Set<ChildProcess>()

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-mail-links-'))
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = ''
      stream.on('data', (c: Buffer) => (raw += c.toString('utf8')))
      stream.on('end', () => {
        // quoted-printable soft breaks and escapes undone: links are whole again
        const text = raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
        for (const r of session.envelope.rcptTo) mails.push({ to: r.address, text })
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()))
  smtpPort = (smtp.server.address() as AddressInfo).port
})

afterAll(async () => {
  for (const c of children) c.kill('SIGTERM')
  await new Promise<void>((resolve) => smtp.close(() => resolve()))
  rmSync(dir, { recursive: true, force: true })
})

/** Starts `riskcheck serve` with `args` and `env`; resolves with its URL, or with its exit code and stderr. */
function serve(args: string[], env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess } | { code: number | null; err: string }> {
  const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), 'serve', '--port', '0', '--json', '--offline', '--log-level', 'warn', '--mail-url', `smtp://127.0.0.1:${smtpPort}`, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  })
  children.add(child)
  let out = ''
  let err = ''
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise((resolve) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (line) resolve({ url: (JSON.parse(line) as { url: string }).url, child })
    })
    child.on('close', (code) => {
      children.delete(child)
      resolve({ code, err })
    })
  })
}

async function stop(child: ChildProcess): Promise<void> {
  const gone = new Promise((resolve) => child.once('close', resolve))
  child.kill('SIGTERM')
  await gone
}

async function mailTo(to: string, pattern: RegExp): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const m = mails.find((x) => x.to === to && pattern.test(x.text))
    if (m) return pattern.exec(m.text)![0]
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`no mail to ${to} matching ${pattern}: ${mails.map((m) => m.to).join(', ')}`)
}

const LINK = (path: string) => new RegExp(`\\S+/dashboard/${path}\\?token=[A-Za-z0-9_-]+`)

describe('links in mails', () => {
  it('without --public-url: the listen address, whatever Host and X-Forwarded-* a request forges (sign-up and invitation)', async () => {
    const s = await serve(['--db', join(dir, 'listen.sqlite')])
    if (!('url' in s)) throw new Error(`serve exited ${s.code}: ${s.err}`)
    try {
      const c = new Client(s.url, FORGED)
      const team = await c.signUp('ada@example.test', 'Analytical')
      const verify = await mailTo('ada@example.test', LINK('verify'))
      expect(verify.startsWith(`${s.url}/dashboard/verify?token=`)).toBe(true)
      expect(verify).not.toMatch(/evil/)
      expect((await c.get(new URL(verify).pathname + new URL(verify).search)).status).toBe(200)

      await c.get(`${team}/members`)
      const invited = await c.post(`${team}/members/invite`, { email: 'bob@example.test', role: 'developer' })
      expect(invited.status).toBe(303)
      const invite = await mailTo('bob@example.test', LINK('invite'))
      expect(invite.startsWith(`${s.url}/dashboard/invite?token=`)).toBe(true)
    } finally {
      await stop(s.child)
    }
  }, 60_000)

  it('with RISKCHECK_PUBLIC_URL (a path prefix kept): every link and the OpenAPI server URL come from it', async () => {
    const s = await serve(['--db', join(dir, 'public.sqlite')], { RISKCHECK_PUBLIC_URL: 'https://rc.example.test/base/' })
    if (!('url' in s)) throw new Error(`serve exited ${s.code}: ${s.err}`)
    try {
      const c = new Client(s.url, FORGED)
      await c.signUp('cy@example.test', 'Cyclists')
      expect(await mailTo('cy@example.test', LINK('verify'))).toMatch(/^https:\/\/rc\.example\.test\/base\/dashboard\/verify\?token=/)
      const openapi = JSON.parse((await c.get('/v1/openapi.json')).body) as { servers: Array<{ url: string }> }
      expect(openapi.servers[0]!.url).toBe('https://rc.example.test/base')
    } finally {
      await stop(s.child)
    }
  }, 60_000)

  it('refuses a --public-url that is not an http(s) origin with an optional path: exit 64 and what is wrong', async () => {
    const s = await serve(['--db', join(dir, 'refused.sqlite'), '--public-url', 'https://user:secret@rc.example.test'])
    expect('code' in s && s.code).toBe(64)
    expect('err' in s && s.err).toMatch(/--public-url must not carry credentials/)
    for (const [value, message] of [
      ['ftp://rc.example.test', /--public-url must start with http:\/\/ or https:\/\//],
      ['https://rc.example.test/?next=1', /--public-url must not have a query/],
      ['https://rc.example.test/#top', /--public-url must not have a fragment/],
      ['rc.example.test', /--public-url must be an absolute URL/],
      ['https://rc.exa mple.test', /--public-url must be an absolute http\(s\) URL without whitespace/],
    ] as const) {
      const io = memoryIO()
      expect(await runServe(['--public-url', value], io), value).toBe(64)
      expect(io.err(), value).toMatch(message)
    }
    const env = memoryIO({ RISKCHECK_PUBLIC_URL: 'https://rc.example.test?x=1' })
    expect(await runServe([], env)).toBe(64)
    expect(env.err()).toMatch(/^riskcheck serve: RISKCHECK_PUBLIC_URL must not have a query/)
  }, 30_000)
})

describe('links in mails of an embedded server', () => {
  const mailer = () => {
    const sent: MailMessage[] = []
    return { sent, mailer: { configured: true, send: async (m: MailMessage) => void sent.push(m), close: () => undefined } }
  }

  it('not listening and no publicUrl: no mail with a link from the Host header (the sign-up still works)', async () => {
    const m = mailer()
    const app = createServer({ db: ':memory:', riskcheck: { offline: true }, purgeIntervalMs: 0, webhookIntervalMs: 0, dashboard: { mailer: m.mailer, noticeIntervalMs: 0 } })
    try {
      const pre = await app.inject({ method: 'GET', url: '/dashboard/signup', headers: { host: 'evil.example' } })
      const csrf = /name="_csrf" value="([^"]+)"/.exec(pre.body)![1]!
      const cookie = pre.cookies.map((k) => `${k.name}=${k.value}`).join('; ')
      const res = await app.inject({
        method: 'POST',
        url: '/dashboard/signup',
        headers: { host: 'evil.example', cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ _csrf: csrf, email: 'dee@example.test', password: 'correct horse battery', team: 'Dee' }).toString(),
      })
      expect(res.statusCode).toBe(303)
      expect(m.sent.filter((x) => /evil/.test(x.text))).toEqual([])
    } finally {
      await app.close()
    }
  })

  it('behind a trusted proxy too: reset links and sign-up notes come from the public URL, never X-Forwarded-Host', async () => {
    const m = mailer()
    const app = createServer({
      db: ':memory:',
      publicUrl: 'https://rc.example.test/base',
      trustProxy: true,
      riskcheck: { offline: true },
      purgeIntervalMs: 0,
      webhookIntervalMs: 0,
      dashboard: { mailer: m.mailer, noticeIntervalMs: 0 },
    })
    try {
      await app.listen({ host: '127.0.0.1', port: 0 })
      const c = new Client(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, FORGED)
      await c.signUp('fay@example.test', 'Fay')
      await c.get('/dashboard/signup')
      expect((await c.post('/dashboard/signup', { email: 'fay@example.test', password: 'another password', team: 'Copy' })).status).toBe(303)
      await c.get('/dashboard/reset')
      expect((await c.post('/dashboard/reset', { email: 'fay@example.test' })).status).toBe(303)
      const subjects = [/Verify your email/, /Someone tried to sign up/, /Reset your riskcheck password/]
      for (let i = 0; i < 100 && !subjects.every((s) => m.sent.some((x) => s.test(x.subject))); i++) await new Promise((r) => setTimeout(r, 50))
      for (const s of subjects) {
        const mail = m.sent.find((x) => s.test(x.subject))
        expect(mail, String(s)).toBeDefined()
        const links = mail!.text.match(/\S+\/dashboard\/\S*/g) ?? []
        expect(links.length).toBeGreaterThan(0)
        for (const link of links) expect(link, String(s)).toMatch(/^https:\/\/rc\.example\.test\/base\/dashboard\//)
      }
      expect(m.sent.filter((x) => /evil/.test(x.text))).toEqual([])
    } finally {
      await app.close()
    }
  })

  it('listening on a wildcard address without a public URL: a warning at start says to set one', async () => {
    const lines: string[] = []
    const stream = { write: (s: string) => void lines.push(s) }
    const app = createServer({
      db: ':memory:',
      riskcheck: { offline: true },
      purgeIntervalMs: 0,
      webhookIntervalMs: 0,
      logger: { level: 'warn', stream },
      dashboard: { mailer: mailer().mailer, noticeIntervalMs: 0 },
    })
    try {
      await app.listen({ host: '0.0.0.0', port: 0 })
      expect(lines.join('')).toMatch(/links in mails point at http:\/\/0\.0\.0\.0:\d+, the listen address, which other machines cannot open: set --public-url/)
    } finally {
      await app.close()
    }
  })

  it('publicUrl of createServer is validated and used for mails', async () => {
    expect(() => createServer({ db: ':memory:', publicUrl: 'https://u:p@x.test' })).toThrow(/publicUrl.*credentials/)
    // one setting: the dashboard's former own publicUrl is refused with where it went
    expect(() => createServer({ db: ':memory:', dashboard: { publicUrl: 'https://x.test' } as never })).toThrow(/dashboard\.publicUrl is now the server's publicUrl/)
    const m = mailer()
    const app = createServer({ db: ':memory:', publicUrl: 'https://rc.example.test', riskcheck: { offline: true }, purgeIntervalMs: 0, webhookIntervalMs: 0, dashboard: { mailer: m.mailer, noticeIntervalMs: 0 } })
    try {
      const pre = await app.inject({ method: 'GET', url: '/dashboard/signup', headers: { host: 'evil.example' } })
      const csrf = /name="_csrf" value="([^"]+)"/.exec(pre.body)![1]!
      const cookie = pre.cookies.map((k) => `${k.name}=${k.value}`).join('; ')
      await app.inject({
        method: 'POST',
        url: '/dashboard/signup',
        headers: { host: 'evil.example', cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ _csrf: csrf, email: 'eve@example.test', password: 'correct horse battery', team: 'Eve' }).toString(),
      })
      expect(m.sent.map((x) => /\S+\/dashboard\/verify/.exec(x.text)?.[0])).toEqual(['https://rc.example.test/dashboard/verify'])
    } finally {
      await app.close()
    }
  })
})

/**
 * Shared set-up of the dashboard's browser tests: one API server on loopback (SQLite in a temp file, offline
 * lookups), a loopback SMTP server that keeps every mail it receives, and one headless Chromium (Debian's
 * `chromium`, driven by playwright-core) per test file.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { SMTPServer } from 'smtp-server'
import { CHROMIUM } from '../browser-env.js'
import { createServer, type RiskcheckServer, type ServerOptions } from '../../src/server/app.js'
import { storeAccount, storeSession } from './store-account.js'


export interface Mail {
  to: string[]
  raw: string
  subject: string
  text: string
}

export interface Harness {
  app: RiskcheckServer
  base: string
  mails: Mail[]
  smtpPort: number
  browser: Browser
  /** Waits for a mail to `to` whose subject matches, and returns it. */
  mailTo(to: string, subject: RegExp): Promise<Mail>
  /** A fresh browser context (own cookies) and page, collecting console errors and off-site requests. */
  newPage(viewport?: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page; errors: string[]; offsite: string[] }>
  /**
   * Set-up without the sign-up forms: a person made in the store, owner of a new team, verified unless
   * `verified: false`. Their password (default 'correct horse battery') signs in through the form as usual.
   */
  account(email: string, team: string, options?: { password?: string; verified?: boolean }): Promise<Account>
  /** A fresh page (as newPage) signed in as `userId` (see signInAs), at `url`. */
  signedInPage(userId: string, url: string, viewport?: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page; errors: string[]; offsite: string[] }>
  /**
   * Set-up without the sign-in form: clears the cookies of `context` (whoever was signed in there is not any more),
   * writes a session of `userId` to the store, sets its cookie and opens `url` in `page`.
   */
  signInAs(opened: { context: BrowserContext; page: Page }, userId: string, url: string): Promise<void>
  close(): Promise<void>
}

export interface Account {
  userId: string
  orgId: string
  /** The team's pages: `${base}/dashboard/t/<orgId>`, as signUp returns it. */
  teamUrl: string
}

/** Decodes the text body of a simple (quoted-printable or plain) nodemailer message. */
function textOf(raw: string): { subject: string; text: string } {
  const [head = '', ...rest] = raw.split(/\r?\n\r?\n/)
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ')
  const subject = /^Subject: (.*)$/im.exec(unfolded)?.[1] ?? ''
  let body = rest.join('\n\n')
  if (/Content-Transfer-Encoding: quoted-printable/i.test(head)) {
    body = body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
    body = Buffer.from(body, 'latin1').toString('utf8')
  }
  return { subject, text: body }
}

export async function startHarness(options: Partial<ServerOptions> = {}): Promise<Harness> {
  const mails: Mail[] = []
  const waiters: Array<() => void> = []
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw, ...textOf(raw) })
        for (const w of waiters.splice(0)) w()
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()))
  const smtpPort = (smtp.server.address() as AddressInfo).port

  const dir = mkdtempSync(join(tmpdir(), 'riskcheck-dashboard-'))
  const app = createServer({
    db: join(dir, 'db.sqlite'),
    riskcheck: { offline: true },
    purgeIntervalMs: 0,
    webhookIntervalMs: 0,
    anonymousRatePerSecond: 1000,
    unsafeAllowLoopbackWebhooks: true,
    ...options,
    dashboard: { mailUrl: `smtp://127.0.0.1:${smtpPort}?from=dashboard@riskcheck.test`, noticeIntervalMs: 0, ...(options.dashboard || {}) },
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  // the server's clock (a test's fake one, when it gives one)
  const nowMs = () => (options.riskcheck && 'now' in options.riskcheck && options.riskcheck.now ? options.riskcheck.now().getTime() : Date.now())
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 60_000,
  })

  const harness: Harness = {
    app,
    base,
    mails,
    smtpPort,
    browser,
    async mailTo(to, subject) {
      for (let i = 0; i < 200; i++) {
        const m = mails.find((x) => x.to.includes(to) && subject.test(x.subject))
        if (m) return m
        await new Promise<void>((resolve) => {
          waiters.push(resolve)
          setTimeout(resolve, 100)
        })
      }
      throw new Error(`no mail to ${to} matching ${subject}; got ${mails.map((m) => `${m.to.join(',')}: ${m.subject}`).join(' | ')}`)
    },
    async newPage(viewport = { width: 1280, height: 900 }) {
      const context = await browser.newContext({ viewport })
      // a hang guard for each click and wait, not a speed bound: a loaded two-core run took a click past 8 s
      context.setDefaultTimeout(30_000)
      const page = await context.newPage()
      const errors: string[] = []
      const offsite: string[] = []
      page.on('console', (m) => {
        if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) errors.push(m.text())
      })
      page.on('pageerror', (e) => errors.push(e.message))
      page.on('dialog', (d) => void d.accept())
      page.on('request', (r) => {
        if (!r.url().startsWith(base) && !r.url().startsWith('data:')) offsite.push(r.url())
      })
      return { context, page, errors, offsite }
    },
    async account(email, team, { password = 'correct horse battery', verified = true } = {}) {
      const { userId, orgId } = await storeAccount(app, email, team, { password, verified }, nowMs())
      return { userId, orgId, teamUrl: `${base}/dashboard/t/${orgId}` }
    },
    async signedInPage(userId, url, viewport) {
      const opened = await harness.newPage(viewport)
      await harness.signInAs(opened, userId, url)
      return opened
    },
    async signInAs({ context, page }, userId, url) {
      const id = await storeSession(app, userId, nowMs())
      await context.clearCookies()
      await context.addCookies([{ name: 'rc_session', value: id, domain: '127.0.0.1', path: '/dashboard', httpOnly: true, sameSite: 'Lax' }])
      await page.goto(url)
    },
    async close() {
      await browser.close().catch(() => undefined)
      await app.close()
      await new Promise<void>((resolve) => smtp.close(() => resolve()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return harness
}

/** Signs in through the form (password only) and waits to leave the sign-in page. */
export async function signIn(h: Harness, page: Page, email: string, password = 'correct horse battery'): Promise<void> {
  await page.goto(`${h.base}/dashboard/signin`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((u) => !u.pathname.endsWith('/dashboard/signin'))
}

/**
 * Signs up through the form (which answers "check your mail" and signs nobody in), follows the verification link
 * unless `verify` is false, and signs in; returns the team page URL.
 */
export async function signUp(h: Harness, page: Page, email: string, team: string, password = 'correct horse battery', verify = true): Promise<string> {
  await page.goto(`${h.base}/dashboard/signup`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByLabel('Team name').fill(team)
  await page.getByRole('button', { name: 'Create team' }).click()
  await page.waitForURL(/\/dashboard\/signup\/sent$/)
  if (verify) {
    const mail = await h.mailTo(email, /Verify your email/)
    const link = /https?:\/\/\S+\/dashboard\/verify\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0]
    await page.goto(link)
    await page.getByText('is verified').waitFor()
  }
  await signIn(h, page, email, password)
  await page.waitForURL(/\/dashboard\/t\/[^/]+\/keys/)
  return page.url().replace(/\/keys.*$/, '')
}

/**
 * Accounts people can keep, in headless Chromium: password reset by mail, sign-up with an address that has an
 * account (answered like any sign-up; the owner gets a mail), sign out everywhere, and TOTP two-factor sign-in with
 * recovery codes, also required by a team's owner.
 */
import { createHash } from 'node:crypto'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { totpCode } from '../../src/dashboard/totp.js'
import type { SqliteStore } from '../../src/server/store/sqlite/store.js'
import { startHarness, type Harness } from './harness.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/accounts.test.ts')

let h: Harness
beforeAll(async () => {
  h = await startHarness({ dashboard: { loginAttempts: 3 } })
}, 90_000)
afterAll(async () => h?.close())

const linkIn = (text: string, path: string) => new RegExp(`http://127\\.0\\.0\\.1:\\d+${path.replace(/[?/]/g, '\\$&')}[A-Za-z0-9_-]+`).exec(text)![0]

/** Posts the sign-in form and returns the response status. */
async function trySignIn(page: Page, email: string, password: string): Promise<number> {
  await page.goto(`${h.base}/dashboard/signin`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  const [res] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/dashboard/signin') && r.request().method() === 'POST'), page.getByRole('button', { name: 'Sign in' }).click()])
  return res.status()
}

/** The same browser as a stranger's: its cookies cleared (no session, no sign-in under way), its page kept. */
async function asStranger<T extends { context: { clearCookies(): Promise<void> } }>(p: T): Promise<T> {
  await p.context.clearCookies()
  return p
}

/** Enters a code on the second-factor page and returns the response status. */
async function enterCode(page: Page, code: string): Promise<number> {
  await page.getByLabel('Code').fill(code)
  const [res] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/dashboard/signin/code') && r.request().method() === 'POST'), page.getByRole('button', { name: 'Verify' }).click()])
  return res.status()
}

/** Turns two-factor sign-in on from the account page; returns the secret and the recovery codes shown. */
async function enrol(page: Page): Promise<{ secret: string; codes: string[] }> {
  await page.goto(`${h.base}/dashboard/account`)
  await page.getByRole('button', { name: 'Set up two-factor sign-in' }).click()
  const secret = (await page.getByTestId('totp-secret').textContent())!
  expect(await page.getByTestId('totp-uri').textContent()).toMatch(new RegExp(`^otpauth://totp/riskcheck:[^?]+\\?issuer=riskcheck&secret=${secret}&algorithm=SHA1&digits=6&period=30$`))
  expect(await page.locator('.qr svg').count()).toBe(1)
  await page.getByLabel('Code').fill('000000' === totpCode(secret, Date.now()) ? '111111' : '000000')
  await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click()
  await page.getByText('That code is not right').waitFor()
  await page.getByLabel('Code').fill(totpCode(secret, Date.now()))
  await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click()
  const codes = (await page.getByTestId('recovery-codes').innerText()).split(/\s+/).filter(Boolean)
  return { secret, codes }
}

describe.skipIf(!HAS_BROWSER)('dashboard: accounts people can keep', () => {
  it('resets a password by mail: the link works once, for that account; other sessions end; failures are forgiven', { timeout: 120_000 }, async () => {
    // set-up, not under test: the account and a session of it made in the store
    const rita = await h.account('rita@example.test', 'Resetters')
    const teamUrl = rita.teamUrl
    const first = await h.signedInPage(rita.userId, `${teamUrl}/keys`)
    // the address is locked out by wrong passwords
    const second = await h.newPage()
    for (let i = 0; i < 3; i++) expect(await trySignIn(second.page, 'rita@example.test', `wrong ${i} password`)).toBe(401)
    expect(await trySignIn(second.page, 'rita@example.test', 'correct horse battery')).toBe(429)

    await second.page.getByRole('link', { name: 'Forgot your password?' }).click()
    await second.page.getByLabel('Email').fill('rita@example.test')
    await second.page.getByRole('button', { name: 'Send a reset link' }).click()
    await second.page.getByText('If an account has that address').waitFor()
    const mail = await h.mailTo('rita@example.test', /Reset your riskcheck password/)
    const link = linkIn(mail.text, '/dashboard/reset/new?token=')
    // stored as its SHA-256 only, valid for an hour
    const token = new URL(link).searchParams.get('token')!
    const rows = (h.app.store as SqliteStore).db.prepare("SELECT hash, expires_at - created_at AS ttl FROM dashboard_tokens WHERE kind = 'reset'").all() as Array<{ hash: string; ttl: number }>
    expect(rows).toEqual([{ hash: createHash('sha256').update(token).digest('hex'), ttl: 3600_000 }])
    await second.page.goto(link)
    await second.page.getByLabel('New password').fill('a brand new password')
    await second.page.getByRole('button', { name: 'Set the new password' }).click()
    await second.page.waitForURL(/\/t\/[^/]+\/keys$/)
    // the session that was open before the reset is over
    await first.page.goto(`${teamUrl}/keys`)
    await first.page.waitForURL(/\/dashboard\/signin/)
    // the link works once; the old password is gone, the new one works (the lock-out was forgiven)
    await first.page.goto(link)
    expect(await first.page.textContent('main')).toMatch(/reset link is not valid/)
    expect(await trySignIn(first.page, 'rita@example.test', 'correct horse battery')).toBe(401)
    expect(await trySignIn(first.page, 'rita@example.test', 'a brand new password')).toBe(303)

    // an address without an account gets the same answer, and no mail
    const before = h.mails.length
    const anon = await asStranger(first)
    await anon.page.goto(`${h.base}/dashboard/reset`)
    await anon.page.getByLabel('Email').fill('nobody@example.test')
    await anon.page.getByRole('button', { name: 'Send a reset link' }).click()
    await anon.page.getByText('If an account has that address').waitFor()
    await new Promise((r) => setTimeout(r, 300))
    expect(h.mails.slice(before).filter((m) => m.to.includes('nobody@example.test'))).toEqual([])
    for (const p of [first, second]) await p.context.close()
  })

  it('answers a sign-up with a taken address like any sign-up, and mails the owner instead', async () => {
    await h.account('sam@example.test', 'Originals')
    const post = async (email: string) => {
      const res0 = await fetch(`${h.base}/dashboard/signup`)
      const cookie = res0.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await res0.text())![1]!
      const res = await fetch(`${h.base}/dashboard/signup`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, email, password: 'attacker password', team: 'Copycats' }).toString(),
      })
      return { status: res.status, location: res.headers.get('location'), cookies: res.headers.getSetCookie().map((c) => c.split('=')[0]), body: await res.text() }
    }
    const taken = await post('sam@example.test')
    const fresh = await post('new-sam@example.test')
    expect(taken).toEqual(fresh)
    expect(taken).toMatchObject({ status: 303, location: '/dashboard/signup/sent', cookies: [] })
    const notice = await h.mailTo('sam@example.test', /Someone tried to sign up/)
    expect(notice.text).toMatch(/\/dashboard\/reset/)
    // the attacker's password did not become the owner's
    const p = await h.newPage()
    expect(await trySignIn(p.page, 'sam@example.test', 'attacker password')).toBe(401)
    await p.context.close()
  })

  it('signs out everywhere: every session of the account ends', async () => {
    const tess = await h.account('tess@example.test', 'Everywhere')
    const teamUrl = tess.teamUrl
    const a = await h.signedInPage(tess.userId, `${teamUrl}/keys`)
    const b = await h.signedInPage(tess.userId, `${teamUrl}/keys`)
    await a.page.getByRole('link', { name: 'tess@example.test' }).click()
    await a.page.getByRole('button', { name: 'Sign out everywhere' }).click()
    await a.page.getByText('You are signed out everywhere').waitFor()
    await b.page.goto(`${teamUrl}/keys`)
    await b.page.waitForURL(/\/dashboard\/signin/)
    await a.context.close()
    await b.context.close()
  })

  it('two-factor sign-in: enrol, a code after the password (each used once), recovery codes, limits, turn off', { timeout: 120_000 }, async () => {
    const uma = await h.account('uma@example.test', 'Two Factors')
    const a = await h.signedInPage(uma.userId, `${uma.teamUrl}/keys`)
    const { secret, codes } = await enrol(a.page)
    expect(codes).toHaveLength(10)
    // stored as SHA-256 hashes only
    const db = (h.app.store as SqliteStore).db
    const stored = db.prepare('SELECT hash FROM dashboard_recovery_codes ORDER BY hash').all() as Array<{ hash: string }>
    expect(stored.map((r) => r.hash)).toEqual(codes.map((c) => createHash('sha256').update(c.replace(/-/g, '')).digest('hex')).sort())
    await a.page.getByRole('link', { name: 'Done' }).click()
    expect(await a.page.getByTestId('recovery-left').textContent()).toBe('10')

    // the password alone is not enough
    const b = await h.newPage()
    expect(await trySignIn(b.page, 'uma@example.test', 'correct horse battery')).toBe(303)
    await b.page.waitForURL(/\/dashboard\/signin\/code/)
    await b.page.goto(`${h.base}/dashboard/account`)
    await b.page.waitForURL(/\/dashboard\/signin\?next=/)
    expect(await trySignIn(b.page, 'uma@example.test', 'correct horse battery')).toBe(303)
    expect(await enterCode(b.page, '12345')).toBe(401)
    // the next step's code (within the ±1 step window; the current one was used to confirm)
    const code = totpCode(secret, Date.now() + 30_000)
    expect(await enterCode(b.page, code)).toBe(303)
    await b.page.waitForURL(/\/keys$/)

    // the same code again, in another browser: refused
    const c = await h.newPage()
    expect(await trySignIn(c.page, 'uma@example.test', 'correct horse battery')).toBe(303)
    expect(await enterCode(c.page, code)).toBe(401)
    // a recovery code works once
    expect(await enterCode(c.page, codes[0]!.toUpperCase())).toBe(303)
    const d = await asStranger(c)
    expect(await trySignIn(d.page, 'uma@example.test', 'correct horse battery')).toBe(303)
    expect(await enterCode(d.page, codes[0]!)).toBe(401)
    // wrong codes are limited per person like passwords (limit 3 here): the 429 comes before any check
    expect(await enterCode(d.page, '000001')).toBe(401)
    expect(await enterCode(d.page, '000002')).toBe(401)
    expect(await enterCode(d.page, codes[1]!)).toBe(429)

    // … and so are the password and code that turn it off, from a signed-in session
    await a.page.goto(`${h.base}/dashboard/account`)
    await a.page.getByLabel('Password').fill('correct horse battery')
    await a.page.getByLabel('Code').fill(codes[2]!)
    await a.page.getByRole('button', { name: 'Turn off two-factor sign-in' }).click()
    await a.page.getByText('Too many wrong tries').waitFor()
    // (the window passes)
    await h.app.dashboard!.teams.clearLoginFailures(`mfa:${(await h.app.dashboard!.teams.getUserByEmail('uma@example.test'))!.id}`)

    // turning it off needs the password and a code
    await a.page.goto(`${h.base}/dashboard/account`)
    await a.page.getByLabel('Password').fill('correct horse battery')
    await a.page.getByLabel('Code').fill('999999')
    await a.page.getByRole('button', { name: 'Turn off two-factor sign-in' }).click()
    await a.page.getByText('The password or the code is not right').waitFor()
    await a.page.getByLabel('Password').fill('correct horse battery')
    await a.page.getByLabel('Code').fill(codes[2]!)
    await a.page.getByRole('button', { name: 'Turn off two-factor sign-in' }).click()
    await a.page.getByText('Two-factor sign-in is off.').waitFor()
    const e = await asStranger(b)
    expect(await trySignIn(e.page, 'uma@example.test', 'correct horse battery')).toBe(303)
    await e.page.waitForURL(/\/keys$/)
    for (const p of [a, b, c]) await p.context.close()
  })

  it('an owner requires two-factor sign-in for the team: members without it are sent to set it up', async () => {
    const vera = await h.account('vera@example.test', 'Strict')
    const teamUrl = vera.teamUrl
    const owner = await h.signedInPage(vera.userId, `${teamUrl}/members`)
    await owner.page.getByRole('button', { name: 'Require it for every member' }).click()
    await owner.page.getByText('Turn on two-factor sign-in for yourself first').waitFor()
    await enrol(owner.page)
    await owner.page.goto(`${teamUrl}/members`)
    await owner.page.getByRole('button', { name: 'Require it for every member' }).click()
    await owner.page.getByText('Members of this team now need two-factor sign-in.').waitFor()

    const walt = await h.account('walt@example.test', 'Loose')
    await h.app.dashboard!.teams.putMember({ orgId: vera.orgId, userId: walt.userId, role: 'developer', createdAt: Date.now() })
    const member = await h.signedInPage(walt.userId, `${walt.teamUrl}/keys`)
    await member.page.goto(`${teamUrl}/keys`)
    await member.page.waitForURL(/\/dashboard\/account\?required=1$/)
    await member.page.getByText('A team of yours requires two-factor sign-in').waitFor()
    // a form posted to the team is refused too
    const csrf = await member.page.locator('input[name=_csrf]').first().inputValue()
    expect((await member.page.request.post(`${teamUrl}/keys`, { form: { _csrf: csrf, name: 'x', mode: 'test', scopes: 'lookup' } })).status()).toBe(403)
    // their own team is not affected; after enrolment the strict team opens
    await member.page.goto(`${h.base}/dashboard`)
    await enrol(member.page)
    await member.page.goto(`${teamUrl}/keys`)
    await member.page.waitForURL(/\/keys$/)
    await owner.context.close()
    await member.context.close()
  })
})

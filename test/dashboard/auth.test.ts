/**
 * Dashboard sign-up, verification mail over SMTP, sign-in/out and the safety rules (docs/dashboard.md), in
 * headless Chromium against a loopback server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CSP } from '../../src/dashboard/index.js'
import { signUp, startHarness, type Harness } from './harness.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/auth.test.ts')

let h: Harness
beforeAll(async () => {
  h = await startHarness({ dashboard: { loginAttempts: 3 } })
}, 90_000)
afterAll(async () => h?.close())

describe.skipIf(!HAS_BROWSER)('dashboard: people and safety', () => {
  it('signs up, mails a verification link through SMTP, verifies; live keys only after verification', async () => {
    const { page, context, errors, offsite } = await h.newPage()
    const teamUrl = await signUp(h, page, 'ada@example.test', 'Analytical', 'correct horse battery', false)
    await expect(page.getByRole('status').first().textContent()).resolves.toMatch(/Verify your email address/)
    expect(await page.locator('input[name=mode][value=live]').isDisabled()).toBe(true)
    // a live key refused before verification, even when the form is forged
    const csrf = await page.locator('input[name=_csrf]').first().inputValue()
    const forged = await page.request.post(`${teamUrl}/keys`, { form: { _csrf: csrf, name: 'x', mode: 'live', scopes: 'lookup' } })
    expect(forged.status()).toBe(403)

    const mail = await h.mailTo('ada@example.test', /Verify your email/)
    expect(mail.raw).toMatch(/^From: dashboard@riskcheck\.test/m)
    const link = /http:\/\/127\.0\.0\.1:\d+\/dashboard\/verify\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0]
    await page.goto(link)
    await page.getByText('ada@example.test is verified').waitFor()
    // a link works once
    await page.goto(link)
    expect(await page.textContent('main')).toMatch(/not valid/)
    await page.goto(`${teamUrl}/keys`)
    expect(await page.locator('input[name=mode][value=live]').isDisabled()).toBe(false)
    expect(await page.locator('.banner').count()).toBe(0)

    const cookies = await context.cookies()
    const session = cookies.find((c) => c.name === 'rc_session')!
    expect(session.httpOnly).toBe(true)
    expect(session.sameSite).toBe('Lax')
    expect(session.path).toBe('/dashboard')
    expect(errors).toEqual([])
    expect(offsite).toEqual([])
    await context.close()
  })

  it('serves every page with a CSP without inline script, and no inline script or handler in the markup', async () => {
    const res = await fetch(`${h.base}/dashboard/signin`)
    expect(res.headers.get('content-security-policy')).toBe(CSP)
    expect(CSP).not.toMatch(/unsafe-inline/)
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    const body = await res.text()
    expect(body).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/)
    expect(body).not.toMatch(/\son[a-z]+=/i)
    expect(body).not.toMatch(/style=/)
    // unknown dashboard paths are an HTML 404 page; a form body over the server's limit is a 413 page
    const missing = await fetch(`${h.base}/dashboard/nope`)
    expect(missing.status).toBe(404)
    expect(missing.headers.get('content-type')).toMatch(/^text\/html/)
    const big = await fetch(`${h.base}/dashboard/signin`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `email=${'a'.repeat(100_000)}` })
    expect(big.status).toBe(413)
    expect(big.headers.get('content-type')).toMatch(/^text\/html/)
  })

  it('signs out and in; wrong passwords are limited per address (429 even with the right one after the limit)', async () => {
    // set-up, not under test: the account and a session of it made in the store
    const bob = await h.account('bob@example.test', 'Builders')
    const { page, context } = await h.signedInPage(bob.userId, `${bob.teamUrl}/keys`)
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(/\/dashboard\/signin$/)
    await page.goto(`${h.base}/dashboard`)
    await page.waitForURL(/\/dashboard\/signin/)

    await page.getByLabel('Email').fill('bob@example.test')
    await page.getByLabel('Password').fill('correct horse battery')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(/\/keys$/)
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(/\/signin$/)

    for (let i = 0; i < 3; i++) {
      await page.getByLabel('Email').fill('bob@example.test')
      await page.getByLabel('Password').fill(`wrong password ${i}`)
      const [res] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/dashboard/signin') && r.request().method() === 'POST'), page.getByRole('button', { name: 'Sign in' }).click()])
      expect(res.status()).toBe(401)
      await page.getByText('Wrong email or password.').waitFor()
    }
    await page.getByLabel('Email').fill('bob@example.test')
    await page.getByLabel('Password').fill('correct horse battery')
    const [res] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/dashboard/signin') && r.request().method() === 'POST'), page.getByRole('button', { name: 'Sign in' }).click()])
    expect(res.status()).toBe(429)
    await page.getByText(/Too many failed sign-ins/).waitFor()
    await context.close()
  })

  it('refuses a POST without the CSRF token, signed in or not', async () => {
    const { userId, teamUrl } = await h.account('cy@example.test', 'Cyclists')
    const { page, context } = await h.signedInPage(userId, `${teamUrl}/keys`)
    const res = await page.request.post(`${teamUrl}/keys`, { form: { name: 'sneaky', mode: 'test', scopes: 'lookup' } })
    expect(res.status()).toBe(403)
    expect(await res.text()).toMatch(/did not come from this dashboard/)
    const wrong = await page.request.post(`${teamUrl}/keys`, { form: { _csrf: 'x'.repeat(43), name: 'sneaky', mode: 'test', scopes: 'lookup' } })
    expect(wrong.status()).toBe(403)
    const anon = await fetch(`${h.base}/dashboard/signin`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=cy%40example.test&password=correct+horse+battery', redirect: 'manual' })
    expect(anon.status).toBe(403)
    expect(await h.app.store.listKeys(teamUrl.split('/').pop()!)).toEqual([])
    await context.close()
  })

  it("answers 404 for another team's pages and objects", async () => {
    const dee = await h.account('dee@example.test', 'Team A')
    const teamA = dee.teamUrl
    const a = await h.signedInPage(dee.userId, `${teamA}/keys`)
    await a.page.getByLabel('Name').fill('a key')
    await a.page.getByRole('button', { name: 'Create key' }).click()
    await a.page.getByTestId('secret').waitFor()
    const keyId = await a.page.locator('tr[data-key]').first().getAttribute('data-key')

    // the same browser, now Eve's (Dee is signed out of it)
    const b = a
    const eve = await h.account('eve@example.test', 'Team B')
    const teamB = eve.teamUrl
    await h.signInAs(b, eve.userId, `${teamB}/keys`)
    const page = await b.page.goto(`${teamA}/keys`)
    expect(page!.status()).toBe(404)
    expect(await b.page.textContent('main')).not.toMatch(/a key/)
    const csrf = await b.page.locator('input[name=_csrf]').first().inputValue()
    const revoke = await b.page.request.post(`${teamA}/keys/${keyId}/revoke`, { form: { _csrf: csrf } })
    expect(revoke.status()).toBe(404)
    // B's team id with A's key id: still 404
    const mixed = await b.page.request.post(`${teamB}/keys/${keyId}/revoke`, { form: { _csrf: csrf } })
    expect(mixed.status()).toBe(404)
    expect((await h.app.store.getKey(keyId!))?.revokedAt).toBeNull()
    await a.context.close()
  })

  it('limits failed sign-ins per client address too (ten times the per-address limit)', async () => {
    const res0 = await fetch(`${h.base}/dashboard/signin`)
    const cookie = res0.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await res0.text())![1]!
    const attempt = (email: string) =>
      fetch(`${h.base}/dashboard/signin`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, email, password: 'not the password' }).toString(),
      })
    const statuses: number[] = []
    for (let i = 0; i < 31; i++) {
      const s = (await attempt(`nobody${i}@example.test`)).status
      statuses.push(s)
      if (s === 429) break
    }
    // every address failed once only, so the address limit (3) never applied: the client limit (30) did
    expect(statuses.at(-1)).toBe(429)
    expect(statuses.slice(0, -1).every((s) => s === 401)).toBe(true)
    expect((await attempt('fresh@example.test')).status).toBe(429)
  })
})

/**
 * The API keys page in headless Chromium: create (secret shown once, copy button), list, use against the API,
 * revoke (the next request fails).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from './harness.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/keys.test.ts')

let h: Harness
beforeAll(async () => {
  h = await startHarness()
}, 90_000)
afterAll(async () => h?.close())

describe.skipIf(!HAS_BROWSER)('dashboard: API keys', () => {
  it('creates a live key with chosen scopes, shows the secret once, lists it, and revoking it stops it on the next request', async () => {
    // set-up, not under test: the account and a session of it made in the store
    const { userId, teamUrl } = await h.account('kim@example.test', 'Keysmiths')
    const { page, context, errors, offsite } = await h.signedInPage(userId, `${teamUrl}/keys`)
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.base })
    await page.getByLabel('Name').fill('signup form')
    await page.locator('input[name=mode][value=live]').check()
    await page.locator('input[name=scopes][value=bulk]').uncheck()
    await page.locator('input[name=scopes][value=webhooks]').check()
    await page.getByRole('button', { name: 'Create key' }).click()
    const secret = (await page.getByTestId('secret').textContent())!.trim()
    expect(secret).toMatch(/^svc_live_[0-9A-Za-z]{52}$/)
    await page.getByRole('button', { name: 'Copy' }).click()
    await page.getByRole('button', { name: 'Copied' }).waitFor()
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret)

    const row = page.locator('tr[data-key]').first()
    const keyId = (await row.getAttribute('data-key'))!
    const rowText = (await row.textContent())!
    expect(rowText).toContain(`${secret.slice(0, 21)}…${secret.slice(-4)}`)
    expect(rowText).toMatch(/lookup\s+account:read\s+webhooks/)
    expect(rowText).not.toMatch(/\bbulk\b/)

    // never again: not on reload, not anywhere in the page
    await page.goto(`${teamUrl}/keys`)
    expect(await page.content()).not.toContain(secret.slice(21))

    const account = await fetch(`${h.base}/v1/account`, { headers: { authorization: `Bearer ${secret}` } })
    expect(account.status).toBe(200)
    expect(((await account.json()) as { data: { org: { id: string } } }).data.org.id).toBe(teamUrl.split('/').pop())
    await page.reload()
    expect(await page.locator(`tr[data-key="${keyId}"] td`).nth(4).textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/)

    await page.getByRole('button', { name: 'Revoke signup form' }).click()
    await page.getByText('The key is revoked').waitFor()
    expect(await page.locator(`tr[data-key="${keyId}"]`).textContent()).toMatch(/revoked/)
    const after = await fetch(`${h.base}/v1/account`, { headers: { authorization: `Bearer ${secret}` } })
    expect(after.status).toBe(401)
    expect(errors).toEqual([])
    expect(offsite).toEqual([])
    await context.close()
  })

  it('a test key works before verification; a live key and no scope are refused with a message', async () => {
    const lou = await h.account('lou@example.test', 'Unverified', { verified: false })
    const { page, context } = await h.signedInPage(lou.userId, `${lou.teamUrl}/keys`)
    await page.getByLabel('Name').fill('tester')
    await page.getByRole('button', { name: 'Create key' }).click()
    const secret = (await page.getByTestId('secret').textContent())!.trim()
    expect(secret).toMatch(/^svc_test_/)
    const res = await fetch(`${h.base}/v1/email`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ email: 'someone@example.com' }) })
    expect(res.status).toBe(200)
    for (const s of ['lookup', 'bulk', 'account:read']) await page.locator(`input[name=scopes][value="${s}"]`).uncheck()
    await page.getByLabel('Name').fill('nothing')
    await page.getByRole('button', { name: 'Create key' }).click()
    await page.getByText('Pick at least one scope.').waitFor()
    await context.close()
  })
})

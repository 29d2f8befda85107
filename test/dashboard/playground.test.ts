/**
 * The lookup playground in headless Chromium: each of the seven lookups runs through the API with the team's
 * test key (test mode, no credits) and the formatted result object is shown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from './harness.js'
import { signUpAndOpen } from './signed-in.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/playground.test.ts')

let h: Harness
beforeAll(async () => {
  h = await startHarness()
}, 90_000)
afterAll(async () => h?.close())

const CASES: Array<{ type: string; fields: Record<string, string>; input: string }> = [
  { type: 'email', fields: { Email: 'someone@example.com' }, input: 'someone@example.com' },
  { type: 'phone', fields: { Phone: '+14155552671' }, input: '+14155552671' },
  { type: 'phone_type', fields: { Phone: '4155552671', 'Country (phones without +)': 'US' }, input: '4155552671' },
  { type: 'ip', fields: { 'IP address': '8.8.8.8' }, input: '8.8.8.8' },
  { type: 'domain_age', fields: { Domain: 'example.com' }, input: 'example.com' },
  { type: 'email_auth', fields: { Domain: 'example.com' }, input: 'example.com' },
  { type: 'check', fields: { Email: 'someone@example.com', 'IP address': '8.8.8.8' }, input: '8.8.8.8' },
]

describe.skipIf(!HAS_BROWSER)('dashboard: lookup playground', () => {
  // seven lookups through Chromium, each a page round trip: more than the default 20 s under load
  it('runs all seven lookups with the team test key and shows the formatted result', { timeout: 60_000 }, async () => {
    const { page, context, errors } = await h.newPage()
    const teamUrl = await signUpAndOpen(h, page, 'pia@example.test', 'Players', { verify: false })
    const orgId = teamUrl.split('/').pop()!
    const before = await h.app.store.getOrg(orgId, Date.now())
    await page.getByRole('link', { name: 'Playground' }).click()
    for (const c of CASES) {
      await page.locator('select[name=type]').selectOption(c.type)
      for (const name of ['Email', 'Phone', 'Country (phones without +)', 'IP address', 'Domain']) await page.getByLabel(name, { exact: true }).fill(c.fields[name] ?? '')
      await page.getByRole('button', { name: 'Run with the test key' }).click()
      const text = (await page.getByTestId('result').textContent())!
      expect(text, c.type).toContain('\n  "success": true')
      const result = JSON.parse(text).data
      expect(result.request.type, c.type).toBe(c.type)
      expect(result.metadata.test_mode).toBe(true)
      expect(JSON.stringify(result.request.input), c.type).toContain(c.input)
      expect(await page.locator('select[name=type]').inputValue()).toBe(c.type)
    }
    // one playground key (test, lookup only), no credits used
    const keys = (await h.app.store.listKeys(orgId)).filter((k) => k.name === 'Dashboard playground')
    expect(keys.map((k) => [k.mode, k.scopes, k.revokedAt])).toEqual([['test', ['lookup'], null]])
    const after = await h.app.store.getOrg(orgId, Date.now())
    expect(after!.usage.totalCredits).toBe(before!.usage.totalCredits)
    // revoked on the keys page: the next run makes a new one
    await page.goto(`${teamUrl}/keys`)
    await page.getByRole('button', { name: 'Revoke Dashboard playground' }).click()
    await page.goto(`${teamUrl}/playground`)
    await page.getByLabel('IP address', { exact: true }).fill('1.1.1.1')
    await page.locator('select[name=type]').selectOption('ip')
    await page.getByRole('button', { name: 'Run with the test key' }).click()
    expect(JSON.parse((await page.getByTestId('result').textContent())!).success).toBe(true)
    expect((await h.app.store.listKeys(orgId)).filter((k) => k.name === 'Dashboard playground' && k.revokedAt === null)).toHaveLength(1)
    expect(errors).toEqual([])
    await context.close()
  })
})

/**
 * Usage & credits in headless Chromium: balance by bucket, plan, period, the per-day charts by lookup type fed by
 * live API lookups over days, and the credit events (added, low, depleted).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../../src/accounts/keys.js'
import { fakeClock } from '../clock.js'
import { startHarness, type Harness } from './harness.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/usage.test.ts')

const clock = fakeClock('2026-11-02T09:00:00Z')
let h: Harness
beforeAll(async () => {
  h = await startHarness({ riskcheck: { offline: true, now: clock.now } })
}, 90_000)
afterAll(async () => h?.close())

const lookup = (key: string, path: string, body: object) =>
  fetch(`${h.base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })

describe.skipIf(!HAS_BROWSER)('dashboard: usage and credits', () => {
  it('shows balance by bucket, plan, period, per-day charts by type and the credit events', async () => {
    // set-up, not under test: the account made in the store, the page opened signed in
    const { userId, orgId, teamUrl } = await h.account('uma@example.test', 'Counters')
    const { page, context, errors } = await h.signedInPage(userId, `${teamUrl}/keys`)
    const { secret } = await issueApiKey(h.app.store, { orgId, mode: 'live' }, clock.now().getTime())
    await h.app.store.addCredits(orgId, 40, 'top_up', clock.now().getTime())
    // day 1: 3 IP lookups; day 2: 2 phone lookups (offline: each a billed lookup of 1 credit)
    for (const ip of ['8.8.8.8', '1.1.1.1', '9.9.9.9']) expect((await lookup(secret, '/v1/ip', { ip })).status).toBe(200)
    clock.advance(24 * 3600_000)
    for (const phone of ['+14155552671', '+442071838750']) expect((await lookup(secret, '/v1/phone', { phone })).status).toBe(200)
    // test keys are not counted
    const test = await issueApiKey(h.app.store, { orgId, mode: 'test' }, clock.now().getTime())
    expect((await lookup(test.secret, '/v1/ip', { ip: '8.8.4.4' })).status).toBe(200)

    await page.getByRole('link', { name: 'Usage & credits' }).click()
    const org = (await h.app.store.getOrg(orgId, clock.now().getTime()))!
    expect(await page.getByTestId('balance').textContent()).toBe(String(org.subscriptionCredits + org.purchasedCredits))
    expect(await page.getByTestId('purchased').textContent()).toBe(String(org.purchasedCredits))
    expect(await page.getByTestId('subscription').textContent()).toBe(String(org.subscriptionCredits))
    expect(await page.textContent('main')).toContain('Free')
    expect(await page.textContent('main')).toContain('5 lookups')

    const lookups = page.getByTestId('chart-lookups')
    expect(await lookups.locator('rect').count()).toBe(2)
    expect(await lookups.locator('rect title').allTextContents()).toEqual(['2026-11-02 ip: 3 lookups', '2026-11-03 phone: 2 lookups'])
    expect(await page.getByTestId('chart-credits').locator('rect title').allTextContents()).toEqual(['2026-11-02 ip: 3 credits', '2026-11-03 phone: 2 credits'])
    const box = await lookups.locator('svg.plot').boundingBox()
    expect(box!.width).toBeGreaterThan(600)

    // spend the balance down: credits.low then credits.depleted appear
    await h.app.store.setOrgPlan(orgId, { planId: 'free', ratePerSecond: 10_000 }, clock.now().getTime())
    let n = 0
    while ((await h.app.store.balance(orgId, clock.now().getTime())) > 0 && n < 500) {
      expect((await lookup(secret, '/v1/ip', { ip: `8.${20 + (n >> 8)}.${n & 255}.1` })).status).toBe(200)
      n++
    }
    await page.reload()
    const events = await page.getByTestId('credit-events').textContent()
    expect(events).toContain('credits.added')
    expect(events).toContain('credits.low')
    expect(events).toContain('credits.depleted')
    expect(await page.getByTestId('balance').textContent()).toBe('0')
    expect(errors).toEqual([])
    await context.close()
  })
})

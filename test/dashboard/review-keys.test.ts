/**
 * The review queue's keys in headless Chromium: on a focused row, `b` blocks and `a` approves (app.js submits the
 * row's form with that button, as a click would), and the page's script is the dashboard's own (the CSP holds).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../../src/accounts/keys.js'
import { browserAvailable } from '../browser-env.js'
import { startHarness, type Harness } from './harness.js'

const HAS_BROWSER = browserAvailable('test/dashboard/review-keys.test.ts')

let h: Harness
beforeAll(async () => {
  h = await startHarness()
}, 90_000)
afterAll(async () => h?.close())

describe.skipIf(!HAS_BROWSER)('dashboard: review queue keys', () => {
  it('b on a focused row blocks it, a approves the next', async () => {
    // set-up, not under test: the account made in the store, the page opened signed in
    const { userId, orgId, teamUrl } = await h.account('kim@example.test', 'Keyboard reviewers')
    const { page, context, errors } = await h.signedInPage(userId, `${teamUrl}/keys`)
    const { secret } = await issueApiKey(h.app.store, { orgId, mode: 'test', name: 'k' }, Date.now())
    for (const ip of ['192.0.2.8', '192.0.2.10']) {
      const r = await fetch(`${h.base}/v1/ip`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ ip }) })
      expect(((await r.json()) as { data: { recommendation: { action: string } } }).data.recommendation.action).toBe('review')
    }
    // both answers are listed: the queue's list writes what is pending and waits for the batch in flight first
    await page.goto(`${teamUrl}/reviews/test`)
    const rows = page.locator('tr[data-review][tabindex]')
    expect(await rows.count()).toBe(2)
    await rows.first().focus()
    await page.keyboard.press('b')
    await page.waitForURL(/done=block/)
    await page.locator('tr[data-review][tabindex]').first().focus()
    await page.keyboard.press('a')
    await page.waitForURL(/done=approve/)
    const queue = await fetch(`${h.base}/v1/reviews`, { headers: { authorization: `Bearer ${secret}` } })
    const decisions = ((await queue.json()) as { data: Array<{ decision: string; decided_by: string }> }).data
    expect(decisions.map((d) => d.decision)).toEqual(['block', 'approve']) // newest first: 192.0.2.10 blocked, then the Tor exit approved
    expect(decisions.every((d) => d.decided_by.startsWith('user:'))).toBe(true)
    expect(errors).toEqual([])
    await context.close()
  })
})

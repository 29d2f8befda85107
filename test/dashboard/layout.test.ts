/**
 * The dashboard's layout in headless Chromium: every page at 1280 and 390 pixels wide fits the viewport (tables
 * scroll inside their box, the page itself never sideways), loads nothing from another host, and is usable from
 * the keyboard alone (skip link, sign-in, navigation, visible focus).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startHarness, type Harness } from './harness.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/layout.test.ts')

let h: Harness
let teamUrl = ''
let state: Awaited<ReturnType<import('playwright-core').BrowserContext['storageState']>>
beforeAll(async () => {
  h = await startHarness()
  const { page, context } = await h.newPage()
  teamUrl = await signUp(h, page, 'lay@example.test', 'A team with a rather long name for narrow screens')
  await page.getByLabel('Name').fill('a key with a long name to wrap')
  await page.getByRole('button', { name: 'Create key' }).click()
  // the account page with its widest content: an enrolment in progress (QR code, key, otpauth:// URI)
  await page.goto(`${h.base}/dashboard/account`)
  await page.getByRole('button', { name: 'Set up two-factor sign-in' }).click()
  await page.getByTestId('totp-uri').waitFor()
  state = await context.storageState()
  await context.close()
}, 90_000)
afterAll(async () => h?.close())

const PAGES = ['keys', 'usage', 'bulk', 'webhooks', 'playground', 'members']
/** Pages outside a team (no side navigation). */
const OTHER_PAGES = ['signin', 'signup/sent', 'reset', 'reset?done=sent', 'account']

describe.skipIf(!HAS_BROWSER)('dashboard: layout and keyboard', () => {
  for (const width of [1280, 390]) {
    it(`every page fits ${width} px and loads nothing from elsewhere`, async () => {
      const context = await h.browser.newContext({ viewport: { width, height: 800 }, storageState: state })
      const offsite: string[] = []
      context.on('request', (r) => {
        if (!r.url().startsWith(h.base)) offsite.push(r.url())
      })
      const page = await context.newPage()
      const others = OTHER_PAGES.map((p) => `${h.base}/dashboard/${p}`)
      for (const url of [...others, ...PAGES.map((p) => `${teamUrl}/${p}`)]) {
        await page.goto(url)
        const sizes = await page.evaluate('({ doc: document.documentElement.scrollWidth, view: window.innerWidth })')
        const { doc, view } = sizes as { doc: number; view: number }
        expect(doc, url).toBeLessThanOrEqual(view)
        if (!others.includes(url)) {
          const nav = (await page.locator('nav.side').boundingBox())!
          // wide: a column on the left; narrow: a row under the header
          if (width === 1280) expect(nav.width).toBeLessThan(300)
          else expect(nav.width).toBeGreaterThan(300)
        }
      }
      expect(offsite).toEqual([])
      await context.close()
    })
  }

  it('signs in and moves around with the keyboard alone', async () => {
    const context = await h.browser.newContext({ viewport: { width: 390, height: 800 } })
    const page = await context.newPage()
    await page.goto(`${h.base}/dashboard/signin`)
    await page.keyboard.press('Tab')
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to content')
    await page.keyboard.press('Tab') // brand link
    await page.keyboard.press('Tab')
    expect(await page.evaluate('document.activeElement.name')).toBe('email')
    await page.keyboard.type('lay@example.test')
    await page.keyboard.press('Tab')
    await page.keyboard.type('correct horse battery')
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/keys$/)
    // Tab order: skip link, brand, the account link, sign out, then the navigation
    const seen: string[] = []
    for (let i = 0; i < 7; i++) {
      await page.keyboard.press('Tab')
      seen.push((await page.evaluate('document.activeElement.textContent.trim()')) as string)
    }
    expect(seen).toEqual(['Skip to content', 'riskcheck', 'lay@example.test', 'Sign out', 'API keys', 'Usage & credits', 'Bulk jobs'])
    // focus is visible (outline from :focus-visible)
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')
    expect(outline).toBe('solid')
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/bulk$/)
    await context.close()
  })
})

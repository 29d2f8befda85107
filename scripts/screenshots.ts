/**
 * `npm run screenshots`: writes docs/screenshots/<page>-<width>.png of every dashboard page at 1280 and 390 pixels
 * wide. Starts a throw-away server on loopback (SQLite in a temp dir, offline lookups, a loopback SMTP server),
 * fills one team with a key, usage, a bulk job, a webhook endpoint with a delivery and a second member through the
 * dashboard itself, then photographs each page in Debian's headless chromium (playwright-core).
 *
 *   npm run screenshots [-- --out DIR]
 */
import { mkdirSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { issueApiKey } from '../src/accounts/keys.js'
import { signUp, startHarness } from '../test/dashboard/harness.js'

export const WIDTHS = [1280, 390] as const

async function main() {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const outArg = process.argv.indexOf('--out')
  const out = outArg > 0 ? process.argv[outArg + 1]! : join(root, 'docs/screenshots')
  mkdirSync(out, { recursive: true })
  const receiver = http.createServer((_req, res) => res.writeHead(200).end('ok'))
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()))
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/riskcheck`
  const h = await startHarness()
  try {
    const { page, context } = await h.newPage()
    const teamUrl = await signUp(h, page, 'ada@example.com', 'Acme Signups')
    const orgId = teamUrl.split('/').pop()!
    // a key (made here, so its secret is not on any page), usage and credit events
    const { secret } = await issueApiKey(h.app.store, { orgId, mode: 'live', name: 'signup form' }, Date.now())
    await h.app.store.addCredits(orgId, 500, 'top_up', Date.now())
    await h.app.store.setOrgPlan(orgId, { planId: 'starter' }, Date.now())
    for (let i = 0; i < 12; i++) {
      const [path, body] = i % 3 === 0 ? ['/v1/ip', { ip: `8.8.${i}.8` }] : i % 3 === 1 ? ['/v1/email', { email: `user${i}@example.com` }] : ['/v1/phone', { phone: `+1415555${String(1000 + i)}` }]
      await fetch(`${h.base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    }
    await issueApiKey(h.app.store, { orgId, mode: 'test', name: 'staging', scopes: ['lookup', 'bulk'] }, Date.now())
    // a bulk job
    await page.goto(`${teamUrl}/bulk`)
    await page.getByLabel('Inputs').fill(Array.from({ length: 50 }, (_, i) => `person${i}@example.com`).join('\n'))
    await page.getByLabel('Name (optional)').fill('October newsletter')
    await page.getByRole('button', { name: 'Start job' }).click()
    await page.locator('[data-field=status]', { hasText: 'completed' }).first().waitFor({ timeout: 30_000 })
    // a webhook endpoint with a ping
    await page.goto(`${teamUrl}/webhooks`)
    await page.getByLabel('URL', { exact: true }).fill(hookUrl)
    await page.getByLabel('Description (optional)').fill('ops alerts')
    await page.getByRole('button', { name: 'Add endpoint' }).click()
    await page.getByRole('link', { name: 'Open the endpoint' }).click()
    const endpointUrl = page.url()
    await page.getByRole('button', { name: 'Send a ping' }).click()
    await h.app.webhooks!.runOnce()
    // a teammate and a pending invitation
    await page.goto(`${teamUrl}/members`)
    await page.getByLabel('Email').fill('grace@example.com')
    await page.getByRole('button', { name: 'Send invitation' }).click()
    await page.waitForURL(/done=invited/)
    // a playground result
    await page.goto(`${teamUrl}/playground`)
    await page.getByLabel('Email', { exact: true }).fill('someone@example.com')
    await page.getByRole('button', { name: 'Run with the test key' }).click()
    await page.getByTestId('result').waitFor()
    const playgroundState = await context.storageState()

    const pages: Array<{ name: string; url: string; signedIn: boolean; before?: (p: typeof page) => Promise<void> }> = [
      { name: 'signin', url: `${h.base}/dashboard/signin`, signedIn: false },
      { name: 'signup', url: `${h.base}/dashboard/signup`, signedIn: false },
      { name: 'keys', url: `${teamUrl}/keys`, signedIn: true },
      { name: 'usage', url: `${teamUrl}/usage`, signedIn: true },
      { name: 'bulk', url: `${teamUrl}/bulk`, signedIn: true },
      { name: 'webhooks', url: `${teamUrl}/webhooks`, signedIn: true },
      { name: 'webhook-endpoint', url: endpointUrl, signedIn: true },
      { name: 'members', url: `${teamUrl}/members`, signedIn: true },
      { name: 'account', url: `${h.base}/dashboard/account`, signedIn: true },
      { name: 'not-found', url: `${teamUrl}/nothing-here`, signedIn: true },
      {
        name: 'playground',
        url: `${teamUrl}/playground`,
        signedIn: true,
        before: async (p) => {
          await p.getByLabel('Email', { exact: true }).fill('someone@example.com')
          await p.getByRole('button', { name: 'Run with the test key' }).click()
          await p.getByTestId('result').waitFor()
        },
      },
    ]
    for (const width of WIDTHS) {
      const viewport = { width, height: width < 500 ? 844 : 900 }
      const signedIn = await h.browser.newContext({ viewport, storageState: playgroundState })
      const anonymous = await h.browser.newContext({ viewport })
      for (const p of pages) {
        const tab = await (p.signedIn ? signedIn : anonymous).newPage()
        await tab.goto(p.url)
        await p.before?.(tab)
        const file = join(out, `${p.name}-${width}.png`)
        await tab.screenshot({ path: file, fullPage: true })
        process.stdout.write(`${file}\n`)
        await tab.close()
      }
      await signedIn.close()
      await anonymous.close()
    }
    await context.close()
  } finally {
    await h.close()
    receiver.close()
  }
}

await main()

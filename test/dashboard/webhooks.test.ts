/**
 * The webhook endpoints page in headless Chromium: create (API URL rules, secret once), ping, the delivery log, an
 * endpoint disabled after a day of failures (owners and admins mailed over SMTP), turn it back on, resend the missed
 * deliveries, rotate the secret; another team gets 404.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeClock } from '../clock.js'
import { startHarness, type Harness } from './harness.js'
import { signUpAndOpen } from './signed-in.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/webhooks.test.ts')

const clock = fakeClock('2026-11-02T09:00:00Z')
let h: Harness
let receiver: http.Server
let receiverUrl = ''
let answer = 500
const received: Array<{ path: string; body: string }> = []

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ path: req.url ?? '/', body: Buffer.concat(chunks).toString('utf8') })
      res.writeHead(answer).end('ok')
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  h = await startHarness({ riskcheck: { offline: true, now: clock.now } })
}, 90_000)
afterAll(async () => {
  await h?.close()
  await new Promise<void>((resolve) => receiver.close(() => resolve()))
})

describe.skipIf(!HAS_BROWSER)('dashboard: webhook endpoints', () => {
  it('create, ping, log; disabled after a day of failures mails owners; enable, resend, rotate', async () => {
    const { page, context, errors } = await h.newPage()
    const teamUrl = await signUpAndOpen(h, page, 'wes@example.test', 'Hookers')
    const orgId = teamUrl.split('/').pop()!
    await page.getByRole('link', { name: 'Webhooks' }).click()

    // the API's URL rules: a private address is refused with the API's message
    await page.getByLabel('URL', { exact: true }).fill('https://10.0.0.1/hook')
    await page.getByRole('button', { name: 'Add endpoint' }).click()
    await page.getByText(/The webhook url is not usable/).waitFor()
    expect(await page.getByLabel('URL', { exact: true }).inputValue()).toBe('https://10.0.0.1/hook')

    await page.getByLabel('URL', { exact: true }).fill(receiverUrl)
    await page.getByLabel('Description (optional)').fill('ops receiver')
    await page.getByRole('button', { name: 'Add endpoint' }).click()
    const secret = (await page.getByTestId('secret').textContent())!.trim()
    expect(secret).toMatch(/^whsec_/)
    await page.getByRole('link', { name: 'Open the endpoint' }).click()
    expect(await page.content()).not.toContain(secret)
    const endpointUrl = page.url()
    const endpointId = endpointUrl.split('/').pop()!

    // ping: queued by the dashboard, sent by the service, fails (500) and shows in the log
    await page.getByRole('button', { name: 'Send a ping' }).click()
    await page.getByText('A ping event is queued').waitFor()
    await h.app.webhooks!.runOnce()
    expect(received.map((r) => JSON.parse(r.body).type)).toEqual(['ping'])
    // the receiver (a Slack channel, say) is a third party: the ping names no one's address
    expect(received[0]!.body).not.toContain('wes@example.test')
    await page.reload()
    const row = page.locator('tr[data-delivery]').first()
    expect(await row.textContent()).toMatch(/ping.*pending.*1\s*500/s)

    // a credit event fails for a day → the endpoint is disabled and owners/admins get a mail
    await h.app.store.addCredits(orgId, 5, 'top_up', clock.now().getTime())
    for (let i = 0; i < 30; i++) {
      clock.advance(60 * 60_000)
      await h.app.webhooks!.runOnce()
    }
    expect((await h.app.webhooks!.deliveries.getStoredEndpoint(endpointId))!.status).toBe('disabled')
    expect(await h.app.dashboard!.mailNotices()).toBe(1)
    expect(await h.app.dashboard!.mailNotices()).toBe(0)
    const mail = await h.mailTo('wes@example.test', /Webhook endpoint disabled/)
    expect(mail.text).toContain(receiverUrl)
    expect(mail.text).toContain(`/dashboard/t/${orgId}/webhooks/${endpointId}`)

    await page.reload()
    expect(await page.getByTestId('endpoint-status').textContent()).toMatch(/disabled.*deliveries failed for a day/)
    const log = await page.locator('tbody').textContent()
    expect(log).toMatch(/ping\s*evt_\w+\s*failed\s*11\s*500/) // 11 attempts, then given up
    expect(log).toMatch(/credits\.added\s*evt_\w+\s*skipped\s*10\s*500/) // stopped when the endpoint was disabled

    // fixed receiver: turn back on, resend the missed deliveries; they arrive
    answer = 200
    received.length = 0
    await page.getByRole('button', { name: 'Turn back on' }).click()
    await page.getByText('The endpoint is enabled again.').waitFor()
    expect(await page.getByTestId('endpoint-status').textContent()).toMatch(/enabled/)
    await page.getByRole('button', { name: 'Resend missed deliveries' }).click()
    await page.getByText('Missed deliveries are queued again.').waitFor()
    await h.app.webhooks!.runOnce()
    expect(received.map((r) => JSON.parse(r.body).type).sort()).toEqual(['credits.added', 'ping'])
    await page.reload()
    expect(await page.locator('tr[data-delivery]').first().textContent()).toMatch(/succeeded\s*resend\s*1\s*200/)

    // rotate: a new secret once
    await page.getByRole('button', { name: 'Rotate secret' }).click()
    const rotated = (await page.getByTestId('secret').textContent())!.trim()
    expect(rotated).toMatch(/^whsec_/)
    expect(rotated).not.toBe(secret)
    await page.goto(endpointUrl)
    expect(await page.content()).not.toContain(rotated)

    // another team: 404 for the endpoint page and its actions
    const other = await h.newPage()
    await signUpAndOpen(h, other.page, 'xan@example.test', 'Others')
    expect((await other.page.goto(endpointUrl))!.status()).toBe(404)
    const csrf = await other.page.locator('input[name=_csrf]').first().inputValue()
    expect((await other.page.request.post(`${endpointUrl}/delete`, { form: { _csrf: csrf } })).status()).toBe(404)
    expect(await h.app.webhooks!.deliveries.getStoredEndpoint(endpointId)).not.toBeNull()
    expect(errors).toEqual([])
    await other.context.close()
    await context.close()
  })
})

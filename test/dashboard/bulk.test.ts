/**
 * Bulk jobs in headless Chromium: paste or upload inputs, live progress without reloading by hand, cancel, the
 * results CSV download; another team's job is 404.
 */
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseInputs } from '../../src/dashboard/pages/bulk.js'
import { startHarness, type Harness } from './harness.js'
import { signUpAndOpen } from './signed-in.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/bulk.test.ts')
/** What the wait predicates read in the page (the tests compile without the DOM library). A predicate is a function,
 * not a string: Playwright evaluates a string again on every poll, which the dashboard's CSP (no 'unsafe-eval') refuses. */
type InPage = { document: { getElementById(id: string): { value: string } } }

let h: Harness
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-dash-bulk-'))
beforeAll(async () => {
  h = await startHarness({ bulkConcurrency: 1 })
}, 90_000)
afterAll(async () => {
  await h?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(!HAS_BROWSER)('dashboard: bulk jobs', () => {
  it('reads pasted lines and a CSV first column, skipping a header', () => {
    expect(parseInputs('email\n"a@x.test",1\nb@x.test, 2\n\n  c@x.test  ')).toEqual(['a@x.test', 'b@x.test', 'c@x.test'])
  })

  // 3,000 lookups one at a time, then a cancel: on a loaded machine the page waits as long as the job takes (no wait
  // of its own gives up first; the case's timeout bounds them all).
  it('uploads a CSV, shows progress until completed, downloads the results; cancels a running job', { timeout: 240_000 }, async () => {
    const { page, context, errors } = await h.newPage()
    context.setDefaultTimeout(0)
    const polls: string[] = []
    page.on('response', (r) => {
      if (r.url().endsWith('/bulk/jobs.json')) polls.push(r.status() === 200 ? 'ok' : String(r.status()))
    })
    const teamUrl = await signUpAndOpen(h, page, 'bea@example.test', 'Bulkers')
    await page.getByRole('link', { name: 'Bulk jobs' }).click()

    const csv = join(dir, 'list.csv')
    writeFileSync(csv, 'email,source\n' + Array.from({ length: 3000 }, (_, i) => `user${i}@example.com,web`).join('\n') + '\n')
    await page.getByLabel('CSV file').setInputFiles(csv)
    await page.waitForFunction(() => (globalThis as unknown as InPage).document.getElementById('bulk-inputs').value.length > 1000)
    await page.getByLabel('Name (optional)').fill('newsletter list')
    await page.getByRole('button', { name: 'Start job' }).click()
    await page.waitForURL(/done=created/)
    const row = page.locator('tr[id^=job-]').first()
    expect(await row.textContent()).toContain('newsletter list')
    // the page updates itself until the job is done
    await row.locator('[data-field=status]', { hasText: 'completed' }).waitFor()
    await page.locator('tr[id^=job-] [data-field=progress]', { hasText: '3000 / 3000' }).first().waitFor()
    // the page asked the server for progress while the job ran (no reload by the test)
    expect(polls.length).toBeGreaterThan(0)
    expect(polls.every((p) => p === 'ok')).toBe(true)

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Results CSV' }).first().click()])
    const file = join(dir, 'results.csv')
    await download.saveAs(file)
    const lines = readFileSync(file, 'utf8').trim().split(/\r?\n/)
    expect(lines[0]).toMatch(/^input,action,status/)
    expect(lines).toHaveLength(3001)
    expect(lines.slice(1).map((l) => l.split(',')[0]).sort()).toEqual(Array.from({ length: 3000 }, (_, i) => `user${i}@example.com`).sort())

    // a big job, cancelled while it runs
    const bigCsv = join(dir, 'big.csv')
    // the API's most (100,000): one lookup at a time, it runs far longer than the click takes
    writeFileSync(bigCsv, Array.from({ length: 100_000 }, (_, i) => `x${i}@example.org`).join('\n'))
    await page.getByLabel('CSV file').setInputFiles(bigCsv)
    await page.waitForFunction(() => (globalThis as unknown as InPage).document.getElementById('bulk-inputs').value.startsWith('x0@'))
    await page.getByLabel('Name (optional)').fill('big one')
    await page.getByRole('button', { name: 'Start job' }).click()
    await page.waitForURL(/done=created/)
    const big = page.locator('tr[id^=job-]', { hasText: 'big one' })
    await big.getByRole('button', { name: 'Cancel' }).click()
    await page.getByText('The job is cancelled.').waitFor()
    expect(await page.locator('tr[id^=job-]', { hasText: 'big one' }).locator('[data-field=status]').textContent()).toBe('cancelled')

    // another team: the job's CSV and actions are 404
    const jobId = (await big.getAttribute('id'))!.slice(4)
    const other = await h.newPage()
    other.context.setDefaultTimeout(0)
    const otherTeam = await signUpAndOpen(h, other.page, 'ben@example.test', 'Not bulkers')
    expect((await other.page.goto(`${teamUrl}/bulk/test/${jobId}/results.csv`))!.status()).toBe(404)
    expect((await other.page.request.get(`${otherTeam}/bulk/test/${jobId}/results.csv`)).status()).toBe(404)
    expect(errors).toEqual([])
    await other.context.close()
    await context.close()
  })
})

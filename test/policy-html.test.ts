/**
 * The HTML report of `riskcheck policy test --html`, opened in headless Chromium (Debian's `chromium`, driven by
 * playwright-core): it renders its matrix, label table, histogram and sweeps, logs no error, loads nothing, runs no
 * script — also when an input is an HTML injection attempt — and a screenshot of it is a real image.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { Writable, Readable } from 'node:stream'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { browserAvailable, CHROMIUM } from './browser-env.js'

const HAS_BROWSER = browserAvailable('test/policy-html.test.ts')

const root = fileURLToPath(new URL('..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-policy-html-'))
const EVIL = '<script>alert(1)</script><img src=x onerror=alert(2)>@x.example'
let browser: Browser
let html: string
let page: string

beforeAll(async () => {
  // The example's signups plus an answer whose input tries to inject markup.
  const answers = join(dir, 'answers.jsonl')
  writeFileSync(
    answers,
    readFileSync(`${root}examples/policy/answers.jsonl`, 'utf8') + JSON.stringify({ input: EVIL, factors: ['email_disposable'], action: 'review', risk_score: 70 }) + '\n',
  )
  const labels = join(dir, 'labels.csv')
  writeFileSync(labels, readFileSync(`${root}examples/policy/labels.csv`, 'utf8') + `"${EVIL.replace(/"/g, '""')}",fraud\n`)
  page = join(dir, 'report.html')
  const sink = new Writable({ write: (_c, _e, done) => done() })
  const code = await runCli(
    ['policy', 'test', '--policy', `${root}examples/policy/policy.yaml`, '--results', answers, '--labels', labels, '--html', page],
    { stdin: Readable.from(['']), stdout: sink, stderr: sink },
  )
  expect(code).toBe(0)
  html = readFileSync(page, 'utf8')
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 60_000,
  })
}, 90_000)

afterAll(async () => {
  await browser?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(!HAS_BROWSER)('policy test --html', () => {
  it('is one self-contained page: no script, no external reference, a CSP that forbids loading anything', () => {
    expect(html).toMatch(/^<!doctype html>/)
    expect(html).not.toMatch(/<script/i)
    expect(html).not.toMatch(/<[^>]*\s(src|href)=/i) // no attribute loads anything (the escaped injection is text)
    expect(html.match(/https?:\/\/[^\s"'<]+/g)).toEqual(['http://www.w3.org/2000/svg']) // the SVG namespace only
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`)
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;@x.example')
  })

  it('renders in headless Chromium: matrix, labels, histogram, sweeps, changes; no console error, no request, a real screenshot', async () => {
    const context = await browser.newContext({ viewport: { width: 1000, height: 1400 } })
    const tab = await context.newPage()
    const errors: string[] = []
    const requests: string[] = []
    tab.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text())
    })
    tab.on('pageerror', (e) => errors.push(e.message))
    tab.on('dialog', (d) => {
      errors.push(`dialog: ${d.message()}`)
      void d.dismiss()
    })
    tab.on('request', (r) => {
      if (r.url() !== pathToFileURL(page).href) requests.push(r.url())
    })
    await tab.goto(pathToFileURL(page).href, { waitUntil: 'load' })

    expect(await tab.title()).toMatch(/^riskcheck policy backtest — /)
    expect(await tab.locator('#matrix tr').count()).toBe(6) // header, four actions, total
    expect(await tab.locator('#matrix tr:nth-child(4) th').textContent()).toBe('review')
    expect(await tab.locator('#labels tr').count()).toBe(9)
    expect(await tab.locator('#sweep-block tr.current').count()).toBe(1)
    expect(await tab.locator('#sweep-review tr.current').count()).toBe(1)
    expect(await tab.locator('#histogram rect.bar.fraud').count()).toBeGreaterThan(0)
    expect(await tab.locator('#histogram rect.bar.good').count()).toBeGreaterThan(0)
    expect(await tab.locator('#histogram line.threshold').count()).toBe(3)
    const box = await tab.locator('#histogram').boundingBox()
    expect(box!.width).toBeGreaterThan(300)
    expect(box!.height).toBeGreaterThan(100)
    // The injected input is text in the changes table; no element came out of it.
    expect(await tab.locator('#changes').textContent()).toContain(EVIL)
    expect(await tab.locator('script, img, iframe').count()).toBe(0)

    const shot = await tab.screenshot({ fullPage: true })
    expect(shot.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    expect(shot.length).toBeGreaterThan(20_000)
    expect(errors).toEqual([])
    expect(requests).toEqual([])
    await context.close()
  }, 60_000)
})

/**
 * The dashboard's layout in headless Chromium, on a phone (390 × 844), a laptop (1280 × 800), a small phone and a
 * tablet: every page — signed in with data (keys, usage, bulk, webhooks, review queue, members, playground, account), the sign-in
 * and sign-up pages and the error pages — fits the width without sideways scrolling (the page's and any box's), shows the current tab,
 * draws no text under 11 CSS pixels (chart labels included, as rendered), and loads nothing that fails or comes from
 * elsewhere; its icon loads. Also: the icon's caching, and the keyboard alone (skip link, sign-in, navigation).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../../src/accounts/keys.js'
import { newTotpSecret } from '../../src/dashboard/totp.js'
import { browserAvailable } from '../browser-env.js'
import { startHarness, type Harness } from './harness.js'
import { cookiesOf, signUpAndOpen, signUpOverHttp } from './signed-in.js'
import { Client } from './http.js'

const HAS_BROWSER = browserAvailable('test/dashboard/layout.test.ts')

type Cookies = Parameters<BrowserContext['addCookies']>[0]
/** A page to measure: its URL, who looks at it, and what to do after loading it (the playground runs a lookup). */
interface Visit {
  name: string
  url: string
  as: 'owner' | 'anonymous' | 'second-factor'
  /** The tab of the page (team pages). */
  tab?: string
  after?: (page: Page) => Promise<void>
}

let h: Harness
let receiver: http.Server
/** The cookies of each viewer (the anonymous one has none). */
const states: Record<Visit['as'], Cookies> = { owner: [], anonymous: [], 'second-factor': [] }
/** The file's one browser page, for the set-up, every measurement and the keyboard (a context costs more than a page load). */
let tab: Page
const visits: Visit[] = []

/** Fills one team with everything a page can list, as the screenshots do, with long names where they can hurt. */
async function fillTeam(): Promise<void> {
  receiver = http.createServer((_req, res) => res.writeHead(200).end('ok'))
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()))
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/a/rather/long/path/for/the/receiver/of/riskcheck/webhooks`
  const page = tab
  const teamUrl = await signUpAndOpen(h, page, 'lay@example.test', 'A team with a rather long name for narrow screens')
  const orgId = teamUrl.split('/').pop()!
  const teams = h.app.dashboard!.teams
  // a second team, for the team switcher in the header
  const otherUrl = (await signUpOverHttp(h, 'second@example.test', 'Second team')).teamUrl
  await teams.putMember({ orgId: otherUrl.split('/').pop()!, userId: (await teams.getUserByEmail('lay@example.test'))!.id, role: 'developer', createdAt: Date.now() })
  // keys, and live lookups: 3 credits on one day (the credits axis that read "0, 2, 3")
  await page.getByLabel('Name').fill('a key with a long name to wrap on a phone')
  await page.getByRole('button', { name: 'Create key' }).click()
  const { secret } = await issueApiKey(h.app.store, { orgId, mode: 'live', name: 'signup form' }, Date.now())
  await h.app.store.addCredits(orgId, 500, 'top_up', Date.now())
  // a revoked key whose name has no place to break a line
  const unbroken = await issueApiKey(h.app.store, { orgId, mode: 'test', name: 'a-key-name-without-a-single-space-in-it-'.repeat(2) }, Date.now())
  await h.app.store.revokeKey(unbroken.key.id, Date.now())
  for (const ip of ['8.8.8.8', '1.1.1.1', '9.9.9.9']) {
    const res = await fetch(`${h.base}/v1/ip`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ ip }) })
    expect(res.status).toBe(200)
  }
  // a test key's answer with action review, for the review queue (a test-mode Tor exit)
  const tester = await issueApiKey(h.app.store, { orgId, mode: 'test', name: 'reviews' }, Date.now())
  const queued = await fetch(`${h.base}/v1/ip`, { method: 'POST', headers: { authorization: `Bearer ${tester.secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ ip: '192.0.2.8' }) })
  expect(queued.status).toBe(200)
  // a bulk job
  await page.goto(`${teamUrl}/bulk`)
  await page.getByLabel('Inputs').fill(Array.from({ length: 20 }, (_, i) => `person${i}@example.com`).join('\n'))
  await page.getByLabel('Name (optional)').fill('October newsletter')
  await page.getByRole('button', { name: 'Start job' }).click()
  await page.locator('[data-field=status]', { hasText: 'completed' }).first().waitFor({ timeout: 30_000 })
  // a webhook endpoint with a delivered ping
  await page.goto(`${teamUrl}/webhooks`)
  await page.getByLabel('URL', { exact: true }).fill(hookUrl)
  await page.getByLabel('Description (optional)').fill('ops alerts')
  await page.getByRole('button', { name: 'Add endpoint' }).click()
  await page.getByRole('link', { name: 'Open the endpoint' }).click()
  const endpointUrl = page.url()
  await page.getByRole('button', { name: 'Send a ping' }).click()
  await h.app.webhooks!.runOnce()
  // a teammate and a pending invitation
  await teams.putMember({ orgId, userId: (await teams.getUserByEmail('second@example.test'))!.id, role: 'admin', createdAt: Date.now() })
  await page.goto(`${teamUrl}/members`)
  await page.getByLabel('Email').fill('a.rather.long.address.of.a.teammate@example.test')
  await page.getByRole('button', { name: 'Send invitation' }).click()
  await page.waitForURL(/done=invited/)
  // the account page with its widest content: an enrolment in progress (QR code, key, otpauth:// URI)
  await page.goto(`${h.base}/dashboard/account`)
  await page.getByRole('button', { name: 'Set up two-factor sign-in' }).click()
  await page.getByTestId('totp-uri').waitFor()
  states.owner = await page.context().cookies()

  const runLookup = async (p: Page) => {
    await p.getByLabel('Email', { exact: true }).fill('someone@example.com')
    await p.getByRole('button', { name: 'Run with the test key' }).click()
    await p.getByTestId('result').waitFor()
  }
  const d = `${h.base}/dashboard`
  visits.push(
    ...Object.entries({ keys: 'API keys', usage: 'Usage & credits', bulk: 'Bulk jobs', webhooks: 'Webhooks', members: 'Members' }).map(([p, tab]) => ({
      name: p,
      url: `${teamUrl}/${p}`,
      as: 'owner' as const,
      tab,
    })),
    { name: 'webhook endpoint', url: endpointUrl, as: 'owner', tab: 'Webhooks' },
    { name: 'review queue', url: `${teamUrl}/reviews/test`, as: 'owner', tab: 'Review' },
    { name: 'playground', url: `${teamUrl}/playground`, as: 'owner', tab: 'Playground', after: runLookup },
    { name: 'account', url: `${d}/account`, as: 'owner' },
    { name: 'not found (signed in)', url: `${teamUrl}/nothing-here`, as: 'owner' },
    { name: 'another team (404)', url: `${d}/t/org_not_yours/keys`, as: 'owner' },
    { name: 'bad request (400)', url: `${teamUrl}/keys?done=%01`, as: 'owner' },
    { name: 'sign in', url: `${d}/signin`, as: 'anonymous' },
    { name: 'sign up', url: `${d}/signup`, as: 'anonymous' },
    { name: 'sign-up sent', url: `${d}/signup/sent`, as: 'anonymous' },
    { name: 'reset', url: `${d}/reset`, as: 'anonymous' },
    { name: 'reset sent', url: `${d}/reset?done=sent`, as: 'anonymous' },
    { name: 'new password (bad link)', url: `${d}/reset/new?token=not-a-token`, as: 'anonymous' },
    { name: 'verify (bad link)', url: `${d}/verify?token=not-a-token`, as: 'anonymous' },
    { name: 'invitation (bad link)', url: `${d}/invite?token=not-a-token`, as: 'anonymous' },
    { name: 'not found', url: `${d}/nothing-here`, as: 'anonymous' },
    { name: 'second factor', url: `${d}/signin/code?next=%2Fdashboard`, as: 'second-factor' },
  )
}

/** A person with two-factor sign-in, signed in up to the code: the state of the second-factor page. */
async function secondFactorState(): Promise<void> {
  await signUpOverHttp(h, 'totp@example.test', 'Codes')
  const teams = h.app.dashboard!.teams
  await teams.setTotp((await teams.getUserByEmail('totp@example.test'))!.id, newTotpSecret(), Date.now())
  const c = new Client(h.base)
  await c.get('/dashboard/signin')
  const signedIn = await c.post('/dashboard/signin', { email: 'totp@example.test', password: 'correct horse battery', next: '/dashboard' })
  expect(signedIn.header('location')).toMatch(/^\/dashboard\/signin\/code/)
  states['second-factor'] = cookiesOf(h, c)
}

beforeAll(async () => {
  if (!HAS_BROWSER) return
  h = await startHarness()
  tab = (await h.newPage()).page
  await fillTeam()
  await secondFactorState()
}, 120_000)
afterAll(async () => {
  await h?.close()
  receiver?.close()
})

/** What the page measures in the browser (plain JavaScript: it runs there as written). */
interface Measure {
  /** The viewport the measuring saw. */
  innerWidth: number
  innerHeight: number
  scrollWidth: number
  clientWidth: number
  /** Boxes that scroll sideways: their content is wider than they are. */
  scrollers: string[]
  /** Visible elements that reach past the right edge of the viewport (clipped parts not counted). */
  outside: string[]
  /** Elements whose text is drawn under 11 CSS pixels (SVG text after its scaling). */
  small: string[]
  /** The current page's tab, and tabs that are not within the viewport. */
  tab: { text: string; left: number; right: number; top: number; bottom: number } | null
  tabsOutside: string[]
  /** Day labels of a chart that overlap the one before; y-axis labels per chart with their rendered centres. */
  overlaps: string[]
  axes: Array<{ chart: string; labels: string[]; ys: number[] }>
  icon: string | null
}

const MEASURE = `(() => {
  const vw = document.documentElement.clientWidth;
  const se = document.scrollingElement;
  const out = { innerWidth, innerHeight, scrollWidth: se.scrollWidth, clientWidth: se.clientWidth, scrollers: [], outside: [], small: [], tab: null, tabsOutside: [], overlaps: [], axes: [], icon: null };
  const name = (el) => el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className.trim() ? '.' + el.className.trim().split(/\\s+/).join('.') : '') + ' "' + (el.textContent || '').trim().slice(0, 40) + '"';
  // the smallest right edge among an element and its ancestors that clip (overflow-x hidden or clip), once per element
  const clips = new Map();
  const clipRight = (a) => {
    if (!a) return Infinity;
    let right = clips.get(a);
    if (right === undefined) {
      const ox = getComputedStyle(a).overflowX;
      right = Math.min(clipRight(a.parentElement), ox === 'hidden' || ox === 'clip' ? a.getBoundingClientRect().right : Infinity);
      clips.set(a, right);
    }
    return right;
  };
  for (const el of document.querySelectorAll('body *')) {
    const cs = getComputedStyle(el);
    if ((cs.overflowX === 'auto' || cs.overflowX === 'scroll') && el.scrollWidth > el.clientWidth + 1) out.scrollers.push(name(el) + ' ' + el.scrollWidth + ' > ' + el.clientWidth);
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || cs.visibility === 'hidden') continue;
    const right = Math.min(r.right, clipRight(el.parentElement));
    if (right > vw + 0.5) out.outside.push(name(el) + ' right ' + Math.round(right));
    const ownText = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (ownText) {
      let size = parseFloat(cs.fontSize);
      if (el instanceof SVGGraphicsElement) { const m = el.getScreenCTM(); size *= Math.hypot(m.a, m.b); }
      if (size < 11) out.small.push(name(el) + ' ' + size.toFixed(1) + 'px');
    }
  }
  const nav = document.querySelector('nav.side');
  if (nav) {
    const cur = nav.querySelector('a[aria-current="page"]');
    if (cur) { const r = cur.getBoundingClientRect(); out.tab = { text: cur.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom }; }
    for (const a of nav.querySelectorAll('a')) { const r = a.getBoundingClientRect(); if (r.left < 0 || r.right > vw || r.width === 0) out.tabsOutside.push(a.textContent); }
  }
  for (const chart of document.querySelectorAll('.chart')) {
    const days = [...chart.querySelectorAll('text.day')].map((t) => t.getBoundingClientRect()).filter((r) => r.width > 0).sort((a, b) => a.left - b.left);
    for (let i = 1; i < days.length; i++) if (days[i].left < days[i - 1].right + 2) out.overlaps.push(chart.dataset.testid + ' day label ' + i);
    const ticks = [...chart.querySelectorAll('text.tick')];
    out.axes.push({ chart: chart.dataset.testid, labels: ticks.map((t) => t.textContent), ys: ticks.map((t) => { const r = t.getBoundingClientRect(); return r.top + r.height / 2; }) });
  }
  const icon = document.querySelector('link[rel="icon"]');
  out.icon = icon ? icon.href : null;
  return out;
})()`

/** Loads the page's icon as an image would be (under the page's CSP); its width, or the reason it failed. */
const loadIcon = (href: string) => `(async () => { const i = new Image(); i.src = ${JSON.stringify(href)}; try { await i.decode(); return i.naturalWidth; } catch (e) { return String(e); } })()`

const VIEWPORTS = [
  [390, 844], // a phone
  [1280, 800], // a laptop
  [320, 568], // a small phone
  [768, 1024], // a tablet: the navigation on top, tables as cards, the charts wide
] as const

/**
 * Loads every page once, with its viewer's cookies, and measures it at each viewport (resized in place: the layout is
 * CSS alone, no script reads the width, and each measurement checks the width it was taken at). What a load fails
 * counts against every width. Per width: its problems, and what it measured.
 */
async function measureEveryPage(): Promise<Map<number, { problems: string[]; widths: string[] }>> {
  const found = new Map(VIEWPORTS.map(([width]) => [width, { problems: [] as string[], widths: [] as string[] }]))
  const page = tab
  page.context().setDefaultTimeout(30_000) // a hang guard (see harness.ts), not a speed bound
  const failed: string[] = []
  let visitNo = 0
  // what a request meets is the visit's that sent it (a late answer to the page before is not this one's)
  const sentIn = new WeakMap<object, number>()
  page.on('request', (r) => {
    sentIn.set(r, visitNo)
    if (!r.url().startsWith(h.base)) failed.push(`off-site ${r.url()}`)
  })
  const mine = (r: object) => sentIn.get(r) === visitNo
  page.on('response', (r) => {
    const document = r.request().isNavigationRequest() && r.request().frame() === page.mainFrame()
    if (mine(r.request()) && r.status() >= 400 && !document) failed.push(`${r.status()} ${r.url()}`)
  })
  // a request the browser cancels itself (its page left: the icon fetched as the next visit starts) is no failure
  page.on('requestfailed', (r) => mine(r) && r.failure()?.errorText !== 'net::ERR_ABORTED' && failed.push(`failed ${r.url()} ${r.failure()?.errorText}`))
  page.on('console', (m) => {
    if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of [45]\d\d/.test(m.text())) failed.push(`console: ${m.text()}`)
  })
  let viewer: Visit['as'] | undefined
  for (const visit of visits) {
    if (visit.as !== viewer) {
      // the viewer's cookies alone, as in a context of its own
      await page.context().clearCookies()
      await page.context().addCookies(states[visit.as])
      viewer = visit.as
    }
    failed.length = 0
    visitNo++
    await page.goto(visit.url)
    await visit.after?.(page)
    for (const [width, height] of VIEWPORTS) {
      const { problems, widths } = found.get(width)!
      await page.setViewportSize({ width, height })
      const m = (await page.evaluate(MEASURE)) as Measure
      const where = `${visit.name} at ${width}`
      widths.push(`${visit.name}: page ${m.scrollWidth}/${m.clientWidth}${m.scrollers.length ? `, boxes ${m.scrollers.join('; ')}` : ''}`)
      if (m.innerWidth !== width || m.innerHeight !== height) problems.push(`${where}: measured at ${m.innerWidth} × ${m.innerHeight}, not ${width} × ${height}`)
      if (m.scrollWidth > m.clientWidth) problems.push(`${where}: the page scrolls sideways (${m.scrollWidth} > ${m.clientWidth})`)
      for (const s of m.scrollers) problems.push(`${where}: a box scrolls sideways: ${s}`)
      for (const s of m.outside.slice(0, 5)) problems.push(`${where}: past the right edge: ${s}`)
      for (const s of m.small.slice(0, 5)) problems.push(`${where}: text too small: ${s}`)
      for (const s of m.overlaps) problems.push(`${where}: overlapping ${s}`)
      if (visit.tab) {
        if (m.tab?.text !== visit.tab) problems.push(`${where}: the current tab is ${m.tab?.text}, not ${visit.tab}`)
        else if (m.tab.left < 0 || m.tab.right > width || m.tab.top < 0 || m.tab.bottom > height) problems.push(`${where}: the current tab ${m.tab.text} is out of view`)
        for (const t of m.tabsOutside) problems.push(`${where}: the tab ${t} is out of view`)
      }
      for (const axis of m.axes) {
        if (new Set(axis.labels).size !== axis.labels.length) problems.push(`${where}: ${axis.chart} repeats an axis label: ${axis.labels.join(', ')}`)
        const gaps = axis.ys.slice(1).map((y, i) => axis.ys[i]! - y)
        if (gaps.some((g) => Math.abs(g - gaps[0]!) > 1)) problems.push(`${where}: ${axis.chart} ticks unevenly spaced: ${axis.labels.join(', ')}`)
      }
      if (!m.icon) problems.push(`${where}: no <link rel="icon">`)
      else {
        const loaded = await page.evaluate(loadIcon(m.icon))
        if (loaded !== 32) problems.push(`${where}: the icon did not load: ${String(loaded)}`)
      }
      const credits = m.axes.find((a) => a.chart === 'chart-credits')?.labels.join(', ')
      if (visit.name === 'usage' && credits !== '0, 1, 2, 3') problems.push(`${where}: the credits axis reads ${credits}, not 0, 1, 2, 3`)
    }
    for (const [width] of VIEWPORTS) for (const f of failed) found.get(width)!.problems.push(`${visit.name} at ${width}: ${f}`)
  }
  return found
}
let measured: ReturnType<typeof measureEveryPage> | undefined

describe.skipIf(!HAS_BROWSER)('dashboard: layout on a phone and a laptop', () => {
  for (const [width] of VIEWPORTS) {
    // the first of these measures every width (a hang guard, not a speed bound)
    it(`every page at ${width} px: no sideways scrolling, the current tab in view, text ≥ 11 px, nothing fails to load`, { timeout: 240_000 }, async () => {
      const { problems, widths } = (await (measured ??= measureEveryPage())).get(width)!
      expect(problems, widths.join('\n')).toEqual([])
    })
  }

  it('the icon: an SVG answered with a day of caching and an ETag (304 when unchanged), allowed by the CSP', async () => {
    const res = await fetch(`${h.base}/dashboard/assets/favicon.svg`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/svg+xml')
    expect(res.headers.get('cache-control')).toBe('public, max-age=86400')
    expect(res.headers.get('content-security-policy')).toMatch(/img-src 'self'/)
    expect(await res.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
    const etag = res.headers.get('etag')!
    expect(etag).toMatch(/^"[0-9a-f]{16}"$/)
    const again = await fetch(`${h.base}/dashboard/assets/favicon.svg`, { headers: { 'if-none-match': etag } })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe('')
    for (const asset of ['app.css', 'app.js']) {
      const r = await fetch(`${h.base}/dashboard/assets/${asset}`)
      expect(r.status).toBe(200)
      expect((await fetch(`${h.base}/dashboard/assets/${asset}`, { headers: { 'if-none-match': r.headers.get('etag')! } })).status).toBe(304)
    }
  })

  it('signs in and moves around with the keyboard alone', async () => {
    const page = tab
    await page.context().clearCookies()
    await page.setViewportSize({ width: 390, height: 800 })
    await page.goto(`${h.base}/dashboard/signin`)
    await page.keyboard.press('Tab')
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to content')
    await page.keyboard.press('Tab') // brand link
    await page.keyboard.press('Tab')
    expect(await page.evaluate('document.activeElement.name')).toBe('email')
    await page.keyboard.type('second@example.test')
    await page.keyboard.press('Tab')
    await page.keyboard.type('correct horse battery')
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/keys$/)
    // Tab order: skip link, brand, the team switcher, the account link, sign out, then the navigation
    const seen: string[] = []
    for (let i = 0; i < 8; i++) {
      await page.keyboard.press('Tab')
      seen.push((await page.evaluate('document.activeElement.textContent.trim()')) as string)
    }
    expect(seen).toEqual(['Skip to content', 'riskcheck', 'Second team', 'A team with a rather long name for narrow screens', 'second@example.test', 'Sign out', 'API keys', 'Usage & credits'])
    // focus is visible (outline from :focus-visible)
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')
    expect(outline).toBe('solid')
    await page.keyboard.press('Tab')
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/bulk$/)
  })
})

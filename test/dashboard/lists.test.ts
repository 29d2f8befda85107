/**
 * The dashboard's Lists page over HTTP (SQLite, and PostgreSQL with RISKCHECK_TEST_DATABASE_URL): create a list,
 * add pasted CSV values with a reason and an expiry (invalid ones named), search, page, remove an item, delete the
 * list; a live key's next lookup follows each change; the test lists are apart; another team gets 404. The memory
 * engine is SQLite on `:memory:`, so the pages work there too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../../src/accounts/keys.js'
import { engines, signedInClient, start, type Running } from './engines.js'
import { Client, pageText, send } from './http.js'

describe.each(engines('dashboard lists'))('dashboard lists on %s', (engine) => {
  let r: Running
  let c: Client
  let team = ''
  let key = ''
  beforeAll(async () => {
    // the engine's fixed clock (offline lookups): the expiry below is a month after it, so the lookups match the
    // item on any day (on the real clock it stopped matching from 2026-12-23)
    r = await start(engine)
    // set-up, not under test: the accounts and their sessions made in the store
    ;({ client: c, team } = await signedInClient(r, 'owner@example.test', 'Listers'))
    const orgId = team.split('/').pop()!
    key = (await issueApiKey(r.app.store, { orgId, name: 'k' }, r.clock.t)).secret
  }, 60_000)
  afterAll(async () => r?.close())

  const lists = async (email: string) => {
    const a = await send(r.base, 'POST', '/v1/email', { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ email }) })
    return JSON.parse(a.body).data.details.lists as Array<{ value: string }>
  }

  it('create, import, search, remove, delete; the next lookup follows', async () => {
    const nav = await c.get(`${team}/keys`)
    expect(nav.body).toContain(`href="${team}/lists"`)
    expect((await c.get(`${team}/lists`)).header('location')).toBe(`${team}/lists/live`)
    await c.get(`${team}/lists/live`)
    const made = await c.post(`${team}/lists/live`, { name: 'Fraud domains', kind: 'block', item_type: 'email_domain' })
    expect(made.status).toBe(303)
    const at = made.header('location')!.split('?')[0]!
    expect(at).toMatch(/\/lists\/live\/lst_[0-9a-f]{16}$/)
    const page = await c.get(at)
    expect(pageText(page.body)).toContain('Fraud domains')
    const expires = new Date(r.clock.t + 30 * 86_400_000).toISOString().slice(0, 10)
    const added = await c.post(`${at}/items`, { values: 'domain,note\nfraud-ring.io,x\n"other-ring.io",y\nnot a domain!,z\n', reason: 'chargebacks', expires })
    expect(added.status).toBe(200)
    expect(pageText(added.body)).toContain('2 added, 0 already on the list, 1 invalid (each named below).')
    expect(pageText(added.body)).toContain('"not a domain!": not a domain name')
    expect(await lists('a@fraud-ring.io')).toEqual([expect.objectContaining({ value: 'fraud-ring.io' })])
    const found = await c.get(`${at}?q=${encodeURIComponent('FRAUD-RING.IO')}`)
    expect(found.body).toContain('data-item="fraud-ring.io"')
    expect(found.body).not.toContain('data-item="other-ring.io"')
    expect(pageText(found.body)).toContain('chargebacks')
    expect(pageText((await c.get(`${at}?q=nope.io`)).body)).toContain('Not on this list.')
    const removed = await c.post(`${at}/remove`, { value: 'fraud-ring.io' })
    expect(removed.status).toBe(303)
    expect(await lists('a@fraud-ring.io')).toEqual([])
    expect(await lists('a@other-ring.io')).toHaveLength(1)
    // the test lists are apart
    expect(pageText((await c.get(`${team}/lists/test`)).body)).toContain('No test lists yet.')
    expect((await c.get(at.replace('/live/', '/test/'))).status).toBe(404)
    // another team sees nothing of it
    const { client: other, team: otherTeam } = await signedInClient(r, 'else@example.test', 'Others')
    expect((await other.get(at.replace(team, otherTeam))).status).toBe(404)
    expect((await c.post(`${at}/delete`, {})).status).toBe(303)
    expect(await lists('a@other-ring.io')).toEqual([])
    expect(pageText((await c.get(`${team}/lists/live`)).body)).toContain('No live lists yet.')
  })

  it('names every invalid value of an import, HTML-escaped, as the API does (it named the first 10)', async () => {
    const made = await c.post(`${team}/lists/live`, { name: 'Many', kind: 'block', item_type: 'email_domain' })
    const at = made.header('location')!.split('?')[0]!
    await c.get(at)
    const bad = Array.from({ length: 39 }, (_, i) => `bad value ${i}!`)
    bad.push('<img src=x onerror=alert(1)>&amp;')
    const values = Array.from({ length: 5000 }, (_, i) => (i % 125 === 7 ? bad[(i - 7) / 125]! : `ok-${i}.example.org`))
    const added = await c.post(`${at}/items`, { values: values.join('\n') })
    expect(added.status).toBe(200)
    const text = pageText(added.body)
    for (const v of bad.slice(0, 39)) expect(text).toContain(`${JSON.stringify(v)}: not a domain name`)
    expect(text).toContain('4960 added, 0 already on the list, 40 invalid (each named below).')
    // the API's answer names the same 40
    const listsKey = (await issueApiKey(r.app.store, { orgId: team.split('/').pop()!, name: 'lists', scopes: ['lists'] }, r.clock.t)).secret
    const api = await send(r.base, 'POST', `/v1/lists/${at.split('/').pop()}/items`, {
      headers: { authorization: `Bearer ${listsKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ values }),
    })
    expect((JSON.parse(api.body).data.invalid as Array<{ value: string }>).map((i) => i.value)).toEqual(bad)
    // every value is escaped: the hostile one is text, never markup
    expect(added.body).not.toContain('<img')
    expect(added.body).toContain('&quot;&lt;img src=x onerror=alert(1)&gt;&amp;amp;&quot;: not a domain name')
    await c.post(`${at}/delete`, {})
  })

  it('pages a list with its own cursor; one of another list is refused, not a page of that list from its place', async () => {
    const made = async (name: string) => (await c.post(`${team}/lists/live`, { name, kind: 'block', item_type: 'email_domain' })).header('location')!.split('?')[0]!
    const [x, y] = [await made('Pages X'), await made('Pages Y')]
    const values = Array.from({ length: 102 }, (_, i) => `d${String(i).padStart(3, '0')}.example.org`)
    for (const at of [x, y]) expect((await c.post(`${at}/items`, { values: values.join('\n') })).status).toBe(200)
    const items = (body: string) => [...body.matchAll(/data-item="([^"]+)"/g)].map((m) => m[1])
    const first = await c.get(x)
    expect(items(first.body)).toEqual(values.slice(0, 100))
    const next = /href="([^"]*\?cursor=[^"]+)"/.exec(first.body)![1]!.replaceAll('&amp;', '&')
    expect(next.startsWith(`${x}?cursor=`)).toBe(true)
    expect(items((await c.get(next)).body)).toEqual(values.slice(100))
    const foreign = await c.get(next.replace(x, y))
    expect(foreign.status).toBe(400)
    expect(pageText(foreign.body)).toContain('`cursor` is not one this API gave.')
    for (const at of [x, y]) await c.post(`${at}/delete`, {})
  })
})


/**
 * The dashboard's Review page over HTTP (memory, SQLite, and PostgreSQL with RISKCHECK_TEST_DATABASE_URL): a test
 * key's answer with action review is listed with its input, factors and weights; a member blocks it through the page
 * with the also-add-to-list select — the outcome is recorded as the user's decision, the input lands on the block
 * list and the next answer carries reported_fraud_before; a list of the wrong kind is refused with the API's message;
 * a forged or missing CSRF token, another team's review id and a non-member are refused, and nothing is decided; a
 * developer decides but cannot add to a list (an admin's to change).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../../src/accounts/keys.js'
import { engines, signedInClient, start, type Running } from './engines.js'
import { Client, pageText, send } from './http.js'

const TOR = '192.0.2.8' // test mode: a Tor exit, action review

describe.each(engines('dashboard reviews'))('dashboard reviews on %s', (engine) => {
  let r: Running
  let c: Client
  let team = ''
  let key = ''
  let orgId = ''
  beforeAll(async () => {
    // a test key's 10 requests a second are not under test here (the calls of one test can come faster)
    r = await start(engine, { riskcheck: { offline: true }, testKeyRatePerSecond: 10_000 })
    // set-up, not under test: the accounts and their sessions made in the store
    ;({ client: c, team } = await signedInClient(r, 'reviewer@example.test', 'Reviewers'))
    orgId = team.split('/').pop()!
    key = (await issueApiKey(r.app.store, { orgId, mode: 'test', name: 'k', scopes: ['lookup'] }, r.clock.t)).secret
  }, 60_000)
  afterAll(async () => r?.close())

  const api = async (method: string, path: string, body?: unknown) => {
    const a = await send(r.base, method, path, { headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) })
    return JSON.parse(a.body)
  }

  it('lists the queue and decides through the page; hostile requests are refused', async () => {
    const answer = await api('POST', '/v1/ip', { ip: TOR })
    expect(answer.data.recommendation.action).toBe('review')
    const nav = await c.get(`${team}/keys`)
    expect(nav.body).toContain(`href="${team}/reviews"`)
    expect((await c.get(`${team}/reviews`)).header('location')).toBe(`${team}/reviews/live`)
    expect(pageText((await c.get(`${team}/reviews/live`)).body)).toContain('No live reviews yet.')

    const page = await c.get(`${team}/reviews/test`)
    expect(page.status).toBe(200)
    const id = /data-review="(rev_[0-9a-f]{24})"/.exec(page.body)?.[1]
    expect(id).toBeDefined()
    const text = pageText(page.body)
    expect(text).toContain(TOR)
    expect(text).toContain('ip_tor')
    expect(page.body).toContain('value="approve"')
    expect(page.body).toContain('tabindex="0"')
    expect(pageText((await c.get(`${team}/reviews/test?type=email`)).body)).toContain('No reviews match these filters.')
    expect((await c.get(`${team}/reviews/test?factor=ip_tor`)).body).toContain(`data-review="${id}"`)

    const made = await c.post(`${team}/lists/test`, { name: 'Reviewed IPs', kind: 'block', item_type: 'ip' })
    const listId = made.header('location')!.split('?')[0]!.split('/').pop()!
    const allow = await c.post(`${team}/lists/test`, { name: 'Good IPs', kind: 'allow', item_type: 'ip' })
    const allowId = allow.header('location')!.split('?')[0]!.split('/').pop()!
    const at = `${team}/reviews/test/${id}/decision`
    const pending = async () => (await api('GET', '/v1/reviews?status=pending')).data.map((e: { id: string }) => e.id)

    // hostile: no token, a forged token, another team's path to this review, a non-member
    expect((await c.post(at, { decision: 'block', _csrf: '' })).status).toBe(403)
    expect((await c.post(at, { decision: 'block', _csrf: 'x'.repeat(43) })).status).toBe(403)
    const { client: other, team: otherTeam } = await signedInClient(r, 'else@example.test', 'Others')
    expect((await other.post(`${otherTeam}/reviews/test/${id}/decision`, { decision: 'block' })).status).toBe(404)
    expect((await other.post(at, { decision: 'block' })).status).toBe(404)
    // the API's validation: a decision that is neither, a list of the wrong kind
    expect((await c.post(at, { decision: 'maybe' })).status).toBe(400)
    const wrong = await c.post(at, { decision: 'block', add_to_list: allowId })
    expect(wrong.status).toBe(400)
    expect(pageText(wrong.body)).toMatch(/block adds to a block list; Good IPs is an allow list/)
    expect(await pending()).toEqual([id])

    // a developer decides reviews but does not change lists (an admin's, as on the Lists page): no select, and a 403
    const { client: dev, userId: devId } = await signedInClient(r, 'dev@example.test', 'Dev own')
    await r.app.dashboard!.teams.putMember({ orgId, userId: devId, role: 'developer', createdAt: r.clock.t })
    const devPage = await dev.get(`${team}/reviews/test`)
    expect(devPage.body).toContain('value="block"')
    expect(devPage.body).not.toContain('name="add_to_list"')
    expect((await dev.post(at, { decision: 'block', add_to_list: listId })).status).toBe(403)
    expect(await pending()).toEqual([id])

    const decided = await c.post(at, { decision: 'block', add_to_list: listId })
    expect(decided.status).toBe(303)
    expect(decided.header('location')).toBe(`${team}/reviews/test?done=block`)
    const after = await c.get(decided.header('location')!)
    const user = (await r.app.dashboard!.teams.getUserByEmail('reviewer@example.test'))!
    expect(pageText(after.body)).toContain('Blocked: outcome fraud recorded.')
    expect(pageText(after.body)).toContain(`by user:${user.id}`)
    const entry = (await api('GET', '/v1/reviews')).data[0]
    expect(entry).toMatchObject({ id, decision: 'block', decided_by: `user:${user.id}`, list_id: listId })
    expect((await api('GET', `/v1/outcomes?request_id=${entry.request_id}`)).data[0]).toMatchObject({ id: entry.outcome_id, outcome: 'fraud' })
    expect((await api('POST', '/v1/ip', { ip: TOR, bypass_cache: true })).data.risk.factors).toContain('reported_fraud_before')
    const items = await c.get(`${team}/lists/test/${listId}`)
    expect(items.body).toContain(`data-item="${TOR}"`)
    // deciding it the other way now is refused with the API's message
    const flip = await c.post(at, { decision: 'approve' })
    expect(flip.status).toBe(409)
    expect(pageText(flip.body)).toContain('already decided: block')
  })

  it('pages with a cursor only under the filters and mode it came from', async () => {
    // test mode: a disposable address, action review (the Tor exit is on a block list by now)
    for (let i = 0; i < 3; i++) expect((await api('POST', '/v1/email', { email: 'disposable@example.com', bypass_cache: true })).data.recommendation.action).toBe('review')
    const all = (await api('GET', '/v1/reviews?type=email')).data.map((e: { id: string }) => e.id)
    expect(all).toHaveLength(3)
    // a cursor the API gave under the page's filters pages the dashboard's queue from there
    const cursor = encodeURIComponent((await api('GET', '/v1/reviews?type=email&limit=1')).next_cursor)
    const next = await c.get(`${team}/reviews/test?type=email&cursor=${cursor}`)
    expect(next.status).toBe(200)
    expect([...next.body.matchAll(/data-review="(rev_[0-9a-f]{24})"/g)].map((m) => m[1])).toEqual(all.slice(1))
    // the filters changed under it (a page of the decided ones was shown from the old position) or the other mode's queue
    const changed = await c.get(`${team}/reviews/test?type=email&status=decided&cursor=${cursor}`)
    expect(changed.status).toBe(400)
    expect(pageText(changed.body)).toContain('`cursor` was made for other filters')
    const live = await c.get(`${team}/reviews/live?type=email&cursor=${cursor}`)
    expect(live.status).toBe(400)
    expect(pageText(live.body)).toContain('`cursor` is not one this API gave.')
  })
})

describe.each(engines('dashboard reviews past their retention'))('dashboard reviews past their retention on %s', (engine) => {
  it('an entry past its retention is gone from the page and deciding it there is 404, before the sweep runs', async () => {
    const r = await start(engine, { outcomeRetentionDays: 1 }) // offline, on the settable clock
    try {
      const { client: c, team } = await signedInClient(r, 'late@example.test', 'Late reviewers')
      const orgId = team.split('/').pop()!
      const key = (await issueApiKey(r.app.store, { orgId, mode: 'test', name: 'k', scopes: ['lookup'] }, r.clock.t)).secret
      const api = async (method: string, path: string, body?: unknown) =>
        JSON.parse((await send(r.base, method, path, { headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) })).body)
      const answer = await api('POST', '/v1/ip', { ip: TOR })
      const id = /data-review="(rev_[0-9a-f]{24})"/.exec((await c.get(`${team}/reviews/test`)).body)?.[1]
      expect(id).toBeDefined()
      r.clock.t += 24 * 60 * 60 * 1000 + 1 // a day and a millisecond: past the retention, the sweep not run
      expect((await c.post(`${team}/reviews/test/${id}/decision`, { decision: 'block' })).status).toBe(404)
      expect((await api('GET', `/v1/outcomes?request_id=${answer.data.request.id}`)).data).toEqual([])
      const page = await c.get(`${team}/reviews/test`)
      expect(page.body).not.toContain(`data-review="${id}"`)
      expect(pageText(page.body)).toContain('No test reviews yet.')
    } finally {
      await r.close()
    }
  }, 60_000)
})

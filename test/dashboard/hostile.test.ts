/**
 * The dashboard fed what the API refuses, on every engine (memory, SQLite, PostgreSQL): every action that reaches an
 * API route or stores what the API would validate gets values outside their enums, over-long strings, wrong types
 * and NUL bytes, and answers a 4xx page with the API's message while nothing is stored (GET /v1/webhook-endpoints
 * stays 200 for the team); the account actions (password reset, the second sign-in step, two-factor sign-in on and
 * off, sign out everywhere, a team's two-factor switch) get the same through their form schemas; NUL bytes anywhere
 * are a 400 on every engine; a sign-up that fails half-way leaves the address free; and over the per-client limit the
 * answer is a 429 page with the security headers of every page.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../../src/accounts/keys.js'
import { CSP } from '../../src/dashboard/index.js'
import { totpCode } from '../../src/dashboard/totp.js'
import { createServer } from '../../src/server/app.js'
import { engines, start, type Running } from './engines.js'
import { Client, pageText, send, type FormFields } from './http.js'

const LONG = (n: number) => 'x'.repeat(n)

/** Every API operation the dashboard's pages call (read from their source, so a new one must join the walk below). */
function operationsCalled(): string[] {
  const dir = new URL('../../src/dashboard/pages/', import.meta.url)
  const ops = new Set<string>()
  for (const f of readdirSync(dir)) {
    for (const m of readFileSync(new URL(f, dir), 'utf8').matchAll(/callApi(?:<[^>]*>)?\(\s*dash\.svc,\s*request,\s*(?:'([a-z_]+)'|op)/g)) if (m[1]) ops.add(m[1])
    for (const m of readFileSync(new URL(f, dir), 'utf8').matchAll(/'((?:cancel|retry)_bulk_job)'/g)) ops.add(m[1]!)
  }
  return [...ops].sort()
}

describe.each(engines('dashboard hostile input'))('dashboard hostile input on %s', (engine) => {
  let r: Running
  let c: Client
  let team = ''
  let orgId = ''
  beforeAll(async () => {
    r = await start(engine)
    c = new Client(r.base)
    team = await c.signUp('owner@example.test', 'Owners')
    orgId = team.split('/').pop()!
    const owner = (await r.app.dashboard!.teams.getUserByEmail('owner@example.test'))!
    await r.app.dashboard!.teams.setEmailVerified(owner.id, r.clock.t)
  }, 60_000)
  afterAll(async () => r?.close())

  it('every action that reaches an API route, fed what the API refuses: a 4xx page with the message, nothing stored', async () => {
    const covered = new Set<string>()
    const refused = async (op: string | null, path: string, fields: FormFields, status: number, message: RegExp, method: 'GET' | 'POST' = 'POST') => {
      await c.get(`${team}/keys`)
      const a = method === 'POST' ? await c.post(path, fields) : await c.get(path)
      expect(a.status, `${path} ${JSON.stringify(fields).slice(0, 120)}: ${pageText(a.body).slice(0, 300)}`).toBe(status)
      expect(a.header('content-type')).toMatch(/^text\/html/)
      expect(a.header('content-security-policy')).toBe(CSP)
      expect(pageText(a.body), path).toMatch(message)
      if (op) covered.add(op)
    }
    // a URL the API takes (loopback is allowed on this test server): without validation these would be stored
    const hook = { url: 'http://127.0.0.1:8443/riskcheck', events: '*' }
    await refused('create_webhook_endpoint', `${team}/webhooks`, { ...hook, format: 'evil' }, 400, /`format` must be one of json, slack, discord/)
    await refused('create_webhook_endpoint', `${team}/webhooks`, { ...hook, description: LONG(10_000) }, 400, /`description` must be at most 500 characters/)
    await refused('create_webhook_endpoint', `${team}/webhooks`, { ...hook, url: `http://127.0.0.1:8443/${LONG(3000)}` }, 400, /`url` must be at most 2048 characters/)
    await refused('create_webhook_endpoint', `${team}/webhooks`, { ...hook, events: Array.from({ length: 9 }, () => 'credits.low') }, 400, /`events`/)
    await refused('create_webhook_endpoint', `${team}/webhooks`, { ...hook, description: 'a\u0000b' }, 400, /`description` must not contain/)
    await refused('create_webhook_endpoint', `${team}/webhooks`, { ...hook, description: 'a\u001bb' }, 400, /`description` must not contain control characters/)
    // ids: too long to route is the API's own 404 (as an HTML page here); a NUL is a 400 before anything reads it
    for (const action of ['rotate', 'delete', 'ping']) {
      const op = action === 'rotate' ? 'rotate_webhook_secret' : action === 'delete' ? 'delete_webhook_endpoint' : null
      await refused(op, `${team}/webhooks/${LONG(101)}/${action}`, {}, 404, /There is nothing here/)
      await refused(op, `${team}/webhooks/whe_a%00b/${action}`, {}, 400, /`id` must not contain/)
      await refused(op, `${team}/webhooks/whe_a%01b/${action}`, {}, 400, /`id` must not contain control characters/)
    }

    await refused('create_bulk_job', `${team}/bulk`, { type: 'evil', inputs: 'a@example.test' }, 400, /`type` must be one of email, phone/)
    await refused('create_bulk_job', `${team}/bulk`, { type: 'email', inputs: 'a@example.test', name: LONG(201) }, 400, /`name` must be at most 200 characters/)
    await refused('create_bulk_job', `${team}/bulk`, { type: 'email', inputs: 'a@example.test\nb\u0000@example.test' }, 400, /`inputs` must not contain NUL/)
    await refused('create_bulk_job', `${team}/bulk`, { type: 'email', inputs: 'a@example.test', name: 'a\u0007b' }, 400, /must not contain control characters/)
    await refused(null, `${team}/bulk`, { type: 'email', inputs: 'a@example.test', mode: 'evil' }, 400, /`mode` must be one of test, live/)
    await refused(null, `${team}/bulk`, { type: 'email', inputs: ['a@example.test', 'b@example.test'] }, 400, /`inputs` must be of type string/)
    for (const action of ['cancel', 'retry']) {
      await refused(`${action}_bulk_job`, `${team}/bulk/test/${LONG(101)}/${action}`, {}, 404, /There is nothing here/)
      await refused(`${action}_bulk_job`, `${team}/bulk/test/bulk_a%00b/${action}`, {}, 400, /`id` must not contain/)
    }
    await refused('download_bulk_results', `${team}/bulk/live/${LONG(101)}/results.csv`, {}, 404, /There is nothing here/, 'GET')
    await refused('download_bulk_results', `${team}/bulk/live/bulk_a%00b/results.csv`, {}, 400, /`id` must not contain/, 'GET')
    await refused('list_bulk_jobs', `${team}/bulk?x=%00`, {}, 400, /must not contain/, 'GET')

    await refused(null, `${team}/playground`, { type: 'evil', email: 'a@example.test' }, 400, /`type` must be one of email, phone/)
    await refused(null, `${team}/playground`, { type: 'phone', phone: '4155552671', country: 'USA' }, 422, /country/)
    await refused(null, `${team}/playground`, { type: 'email', email: 'a\u0000@example.test' }, 400, /`email` must not contain/)

    await refused(null, `${team}/keys`, { name: 'k', mode: 'evil', scopes: 'lookup' }, 400, /`mode` must be one of test, live/)
    await refused(null, `${team}/keys`, { name: 'k', scopes: ['lookup', 'evil'] }, 400, /`scopes.1` must be one of lookup, bulk, account:read, webhooks/)
    await refused(null, `${team}/keys`, { name: LONG(101), scopes: 'lookup' }, 400, /`name` must be at most 100 characters/)
    await refused(null, `${team}/keys`, { name: 'a\u0000b', scopes: 'lookup' }, 400, /`name` must not contain/)
    await refused(null, `${team}/keys`, { name: ['a', 'b'], scopes: 'lookup' }, 400, /`name` must be of type string/)

    await refused(null, `${team}/members/invite`, { email: 'new@example.test', role: 'evil' }, 400, /`role` must be one of owner, admin, developer/)
    await refused(null, `${team}/members/invite`, { email: 'a\u0000b@example.test', role: 'developer' }, 400, /`email` must not contain/)
    await refused(null, `${team}/members/invite`, { email: LONG(300), role: 'developer' }, 400, /`email` must be at most 254 characters/)
    await refused(null, `${team}/members/invite`, { email: ['a@example.test', 'b@example.test'], role: 'developer' }, 400, /`email` must be of type string/)

    // lists (every engine keeps them: the memory engine is SQLite on `:memory:`)
    await refused('create_list', `${team}/lists/live`, { name: LONG(201), kind: 'block', item_type: 'email' }, 400, /`name` must be at most 200 characters/)
    await refused('create_list', `${team}/lists/live`, { name: 'x', kind: 'evil', item_type: 'email' }, 400, /`kind` must be one of block, allow/)
    await refused('create_list', `${team}/lists/live`, { name: 'a\u0000b', kind: 'block', item_type: 'email' }, 400, /`name` must not contain/)
    await refused(null, `${team}/lists/evil`, { name: 'x', kind: 'block', item_type: 'email' }, 404, /There is nothing here/)
    await c.get(`${team}/lists/live`)
    const made = await c.post(`${team}/lists/live`, { name: 'Probe', kind: 'block', item_type: 'email' })
    const at = made.header('location')!.split('?')[0]!
    await refused('add_list_items', `${at}/items`, { values: 'a@example.io', reason: LONG(501) }, 400, /`reason` must be at most 500 characters/)
    await refused('add_list_items', `${at}/items`, { values: 'a@example.io', reason: 'a\u0001b' }, 400, /`reason` must not contain control characters/)
    await refused('list_list_items', `${at}?cursor=!!`, {}, 400, /`cursor`/, 'GET')
    await refused('get_list', `${team}/lists/live/lst_a%00b`, {}, 400, /`id` must not contain/, 'GET')
    await refused('get_list', `${team}/lists/test/${at.split('/').pop()}`, {}, 404, /There is nothing here/, 'GET')
    await refused('remove_list_items', `${at}/remove`, { value: 'not an email' }, 400, /"not an email": not an email address/)
    await refused('remove_list_items', `${at}/remove`, { value: ['a@example.io', 'b@example.io'] }, 400, /`value` must be of type string/)
    await refused('delete_list', `${team}/lists/live/lst_a%00b/delete`, {}, 400, /`id` must not contain/)
    await refused(null, `${at}/evil`, {}, 404, /There is nothing here/)

    // the review queue: its filters are the API's query
    await refused('list_reviews', `${team}/reviews/live?min_score=abc`, {}, 400, /`min_score`/, 'GET')
    await refused('list_reviews', `${team}/reviews/live?type=a%00b`, {}, 400, /`type`/, 'GET')

    // every operation the pages call was walked
    expect([...covered].sort()).toEqual(expect.arrayContaining(operationsCalled().filter((op) => op !== 'list_bulk_jobs' && op !== 'list_lists')))

    // nothing stored, and the team's API answers
    const { secret } = await issueApiKey(r.app.store, { orgId, mode: 'live', scopes: ['webhooks', 'bulk'], name: 'check' }, r.clock.t)
    const list = await send(r.base, 'GET', '/v1/webhook-endpoints', { headers: { authorization: `Bearer ${secret}` } })
    expect(list.status).toBe(200)
    expect(JSON.parse(list.body).data).toEqual([])
    const jobs = await send(r.base, 'GET', '/v1/bulk/jobs', { headers: { authorization: `Bearer ${secret}` } })
    expect(JSON.parse(jobs.body).data).toEqual([])
    // (the playground's own key is made on its first real lookup, the refused country above)
    expect((await r.app.store.listKeys(orgId)).map((k) => k.name).filter((n) => n !== 'Dashboard playground')).toEqual(['check'])
    expect(await r.app.dashboard!.teams.listInvites(orgId, r.clock.t)).toEqual([])
    expect(r.mails.filter((m) => m.to !== 'owner@example.test')).toEqual([])
  }, 120_000)

  it('NUL bytes in a sign-in address, team name, key name, description or invite address: 400 with a message, on every engine', async () => {
    const anon = new Client(r.base)
    await anon.get('/dashboard/signin')
    const signin = await anon.post('/dashboard/signin', { email: 'owner\u0000@example.test', password: 'correct horse battery' })
    expect(signin.status).toBe(400)
    expect(pageText(signin.body)).toMatch(/`email` must not contain/)
    await anon.get('/dashboard/signup')
    const signup = await anon.post('/dashboard/signup', { email: 'nul@example.test', password: 'correct horse battery', team: 'Nul\u0000Team' })
    expect(signup.status).toBe(400)
    expect(pageText(signup.body)).toMatch(/`team` must not contain/)
    expect(await r.app.dashboard!.teams.getUserByEmail('nul@example.test')).toBeNull()
    // a NUL in a path is refused before anything reads it
    const path = await c.get(`/dashboard/t/org_x%00y/keys`)
    expect(path.status).toBe(400)
    const apiId = await send(r.base, 'DELETE', '/v1/webhook-endpoints/whe_a%00b', { headers: { authorization: `Bearer ${(await issueApiKey(r.app.store, { orgId, mode: 'live', scopes: ['webhooks', 'bulk'], name: 'nul' }, r.clock.t)).secret}` } })
    expect(apiId.status).toBe(400)
    expect(JSON.parse(apiId.body).error.message).toMatch(/`id` must not contain/)
    // the API's own bodies: a description and a bulk input with NUL are a 400 (PostgreSQL cannot store them)
    const key = (await issueApiKey(r.app.store, { orgId, mode: 'test', scopes: ['webhooks', 'bulk'], name: 'nul body' }, r.clock.t)).secret
    const json = (path: string, body: unknown) =>
      send(r.base, 'POST', path, { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const hook = await json('/v1/webhook-endpoints', { url: 'https://hooks.example.test/x', events: ['*'], description: 'a\u0000b' })
    expect([hook.status, JSON.parse(hook.body).error.message]).toEqual([400, '`description` must not contain control characters (tab and line breaks are fine) or unpaired surrogates.'])
    // an unpaired surrogate is no text either: UTF-8 cannot hold it, and PostgreSQL read back U+FFFD (before: 201, stored altered)
    const lone = await json('/v1/webhook-endpoints', { url: 'https://hooks.example.test/x', events: ['*'], description: 'd\ud800e' })
    expect([lone.status, JSON.parse(lone.body).error.code]).toEqual([400, 'INVALID_REQUEST'])
    const bulk = await json('/v1/bulk/jobs', { type: 'email', inputs: ['a@example.test', 'b\u0000@example.test'], name: 'ok\tname' })
    expect([bulk.status, JSON.parse(bulk.body).error.message]).toEqual([400, '`inputs.1` must not contain NUL characters (U+0000).'])
    const named = await json('/v1/bulk/jobs', { type: 'email', inputs: ['a@example.test'], name: 'a\u0000b' })
    expect([named.status, JSON.parse(named.body).error.message]).toEqual([400, '`name` must not contain control characters (tab and line breaks are fine) or unpaired surrogates.'])
  })

  it('the account actions (reset, second step, two-factor on and off, sign out everywhere, the team switch) fed what their forms refuse: a 400 page with the message, nothing changed', async () => {
    const refused = async (client: Client, path: string, fields: FormFields, message: RegExp, method: 'GET' | 'POST' = 'POST') => {
      const a = method === 'POST' ? await client.post(path, fields) : await client.get(path)
      expect(a.status, `${path} ${JSON.stringify(fields).slice(0, 120)}: ${pageText(a.body).slice(0, 300)}`).toBe(400)
      expect(a.header('content-type')).toMatch(/^text\/html/)
      expect(a.header('content-security-policy')).toBe(CSP)
      expect(pageText(a.body), path).toMatch(message)
    }
    const mailsBefore = r.mails.length

    // signed out: the reset forms and the second sign-in step
    const anon = new Client(r.base)
    await anon.get('/dashboard/reset')
    await refused(anon, '/dashboard/reset', { email: 'owner\u0000@example.test' }, /`email` must not contain/)
    await refused(anon, '/dashboard/reset', { email: `${LONG(250)}@example.test` }, /`email` must be at most 254 characters/)
    await refused(anon, '/dashboard/reset', { email: ['owner@example.test', 'other@example.test'] }, /`email` must be of type string/)
    await refused(anon, '/dashboard/reset/new?token=a%00b', {}, /`token` must not contain/, 'GET')
    await refused(anon, '/dashboard/reset/new', { token: 'a\u0000b', password: 'a new password' }, /`token` must not contain/)
    await refused(anon, '/dashboard/reset/new', { token: LONG(101), password: 'a new password' }, /`token` must be at most 100 characters/)
    await refused(anon, '/dashboard/reset/new', { token: 't', password: 'a new\u0000password' }, /`password` must not contain NUL/)
    await refused(anon, '/dashboard/reset/new', { token: 't', password: LONG(201) }, /`password` must be at most 200 characters/)
    await refused(anon, '/dashboard/reset/new', { token: 't', password: ['a new password', 'another one!'] }, /`password` must be of type string/)
    await refused(anon, '/dashboard/signin/code', { code: '12\u00013456' }, /`code` must not contain control characters/)
    await refused(anon, '/dashboard/signin/code', { code: LONG(41) }, /`code` must be at most 40 characters/)
    await refused(anon, '/dashboard/signin/code', { code: '123456', next: `/dashboard/${LONG(2040)}` }, /`next` must be at most 2048 characters/)
    await refused(anon, '/dashboard/signup', { email: 'x@example.test', password: 'correct horse battery', team: 'T', extra: '\u0000' }, /`extra` must not contain/)
    expect(r.mails.length).toBe(mailsBefore)

    // signed in: enrolment, turning it off, sign out everywhere, the account page's query
    const p = new Client(r.base)
    const pTeam = await p.signUp('second@example.test', 'Second factors')
    const person = () => r.app.dashboard!.teams.getUserByEmail('second@example.test')
    await p.get('/dashboard/account')
    expect((await p.post('/dashboard/account/two-factor/start')).status).toBe(303)
    const secret = (await person())!.totpSecret!
    await p.get('/dashboard/account')
    await refused(p, '/dashboard/account/two-factor/confirm', { code: `${totpCode(secret, r.clock.t)}\u0000` }, /`code` must not contain/)
    await refused(p, '/dashboard/account/two-factor/confirm', { code: LONG(41) }, /`code` must be at most 40 characters/)
    await refused(p, '/dashboard/account/two-factor/confirm', { code: ['123456', '654321'] }, /`code` must be of type string/)
    expect((await person())!.totpEnabledAt).toBeNull()
    expect((await p.post('/dashboard/account/two-factor/confirm', { code: totpCode(secret, r.clock.t) })).status).toBe(200)
    expect((await person())!.totpEnabledAt).not.toBeNull()
    await refused(p, '/dashboard/account/two-factor/disable', { password: 'correct horse\u0000battery', code: '123456' }, /`password` must not contain NUL/)
    await refused(p, '/dashboard/account/two-factor/disable', { password: 'correct horse battery', code: `1\u001b23456` }, /`code` must not contain control characters/)
    await refused(p, '/dashboard/account/two-factor/disable', { password: LONG(201), code: '123456' }, /`password` must be at most 200 characters/)
    expect((await person())!.totpEnabledAt).not.toBeNull()
    // a refused form is not a wrong try: the sign-in counter of the person is untouched
    expect(await r.app.dashboard!.teams.loginFailures(`mfa:${(await person())!.id}`, 0)).toBe(0)
    await refused(p, '/dashboard/account?done=%00', {}, /`done` must not contain/, 'GET')
    await refused(p, '/dashboard/signout/everywhere', { reason: 'lost\u0000laptop' }, /`reason` must not contain/)
    expect((await p.get(`${pTeam}/keys`)).status).toBe(200)

    // the owners' team switch: only 0 or 1
    await c.get(`${team}/members`)
    await refused(c, `${team}/members/two-factor`, { required: 'evil' }, /`required` must be one of 0, 1/)
    await refused(c, `${team}/members/two-factor`, { required: '1\u0000' }, /`required` must not contain/)
    await refused(c, `${team}/members/two-factor`, { required: ['0', '1'] }, /`required`/)
    expect(await r.app.dashboard!.teams.teamRequiresTwoFactor(orgId)).toBe(false)
  })

  it('sign-up is all or nothing: a failure between the person and the team leaves the address free to sign up again', async () => {
    const store = r.app.store as { createOrg: (...a: unknown[]) => unknown }
    const createOrg = store.createOrg
    store.createOrg = () => {
      store.createOrg = createOrg
      throw new Error('injected: the team insert fails')
    }
    const a = new Client(r.base)
    await a.get('/dashboard/signup')
    const failed = await a.post('/dashboard/signup', { email: 'half@example.test', password: 'correct horse battery', team: 'Half' })
    expect(failed.status).toBe(500)
    expect(await r.app.dashboard!.teams.getUserByEmail('half@example.test')).toBeNull()
    expect(await a.signUp('half@example.test', 'Half')).toMatch(/^\/dashboard\/t\/org_/)

    if (r.sql) {
      // inside the team store: the membership insert fails after the user row was written in the same transaction
      await r.sql(
        engine === 'sqlite'
          ? "CREATE TRIGGER refuse BEFORE INSERT ON dashboard_members BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
          : "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$; CREATE TRIGGER refuse BEFORE INSERT ON dashboard_members FOR EACH ROW EXECUTE FUNCTION refuse()",
      )
      const b = new Client(r.base)
      await b.get('/dashboard/signup')
      expect((await b.post('/dashboard/signup', { email: 'member@example.test', password: 'correct horse battery', team: 'Member' })).status).toBe(500)
      expect(await r.app.dashboard!.teams.getUserByEmail('member@example.test')).toBeNull()
      await r.sql(engine === 'sqlite' ? 'DROP TRIGGER refuse' : 'DROP TRIGGER refuse ON dashboard_members')
      expect(await b.signUp('member@example.test', 'Member')).toMatch(/^\/dashboard\/t\/org_/)
    }
  })
})

describe('dashboard over the per-client request limit', () => {
  it('answers a 429 page with Retry-After and the security headers of every page', async () => {
    const app = createServer({ db: ':memory:', riskcheck: { offline: true }, purgeIntervalMs: 0, webhookIntervalMs: 0, rateLimitNow: () => 1_000_000, dashboard: { noticeIntervalMs: 0 } })
    try {
      const answers = []
      for (let i = 0; i < 21; i++) answers.push(await app.inject({ method: 'GET', url: '/dashboard/signin' }))
      expect(answers.slice(0, 20).map((a) => a.statusCode)).toEqual(Array(20).fill(200))
      const over = answers[20]!
      expect(over.statusCode).toBe(429)
      expect(over.headers['content-type']).toMatch(/^text\/html/)
      expect(over.headers['retry-after']).toBe('1')
      expect(over.headers['content-security-policy']).toBe(CSP)
      expect(over.headers['x-frame-options']).toBe('DENY')
      expect(over.headers['x-content-type-options']).toBe('nosniff')
      expect(pageText(over.body)).toMatch(/Too many requests: at most 20 in any second/)
      // a POST over the limit too (its form is never read)
      const post = await app.inject({ method: 'POST', url: '/dashboard/signin', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a%40b.test' })
      expect(post.statusCode).toBe(429)
      expect(post.headers['content-security-policy']).toBe(CSP)
    } finally {
      await app.close()
    }
  })
})

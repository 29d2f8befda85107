/**
 * Hostile requests: a table of requests a careless or malicious client sends, each with the answer it must get —
 * always the error envelope with a request id (or, for `{"email": ""}`, the library's own answer), never a 500, a
 * bare framework body, a hang, or work done and billed.
 *
 * The first table runs in-process (`app.inject`); the second over a real socket on loopback, for what only a raw
 * connection can send (oversized headers, a lying Content-Length, malformed HTTP, a client too slow to finish).
 */
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import { ErrorEnvelopeSchema } from '../src/schema.js'
import { startTestServer, type TestServer } from './server-helpers.js'
import { schemaErrors } from './validate.js'

/** `[[[…1…]]]` nested `depth` levels, as JSON text (built as text: no recursion anywhere). */
const deepArray = (depth: number) => '['.repeat(depth) + '1' + ']'.repeat(depth)
const deepObject = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)

interface Case {
  name: string
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string | (() => string)
  headers?: Record<string, string>
  payload?: string
  /** The live key (billed) unless `null` (no Authorization). */
  key?: 'live' | 'test' | null
  status: number
  code?: string
  /** A header of the answer, and what the message must mention. */
  header?: [string, string]
  mentions?: RegExp
}

let s: TestServer
let jobId = ''
let endpointId = ''
const json = { 'content-type': 'application/json' }
const idem = (k: string) => ({ ...json, 'idempotency-key': k })

const CASES: Case[] = [
  // Point 3: bodies of routes that take none, nested 5,000 deep, with an Idempotency-Key.
  { name: 'retry: a body nested 5,000 deep with an Idempotency-Key', method: 'POST', url: () => `/v1/bulk/jobs/${jobId}/retry`, headers: idem('deep-1'), payload: deepArray(5000), key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /nested more than 32 levels/ },
  { name: 'rotate-secret: an object nested 5,000 deep with an Idempotency-Key', method: 'POST', url: () => `/v1/webhook-endpoints/${endpointId}/rotate-secret`, headers: idem('deep-2'), payload: deepObject(5000), key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /nested more than 32 levels/ },
  { name: 'bulk create: a field nested 33 deep', method: 'POST', url: '/v1/bulk/jobs', headers: idem('deep-3'), payload: `{"type":"ip","inputs":${deepArray(33)}}`, key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /nested more than 32 levels/ },
  { name: 'email: a body nested 100,000 deep (no Idempotency-Key)', method: 'POST', url: '/v1/email', headers: json, payload: deepObject(100_000).slice(0, 60_000), status: 400, code: 'INVALID_REQUEST', mentions: /nested more than 32 levels/ },
  { name: 'retry: an unknown field in a body that takes none', method: 'POST', url: () => `/v1/bulk/jobs/${jobId}/retry`, headers: json, payload: '{"force":true}', key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /Unknown field `force`/ },
  { name: 'retry: no body at all is accepted (unknown job → 404)', method: 'POST', url: '/v1/bulk/jobs/bulk_nope/retry', key: 'test', status: 404, code: 'NOT_FOUND' },
  { name: 'rotate-secret: `{}` is accepted (unknown endpoint → 404)', method: 'POST', url: '/v1/webhook-endpoints/we_nope/rotate-secret', headers: json, payload: '{}', key: 'test', status: 404, code: 'NOT_FOUND' },
  // A query parameter a keyed route does not read was ignored: the lookup ran (and was billed) as if it had been read.
  { name: 'an email lookup with a query parameter it does not read', method: 'POST', url: '/v1/email?smtp=false', headers: json, payload: '{"email":"jane@example.org"}', status: 400, code: 'INVALID_REQUEST', mentions: /^Unknown query parameter `smtp`\.$/ },
  { name: 'the account with a query parameter', method: 'GET', url: '/v1/account?expand=keys', status: 400, code: 'INVALID_REQUEST', mentions: /^Unknown query parameter `expand`\.$/ },
  { name: 'bulk jobs with an unknown query parameter beside the ones they read', method: 'GET', url: '/v1/bulk/jobs?limit=5&status=done', key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /^Unknown query parameter `status`\.$/ },
  { name: 'a public route takes any query parameter (a cache-buster)', method: 'GET', url: '/v1/pricing?v=2', key: null, status: 200 },
  // Point 5: Content-Encoding.
  { name: 'Content-Encoding: gzip on an uncompressed body', method: 'POST', url: '/v1/ip', headers: { ...json, 'content-encoding': 'gzip' }, payload: '{"ip":"8.8.8.8"}', status: 415, code: 'INVALID_REQUEST', header: ['accept-encoding', 'identity'], mentions: /uncompressed/ },
  { name: 'Content-Encoding: br on a bulk job', method: 'POST', url: '/v1/bulk/jobs', headers: { ...json, 'content-encoding': 'br' }, payload: '{"type":"ip","inputs":["8.8.8.8"]}', key: 'test', status: 415, code: 'INVALID_REQUEST', header: ['accept-encoding', 'identity'] },
  { name: 'Content-Encoding: identity, gzip', method: 'POST', url: '/v1/ip', headers: { ...json, 'content-encoding': 'identity, gzip' }, payload: '{"ip":"8.8.8.8"}', status: 415, code: 'INVALID_REQUEST' },
  { name: 'Content-Encoding: identity is fine', method: 'POST', url: '/v1/ip', headers: { ...json, 'content-encoding': 'identity' }, payload: '{"ip":"192.0.2.1"}', key: 'test', status: 200 },
  // Point 7: media types, methods, enums, empty inputs.
  { name: 'JSON sent as text/plain', method: 'POST', url: '/v1/ip', headers: { 'content-type': 'text/plain' }, payload: '{"ip":"8.8.8.8"}', status: 415, code: 'INVALID_REQUEST', header: ['accept-post', 'application/json'], mentions: /application\/json/ },
  { name: 'a body without Content-Type', method: 'POST', url: '/v1/email', headers: { 'content-length': '28' }, payload: '{"email":"jane@example.org"}', status: 415, code: 'INVALID_REQUEST', mentions: /application\/json/ },
  // A body declared in another charset was read as UTF-8 all the same.
  { name: 'JSON declared as UTF-16', method: 'POST', url: '/v1/ip', headers: { 'content-type': 'application/json; charset=utf-16' }, payload: '{"ip":"8.8.8.8"}', status: 415, code: 'INVALID_REQUEST', header: ['accept-post', 'application/json'], mentions: /charset "utf-16" is not accepted/ },
  { name: 'JSON declared as Latin-1 (quoted)', method: 'POST', url: '/v1/ip', headers: { 'content-type': 'application/json;Charset="ISO-8859-1"' }, payload: '{"ip":"8.8.8.8"}', status: 415, code: 'INVALID_REQUEST', mentions: /"ISO-8859-1"/ },
  { name: 'JSON declared as UTF-8, quoted and in capitals, is fine', method: 'POST', url: '/v1/ip', headers: { 'content-type': 'application/json; CHARSET="UTF-8"' }, payload: '{"ip":"192.0.2.1"}', key: 'test', status: 200 },
  { name: 'JSON declared as utf8 (a label of UTF-8 without the hyphen) is fine', method: 'POST', url: '/v1/ip', headers: { 'content-type': 'application/json; charset=utf8' }, payload: '{"ip":"192.0.2.1"}', key: 'test', status: 200 },
  { name: 'JSON declared as US-ASCII is fine', method: 'POST', url: '/v1/ip', headers: { 'content-type': 'application/json;charset=us-ascii' }, payload: '{"ip":"192.0.2.1"}', key: 'test', status: 200 },
  { name: 'a form-encoded body', method: 'POST', url: '/v1/ip', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'ip=8.8.8.8', status: 415, code: 'INVALID_REQUEST' },
  { name: 'malformed JSON', method: 'POST', url: '/v1/ip', headers: json, payload: '{"ip":', status: 400, code: 'INVALID_REQUEST', mentions: /not valid JSON/ },
  { name: 'prototype poisoning', method: 'POST', url: '/v1/ip', headers: json, payload: '{"ip":"8.8.8.8","__proto__":{"admin":true}}', status: 400, code: 'INVALID_REQUEST', mentions: /__proto__/ },
  { name: 'constructor poisoning', method: 'POST', url: '/v1/ip', headers: json, payload: '{"ip":"8.8.8.8","constructor":{"prototype":{}}}', status: 400, code: 'INVALID_REQUEST', mentions: /constructor\.prototype/ },
  { name: 'GET on a POST route', method: 'GET', url: '/v1/email', status: 405, code: 'INVALID_REQUEST', header: ['allow', 'POST'], mentions: /use POST/ },
  { name: 'PUT on a job', method: 'PUT', url: '/v1/bulk/jobs/bulk_x', headers: json, payload: '{}', key: 'test', status: 405, code: 'INVALID_REQUEST', header: ['allow', 'GET, HEAD, DELETE'] },
  { name: 'DELETE on the pricing', method: 'DELETE', url: '/v1/pricing', key: null, status: 405, code: 'INVALID_REQUEST', header: ['allow', 'GET, HEAD'] },
  { name: 'PATCH on a webhook endpoint', method: 'PATCH', url: '/v1/webhook-endpoints/we_x', headers: json, payload: '{}', key: 'test', status: 405, code: 'INVALID_REQUEST', header: ['allow', 'DELETE'] },
  { name: 'empty bulk inputs', method: 'POST', url: '/v1/bulk/jobs', headers: json, payload: '{"type":"ip","inputs":[]}', key: 'test', status: 422, code: 'INVALID_INPUT', mentions: /at least one input/ },
  { name: 'a bulk type outside the enum', method: 'POST', url: '/v1/bulk/jobs', headers: json, payload: '{"type":"fax","inputs":["1"]}', key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /`type` must be one of email, phone, phone_type, ip, domain_age, email_auth/ },
  { name: 'a results filter outside the enum', method: 'GET', url: () => `/v1/bulk/jobs/${jobId}/results?action=maybe`, key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /`action` must be one of approve, verify, review, block/ },
  { name: 'a check context outside the enum', method: 'POST', url: '/v1/check', headers: json, payload: '{"email":"a@b.co","context":"party"}', key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /`context` must be one of signup, lead, checkout \(or null\)/ },
  { name: 'a webhook format outside the enum', method: 'POST', url: '/v1/webhook-endpoints', headers: json, payload: '{"url":"https://hooks.example.com/x","events":["*"],"format":"xml"}', key: 'test', status: 400, code: 'INVALID_REQUEST', mentions: /`format` must be one of json, slack, discord/ },
  { name: 'a boolean field given a string', method: 'POST', url: '/v1/email', headers: json, payload: '{"email":"a@b.co","smtp":"yes"}', status: 400, code: 'INVALID_REQUEST', mentions: /`smtp` must be of type boolean or null/ },
  { name: '{"email": ""} is a result, as in the library', method: 'POST', url: '/v1/email', headers: json, payload: '{"email":""}', key: 'test', status: 200 },
  // Paths and headers.
  { name: 'a malformed URL', method: 'GET', url: '/v1/%E0%A4%A', key: null, status: 400, code: 'INVALID_REQUEST' },
  { name: 'an id longer than any id', method: 'GET', url: `/v1/bulk/jobs/${'x'.repeat(500)}`, key: 'test', status: 404, code: 'NOT_FOUND' },
  { name: 'an unknown path', method: 'GET', url: '/v1/../../etc/passwd', key: null, status: 404, code: 'NOT_FOUND' },
  { name: 'a malformed Idempotency-Key', method: 'POST', url: '/v1/ip', headers: { ...json, 'idempotency-key': 'a b' }, payload: '{"ip":"8.8.8.8"}', status: 400, code: 'INVALID_REQUEST' },
  { name: 'an API key in the query string instead of the header', method: 'POST', url: '/v1/ip?api_key=svc_live_AAAAAAAAAAAA0000000000000000000000000000000000000000', headers: json, payload: '{"ip":"8.8.8.8"}', key: null, status: 401, code: 'UNAUTHORIZED' },
]

beforeAll(async () => {
  s = await startTestServer()
  const now = s.clock.now().getTime()
  const key = (await issueApiKey(s.app.store, { orgId: s.org.id, mode: 'test', scopes: ['lookup', 'bulk', 'webhooks'] }, now)).secret
  s.test = key
  const job = await s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['192.0.2.1'] }, key)
  jobId = job.body.data.id
  await s.app.bulk!.engineFor({ orgId: s.org.id, mode: 'test' }).waitFor(jobId)
  endpointId = (await s.post('/v1/webhook-endpoints', { url: 'https://hooks.example.com/riskcheck', events: ['*'] }, key)).body.data.id
})

afterAll(() => s.close())

function expectEnvelope(status: number, body: any, code: string): void {
  expect(body?.success, JSON.stringify(body)).toBe(false)
  expect(body.error.code).toBe(code)
  expect(body.error.request_id).toMatch(/^req_[0-9a-f]{24}$/)
  expect(schemaErrors(ErrorEnvelopeSchema, body)).toEqual([])
  expect(status).toBeGreaterThanOrEqual(400)
}

describe('hostile requests, in-process', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    s.tick()
    const balance = (await s.app.store.getOrg(s.org.id, s.clock.now().getTime()))!
    const url = typeof c.url === 'function' ? c.url() : c.url
    const key = c.key === undefined ? s.live : c.key === null ? null : c.key === 'live' ? s.live : s.test
    const r = await s.request(c.method, url, { key, ...(c.payload !== undefined ? { payload: c.payload } : {}), headers: c.headers ?? {} })
    expect(r.status, r.raw.slice(0, 400)).toBe(c.status)
    expect(r.headers['content-type']).toMatch(/^application\/json/)
    if (c.code) {
      expectEnvelope(r.status, r.body, c.code)
      // Nothing ran: no credit was taken for a refused request.
      const after = (await s.app.store.getOrg(s.org.id, s.clock.now().getTime()))!
      expect(after.subscriptionCredits + after.purchasedCredits).toBe(balance.subscriptionCredits + balance.purchasedCredits)
    }
    if (c.header) expect(r.headers[c.header[0]]).toBe(c.header[1])
    if (c.mentions) expect(r.body.error.message).toMatch(c.mentions)
  })

  it('every POST route declares a body; no other route does', async () => {
    const { ROUTES } = await import('../src/server/routes/index.js')
    for (const route of ROUTES) expect(Boolean(route.body), `${route.method} ${route.url}`).toBe(route.method === 'POST')
  })
})

/** One raw exchange on a fresh connection: writes `chunks` (then half-closes when `end`) and reads the answer. */
function exchange(port: number, chunks: string[], end: boolean): Promise<{ status: number; headers: Record<string, string>; body: any; raw: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    let raw = ''
    socket.setEncoding('utf8')
    socket.on('data', (d: string) => (raw += d))
    socket.on('error', () => undefined) // the server may reset after answering
    socket.on('close', () => {
      const m = /^HTTP\/1\.1 (\d{3}) [^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(raw)
      if (!m) return reject(new Error(`no HTTP answer: ${JSON.stringify(raw.slice(0, 200))}`))
      const headers = Object.fromEntries(m[2]!.split('\r\n').map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
      let body: unknown
      try {
        body = JSON.parse(m[3]!)
      } catch {
        body = m[3]
      }
      resolve({ status: Number(m[1]), headers, body, raw })
    })
    socket.on('connect', () => {
      for (const c of chunks) socket.write(c)
      if (end) socket.end()
    })
  })
}

interface SocketCase {
  name: string
  request: (key: string) => string
  /** Half-close the connection after writing (a client that gives up). */
  end: boolean
  status: number
  code: string
  mentions?: RegExp
}

const post = (path: string, key: string, headers: string, body: string) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${headers}\r\n${body}`

const SOCKET_CASES: SocketCase[] = [
  { name: 'a header of 20 KB', request: (k) => `GET /v1/account HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${k}\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`, end: false, status: 431, code: 'INPUT_LIMIT_EXCEEDED', mentions: /16 KB/ },
  { name: 'a query string of 20 KB', request: () => `GET /v1/pricing?q=${'a'.repeat(20 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, end: false, status: 431, code: 'INPUT_LIMIT_EXCEEDED' },
  { name: 'a Content-Length larger than the body, then the client closes', request: (k) => post('/v1/ip', k, 'Content-Length: 100\r\n', '{"ip":"8.8.8.8"}'), end: true, status: 400, code: 'INVALID_REQUEST', mentions: /shorter than its Content-Length/ },
  { name: 'a Content-Length larger than the body, and the client waits', request: (k) => post('/v1/ip', k, 'Content-Length: 100\r\n', '{"ip":"8.8.8.8"}'), end: false, status: 408, code: 'INVALID_REQUEST', mentions: /not received in time/ },
  { name: 'both Content-Length and Transfer-Encoding', request: (k) => post('/v1/ip', k, 'Content-Length: 16\r\nTransfer-Encoding: chunked\r\n', '0\r\n\r\n'), end: false, status: 400, code: 'INVALID_REQUEST', mentions: /Content-Length/ },
  { name: 'two different Content-Length headers', request: (k) => post('/v1/ip', k, 'Content-Length: 16\r\nContent-Length: 17\r\n', '{"ip":"8.8.8.8"}'), end: false, status: 400, code: 'INVALID_REQUEST' },
  { name: 'a non-numeric Content-Length', request: (k) => post('/v1/ip', k, 'Content-Length: 1e3\r\n', '{"ip":"8.8.8.8"}'), end: false, status: 400, code: 'INVALID_REQUEST' },
  { name: 'a malformed request line', request: () => 'HELLO THERE\r\n\r\n', end: false, status: 400, code: 'INVALID_REQUEST' },
  { name: 'an unknown HTTP version', request: () => 'GET /v1/pricing HTTP/7.0\r\nHost: 127.0.0.1\r\n\r\n', end: false, status: 400, code: 'INVALID_REQUEST' },
  { name: 'a header name with a space', request: () => 'GET /v1/pricing HTTP/1.1\r\nHo st: 127.0.0.1\r\n\r\n', end: false, status: 400, code: 'INVALID_REQUEST' },
  { name: 'an unknown Transfer-Encoding', request: (k) => post('/v1/ip', k, 'Transfer-Encoding: gzip\r\n', ''), end: false, status: 400, code: 'INVALID_REQUEST' },
  { name: 'gzip over the wire', request: (k) => post('/v1/ip', k, 'Content-Encoding: gzip\r\nContent-Length: 16\r\nConnection: close\r\n', '{"ip":"8.8.8.8"}'), end: false, status: 415, code: 'INVALID_REQUEST' },
  // Node keeps the first Authorization header of a request: the request went through with it, whatever the second said.
  { name: 'two Authorization headers, the first a valid key', request: (k) => `GET /v1/account HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${k}\r\nAuthorization: Bearer svc_live_other\r\n\r\n`, end: false, status: 401, code: 'UNAUTHORIZED', mentions: /^Send one Authorization header\.$/ },
  // Node joins two Idempotency-Key headers with ", ": the answer said the key had a space in it.
  { name: 'two Idempotency-Key headers', request: (k) => post('/v1/ip', k, 'Idempotency-Key: a\r\nIdempotency-Key: b\r\nContent-Length: 16\r\nConnection: close\r\n', '{"ip":"8.8.8.8"}'), end: false, status: 400, code: 'INVALID_REQUEST', mentions: /^Send one Idempotency-Key header\.$/ },
  { name: 'the same Idempotency-Key in two headers', request: (k) => post('/v1/ip', k, 'Idempotency-Key: a\r\nidempotency-key: a\r\nContent-Length: 16\r\nConnection: close\r\n', '{"ip":"8.8.8.8"}'), end: false, status: 400, code: 'INVALID_REQUEST', mentions: /^Send one Idempotency-Key header\.$/ },
  // Node keeps the first Content-Type header: a charset the second declared went unseen.
  { name: 'two Content-Type headers', request: (k) => post('/v1/ip', k, 'Content-Type: application/json; charset=utf-16\r\nContent-Length: 16\r\nConnection: close\r\n', '{"ip":"8.8.8.8"}'), end: false, status: 400, code: 'INVALID_REQUEST', mentions: /^Send one Content-Type header\.$/ },
  { name: 'the same key in two Authorization headers', request: (k) => `GET /v1/account HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${k}\r\nauthorization: Bearer ${k}\r\n\r\n`, end: false, status: 401, code: 'UNAUTHORIZED', mentions: /^Send one Authorization header\.$/ },
]

describe('hostile requests over a real socket', () => {
  let app: RiskcheckServer
  let port: number
  let key: string

  beforeAll(async () => {
    app = createServer({ db: ':memory:', purgeIntervalMs: 0, requestTimeoutMs: 300, riskcheck: { offline: true } })
    await app.listen({ host: '127.0.0.1', port: 0 })
    port = (app.server.address() as net.AddressInfo).port
    const org = await app.store.createOrg({ name: 'wire', planId: 'growth' }, Date.now())
    key = (await issueApiKey(app.store, { orgId: org.id }, Date.now())).secret
  })
  afterAll(() => app.close())

  it.each(SOCKET_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const r = await exchange(port, [c.request(key)], c.end)
    expect(r.status, r.raw.slice(0, 300)).toBe(c.status)
    expect(r.headers['content-type']).toMatch(/^application\/json/)
    expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(JSON.stringify(r.body)))
    expectEnvelope(r.status, r.body, c.code)
    if (c.mentions) expect(r.body.error.message).toMatch(c.mentions)
  })

  it('still answers normal requests afterwards, and nothing was billed', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/account`, { headers: { authorization: `Bearer ${key}` } })
    expect(res.status).toBe(200)
    const account = (await res.json()) as { data: { usage: { all_time: { credits: number } } } }
    expect(account.data.usage.all_time.credits).toBe(0)
  })
})

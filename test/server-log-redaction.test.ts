/**
 * Secrets never reach the server's log: the log output of a real server (every level, every line) is captured
 * while clients send keys in query strings, headers, paths and bodies, and while an internal error carries a key in
 * its message and stack.
 */
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'

const lines: string[] = []
let app: RiskcheckServer
let port: number
let live: string
let hooks: string
let failWith: string | null = null

beforeAll(async () => {
  app = createServer({
    db: ':memory:',
    purgeIntervalMs: 0,
    riskcheck: { offline: true },
    logger: { level: 'trace', stream: { write: (s: string) => lines.push(s) } },
    maintenance: () => {
      if (failWith) throw new Error(`store unreachable while checking ${failWith}`)
      return false
    },
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  port = (app.server.address() as net.AddressInfo).port
  const org = await app.store.createOrg({ name: 'logs', planId: 'growth' }, Date.now())
  live = (await issueApiKey(app.store, { orgId: org.id }, Date.now())).secret
  hooks = (await issueApiKey(app.store, { orgId: org.id, mode: 'test', scopes: ['webhooks'] }, Date.now())).secret
})

afterAll(() => app.close())

const base = () => `http://127.0.0.1:${port}`

describe('the server log', () => {
  it('never contains a key, a webhook secret, an Authorization value or a query value', async () => {
    // A key in the query string (401), and the same key in a query parameter of an authenticated request (400: the
    // route reads no query), and as a bearer on a real request.
    const forged = `svc_live_${'Q'.repeat(52)}`
    expect((await fetch(`${base()}/v1/ip?api_key=${forged}&limit=7`, { method: 'POST', body: '{"ip":"8.8.8.8"}', headers: { 'content-type': 'application/json' } })).status).toBe(401)
    expect((await fetch(`${base()}/v1/ip?token=${live}`, { method: 'POST', body: '{"ip":"8.8.8.8"}', headers: { authorization: `Bearer ${live}`, 'content-type': 'application/json' } })).status).toBe(400)
    expect((await fetch(`${base()}/v1/ip`, { method: 'POST', body: '{"ip":"8.8.8.8"}', headers: { authorization: `Bearer ${live}`, 'content-type': 'application/json' } })).status).toBe(200)
    // A key as a path segment, and in a body that fails validation.
    expect((await fetch(`${base()}/v1/${live}`)).status).toBe(404)
    expect((await fetch(`${base()}/v1/ip`, { method: 'POST', body: JSON.stringify({ ip: live }), headers: { authorization: `Bearer ${live}`, 'content-type': 'application/json' } })).status).toBe(422)
    // A webhook secret in a response body (create and rotate).
    const created = (await (await fetch(`${base()}/v1/webhook-endpoints`, { method: 'POST', body: JSON.stringify({ url: 'https://hooks.example.com/x', events: ['*'] }), headers: { authorization: `Bearer ${hooks}`, 'content-type': 'application/json' } })).json()) as { data: { id: string; secret: string } }
    expect(created.data.secret).toMatch(/^whsec_/)
    // An internal error whose message (and stack) carries the key.
    failWith = live
    expect((await fetch(`${base()}/v1/pricing`)).status).toBe(500)
    failWith = null
    // A client error on the socket with the key in its header.
    await new Promise<void>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET /v1/account HTTP/1.1\r\nAuthorization: Bearer ${live}\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`))
      socket.on('data', () => undefined)
      socket.on('error', () => undefined)
      socket.on('close', () => resolve())
    })

    const log = lines.join('')
    expect(log).toContain('internal error') // the error was logged …
    expect(log).toContain('client error') // … and the socket-level one
    expect(log).toContain('"url":"/v1/ip?api_key=[REDACTED]&limit=[REDACTED]"')
    for (const secret of [live, hooks, forged, created.data.secret, live.slice(9), created.data.secret.slice(6)]) {
      expect(log.includes(secret), `${secret.slice(0, 12)}… leaked`).toBe(false)
    }
    expect(log).not.toMatch(/svc_(live|test)_[A-Za-z0-9]/)
    expect(log).not.toMatch(/whsec_[A-Za-z0-9]/)
    expect(log).not.toMatch(/Bearer [^[]/i)
  })
})

/**
 * The API over a real socket: live lookups with DNS answered by the loopback fake DNS server, the headers on the
 * wire, and graceful shutdown (in-flight requests finish; a request arriving meanwhile gets 503 MAINTENANCE; then
 * the riskcheck instance and the database are closed).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import type { SqliteStore } from '../src/server/store/sqlite/store.js'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { resultErrors } from './validate.js'

let dns: FakeDnsServer
let dir: string

const ZONES = {
  'shop-example.com': {
    MX: [{ priority: 10, exchange: 'mx.shop-example.com' }],
    TXT: ['v=spf1 mx -all'],
  },
  'mx.shop-example.com': { A: ['192.0.2.25'] },
  '_dmarc.shop-example.com': { TXT: ['v=DMARC1; p=reject'] },
  'slow-example.com': { MX: [{ priority: 10, exchange: 'mx.slow-example.com' }], behaviour: { delayMs: 500 } },
  '*.slow-example.com': { TXT: ['v=spf1 -all'], behaviour: { delayMs: 500 } },
} as const

beforeAll(async () => {
  dns = await startDnsServer({ zones: ZONES as never })
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-socket-'))
})

afterAll(async () => {
  await dns.close()
  rmSync(dir, { recursive: true, force: true })
})

async function start(name: string): Promise<{ app: RiskcheckServer; url: string; key: string; port: number }> {
  const app = createServer({
    db: join(dir, `${name}.sqlite`),
    purgeIntervalMs: 0,
    riskcheck: { dns: { servers: [dns.address], timeoutMs: 2000, tries: 1 }, smtp: { enabled: false }, rdap: { enabled: false } },
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const now = Date.now()
  const org = await app.store.createOrg({ name, planId: 'growth' }, now)
  const { secret } = await issueApiKey(app.store, { orgId: org.id }, now)
  const port = (app.server.address() as net.AddressInfo).port
  return { app, url: `http://127.0.0.1:${port}`, key: secret, port }
}

/** Sends a raw HTTP/1.1 request on `socket`. */
function writeRequest(socket: net.Socket, path: string, key: string, body: unknown): void {
  const json = JSON.stringify(body)
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: keep-alive\r\n\r\n${json}`,
  )
}

describe('over a real socket', () => {
  it('answers live lookups with the fake DNS, with the envelope and rate-limit headers', async () => {
    const { app, url, key } = await start('wire')
    try {
      const res = await fetch(`${url}/v1/email`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'Jane.Doe@Shop-Example.com', smtp: false }),
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(res.headers.get('ratelimit-policy')).toBe('"key";q=50;w=1')
      expect(res.headers.get('x-ratelimit-remaining')).toBe('49')
      const body = (await res.json()) as { success: boolean; data: any }
      expect(body.success).toBe(true)
      expect(resultErrors(body.data, 'email')).toEqual([])
      expect(body.data.details).toMatchObject({ mx_found: true, mx_records: ['mx.shop-example.com'], smtp_check: 'skipped', has_spf: true, has_dmarc: true })
      // smtp false: only the free checks ran
      expect(body.data.metadata).toMatchObject({ credits_used: 0, credits_remaining: 50_000, test_mode: false, data_sources: ['syntax', 'lists', expect.stringMatching(/^disposable-email-domains@\d/), 'dns'] })
      expect(body.data.partial).toBe(false)
      expect(dns.queries.some((q) => q.name === 'shop-example.com' && q.type === 'MX')).toBe(true)

      const missing = await fetch(`${url}/v1/nowhere`)
      expect(missing.status).toBe(404)
      expect(((await missing.json()) as any).error.code).toBe('NOT_FOUND')
    } finally {
      await app.close()
    }
  })

  it.each([
    ['an API request gets 503 MAINTENANCE', 'POST /v1/ip'],
    ['the readiness probe says draining (a load balancer takes this instance out)', 'GET /readyz'],
  ])('shuts down gracefully: the in-flight request finishes, %s, then the database closes', async (_, newcomer) => {
    const { app, key, port } = await start(newcomer === 'GET /readyz' ? 'shutdown-probe' : 'shutdown') // a fresh store: no cached answer
    const socket = net.connect(port, '127.0.0.1')
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    let received = ''
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8')
    })
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))

    // A slow lookup: every DNS answer of slow-example.com takes 500 ms.
    writeRequest(socket, '/v1/domain/email-auth', key, { domain: 'slow-example.com' })
    await new Promise((r) => setTimeout(r, 150))
    const closing = app.close()
    await new Promise((r) => setTimeout(r, 50))
    // A second request on the same (busy) connection arrives while the server is closing.
    if (newcomer === 'GET /readyz') socket.write('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n')
    else writeRequest(socket, '/v1/ip', key, { ip: '8.8.8.8' })
    await closing
    await closed

    const responses = received.split(/(?=HTTP\/1\.1 )/)
    expect(responses).toHaveLength(2)
    const [first, second] = responses as [string, string]
    expect(first).toMatch(/^HTTP\/1\.1 200 /)
    const firstBody = JSON.parse(first.slice(first.indexOf('\r\n\r\n') + 4)) as { data: { details: { domain: string; mx: { found: boolean } } } }
    expect(firstBody.data.details).toMatchObject({ domain: 'slow-example.com', mx: { found: true } })
    expect(second).toMatch(/^HTTP\/1\.1 503 /)
    if (newcomer === 'GET /readyz') {
      expect(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 'draining' })
    } else {
      expect(second).toMatch(/\r\nretry-after: \d+\r\n/i)
      expect(second).toMatch(/"code":"MAINTENANCE"/)
    }

    expect((app.store as SqliteStore).db.open).toBe(false)
    await expect(fetch(`http://127.0.0.1:${port}/v1/pricing`)).rejects.toThrow()
  })
})

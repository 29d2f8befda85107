/**
 * A failed registry lookup explains itself and is never "not registered": against loopback servers that refuse,
 * answer 503, answer too late, and a host name that does not resolve, the domain-age answer is partial, `unknown`,
 * `domain_age_unknown`, and its reason names the cause — in the library, the CLI and the HTTP API alike.
 */
import dns from 'node:dns'
import { createServer as createNetServer, type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { createRiskcheck, type DomainAgeResult } from '../src/index.js'
import { createRdapSource } from '../src/sources/rdap.js'
import { standardRdapDomains, startRdapServer, type RdapServer } from './fake-internet/rdap-server.js'
import { memoryIO } from './helpers.js'
import { startTestServer } from './server-helpers.js'

const NOW = new Date('2026-11-22T09:30:00Z')
let server: RdapServer
/** a loopback port nothing listens on */
let closedPort: number

beforeAll(async () => {
  server = await startRdapServer({ domains: { ...standardRdapDomains(NOW, 3_000), 'down.test': { kind: 'http_error', status: 503 } }, now: () => NOW })
  const probe = createNetServer()
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()))
  closedPort = (probe.address() as AddressInfo).port
  await new Promise<void>((r) => probe.close(() => r()))
})
afterAll(() => server.close())

/** The bootstrap data of the fake server with every TLD mapped to `base` instead. */
const bootstrapTo = (base: string) => ({ ...server.bootstrapData, services: server.bootstrapData.services.map(([tlds]) => [tlds!, [base]]) })

/** Runs `fn` while every host name lookup of this process fails with ENOTFOUND (the loopback DNS has no such name). */
async function withUnresolvableNames<T>(fn: () => Promise<T>): Promise<T> {
  const original = dns.lookup
  const failing = (hostname: string, options: unknown, callback?: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (err: NodeJS.ErrnoException) => void
    setImmediate(() => cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', errno: -3008, syscall: 'getaddrinfo', hostname })))
  }
  ;(dns as { lookup: unknown }).lookup = failing
  try {
    return await fn()
  } finally {
    ;(dns as { lookup: unknown }).lookup = original
  }
}

function expectExplainedFailure(r: DomainAgeResult, cause: RegExp): void {
  expect(r.partial).toBe(true)
  expect(r.verdict.status).toBe('unknown')
  expect(r.risk.factors).toEqual(['domain_age_unknown'])
  expect(r.risk.factors).not.toContain('domain_not_registered')
  expect(r.recommendation.action).not.toBe('block')
  expect(r.details.age_band).toBeNull()
  expect(r.verdict.reason).toMatch(cause)
  expect(r.verdict.reason).not.toMatch(/not registered/i)
}

describe('the RDAP source names why a lookup failed', () => {
  it('a refused connection, an HTTP 503, a timeout, an unresolvable host: error/timeout with the cause, never not_found', async () => {
    const refused = createRdapSource({ bootstrapData: bootstrapTo(`http://127.0.0.1:${closedPort}/rdap/`), timeoutMs: 2000 })
    const a = await refused.lookup('old-domain.test')
    expect(a).toMatchObject({ status: 'error', cause: 'refused', error: `connection to 127.0.0.1:${closedPort} refused (ECONNREFUSED)` })

    const direct = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: 400 })
    const port = new URL(server.url).port
    expect(await direct.lookup('down.test')).toMatchObject({ status: 'error', cause: 'http', error: `127.0.0.1:${port} answered HTTP 503` })
    expect(await direct.lookup('slow-domain.test')).toMatchObject({ status: 'timeout', cause: 'timeout', error: `127.0.0.1:${port} timed out after 0.4 s` })

    const unresolvable = createRdapSource({ bootstrapData: bootstrapTo(`http://localhost:${port}/rdap/`), timeoutMs: 2000 })
    const d = await withUnresolvableNames(() => unresolvable.lookup('old-domain.test'))
    expect(d).toMatchObject({ status: 'error', cause: 'dns', error: 'DNS lookup of localhost failed (ENOTFOUND)' })

    const noBootstrap = createRdapSource({ bootstrapUrl: `http://127.0.0.1:${closedPort}/dns.json`, timeoutMs: 2000 })
    expect(await noBootstrap.lookup('old-domain.test')).toMatchObject({
      status: 'error',
      cause: 'refused',
      error: `connection to 127.0.0.1:${closedPort} refused (ECONNREFUSED) (fetching the RDAP bootstrap file)`,
    })
    await Promise.all([refused.close(), direct.close(), unresolvable.close(), noBootstrap.close()])
  })
})

describe('the domain-age answer', () => {
  it('library: partial, unknown, the cause in the reason; found/registered false only because no null is allowed', async () => {
    const rc = createRiskcheck({ now: () => NOW, cache: false, rdap: { bootstrapUrl: `http://127.0.0.1:${closedPort}/dns.json` } })
    try {
      const r = await rc.domainAge('example.com')
      expectExplainedFailure(r, new RegExp(`^The registry \\(RDAP\\) lookup failed: connection to 127\\.0\\.0\\.1:${closedPort} refused \\(ECONNREFUSED\\)`))
      expect(r.details).toMatchObject({ found: false, registered: false, is_newly_registered: false, created_date: null })
      expect(r.metadata.credits_used).toBe(0)
    } finally {
      await rc.close()
    }
    const slow = createRiskcheck({ now: () => NOW, cache: false, rdap: { bootstrapData: server.bootstrapData, timeoutMs: 300 } })
    try {
      expectExplainedFailure(await slow.domainAge('slow-domain.test'), /^The registry \(RDAP\) did not answer in time: 127\.0\.0\.1:\d+ timed out after 0\.3 s, so the domain age is unknown\.$/)
      expectExplainedFailure(await slow.domainAge('down.test'), /^The registry \(RDAP\) lookup failed: 127\.0\.0\.1:\d+ answered HTTP 503, so the domain age is unknown\.$/)
    } finally {
      await slow.close()
    }
  })

  it('CLI: the same reason in the printed answer', async () => {
    const io = memoryIO()
    const code = await withUnresolvableNames(() =>
      runCli(['domain-age', 'example.com', '--rdap-bootstrap-url', `http://localhost:${closedPort}/dns.json`, '--now', NOW.toISOString()], io),
    )
    expect(code).toBe(0)
    const r = JSON.parse(io.out()) as DomainAgeResult
    expectExplainedFailure(r, /^The registry \(RDAP\) lookup failed: DNS lookup of localhost failed \(ENOTFOUND\) \(fetching the RDAP bootstrap file\), so the domain age is unknown\.$/)
  })

  it('HTTP API: the same reason in the envelope', async () => {
    const s = await startTestServer({ riskcheck: { offline: false, rdap: { bootstrapData: server.bootstrapData, timeoutMs: 2000 } } })
    try {
      const r = await s.post('/v1/domain/age', { domain: 'down.test' })
      expect(r.status).toBe(200)
      expectExplainedFailure(r.body.data as DomainAgeResult, /^The registry \(RDAP\) lookup failed: 127\.0\.0\.1:\d+ answered HTTP 503/)
    } finally {
      await s.close()
    }
  })
})

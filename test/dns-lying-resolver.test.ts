/**
 * A resolver that answers NXDOMAIN for every name (private networks, sandboxes — even for `com.`) must never turn an
 * answer into `invalid`: email, email-auth, the combined check, bulk jobs and the CLI answer unknown/partial and warn
 * once, naming the resolver. A genuinely non-existent top-level domain is still invalid, and a domain that resolves
 * normally costs no extra question (counted at the loopback server).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import type { RiskcheckWarning } from '../src/options.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { memoryIO } from './helpers.js'
import { startTestServer } from './server-helpers.js'
import { assertValidResult } from './validate.js'

let lying: FakeDnsServer
let honest: FakeDnsServer
const clients: Riskcheck[] = []

beforeAll(async () => {
  lying = await startDnsServer({ zones: {}, everyName: 'nxdomain' })
  honest = await startDnsServer({
    zones: {
      'corp-mail.com': { MX: [{ priority: 10, exchange: 'mx.corp-mail.com' }], TXT: ['v=spf1 mx -all'] },
      'mx.corp-mail.com': { A: ['192.0.2.25'] },
      '_dmarc.corp-mail.com': { TXT: ['v=DMARC1; p=reject'] },
    },
  })
})
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()))
  await lying.close()
  await honest.close()
})

/** A riskcheck instance against `server`, collecting its warnings. */
function client(server: FakeDnsServer): { rc: Riskcheck; warnings: RiskcheckWarning[] } {
  const warnings: RiskcheckWarning[] = []
  const rc = createRiskcheck({
    dns: { servers: [server.address], timeoutMs: 500, tries: 1 },
    rdap: { enabled: false },
    smtp: { allowPrivateHosts: true, timeoutMs: 500 },
    credits: 100,
    onWarning: (w) => warnings.push(w),
  })
  clients.push(rc)
  return { rc, warnings }
}

const nsQueries = (server: FakeDnsServer, from = 0) => server.queries.slice(from).filter((q) => q.type === 'NS')

describe('a resolver that answers NXDOMAIN for everything', () => {
  it('email: unknown and partial with email_dns_unavailable, free, and one warning naming the resolver', async () => {
    const { rc, warnings } = client(lying)
    const r = await rc.email('jane@gmail.com')
    assertValidResult(r, 'email')
    expect(r.verdict.status).toBe('unknown')
    expect(r.partial).toBe(true)
    expect(r.risk.factors).toContain('email_dns_unavailable')
    expect(r.risk.factors).not.toContain('email_domain_not_found')
    expect(r.recommendation.action).not.toBe('block')
    expect(r.details).toMatchObject({ mx_found: false, smtp_check: 'unavailable', has_spf: null, has_dmarc: null })
    expect(r.metadata.credits_used).toBe(0)
    await rc.email('john@yahoo.co.uk')
    expect(warnings).toEqual([{ code: 'dns_resolver_broken', message: expect.stringContaining(lying.address) }])
  })

  it('email: a top-level domain that does not exist is still invalid, without asking about it', async () => {
    const { rc, warnings } = client(lying)
    const q0 = lying.queries.length
    const r = await rc.email('foo@bar.notatld')
    expect(r.verdict.status).toBe('invalid')
    expect(r.risk.factors).toContain('email_domain_not_found')
    expect(nsQueries(lying, q0)).toEqual([])
    expect(warnings).toEqual([])
  })

  it('email-auth: unknown and partial with auth_dns_unavailable, never invalid', async () => {
    const { rc, warnings } = client(lying)
    const r = await rc.emailAuth('google.com')
    assertValidResult(r, 'email_auth')
    expect(r.verdict.status).toBe('unknown')
    expect(r.partial).toBe(true)
    expect(r.risk.factors).toEqual(['auth_dns_unavailable'])
    expect(r.details.grade).not.toBe('F')
    expect(warnings.map((w) => w.code)).toEqual(['dns_resolver_broken'])
  })

  it('combined check: the email part is unknown, reverse DNS failed, nothing is blocked', async () => {
    const { rc, warnings } = client(lying)
    const r = await rc.check({ email: 'jane@gmail.com', ip: '8.8.8.8' })
    assertValidResult(r, 'check')
    expect(r.details.email!.verdict.status).toBe('unknown')
    expect(r.details.ip!.reverse_dns).toBeNull()
    expect(r.partial).toBe(true)
    expect(r.verdict.status).not.toBe('invalid')
    expect(r.recommendation.action).not.toBe('block')
    expect(warnings.map((w) => w.code)).toEqual(['dns_resolver_broken'])
  })

  it('bulk: no row is blocked; every row is unknown and retryable, and free', async () => {
    const { rc } = client(lying)
    const inputs = ['jane@gmail.com', 'jane@GMAIL.com', 'john@outlook.com', 'li@corp.io', 'x@acme.org']
    const job = await rc.bulk.create({ type: 'email', inputs })
    const done = await rc.bulk.waitFor(job.id)
    expect(done.status).toBe('completed')
    expect(done.results.block).toBe(0)
    expect(done.credits_used).toBe(0)
    const page = await rc.bulk.results(job.id)
    expect(page.data).toHaveLength(4)
    for (const row of page.data) expect(row).toMatchObject({ status: 'unknown', error: null })
  })

  it('CLI: prints the unknown answer and one warning on stderr', async () => {
    const io = memoryIO()
    const code = await runCli(['email', 'jane@gmail.com', '--dns-server', lying.address, '--dns-timeout', '500', '--no-rdap', '--compact'], io)
    expect(code).toBe(0)
    const r = JSON.parse(io.out())
    expect(r.verdict.status).toBe('unknown')
    expect(r.partial).toBe(true)
    const lines = io.err().trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^riskcheck: warning: The DNS resolver .*127\.0\.0\.1:\d+.* NXDOMAIN/)
  })
})

describe('the HTTP server on a lying resolver', () => {
  it('answers unknown (200, free) and logs the warning once', async () => {
    const lines: Array<{ level: number; warning?: string; msg: string }> = []
    const stream = { write: (line: string) => void lines.push(JSON.parse(line)) }
    const s = await startTestServer({
      logger: { level: 'warn', stream },
      riskcheck: { offline: false, dns: { servers: [lying.address], timeoutMs: 500, tries: 1 }, rdap: { enabled: false } },
    })
    try {
      for (const email of ['jane@gmail.com', 'john@outlook.com']) {
        const r = await s.post('/v1/email', { email }, s.live)
        expect(r.status).toBe(200)
        expect(r.body.data).toMatchObject({ verdict: { status: 'unknown' }, partial: true, metadata: { credits_used: 0 } })
      }
      const warnings = lines.filter((l) => l.warning === 'dns_resolver_broken')
      expect(warnings).toHaveLength(1)
      expect(warnings[0]!.msg).toContain(lying.address)
    } finally {
      await s.close()
    }
  })
})

describe('a resolver that works', () => {
  it('a domain that resolves normally costs no extra question', async () => {
    const { rc, warnings } = client(honest)
    const q0 = honest.queries.length
    const r = await rc.email('jane@corp-mail.com', { smtp: false })
    expect(r.details.mx_found).toBe(true)
    const asked = honest.queries.slice(q0).map((q) => `${q.type} ${q.name}`)
    expect(asked.sort()).toEqual(['MX corp-mail.com', 'TXT _dmarc.corp-mail.com', 'TXT corp-mail.com'])
    const a = await rc.emailAuth('corp-mail.com')
    expect(a.verdict.status).not.toBe('invalid')
    expect(nsQueries(honest, q0)).toEqual([])
    expect(warnings).toEqual([])
  })

  it('a domain that does not exist is invalid after one question about its TLD, cached for the next ones', async () => {
    const { rc, warnings } = client(honest)
    const q0 = honest.queries.length
    const r = await rc.email('jane@no-such-domain-here.com')
    expect(r.verdict.status).toBe('invalid')
    expect(r.risk.factors).toContain('email_domain_not_found')
    expect(r.partial).toBe(false)
    expect(nsQueries(honest, q0)).toEqual([{ name: 'com', type: 'NS' }])
    const again = await rc.email('jane@another-missing-domain.com')
    expect(again.verdict.status).toBe('invalid')
    const auth = await rc.emailAuth('no-such-domain-here.com')
    expect(auth.verdict.status).toBe('invalid')
    expect(auth.risk.factors).toContain('auth_domain_not_found')
    expect(nsQueries(honest, q0)).toHaveLength(1)
    expect(warnings).toEqual([])
  })
})

/**
 * Against a DNS server that never answers, one lookup waits at most one timeout round: every question it asks is in
 * flight before the first one times out (counted at the loopback server, not timed). Email authentication asks 50+
 * questions at once (MX, SPF, DMARC with its organizational-domain fallback, 48 DKIM selectors, BIMI).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { assertValidResult } from './validate.js'

let dead: FakeDnsServer
let rc: Riskcheck
/** For each question the server received: how many questions had timed out at the client by then. */
const timeoutsSeen: number[] = []

beforeAll(async () => {
  dead = await startDnsServer({
    zones: {},
    everyName: 'timeout',
    onQuery: () => timeoutsSeen.push(rc.env.ctx.sources.dns.stats().timeouts),
  })
  rc = createRiskcheck({ dns: { servers: [dead.address], timeoutMs: 300, tries: 1 }, rdap: { enabled: false }, cache: false })
})
afterAll(async () => {
  await rc.close()
  await dead.close()
})

describe('a DNS server that never answers', () => {
  it.each([
    ['google.com', 52],
    ['mail.google.com', 54], // DMARC and BIMI also ask the organizational domain
  ])('emailAuth(%s): all %i questions go out in one round', async (domain, questions) => {
    timeoutsSeen.length = 0
    const before = rc.env.ctx.sources.dns.stats().timeouts
    const r = await rc.emailAuth(domain)
    assertValidResult(r, 'email_auth')
    expect(r.partial).toBe(true)
    expect(r.verdict.status).toBe('unknown')
    expect(timeoutsSeen).toHaveLength(questions)
    expect(timeoutsSeen.every((t) => t === before)).toBe(true)
    expect(rc.env.ctx.sources.dns.stats().timeouts - before).toBe(questions)
  })

  it('email: MX, SPF and DMARC go out in one round', async () => {
    timeoutsSeen.length = 0
    const before = rc.env.ctx.sources.dns.stats().timeouts
    const r = await rc.email('jane@gmail.com')
    expect(r.partial).toBe(true)
    expect(r.risk.factors).toContain('email_dns_unavailable')
    expect(timeoutsSeen).toHaveLength(3)
    expect(timeoutsSeen.every((t) => t === before)).toBe(true)
  })
})

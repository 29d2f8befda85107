/**
 * `smtp: false` skips the mailbox check and only free checks run: 0 credits — for a single lookup, an instance with
 * `smtp.enabled: false`, the combined check, a bulk job and the HTTP API. (Like every live lookup it needs a balance
 * to start: one credit is reserved, then refunded.) The rest of the email row of the billing table (docs/options.md, "Caching
 * and credits", generated from src/billing.ts) is checked here too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import type { RiskcheckOptions } from '../src/options.js'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { startSmtpServer, type FakeSmtpServer } from './fake-internet/smtp-server.js'
import { startTestServer } from './server-helpers.js'

let dns: FakeDnsServer
let smtp: FakeSmtpServer
const open: Riskcheck[] = []

beforeAll(async () => {
  smtp = await startSmtpServer({ onRcpt: (a) => (a.startsWith('jane@') ? 'accept' : 'reject') })
  dns = await startDnsServer({
    zones: {
      'corp-mail.com': { MX: [{ priority: 10, exchange: 'mx.corp-mail.com' }], TXT: ['v=spf1 mx -all'] },
      'mx.corp-mail.com': { A: ['127.0.0.1'] },
      '_dmarc.corp-mail.com': { TXT: ['v=DMARC1; p=reject'] },
    },
  })
})
afterAll(async () => {
  await Promise.all(open.map((rc) => rc.close()))
  await smtp.close()
  await dns.close()
})

function client(credits: number, extra: RiskcheckOptions = {}): Riskcheck {
  const rc = createRiskcheck({
    dns: { servers: [dns.address] },
    smtp: { port: smtp.port, allowPrivateHosts: true, heloName: 'verifier.riskcheck-tests.org', ...extra.smtp },
    rdap: { enabled: false },
    credits,
    cache: false,
    ...(extra.offline ? { offline: true } : {}),
  })
  open.push(rc)
  return rc
}

describe('the email row of the billing table', () => {
  it('a mailbox check costs 1 credit', async () => {
    const rc = client(5)
    const r = await rc.email('jane@corp-mail.com')
    expect(r.details.smtp_check).toBe('deliverable')
    expect(r.metadata).toMatchObject({ credits_used: 1, credits_remaining: 4 })
  })

  it('smtp: false costs 0 credits (reserved, then refunded); a depleted balance stops it like any live lookup', async () => {
    const rc = client(1)
    const r = await rc.email('jane@corp-mail.com', { smtp: false })
    expect(r.details).toMatchObject({ smtp_check: 'skipped', mx_found: true, has_spf: true, has_dmarc: true })
    expect(r.metadata).toMatchObject({ credits_used: 0, credits_remaining: 1 })
    const bad = await rc.email('not an address', { smtp: false })
    expect(bad.metadata).toMatchObject({ credits_used: 0, credits_remaining: 1 })
    const empty = client(0)
    await expect(empty.email('jane@corp-mail.com', { smtp: false })).rejects.toMatchObject({ code: 'INSUFFICIENT_CREDITS' })
  })

  it('an instance with smtp.enabled false bills its emails 0; smtp: true per lookup bills again', async () => {
    const rc = client(3, { smtp: { enabled: false } })
    expect((await rc.email('jane@corp-mail.com')).metadata.credits_used).toBe(0)
    expect((await rc.email('john@corp-mail.com', { smtp: true })).metadata.credits_used).toBe(1)
  })

  it('smtp_check unavailable is free: offline, and when no mail server can be reached', async () => {
    const offline = client(3, { offline: true })
    expect((await offline.email('jane@corp-mail.com')).metadata.credits_used).toBe(0)
    const unreachable = client(3, { smtp: { port: 1, timeoutMs: 2000 } })
    const r = await unreachable.email('jane@corp-mail.com')
    expect(r.details.smtp_check).toBe('unavailable')
    expect(r.metadata.credits_used).toBe(0)
  })
})

describe('smtp: false in the combined check, bulk and the HTTP API', () => {
  it('combined check: the email part costs nothing', async () => {
    const rc = client(2)
    const r = await rc.check({ email: 'jane@corp-mail.com', phone: '+1 415 555 0100', smtp: false })
    expect(r.details.email!.smtp_check).toBe('skipped')
    expect(r.metadata).toMatchObject({ credits_used: 1, credits_remaining: 1 })
  })

  it('bulk: an email job with smtp false charges nothing (its reservation is refunded)', async () => {
    const rc = client(3)
    const job = await rc.bulk.create({ type: 'email', inputs: ['jane@corp-mail.com', 'john@corp-mail.com', 'x@'], smtp: false })
    const done = await rc.bulk.waitFor(job.id)
    expect(done).toMatchObject({ status: 'completed', credits_used: 0, processed: 3 })
    const rows = (await rc.bulk.results(job.id)).data
    expect(rows.map((r) => r.credits_used)).toEqual([0, 0, 0])
    expect(rc.env.ledger.balance()).toBe(3)
  })

  it('POST /v1/email with smtp false costs 0 credits', async () => {
    const s = await startTestServer({ riskcheck: { offline: false, dns: { servers: [dns.address] }, rdap: { enabled: false } } })
    try {
      const r = await s.post('/v1/email', { email: 'jane@corp-mail.com', smtp: false }, s.live)
      expect(r.status).toBe(200)
      expect(r.body.data.details.smtp_check).toBe('skipped')
      expect(r.body.data.metadata.credits_used).toBe(0)
      const job = await s.post('/v1/bulk/jobs', { type: 'email', inputs: ['li@corp-mail.com'], smtp: false }, s.live)
      expect(job.status).toBe(202)
    } finally {
      await s.close()
    }
  })
})

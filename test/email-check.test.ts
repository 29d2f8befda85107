/**
 * The email lookup end to end against a fake internet on loopback: a real DNS server (UDP/TCP wire protocol) and a
 * real SMTP server, through the real DNS and SMTP sources.
 */
import { domainToASCII } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertValidResult } from './validate.js'
import { startMailWorld, type MailWorld } from './fake-internet/mail-world.js'
import type { Zones } from './fake-internet/dns-server.js'
import type { RcptDecision } from './fake-internet/smtp-server.js'

const mx = (host: string, priority = 10) => ({ priority, exchange: host })
const mailDomain = (hosts: string[], extra: Record<string, unknown> = {}) => ({ MX: hosts.map((h, i) => mx(h, 10 * (i + 1))), ...extra })

const zones: Zones = {
  'good-mail.com': mailDomain(['mx1.good-mail.com', 'mx2.good-mail.com'], { TXT: ['v=spf1 ip4:192.0.2.0/24 -all', 'google-site-verification=abc'] }),
  '_dmarc.good-mail.com': { TXT: [['v=DMARC1; p=reject; ', 'rua=mailto:d@good-mail.com']] },
  'mx1.good-mail.com': { A: ['127.0.0.1'] },
  'mx2.good-mail.com': { A: ['127.0.0.1'] },
  'catchall-corp.com': mailDomain(['mx.catchall-corp.com']),
  'mx.catchall-corp.com': { A: ['127.0.0.1'] },
  'nullmx-corp.com': { MX: [{ priority: 0, exchange: '' }], TXT: ['v=spf1 -all'] },
  'arecord-only.com': { A: ['127.0.0.1'] },
  'nothing-here.com': { TXT: ['hello'] },
  'slowdns-corp.com': { MX: [mx('mx.slowdns-corp.com')], behaviour: 'timeout' },
  '_dmarc.slowdns-corp.com': { behaviour: 'timeout' },
  'servfail-corp.com': { MX: [mx('mx.servfail-corp.com')], behaviour: 'servfail' },
  '_dmarc.servfail-corp.com': { behaviour: 'servfail' },
  'down-corp.com': mailDomain(['mx1.down-corp.com', 'mx2.down-corp.com']),
  'mx1.down-corp.com': { A: ['127.0.0.2'] },
  'mx2.down-corp.com': { A: ['127.0.0.3'] },
  'backup-corp.com': mailDomain(['mx1.down-corp.com', 'mx.backup-corp.com']),
  'mx.backup-corp.com': { A: ['127.0.0.1'] },
  'xn--bcher-kva.com': mailDomain(['mx.xn--bcher-kva.com']),
  'mx.xn--bcher-kva.com': { A: ['127.0.0.1'] },
  'workspace-corp.com': mailDomain(['aspmx.l.google.com']),
  'aspmx.l.google.com': { A: ['127.0.0.1'] },
  'gmail.com': mailDomain(['gmail-smtp-in.l.google.com']),
  'gmial.com': mailDomain(['mx.gmial.com']),
  'mx.gmial.com': { A: ['127.0.0.1'] },
  'gmail-smtp-in.l.google.com': { A: ['127.0.0.1'] },
  'mailinator.com': mailDomain(['mail.mailinator.com']),
  'mail.mailinator.com': { A: ['127.0.0.1'] },
}

const MAILBOXES = new Set([
  'jane@good-mail.com',
  'info@good-mail.com',
  'jane@arecord-only.com',
  'jane@xn--bcher-kva.com',
  'jane@backup-corp.com',
  'jane@workspace-corp.com',
  'jane.doe@gmail.com',
  'jane@gmial.com',
])

function onRcpt(received: string): RcptDecision {
  // smtp-server hands over IDN domains in Unicode; compare in ASCII
  const at = received.lastIndexOf('@')
  const address = `${received.slice(0, at)}@${domainToASCII(received.slice(at + 1))}`
  const [local = '', domain = ''] = address.toLowerCase().split('@')
  if (domain === 'catchall-corp.com' || domain === 'mailinator.com') return 'accept'
  switch (local) {
    case 'greylisted':
      return 'greylist'
    case 'blocked':
      return 'block'
    case 'slow':
      return { delayMs: 2000 }
    case 'dropped':
      return 'drop'
  }
  return MAILBOXES.has(address.toLowerCase()) ? 'accept' : 'reject'
}

let world: MailWorld

beforeAll(async () => {
  world = await startMailWorld({ zones, smtpServer: { onRcpt }, riskcheck: { smtp: { timeoutMs: 400 } } })
})
afterAll(async () => {
  await world?.close()
})

async function email(input: unknown, opts?: { smtp?: boolean }) {
  const result = await world.email(input, opts)
  assertValidResult(result, 'email')
  return result
}

describe('every smtp_check outcome', () => {
  it('deliverable → valid, approve, with SPF, DMARC and MX in preference order', async () => {
    const r = await email('jane@good-mail.com')
    expect(r.details).toMatchObject({
      normalized: 'jane@good-mail.com',
      local_part: 'jane',
      domain: 'good-mail.com',
      syntax_valid: true,
      mx_found: true,
      mx_records: ['mx1.good-mail.com', 'mx2.good-mail.com'],
      smtp_check: 'deliverable',
      is_catch_all: false,
      is_disposable: false,
      is_role: false,
      did_you_mean: null,
      has_spf: true,
      has_dmarc: true,
      domain_age_days: null,
    })
    expect(r.verdict.status).toBe('valid')
    expect(r.recommendation.action).toBe('approve')
    expect(r.risk.confidence).toBe('high')
    expect(r.partial).toBe(false)
    expect(r.metadata.data_sources).toEqual(expect.arrayContaining(['dns', 'smtp']))
  })

  it('undeliverable → invalid, block', async () => {
    const r = await email('nobody@good-mail.com')
    expect(r.details.smtp_check).toBe('undeliverable')
    expect(r.risk.factors).toContain('email_undeliverable')
    expect(r.verdict.status).toBe('invalid')
    expect(r.recommendation.action).toBe('block')
  })

  it('catch_all → risky with is_catch_all', async () => {
    const r = await email('whoever@catchall-corp.com')
    expect(r.details).toMatchObject({ smtp_check: 'catch_all', is_catch_all: true, has_spf: false, has_dmarc: false })
    expect(r.risk.factors).toContain('email_catch_all')
    expect(r.verdict.status).toBe('risky')
    expect(r.risk.confidence).not.toBe('high')
  })

  it.each([
    ['greylisted', 'a 450 greylisting reply'],
    ['blocked', 'a 554 "your IP is blocked" reply'],
  ])('unknown for %s (%s): unknown verdict, never invalid', async (local) => {
    const r = await email(`${local}@good-mail.com`)
    expect(r.details.smtp_check).toBe('unknown')
    expect(r.risk.factors).toContain('email_smtp_unknown')
    expect(r.verdict.status).toBe('unknown')
    expect(r.recommendation.action).toBe('approve')
    expect(r.risk.confidence).not.toBe('high')
  })

  it.each(['greylisted', 'blocked'])('unknown for %s is an answer (a reply code decided): not partial, billed', async (local) => {
    const r = await email(`${local}@good-mail.com`)
    expect(r.details.smtp_check).toBe('unknown')
    expect(r.partial).toBe(false)
    expect(r.metadata.credits_used).toBe(1)
  })

  it.each([
    ['slow', 'a reply slower than the timeout'],
    ['dropped', 'a dropped connection'],
  ])('unavailable for %s (%s): no server answered, so unknown verdict, partial, free of charge — never invalid', async (local) => {
    const r = await email(`${local}@good-mail.com`)
    expect(r.details.smtp_check).toBe('unavailable')
    expect(r.risk.factors).toContain('email_smtp_unavailable')
    expect(r.verdict.status).toBe('unknown')
    expect(r.recommendation.action).toBe('approve')
    expect(r.partial).toBe(true)
    expect(r.metadata.credits_used).toBe(0)
  })

  it('unavailable when no MX host accepts connections: unknown, free of charge', async () => {
    const r = await email('jane@down-corp.com')
    expect(r.details.smtp_check).toBe('unavailable')
    expect(r.details.mx_found).toBe(true)
    expect(r.risk.factors).toContain('email_smtp_unavailable')
    expect(r.verdict.status).toBe('unknown')
    expect(r.metadata.credits_used).toBe(0)
    // the mail servers failed: partial, so the answer is not cached for a week (and a bulk retry takes it)
    expect(r.partial).toBe(true)
  })

  it('tries MX hosts in preference order: a dead first host falls through to the next', async () => {
    const r = await email('jane@backup-corp.com')
    expect(r.details.smtp_check).toBe('deliverable')
  })

  it('skipped with smtp: false: only the free checks run, no SMTP connection', async () => {
    const before = world.smtpServer.connections + world.smtpServer.rcptCount
    const r = await email('someone-unknown@good-mail.com', { smtp: false })
    expect(r.details.smtp_check).toBe('skipped')
    expect(r.details.mx_found).toBe(true)
    expect(r.verdict.status).toBe('valid')
    expect(world.smtpServer.connections + world.smtpServer.rcptCount).toBe(before)
    expect(r.metadata.data_sources).not.toContain('smtp')
  })
})

describe('DNS findings', () => {
  it('null MX (RFC 7505) → invalid, no SMTP', async () => {
    const r = await email('jane@nullmx-corp.com')
    expect(r.details).toMatchObject({ mx_found: false, mx_records: [], smtp_check: 'skipped', has_spf: true })
    expect(r.risk.factors).toContain('email_null_mx')
    expect(r.verdict.status).toBe('invalid')
    expect(r.recommendation.action).toBe('block')
  })

  it('no MX but an A record → implicit MX, the SMTP check runs against the domain itself', async () => {
    const r = await email('jane@arecord-only.com')
    expect(r.details).toMatchObject({ mx_found: true, mx_records: ['arecord-only.com'], smtp_check: 'deliverable' })
    expect(r.verdict.status).toBe('valid')
  })

  it('neither MX nor A/AAAA → email_no_mx, invalid', async () => {
    const r = await email('jane@nothing-here.com')
    expect(r.details).toMatchObject({ mx_found: false, smtp_check: 'skipped', has_spf: false })
    expect(r.risk.factors).toContain('email_no_mx')
    expect(r.verdict.status).toBe('invalid')
  })

  it('NXDOMAIN → email_domain_not_found, invalid', async () => {
    const r = await email('jane@no-such-domain-anywhere.com')
    expect(r.risk.factors).toContain('email_domain_not_found')
    expect(r.details).toMatchObject({ mx_found: false, has_spf: false, has_dmarc: false })
    expect(r.verdict.status).toBe('invalid')
  })

  it.each(['slowdns-corp.com', 'servfail-corp.com'])('DNS timeout / SERVFAIL at %s → unknown and partial, never invalid', async (domain) => {
    const r = await email(`jane@${domain}`)
    expect(r.partial).toBe(true)
    expect(r.risk.factors).toContain('email_dns_unavailable')
    expect(r.risk.factors).not.toContain('email_domain_not_found')
    expect(r.verdict.status).toBe('unknown')
    expect(r.details).toMatchObject({ mx_found: false, smtp_check: 'unavailable', has_spf: null, has_dmarc: null })
  })

  it('IDN: the Unicode domain is reported, DNS and SMTP use punycode', async () => {
    const r = await email('  jane@BÜCHER.com ')
    expect(r.details).toMatchObject({
      normalized: 'jane@bücher.com',
      domain: 'bücher.com',
      mx_records: ['mx.xn--bcher-kva.com'],
      smtp_check: 'deliverable',
    })
    expect(world.smtpServer.recipients).toContain('jane@bücher.com') // the server decodes the punycode it received
    expect(world.dnsServer.queries).toContainEqual({ name: 'xn--bcher-kva.com', type: 'MX' })
  })

  it('asks at most MX + TXT + _dmarc TXT + one A per MX host per domain, and caches them', async () => {
    const before = world.dnsServer.queries.length
    await Promise.all([email('jane@workspace-corp.com'), email('bob@workspace-corp.com'), email('ann@workspace-corp.com')])
    const asked = world.dnsServer.queries.slice(before)
    expect(asked.length).toBeLessThanOrEqual(4)
  })
})

describe('lists, provider and typo', () => {
  it('a Google Workspace domain reports provider google (from its MX hosts)', async () => {
    const r = await email('jane@workspace-corp.com')
    expect(r.details.provider).toBe('google')
    expect(r.details.is_free_provider).toBe(false)
  })

  it('gmail: free provider, provider google (information only)', async () => {
    const r = await email('jane.doe@gmail.com')
    expect(r.details).toMatchObject({ is_free_provider: true, provider: 'google', smtp_check: 'deliverable' })
    expect(r.verdict.status).toBe('valid')
    expect(r.risk.factors).toEqual(['email_free_provider'])
  })

  it('role account → risky', async () => {
    const r = await email('info@good-mail.com')
    expect(r.details.is_role).toBe(true)
    expect(r.risk.factors).toContain('email_role_account')
    expect(r.verdict.status).toBe('risky')
  })

  it('disposable domain → risky (and catch-all here)', async () => {
    const r = await email('abc@mailinator.com')
    expect(r.details).toMatchObject({ is_disposable: true, smtp_check: 'catch_all' })
    expect(r.risk.factors).toEqual(expect.arrayContaining(['email_disposable', 'email_catch_all']))
    expect(r.verdict.status).toBe('risky')
    expect(['review', 'block']).toContain(r.recommendation.action)
  })

  it('typo of a popular domain → did_you_mean, risky', async () => {
    const r = await email('jane@gmial.com')
    expect(r.details.did_you_mean).toBe('jane@gmail.com')
    expect(r.risk.factors).toContain('email_typo_suspected')
    expect(r.verdict.status).toBe('risky')
    expect(r.recommendation.action).toBe('verify')
  })
})

describe('bad input', () => {
  it.each([
    ['no @-sign', 'not-an-email'],
    ['display name', 'Jane <jane@good-mail.com>'],
    ['special-use domain', 'jane@localhost'],
    ['double dot', 'jane..doe@good-mail.com'],
    ['quoted local part', '"quoted"@good-mail.com'],
    ['5,000 characters', 'a'.repeat(5000) + '@good-mail.com'],
    ['empty', ''],
  ])('%s → invalid syntax, no network', async (_label, input) => {
    const before = world.dnsServer.queries.length
    const r = await email(input)
    expect(r.details.syntax_valid).toBe(false)
    expect(r.risk.factors).toEqual(['email_invalid_syntax'])
    expect(r.verdict.status).toBe('invalid')
    expect(r.recommendation.action).toBe('block')
    expect(world.dnsServer.queries.length).toBe(before)
  })

  it('a non-string input is judged, not thrown', async () => {
    const r = await email(42)
    expect(r.details.syntax_valid).toBe(false)
  })

  it('a non-boolean smtp option is rejected with INVALID_INPUT', async () => {
    await expect(world.email('jane@good-mail.com', { smtp: 'yes' as unknown as boolean })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })
})

describe('sessions through the check', () => {
  it('many addresses at one domain share SMTP sessions within the per-host limit and one catch-all probe', async () => {
    const connectionsBefore = world.smtpServer.connections
    const rcptBefore = world.smtpServer.rcptCount
    const addresses = Array.from({ length: 30 }, (_, i) => `user${i}@catchall-corp.com`)
    const results = await Promise.all(addresses.map((a) => email(a)))
    expect(results.every((r) => r.details.smtp_check === 'catch_all')).toBe(true)
    // one MX host, limit 2 (the default); the catch-all answer was cached from the earlier test or probed once
    expect(world.smtpServer.connections - connectionsBefore).toBeLessThanOrEqual(2)
    expect(world.smtpServer.rcptCount - rcptBefore).toBeLessThanOrEqual(31)
  })
})

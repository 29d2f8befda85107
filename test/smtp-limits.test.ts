import { afterEach, describe, expect, it } from 'vitest'
import { startSmtpServer, type FakeSmtpServer } from './fake-internet/smtp-server.js'
import { mxOf, startMailNet, type MailNet } from './smtp-helpers.js'

// Receiving servers count connections per client IP against their own IP (Postfix, Exim, Microsoft 365). MX names
// that resolve to one address are one server: they share `smtp.maxConnectionsPerHost`.

let net: MailNet | undefined
let server: FakeSmtpServer | undefined
afterEach(async () => {
  await net?.close()
  await server?.close()
  net = server = undefined
})

describe('SMTP connection limits per mail-server IP address', () => {
  it('seven addresses at four domains whose MX names all resolve to one IP never exceed the limit at that server', async () => {
    server = await startSmtpServer({
      // slow enough that the seven checks overlap
      onRcpt: (a) => ({ delayMs: 150, then: a.startsWith('jane@') ? 'accept' : 'reject' }),
    })
    net = await startMailNet(
      {
        'alpha-mail.org': { MX: mxOf('mx1.alpha-mail.org', 'mx2.alpha-mail.org') },
        'beta-mail.org': { MX: mxOf('smtp.beta-mail.org') },
        'gamma-mail.org': { MX: mxOf('in.gamma-mail.org', 'in2.gamma-mail.org') },
        'delta-mail.org': { MX: mxOf('mail.delta-mail.org') },
        'mx1.alpha-mail.org': { A: ['127.0.0.1'] },
        'mx2.alpha-mail.org': { A: ['127.0.0.1'] },
        'smtp.beta-mail.org': { A: ['127.0.0.1'] },
        'in.gamma-mail.org': { A: ['127.0.0.1'] },
        'in2.gamma-mail.org': { A: ['127.0.0.1'] },
        'mail.delta-mail.org': { A: ['127.0.0.1'] },
      },
      server.port,
    )
    const rc = net.riskcheck({ smtp: { maxConnectionsPerHost: 2 } })
    const addresses = [
      'jane@alpha-mail.org',
      'ghost@alpha-mail.org',
      'jane@beta-mail.org',
      'ghost@beta-mail.org',
      'jane@gamma-mail.org',
      'ghost@gamma-mail.org',
      'jane@delta-mail.org',
    ]
    const results = await Promise.all(addresses.map((a) => rc.email(a)))
    expect(results.map((r) => r.details.smtp_check)).toEqual(addresses.map((a) => (a.startsWith('jane@') ? 'deliverable' : 'undeliverable')))
    expect(server.maxOpenConnections).toBeLessThanOrEqual(2)
    expect(server.maxOpenConnections).toBeGreaterThan(0)
  })

  it('the limit is configurable: one connection at a time serves them all', async () => {
    server = await startSmtpServer({ onRcpt: () => ({ delayMs: 50, then: 'accept' }) })
    net = await startMailNet(
      {
        'one-mail.org': { MX: mxOf('a.one-mail.org') },
        'two-mail.org': { MX: mxOf('b.two-mail.org') },
        'a.one-mail.org': { A: ['127.0.0.1'] },
        'b.two-mail.org': { A: ['127.0.0.1'] },
      },
      server.port,
    )
    const rc = net.riskcheck({ smtp: { maxConnectionsPerHost: 1 } })
    const results = await Promise.all(['x@one-mail.org', 'y@two-mail.org', 'z@one-mail.org', 'w@two-mail.org'].map((a) => rc.email(a)))
    expect(results.every((r) => r.details.smtp_check === 'catch_all')).toBe(true)
    expect(server.maxOpenConnections).toBe(1)
  })
})

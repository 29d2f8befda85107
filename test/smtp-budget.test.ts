import { afterEach, describe, expect, it } from 'vitest'
import { startSmtpServer, type FakeSmtpServer } from './fake-internet/smtp-server.js'
import { mxOf, runNode, startMailNet, type MailNet } from './smtp-helpers.js'
import { nodeArgs } from './child-process.js'

// A mail server that accepts the connection and never replies must not make one lookup wait connect/reply timeouts
// MX after MX: the SMTP step has a time budget across all MX hosts (smtp.totalTimeoutMs). A check that got no answer
// from any server is smtp_check 'unavailable': partial, and free of charge.

let net: MailNet | undefined
const servers: FakeSmtpServer[] = []
afterEach(async () => {
  await net?.close()
  await Promise.all(servers.splice(0).map((s) => s.close()))
  net = undefined
})

/** Three tarpits on one port at 127.0.0.1, .2 and .3: the three MX hosts of tarpit-mail.org. */
async function threeTarpits(): Promise<FakeSmtpServer[]> {
  const first = await startSmtpServer({ tarpit: true })
  servers.push(first)
  for (const host of ['127.0.0.2', '127.0.0.3']) servers.push(await startSmtpServer({ tarpit: true, host, port: first.port }))
  net = await startMailNet(
    {
      'tarpit-mail.org': { MX: mxOf('mx1.tarpit-mail.org', 'mx2.tarpit-mail.org', 'mx3.tarpit-mail.org') },
      'mx1.tarpit-mail.org': { A: ['127.0.0.1'] },
      'mx2.tarpit-mail.org': { A: ['127.0.0.2'] },
      'mx3.tarpit-mail.org': { A: ['127.0.0.3'] },
    },
    first.port,
  )
  return servers
}

describe('the time budget of the SMTP step', () => {
  it('three MX hosts that accept and never reply: the budget ends the check before the third is tried; unavailable, partial, free', async () => {
    const [mx1, mx2, mx3] = await threeTarpits()
    const rc = net!.riskcheck({ credits: 10, smtp: { timeoutMs: 400, totalTimeoutMs: 600 } })
    const r = await rc.email('jane@tarpit-mail.org')
    expect(r.details.smtp_check).toBe('unavailable')
    expect(r.partial).toBe(true)
    expect(r.verdict.status).toBe('unknown')
    expect(r.metadata.credits_used).toBe(0)
    expect(r.metadata.credits_remaining).toBe(10)
    // mx1 timed out after 400 ms; mx2 was cut short by the budget at 600 ms; mx3 was never asked
    expect(mx1!.connections).toBe(1)
    expect(mx2!.connections).toBeLessThanOrEqual(1)
    expect(mx3!.connections).toBe(0)
    expect(rc.env.ctx.sources.smtp.stats().budgetExceeded).toBe(1)
  })

  it('a server that greets but never answers RCPT: the budget cuts the reply timeout short', async () => {
    const server = await startSmtpServer({ onRcpt: () => ({ delayMs: 60_000 }) })
    servers.push(server)
    net = await startMailNet({ 'slow-mail.org': { MX: mxOf('mx.slow-mail.org') }, 'mx.slow-mail.org': { A: ['127.0.0.1'] } }, server.port)
    const rc = net.riskcheck({ credits: 5, smtp: { timeoutMs: 60_000, totalTimeoutMs: 300 } })
    const r = await rc.email('jane@slow-mail.org')
    expect(r.details.smtp_check).toBe('unavailable')
    expect(r.metadata.credits_used).toBe(0)
    expect(rc.env.ctx.sources.smtp.stats().budgetExceeded).toBe(1)
    expect(server.rcptCount).toBe(1)
  })

  it('waiting for a free connection counts against the budget too', async () => {
    const server = await startSmtpServer({ onRcpt: () => ({ delayMs: 60_000 }) })
    servers.push(server)
    net = await startMailNet({ 'busy-mail.org': { MX: mxOf('mx.busy-mail.org') }, 'mx.busy-mail.org': { A: ['127.0.0.1'] } }, server.port)
    const rc = net.riskcheck({ smtp: { timeoutMs: 60_000, totalTimeoutMs: 300, maxConnectionsPerHost: 1 } })
    const results = await Promise.all(['a@busy-mail.org', 'b@busy-mail.org', 'c@busy-mail.org'].map((a) => rc.email(a)))
    expect(results.map((r) => r.details.smtp_check)).toEqual(['unavailable', 'unavailable', 'unavailable'])
    expect(server.maxOpenConnections).toBe(1)
    expect(rc.env.ctx.sources.smtp.stats().budgetExceeded).toBe(3)
  })

  it('the CLI answers within the budget and exits on its own (smtp timeouts 60 s, budget 500 ms)', async () => {
    const [mx1, , mx3] = await threeTarpits()
    const args = ['email', 'jane@tarpit-mail.org', '--dns-server', net!.dns.address, '--smtp-port', String(mx1!.port), '--smtp-allow-private-hosts', '--no-rdap']
    // outer guard only (in runNode): without the budget the child would wait 3 × 60 s
    const { code, signal, out, err } = await runNode([...nodeArgs('src/cli/bin.ts'), ...args, '--smtp-timeout', '60000', '--smtp-total-timeout', '500', '--compact'])
    expect(err).toBe('')
    expect(signal).toBeNull()
    expect(code).toBe(0)
    expect(JSON.parse(out)).toMatchObject({ partial: true, details: { smtp_check: 'unavailable' }, metadata: { credits_used: 0 } })
    expect(mx3!.connections).toBe(0)
  })
})

import { afterEach, describe, expect, it } from 'vitest'
import { startSmtpServer, type FakeSmtpServer } from './fake-internet/smtp-server.js'
import { mxOf, startMailNet, type MailNet } from './smtp-helpers.js'

// A Postfix-like server counts rejected recipients per session: after smtpd_soft_error_limit (10) it delays every
// reply by 1 s, after smtpd_hard_error_limit (20) it answers "421 4.7.0 Error: too many errors" and hangs up.

let net: MailNet | undefined
let server: FakeSmtpServer | undefined
afterEach(async () => {
  await net?.close()
  await server?.close()
  net = server = undefined
})

async function setup(strict: { softErrorLimit?: number; hardErrorLimit?: number; delayMs?: number }, onRcpt = (a: string) => (a.startsWith('jane@') ? 'accept' as const : 'reject' as const)) {
  server = await startSmtpServer({ strict, onRcpt })
  net = await startMailNet({ 'strict-mail.org': { MX: mxOf('mx.strict-mail.org') }, 'mx.strict-mail.org': { A: ['127.0.0.1'] } }, server.port)
  return server
}

describe('strict mail servers (Postfix error limits)', () => {
  it('24 unknown recipients in a row all come back undeliverable, none unknown, and no reply was tarpitted', async () => {
    const fake = await setup({ softErrorLimit: 10, hardErrorLimit: 20, delayMs: 1_000 })
    const rc = net!.riskcheck()
    const checks: string[] = []
    for (let i = 0; i < 24; i++) checks.push((await rc.email(`nobody${i}@strict-mail.org`)).details.smtp_check)
    expect(checks).toEqual(Array(24).fill('undeliverable'))
    expect(fake.delayedReplies).toBe(0)
    expect(fake.tooManyErrors).toBe(0)
    // a fresh session after every 5 rejected recipients (the default), not one per address
    expect(fake.connections).toBe(5)
    expect(fake.rcptCount).toBe(24)
  })

  it('after a 421 in the middle of a session the recipient is retried once on a new connection', async () => {
    // a server stricter than the client's setting: it hangs up after 3 errors, the client renews after 10
    const fake = await setup({ softErrorLimit: 100, hardErrorLimit: 3 })
    const rc = net!.riskcheck({ smtp: { maxRejectionsPerSession: 10 } })
    const checks: string[] = []
    for (let i = 0; i < 7; i++) checks.push((await rc.email(`nobody${i}@strict-mail.org`)).details.smtp_check)
    expect(checks).toEqual(Array(7).fill('undeliverable'))
    expect(fake.tooManyErrors).toBe(2) // at the 4th and the 7th address
    expect(fake.connections).toBe(3)
  })

  it('a second 421 for the same recipient is an answer: unknown with code 421 (no endless retries)', async () => {
    server = await startSmtpServer({ onRcpt: () => ({ code: 421, message: 'Error: too many errors' }) })
    net = await startMailNet({ 'closing-mail.org': { MX: mxOf('mx.closing-mail.org') }, 'mx.closing-mail.org': { A: ['127.0.0.1'] } }, server.port)
    const r = await net.riskcheck().email('jane@closing-mail.org')
    expect(r.details.smtp_check).toBe('unknown')
    expect(server.connections).toBe(2)
    expect(server.rcptCount).toBe(2)
  })

  it('the session renewal threshold is an option (1 = a fresh session after every rejection)', async () => {
    const fake = await setup({ softErrorLimit: 100, hardErrorLimit: 100 })
    const rc = net!.riskcheck({ smtp: { maxRejectionsPerSession: 1 } })
    for (let i = 0; i < 3; i++) expect((await rc.email(`nobody${i}@strict-mail.org`)).details.smtp_check).toBe('undeliverable')
    expect(fake.connections).toBe(3)
  })
})

import { afterEach, describe, expect, it } from 'vitest'
import { classifyRcptReply, createSmtpSource, type SmtpSourceOptions } from './smtp.js'
import { startSmtpServer, type FakeSmtpOptions, type FakeSmtpServer, type RcptDecision } from '../../test/fake-internet/smtp-server.js'

/** MX names → loopback addresses: mx*.up.test → 127.0.0.1 (the fake server), mx*.down.test → 127.0.0.2 (nothing listens). */
const resolveHost = async (host: string): Promise<string | null> => {
  if (host.endsWith('.up.test')) return '127.0.0.1'
  if (host.endsWith('.down.test')) return '127.0.0.2'
  return null
}

const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn()
})

async function setup(server: FakeSmtpOptions = {}, source: SmtpSourceOptions = {}) {
  const fake = await startSmtpServer(server)
  const smtp = createSmtpSource({
    port: fake.port,
    heloName: 'verifier.example.org',
    mailFrom: 'probe@verifier.example.org',
    connectTimeoutMs: 500,
    replyTimeoutMs: 300,
    resolveHost,
    allowPrivateHosts: true,
    ...source,
  })
  cleanup.push(() => fake.close())
  cleanup.push(() => smtp.close())
  return { fake, smtp }
}

/** Accepts the listed local parts, rejects (550 user unknown) the rest, per domain rules. */
function mailboxes(known: string[], extra: (address: string) => RcptDecision | undefined = () => undefined) {
  return (address: string): RcptDecision => extra(address) ?? (known.includes(address.toLowerCase()) ? 'accept' : 'reject')
}

describe('createSmtpSource outcomes', () => {
  it('deliverable: the address is accepted and the random one rejected', async () => {
    const { fake, smtp } = await setup({ onRcpt: mailboxes(['jane@corp.test']) })
    const r = await smtp.verify('jane@corp.test', ['mx1.up.test'])
    expect(r).toMatchObject({ smtp_check: 'deliverable', code: 250, mxHost: 'mx1.up.test', catchAll: false })
    expect(fake.rcptCount).toBe(2)
    expect(fake.recipients[1]).toMatch(/^[a-z0-9]{16}@corp\.test$/)
  })

  it('undeliverable: 550 user unknown', async () => {
    const { smtp } = await setup({ onRcpt: mailboxes([]) })
    const r = await smtp.verify('ghost@corp.test', ['mx1.up.test'])
    expect(r).toMatchObject({ smtp_check: 'undeliverable', code: 550, enhancedCode: '5.1.1', catchAll: false })
    expect(r.message).toMatch(/User unknown/)
  })

  it('catch_all: both the address and the random local part are accepted', async () => {
    const { smtp } = await setup({ onRcpt: () => 'accept' })
    expect(await smtp.verify('anyone@catchall.test', ['mx1.up.test'])).toMatchObject({ smtp_check: 'catch_all', catchAll: true })
  })

  it('unknown: greylisting (450)', async () => {
    const { smtp } = await setup({ onRcpt: () => 'greylist' })
    expect(await smtp.verify('jane@corp.test', ['mx1.up.test'])).toMatchObject({ smtp_check: 'unknown', code: 450 })
  })

  it('unknown, not undeliverable: "your IP is blocked", even when sent as 550 5.1.1', async () => {
    const { smtp } = await setup({
      onRcpt: (a) => (a.startsWith('a@') ? 'block' : { code: 550, message: 'Your IP 127.0.0.1 is listed on Spamhaus; mailbox unavailable' }),
    })
    expect(await smtp.verify('a@corp.test', ['mx1.up.test'])).toMatchObject({ smtp_check: 'unknown', code: 554 })
    const r = await smtp.verify('b@corp.test', ['mx1.up.test'])
    expect(r).toMatchObject({ smtp_check: 'unknown', code: 550, enhancedCode: '5.1.1' })
  })

  it('unknown: a reply slower than the reply timeout', async () => {
    const { smtp } = await setup({ onRcpt: () => ({ delayMs: 800 }) }, { replyTimeoutMs: 150 })
    const r = await smtp.verify('jane@corp.test', ['mx1.up.test'])
    expect(r).toMatchObject({ smtp_check: 'unknown', code: null })
    expect(r.message).toMatch(/no reply within 150 ms/)
  })

  it('a slow reply within the timeout is still read', async () => {
    const { smtp } = await setup({ onRcpt: mailboxes(['jane@corp.test'], (a) => (a === 'jane@corp.test' ? { delayMs: 80 } : undefined)) })
    expect((await smtp.verify('jane@corp.test', ['mx1.up.test'])).smtp_check).toBe('deliverable')
  })

  it('unknown: the server drops the connection at RCPT', async () => {
    const { smtp } = await setup({ onRcpt: () => 'drop' })
    const r = await smtp.verify('jane@corp.test', ['mx1.up.test'])
    expect(r.smtp_check).toBe('unknown')
    expect(r.message).toMatch(/closed|error/)
  })

  it('unavailable: no MX host accepts a connection on the port', async () => {
    const { smtp } = await setup()
    const r = await smtp.verify('jane@corp.test', ['mx1.down.test', 'mx2.down.test', 'nowhere.example'])
    expect(r).toMatchObject({ smtp_check: 'unavailable', mxHost: null, code: null })
    expect(smtp.stats().connectionsFailed).toBe(3) // two refused, one unresolvable
    expect(await smtp.verify('x@corp.test', [])).toMatchObject({ smtp_check: 'unavailable' })
  })

  it('by default refuses MX hosts with non-public addresses (loopback here): unavailable, nothing sent', async () => {
    const { fake, smtp } = await setup({}, { allowPrivateHosts: false })
    const r = await smtp.verify('jane@corp.test', ['mx1.up.test'])
    expect(r.smtp_check).toBe('unavailable')
    expect(r.message).toMatch(/non-public address/)
    expect(fake.connections).toBe(0)
  })

  it('tries MX hosts in order: a dead first host falls through to the second', async () => {
    const { smtp } = await setup({ onRcpt: mailboxes(['jane@corp.test']) })
    const r = await smtp.verify('jane@corp.test', ['mx1.down.test', 'mx2.up.test'])
    expect(r).toMatchObject({ smtp_check: 'deliverable', mxHost: 'mx2.up.test' })
    // the dead host is remembered for a while: no second connection attempt
    await smtp.verify('jane@corp.test', ['mx1.down.test', 'mx2.up.test'])
    expect(smtp.stats().connectionsFailed).toBe(1)
  })

  it('unknown (not unavailable) when the server refuses us at the greeting', async () => {
    const { fake, smtp } = await setup({ greeting: { code: 554, message: 'your IP is blocked' } })
    const r = await smtp.verify('jane@corp.test', ['mx1.up.test'])
    expect(r).toMatchObject({ smtp_check: 'unknown', code: 554, mxHost: 'mx1.up.test' })
    // the refusal is remembered: the next addresses do not reconnect
    expect(await smtp.verify('john@corp.test', ['mx1.up.test'])).toMatchObject({ smtp_check: 'unknown', code: 554 })
    expect(fake.connections).toBe(1)
  })

  it('falls back to HELO when EHLO is rejected', async () => {
    const { fake, smtp } = await setup({ disableEhlo: true, onRcpt: mailboxes(['jane@corp.test']) })
    expect((await smtp.verify('jane@corp.test', ['mx1.up.test'])).smtp_check).toBe('deliverable')
    expect(fake.mailCount).toBe(1)
  })

  it('sends SMTPUTF8 addresses only to servers that support them', async () => {
    const a = await setup({ onRcpt: mailboxes(['jöhn@corp.test']) })
    expect((await a.smtp.verify('jöhn@corp.test', ['mx1.up.test'])).smtp_check).toBe('deliverable')
    const b = await setup({ hideSmtpUtf8: true, onRcpt: () => 'accept' })
    const r = await b.smtp.verify('jöhn@corp.test', ['mx1.up.test'])
    expect(r.smtp_check).toBe('unknown')
    expect(b.fake.rcptCount).toBe(0)
  })

  it('never writes an address that could break the command line', async () => {
    const { fake, smtp } = await setup()
    for (const bad of ['a\r\nRCPT TO:<x@y.test>@corp.test', 'a b@corp.test', '<a>@corp.test', 'nodomain', 'a@bücher.test']) {
      expect((await smtp.verify(bad, ['mx1.up.test'])).smtp_check).toBe('unknown')
    }
    expect(fake.connections).toBe(0)
  })
})

describe('sessions, limits and the catch-all cache', () => {
  it('shares sessions between concurrent checks for one domain within the per-host limit', async () => {
    const known = Array.from({ length: 25 }, (_, i) => `user${i}@corp.test`)
    const { fake, smtp } = await setup({ onRcpt: mailboxes(known) }, { maxConnectionsPerHost: 2 })
    const addresses = [...known, ...Array.from({ length: 25 }, (_, i) => `ghost${i}@corp.test`)]
    const results = await Promise.all(addresses.map((a) => smtp.verify(a, ['mx1.up.test'])))
    expect(results.slice(0, 25).every((r) => r.smtp_check === 'deliverable')).toBe(true)
    expect(results.slice(25).every((r) => r.smtp_check === 'undeliverable')).toBe(true)
    expect(fake.connections).toBeLessThanOrEqual(2)
    expect(fake.maxOpenConnections).toBeLessThanOrEqual(2)
    const st = smtp.stats()
    expect(st.connectionsOpened).toBe(fake.connections)
    expect(st.sessionsReused).toBeGreaterThanOrEqual(48)
    expect(st.catchAllProbes).toBeLessThanOrEqual(2) // at most one per session racing; normally 1
    expect(fake.rcptCount).toBe(50 + st.catchAllProbes)
    expect(fake.mailCount).toBe(50)
  })

  it('50 addresses at one domain cost one catch-all probe, even one after another', async () => {
    const { fake, smtp } = await setup({ onRcpt: () => 'accept' }, { maxConnectionsPerHost: 1 })
    for (let i = 0; i < 50; i++) expect((await smtp.verify(`u${i}@wild.test`, ['mx1.up.test'])).smtp_check).toBe('catch_all')
    expect(smtp.stats().catchAllProbes).toBe(1)
    expect(fake.connections).toBe(1)
    expect(fake.rcptCount).toBe(51)
  })

  it('limits connections per MX host, not per domain', async () => {
    const { fake, smtp } = await setup({ onRcpt: () => ({ delayMs: 20, then: 'accept' }) }, { maxConnectionsPerHost: 3 })
    const jobs = []
    for (let d = 0; d < 10; d++) for (let i = 0; i < 4; i++) jobs.push(smtp.verify(`u${i}@d${d}.test`, ['shared-mx.up.test']))
    const results = await Promise.all(jobs)
    expect(results.every((r) => r.smtp_check === 'catch_all')).toBe(true)
    expect(fake.maxOpenConnections).toBeLessThanOrEqual(3)
    expect(fake.connections).toBeLessThanOrEqual(3)
    expect(smtp.stats().catchAllProbes).toBeLessThanOrEqual(10 + 3)
  })

  it('closes idle sessions after idleMs and opens a new one later', async () => {
    const { fake, smtp } = await setup({ onRcpt: () => 'accept' }, { idleMs: 50 })
    await smtp.verify('a@corp.test', ['mx1.up.test'])
    expect(fake.openConnections).toBe(1)
    await new Promise((r) => setTimeout(r, 200))
    expect(fake.openConnections).toBe(0)
    await smtp.verify('b@corp.test', ['mx1.up.test'])
    expect(fake.connections).toBe(2)
  })

  it('retries once on a fresh connection when a pooled session was dropped by the server', async () => {
    const { fake, smtp } = await setup({ onRcpt: mailboxes(['a@corp.test', 'b@corp.test']) })
    expect((await smtp.verify('a@corp.test', ['mx1.up.test'])).smtp_check).toBe('deliverable')
    fake.dropConnections()
    await new Promise((r) => setTimeout(r, 30))
    expect((await smtp.verify('b@corp.test', ['mx1.up.test'])).smtp_check).toBe('deliverable')
    expect(fake.connections).toBe(2)
  })

  it('opens a new session after maxRecipientsPerSession', async () => {
    const { fake, smtp } = await setup({ onRcpt: mailboxes([]) }, { maxRecipientsPerSession: 3, maxConnectionsPerHost: 1 })
    for (let i = 0; i < 9; i++) await smtp.verify(`x${i}@corp.test`, ['mx1.up.test'])
    expect(fake.connections).toBe(3)
  })

  it('close() sends QUIT and later checks answer unknown', async () => {
    const { fake, smtp } = await setup({ onRcpt: () => 'accept' })
    await smtp.verify('a@corp.test', ['mx1.up.test'])
    await smtp.close()
    await new Promise((r) => setTimeout(r, 30))
    expect(fake.openConnections).toBe(0)
    expect((await smtp.verify('b@corp.test', ['mx1.up.test'])).smtp_check).toBe('unknown')
  })

  it('rejects bad options at creation', () => {
    expect(() => createSmtpSource({ port: 0 })).toThrow(TypeError)
    expect(() => createSmtpSource({ heloName: 'bad name\r\n' })).toThrow(TypeError)
    expect(() => createSmtpSource({ mailFrom: 'x\r\n@y' })).toThrow(TypeError)
  })
})

describe('classifyRcptReply', () => {
  const cases: Array<[number, string | null, string, ReturnType<typeof classifyRcptReply>]> = [
    [250, '2.1.5', 'Accepted', 'accepted'],
    [251, null, 'User not local; will forward', 'accepted'],
    [550, '5.1.1', 'The email account that you tried to reach does not exist.', 'no_mailbox'],
    [550, null, 'No such user here', 'no_mailbox'],
    [550, null, 'Requested action not taken: mailbox unavailable', 'no_mailbox'],
    [553, '5.1.3', 'Invalid address syntax', 'no_mailbox'],
    [550, '5.2.1', 'The email account that you tried to reach is disabled.', 'no_mailbox'],
    [550, '5.1.1', 'Your IP is blocked', 'blocked'],
    [554, '5.7.1', 'Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org', 'blocked'],
    [550, '5.7.1', 'Message rejected', 'blocked'],
    [550, null, 'Rejected by local policy', 'blocked'],
    [550, null, '5.7.606 Access denied, banned sending IP', 'blocked'],
    [550, null, 'Relaying denied', 'blocked'],
    [421, '4.7.0', 'Try again later, closing connection.', 'blocked'],
    [450, '4.2.1', 'The user you are trying to contact is receiving mail at a rate that prevents additional messages', 'temporary'],
    [451, null, 'Greylisted, please try again in 5 minutes', 'blocked'],
    [452, '4.2.2', 'Mailbox full', 'temporary'],
    [550, null, 'Rejected', 'rejected_other'],
    [554, null, 'Transaction failed', 'rejected_other'],
    [550, '5.1.8', 'Bad sender address domain', 'blocked'],
  ]
  it.each(cases)('%i %s %s → %s', (code, enhancedCode, text, expected) => {
    expect(classifyRcptReply({ code, enhancedCode, text })).toBe(expected)
  })
})

import { afterEach, describe, expect, it } from 'vitest'
import { createSmtpSource, type SmtpSourceOptions } from './index.js'
import { startSmtpServer, type FakeSmtpOptions, type FakeSmtpServer, type RcptDecision } from '../../../test/fake-internet/smtp-server.js'

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

  it('unavailable (no answer, free): a reply slower than the reply timeout', async () => {
    // a timeout loopback replies keep on a loaded machine, so that it is the RCPT reply that misses it
    const { fake, smtp } = await setup({ onRcpt: () => ({ delayMs: 4000 }) }, { replyTimeoutMs: 1000 })
    const r = await smtp.verify('jane@corp.test', ['mx1.up.test'])
    expect(r).toMatchObject({ smtp_check: 'unavailable', code: null })
    expect(r.message).toMatch(/no reply within 1000 ms/)
    expect(fake.rcptCount).toBe(1)
  })

  it('a slow reply within the timeout is still read', async () => {
    const { smtp } = await setup({ onRcpt: mailboxes(['jane@corp.test'], (a) => (a === 'jane@corp.test' ? { delayMs: 80 } : undefined)) })
    expect((await smtp.verify('jane@corp.test', ['mx1.up.test'])).smtp_check).toBe('deliverable')
  })

  it('unavailable (no answer): the server drops the connection at RCPT', async () => {
    const { smtp } = await setup({ onRcpt: () => 'drop' })
    const r = await smtp.verify('jane@corp.test', ['mx1.up.test'])
    expect(r.smtp_check).toBe('unavailable')
    expect(r.message).toMatch(/closed|error/)
  })

  it('unavailable: no MX host accepts a connection on the port', async () => {
    const { smtp } = await setup()
    const r = await smtp.verify('jane@corp.test', ['mx1.down.test', 'mx2.down.test', 'nowhere.example'])
    expect(r).toMatchObject({ smtp_check: 'unavailable', mxHost: null, code: null })
    // mx1 and mx2 are one server (127.0.0.2): refused once, then remembered; nowhere.example does not resolve
    expect(smtp.stats().connectionsFailed).toBe(2)
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
    const { fake, smtp } = await setup({ onRcpt: mailboxes(known) }, { maxConnectionsPerHost: 2, maxRejectionsPerSession: 100, maxRecipientsPerSession: 1000 })
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
    const { fake, smtp } = await setup({ onRcpt: () => 'accept' }, { maxConnectionsPerHost: 1, maxRecipientsPerSession: 1000 })
    for (let i = 0; i < 50; i++) expect((await smtp.verify(`u${i}@wild.test`, ['mx1.up.test'])).smtp_check).toBe('catch_all')
    expect(smtp.stats().catchAllProbes).toBe(1)
    expect(fake.connections).toBe(1)
    expect(fake.rcptCount).toBe(51)
  })

  it('limits connections per mail server, not per domain', async () => {
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
    const { fake, smtp } = await setup({ onRcpt: mailboxes([]) }, { maxRecipientsPerSession: 3, maxRejectionsPerSession: 100, maxConnectionsPerHost: 1 })
    for (let i = 0; i < 9; i++) await smtp.verify(`x${i}@corp.test`, ['mx1.up.test'])
    expect(fake.connections).toBe(3)
  })

  it('close() sends QUIT and later checks answer unavailable (nothing was asked: free)', async () => {
    const { fake, smtp } = await setup({ onRcpt: () => 'accept' })
    await smtp.verify('a@corp.test', ['mx1.up.test'])
    await smtp.close()
    await new Promise((r) => setTimeout(r, 30))
    expect(fake.openConnections).toBe(0)
    expect((await smtp.verify('b@corp.test', ['mx1.up.test'])).smtp_check).toBe('unavailable')
    expect(fake.connections).toBe(1)
  })

  it('a connection limit learned from a refused extra connection is kept for connectionLimitTtlMs, then tried again', async () => {
    let now = 1_000_000
    const { fake, smtp } = await setup(
      { maxConnectionsPerClient: 1, onRcpt: mailboxes(['a@corp.test', 'b@corp.test'], () => undefined) },
      { maxConnectionsPerHost: 2, connectionLimitTtlMs: 60_000, now: () => now },
    )
    const three = async (tag: string) => (await Promise.all(['a', 'b', tag].map((l) => smtp.verify(`${l}@corp.test`, ['mx1.up.test'])))).map((r) => r.smtp_check)
    const settle = async () => {
      fake.dropConnections()
      while (fake.openConnections > 0) await new Promise((r) => setTimeout(r, 5))
      await new Promise((r) => setTimeout(r, 20))
    }
    expect(await three('x')).toEqual(['deliverable', 'deliverable', 'undeliverable'])
    expect([fake.connections, fake.refusedConnections]).toEqual([2, 1])
    await settle()
    now += 59_999 // still known: one connection
    expect(await three('y')).toEqual(['deliverable', 'deliverable', 'undeliverable'])
    expect([fake.connections, fake.refusedConnections]).toEqual([3, 1])
    await settle()
    now += 1 // expired: two connections again, one refused, the limit learned again
    expect(await three('z')).toEqual(['deliverable', 'deliverable', 'undeliverable'])
    expect([fake.connections, fake.refusedConnections]).toEqual([5, 2])
    expect(smtp.stats().connectionsRefusedAsBusy).toBe(2)
  })

  it('a 5xx at the greeting of an extra connection is a refusal, not a limit: unknown, remembered', async () => {
    const { fake, smtp } = await setup({ greeting: { code: 554, message: 'your IP is blocked' } }, { maxConnectionsPerHost: 2 })
    const results = await Promise.all(['a', 'b', 'c'].map((l) => smtp.verify(`${l}@corp.test`, ['mx1.up.test'])))
    expect(results.map((r) => [r.smtp_check, r.code])).toEqual([['unknown', 554], ['unknown', 554], ['unknown', 554]])
    expect(fake.connections).toBe(2)
    expect(smtp.stats().connectionsRefusedAsBusy).toBe(0)
  })

  it('rejects bad options at creation', () => {
    expect(() => createSmtpSource({ port: 0 })).toThrow(TypeError)
    expect(() => createSmtpSource({ heloName: 'bad name\r\n' })).toThrow(TypeError)
    expect(() => createSmtpSource({ mailFrom: 'x\r\n@y' })).toThrow(TypeError)
  })
})

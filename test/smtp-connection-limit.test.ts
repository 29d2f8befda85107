import { afterEach, describe, expect, it } from 'vitest'
import type { Riskcheck } from '../src/riskcheck.js'
import { startSmtpServer, type FakeSmtpServer } from './fake-internet/smtp-server.js'
import { mxOf, startMailNet, type MailNet } from './smtp-helpers.js'

// A mail server that accepts one connection per client address (Exim's smtp_accept_max_per_host = 1) answers a second
// connection with "421 too many connections from that IP address" while the first stays open. That refusal means
// "use fewer connections": the addresses waiting for the refused connection are checked on the session the server
// accepted, and the server's limit is remembered for a while.

let net: MailNet | undefined
let server: FakeSmtpServer | undefined
afterEach(async () => {
  await net?.close()
  await server?.close()
  net = server = undefined
})

const KNOWN = new Set(['jane', 'john', 'kim', 'lena', 'mark', 'nora'])

/** Six addresses at one-conn.org, mailboxes `known` of them existing, in a fixed order. */
function batch(known: string[], ghosts: string[]): string[] {
  return known.flatMap((k, i) => [`${k}@one-conn.org`, `${ghosts[i]}@one-conn.org`])
}

/** What the server says about each address: deliverable for the known local parts, undeliverable for the rest. */
const expected = (addresses: string[]) => addresses.map((a) => (KNOWN.has(a.split('@')[0]!) ? 'deliverable' : 'undeliverable'))

/** A one-connection server (its RCPT replies take `delayMs`) and the domain one-conn.org whose MX it is. */
async function oneConnectionServer(delayMs = 20, maxConnectionsPerClient = 1, lingerMs = 0): Promise<FakeSmtpServer> {
  server = await startSmtpServer({
    maxConnectionsPerClient,
    lingerMs,
    onRcpt: (a) => ({ delayMs, then: KNOWN.has(a.split('@')[0]!) ? 'accept' : 'reject' }),
  })
  net = await startMailNet({ 'one-conn.org': { MX: mxOf('mx.one-conn.org') }, 'mx.one-conn.org': { A: ['127.0.0.1'] } }, server.port)
  return server
}

const checkAll = async (rc: Riskcheck, addresses: string[]) => (await Promise.all(addresses.map((a) => rc.email(a)))).map((r) => r.details.smtp_check)

/** Resolves once the server has no open connection (it hung up on them) and the client has noticed. */
async function allClosed(fake: FakeSmtpServer): Promise<void> {
  while (fake.openConnections > 0) await new Promise((r) => setTimeout(r, 5))
  await new Promise((r) => setTimeout(r, 20))
}

describe('a mail server that accepts one connection per client address', () => {
  it('cold start (two connections allowed here): six addresses at once are all answered on the one session it accepted', async () => {
    const fake = await oneConnectionServer()
    const rc = net!.riskcheck()
    const addresses = batch(['jane', 'john', 'kim'], ['ghost1', 'ghost2', 'ghost3'])
    expect(await checkAll(rc, addresses)).toEqual(expected(addresses))
    expect(fake.connections).toBe(2) // one accepted, one refused
    expect(fake.refusedConnections).toBe(1)
    expect(fake.maxOpenConnections).toBe(1)
    expect(fake.rcptCount).toBe(7) // six addresses and one catch-all probe
    expect(rc.env.ctx.sources.smtp.stats().connectionsRefusedAsBusy).toBe(1)
  })

  it('cold start with six connections allowed here: five are refused, six addresses answered by the first session', async () => {
    const fake = await oneConnectionServer()
    const rc = net!.riskcheck({ smtp: { maxConnectionsPerHost: 6 } })
    const addresses = batch(['lena', 'mark', 'nora'], ['nobody1', 'nobody2', 'nobody3'])
    expect(await checkAll(rc, addresses)).toEqual(expected(addresses))
    expect(fake.connections).toBe(6)
    expect(fake.refusedConnections).toBe(5)
    expect(fake.maxOpenConnections).toBe(1)
  })

  it('warm start: with a session already open, six more addresses at once are answered on it', async () => {
    const fake = await oneConnectionServer()
    const rc = net!.riskcheck()
    expect((await rc.email('jane@one-conn.org')).details.smtp_check).toBe('deliverable')
    expect(fake.connections).toBe(1)
    const addresses = batch(['john', 'kim', 'lena'], ['ghost1', 'ghost2', 'ghost3'])
    expect(await checkAll(rc, addresses)).toEqual(expected(addresses))
    // the idle session served one address, the second slot's connection was refused, the rest waited for the session
    expect(fake.connections).toBe(2)
    expect(fake.refusedConnections).toBe(1)
    expect(fake.maxOpenConnections).toBe(1)
  })

  it('the limit is remembered: after the session is gone, the next six open one connection and meet no 421', async () => {
    const fake = await oneConnectionServer()
    const rc = net!.riskcheck({ smtp: { maxConnectionsPerHost: 3 } })
    const first = batch(['jane', 'john', 'kim'], ['ghost1', 'ghost2', 'ghost3'])
    expect(await checkAll(rc, first)).toEqual(expected(first))
    expect(fake.connections).toBe(3)
    expect(fake.refusedConnections).toBe(2)
    fake.dropConnections()
    await allClosed(fake)
    const second = batch(['lena', 'mark', 'nora'], ['ghost4', 'ghost5', 'ghost6'])
    expect(await checkAll(rc, second)).toEqual(expected(second))
    expect(fake.connections).toBe(4) // one more, accepted
    expect(fake.refusedConnections).toBe(2)
  })

  it('a session renewed after rejected recipients is replaced only once it has closed: no 421 for the new one', async () => {
    const fake = await oneConnectionServer(5)
    const rc = net!.riskcheck()
    const ghosts = Array.from({ length: 12 }, (_, i) => `nobody${i}@one-conn.org`)
    const addresses = ['jane@one-conn.org', ...ghosts, 'john@one-conn.org']
    expect(await checkAll(rc, addresses)).toEqual(expected(addresses))
    const stats = rc.env.ctx.sources.smtp.stats()
    // a fresh session after every 5 rejected recipients (the default), each opened after the last one closed
    expect(stats.sessionsRenewed).toBeGreaterThanOrEqual(2)
    expect(fake.refusedConnections).toBe(1) // the cold start's second connection, nothing after the limit was known
    // a new session after each renewal but perhaps the last (when no address was left for it)
    expect(fake.connections - fake.refusedConnections).toBeGreaterThanOrEqual(stats.sessionsRenewed)
    expect(fake.connections - fake.refusedConnections).toBeLessThanOrEqual(stats.sessionsRenewed + 1)
    expect(fake.maxOpenConnections).toBe(1)
  })

  it('a server that still counts a session for a moment after it closed: the next connection is tried again after a pause', async () => {
    // every address is rejected and every rejection renews the session; the server counts each one 250 ms longer
    const fake = await oneConnectionServer(0, 1, 250)
    const rc = net!.riskcheck({ smtp: { maxConnectionsPerHost: 1, maxRejectionsPerSession: 1 } })
    const addresses = Array.from({ length: 5 }, (_, i) => `nobody${i}@one-conn.org`)
    const results: string[] = []
    for (const a of addresses) results.push((await rc.email(a)).details.smtp_check)
    expect(results).toEqual(Array(5).fill('undeliverable'))
    // each new session but the first was refused (the old one still counted), then accepted after a pause or two
    expect(fake.connections - fake.refusedConnections).toBe(5)
    expect(fake.refusedConnections).toBeGreaterThanOrEqual(4)
    expect(fake.refusedConnections).toBeLessThanOrEqual(4 * 3)
    expect(rc.env.ctx.sources.smtp.stats().connectionsRefusedAsBusy).toBe(fake.refusedConnections)
  })

  it('the time budget runs out while addresses wait for the one session: those answer unavailable (partial, free), verdict unknown', async () => {
    // every RCPT reply takes 300 ms, the budget is 1 s: the one session cannot serve six addresses in time
    const fake = await oneConnectionServer(300)
    const rc = net!.riskcheck({ credits: 100, smtp: { totalTimeoutMs: 1_000 } })
    const addresses = batch(['jane', 'john', 'kim'], ['ghost1', 'ghost2', 'ghost3'])
    const results = await Promise.all(addresses.map((a) => rc.email(a)))
    const right = expected(addresses)
    const late = results.filter((r, i) => r.details.smtp_check !== right[i])
    // six addresses need at least 6 × 300 ms of RCPT replies on one session: some must have run out of time
    expect(late.length).toBeGreaterThan(0)
    for (const r of late) {
      expect(r.details.smtp_check).toBe('unavailable')
      expect(r.verdict.status).toBe('unknown')
      expect(r.partial).toBe(true)
      expect(r.metadata.credits_used).toBe(0)
    }
    // no answer was made up from the refusal: every address answered was asked on the one session
    expect(results.length - late.length).toBeLessThanOrEqual(fake.mailCount)
    expect(fake.maxOpenConnections).toBe(1)
    expect(rc.env.ctx.sources.smtp.stats().budgetExceeded).toBe(late.length)
    expect(fake.refusedConnections).toBe(1)
  })

  it('no session at all (the first connection refused): every address answers unknown with the 421, the refusal remembered', async () => {
    const fake = await oneConnectionServer(20, 0)
    const rc = net!.riskcheck()
    const addresses = batch(['jane', 'john', 'kim'], ['ghost1', 'ghost2', 'ghost3'])
    expect(await checkAll(rc, addresses)).toEqual(Array(6).fill('unknown'))
    // the two connections of the cold start, then the refusal is remembered
    expect(fake.connections).toBe(2)
    expect(fake.refusedConnections).toBe(2)
    expect(fake.rcptCount).toBe(0)
  })
})

/**
 * The connection limit of a real Exim (Debian's exim4-daemon-light, `smtp_accept_max_per_host = 1`, on a free
 * loopback port with a configuration of its own that can deliver nothing): a second connection meets
 * "421 Too many concurrent SMTP connections from this IP address", and the addresses waiting for it are checked on the
 * session Exim accepted. Skipped with a note where exim4 is not installed; CI installs it and sets
 * RISKCHECK_TEST_REQUIRE_EXIM=1, so there a missing Exim fails the run.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Riskcheck } from '../src/riskcheck.js'
import { createSmtpSource } from '../src/sources/smtp/index.js'
import { eximBinary, startExim, type EximServer } from './exim-server.js'
import { mxOf, startMailNet, type MailNet } from './smtp-helpers.js'

const bin = eximBinary()
if (!bin && process.env.RISKCHECK_TEST_REQUIRE_EXIM)
  throw new Error('exim4 is missing and RISKCHECK_TEST_REQUIRE_EXIM is set: apt-get install exim4-daemon-light (CI installs it)')
if (!bin) console.log('[skipped] SMTP against a real Exim (test/smtp-exim.test.ts): needs exim4 (apt-get install exim4-daemon-light).')

const KNOWN = ['jane', 'john', 'kim', 'lena', 'mark', 'nora']
const expected = (addresses: string[]) => addresses.map((a) => (KNOWN.includes(a.split('@')[0]!) ? 'deliverable' : 'undeliverable'))
const checkAll = async (rc: Riskcheck, addresses: string[]) => (await Promise.all(addresses.map((a) => rc.email(a)))).map((r) => r.details.smtp_check)
const at = (...locals: string[]) => locals.map((l) => `${l}@exim-mail.org`)

/** Resolves once every connection Exim accepted has ended (its log says so). */
/** Every accepted session has logged its end and its process is reaped (only then does Exim stop counting it). */
async function allEnded(exim: EximServer): Promise<void> {
  while (exim.closedConnections() < exim.acceptedConnections() || exim.sessionProcesses() > 0) await new Promise((r) => setTimeout(r, 10))
}

describe.skipIf(!bin)('a real Exim with smtp_accept_max_per_host = 1', () => {
  let exim: EximServer
  let net: MailNet
  beforeEach(async () => {
    exim = await startExim(bin!, { maxPerHost: 1, localParts: KNOWN })
    net = await startMailNet({ 'exim-mail.org': { MX: mxOf('mx.exim-mail.org') }, 'mx.exim-mail.org': { A: ['127.0.0.1'] } }, exim.port)
  })
  afterEach(async () => {
    await net.close()
    await exim.close()
  })

  it('cold start: six addresses at once, 6/6 answered as Exim says, one connection accepted and one refused', async () => {
    const rc = net.riskcheck()
    const addresses = at('jane', 'ghost1', 'john', 'ghost2', 'kim', 'ghost3')
    expect(await checkAll(rc, addresses)).toEqual(expected(addresses))
    expect(exim.acceptedConnections()).toBe(1)
    expect(exim.refusedConnections()).toBe(1)
  })

  it('cold start with six connections allowed here: five refused, 6/6 answered', async () => {
    const rc = net.riskcheck({ smtp: { maxConnectionsPerHost: 6 } })
    const addresses = at('lena', 'nobody1', 'mark', 'nobody2', 'nora', 'nobody3')
    expect(await checkAll(rc, addresses)).toEqual(expected(addresses))
    expect(exim.acceptedConnections()).toBe(1)
    expect(exim.refusedConnections()).toBe(5)
  })

  it('warm start, then the limit remembered: after the session ended, the next six open one connection and meet no 421', async () => {
    // the source itself, to close idle sessions after 100 ms
    const smtp = createSmtpSource({ port: exim.port, heloName: 'verifier.riskcheck-tests.org', idleMs: 100, maxConnectionsPerHost: 3, allowPrivateHosts: true, resolveHost: async () => '127.0.0.1' })
    const verifyAll = async (addresses: string[]) => (await Promise.all(addresses.map((a) => smtp.verify(a, ['mx.exim-mail.org'])))).map((r) => r.smtp_check)
    try {
      expect(await verifyAll(at('jane'))).toEqual(['deliverable'])
      const warm = at('john', 'ghost1', 'kim', 'ghost2', 'lena', 'ghost3')
      expect(await verifyAll(warm)).toEqual(expected(warm))
      expect(exim.acceptedConnections()).toBe(1)
      expect(exim.refusedConnections()).toBe(2) // the two other slots' connections
      await allEnded(exim) // the idle session said QUIT, and Exim reaped it
      const next = at('mark', 'ghost4', 'nora', 'ghost5', 'jane', 'ghost6')
      expect(await verifyAll(next)).toEqual(expected(next))
      expect(exim.acceptedConnections()).toBe(2)
      expect(exim.refusedConnections()).toBe(2)
    } finally {
      await smtp.close()
    }
  })

  it('sessions renewed after rejected recipients: every address answered, the limit learned from the first refusal', async () => {
    const rc = net.riskcheck()
    const addresses = ['jane', ...Array.from({ length: 14 }, (_, i) => `nobody${i}`), 'john']
    const results = await checkAll(rc, at(...addresses))
    expect(results).toEqual(expected(at(...addresses)))
    const stats = rc.env.ctx.sources.smtp.stats()
    expect(stats.sessionsRenewed).toBeGreaterThanOrEqual(2)
    // a new session after each renewal but perhaps the last (when no address was left for it), each accepted
    expect(exim.acceptedConnections()).toBeGreaterThanOrEqual(stats.sessionsRenewed)
    expect(exim.acceptedConnections()).toBeLessThanOrEqual(stats.sessionsRenewed + 1)
    // the cold start's second connection; beyond it, only a renewal that reached Exim while it still counted the
    // session just closed (its child process not yet reaped): at most one a renewal, each address answered all the same
    expect(exim.refusedConnections()).toBeGreaterThanOrEqual(1)
    expect(exim.refusedConnections()).toBeLessThanOrEqual(1 + stats.sessionsRenewed)
  })
})

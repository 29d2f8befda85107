import { afterEach, describe, expect, it } from 'vitest'
import { optionsFromFlags, runCli } from '../src/cli/main.js'
import { runServe } from '../src/cli/serve-command.js'
import type { RiskcheckWarning } from '../src/options.js'
import { createRiskcheck } from '../src/riskcheck.js'
import { startSmtpServer, type FakeSmtpServer } from './fake-internet/smtp-server.js'
import { startSocksServer, type FakeSocksServer } from './fake-internet/socks-server.js'
import { memoryIo as io, mxOf, startMailNet, type MailNet } from './smtp-helpers.js'

// Most clouds block outbound port 25. The mailbox check can go through SOCKS5 proxies (smtp.proxy, --smtp-proxy),
// and a blocked port is detected once and reported as a warning — answers are 'unavailable' (free), never invalid.

let net: MailNet | undefined
const closers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await net?.close()
  await Promise.all(closers.splice(0).map((c) => c.close()))
  net = undefined
})

async function smtpServer(opts: Parameters<typeof startSmtpServer>[0] = {}): Promise<FakeSmtpServer> {
  const s = await startSmtpServer({ onRcpt: (a) => (a.startsWith('jane@') ? 'accept' : 'reject'), ...opts })
  closers.push(s)
  return s
}

async function socks(opts: Parameters<typeof startSocksServer>[0] = {}): Promise<FakeSocksServer> {
  const s = await startSocksServer(opts)
  closers.push(s)
  return s
}

const ZONES = {
  'proxied-mail.org': { MX: mxOf('mx.proxied-mail.org') },
  'mx.proxied-mail.org': { A: ['127.0.0.1'] },
}

function warnings() {
  const seen: RiskcheckWarning[] = []
  return { seen, onWarning: (w: RiskcheckWarning) => void seen.push(w) }
}

describe('SMTP through a SOCKS5 proxy', () => {
  it('with username/password: the mail server sees the connection come from the proxy', async () => {
    const server = await smtpServer()
    const proxy = await socks({ users: { checker: 's3cr3t:pw' }, outgoingAddress: '127.0.0.2' })
    net = await startMailNet(ZONES, server.port)
    const rc = net.riskcheck({ smtp: { proxy: proxy.url('checker', 's3cr3t:pw') } })
    expect((await rc.email('jane@proxied-mail.org')).details.smtp_check).toBe('deliverable')
    expect((await rc.email('ghost@proxied-mail.org')).details.smtp_check).toBe('undeliverable')
    expect(server.remoteAddresses.length).toBeGreaterThan(0)
    expect(new Set(server.remoteAddresses)).toEqual(new Set(['127.0.0.2']))
    expect(proxy.destinations.every((d) => d === `127.0.0.1:${server.port}`)).toBe(true)
    expect(proxy.tunnels).toBe(server.connections)
    expect(proxy.authFailures).toBe(0)
  })

  it('a list of proxies is used in turn, and the per-server limit applies per proxy', async () => {
    const server = await smtpServer({ onRcpt: () => ({ delayMs: 150, then: 'accept' }) })
    const a = await socks({ outgoingAddress: '127.0.0.2' })
    const b = await socks({ outgoingAddress: '127.0.0.3' })
    net = await startMailNet(ZONES, server.port)
    const rc = net.riskcheck({ smtp: { proxy: [a.url(), b.url()], maxConnectionsPerHost: 1 } })
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => rc.email(`user${i}@proxied-mail.org`)))
    expect(results.every((r) => r.details.smtp_check === 'catch_all')).toBe(true)
    expect(new Set(server.remoteAddresses)).toEqual(new Set(['127.0.0.2', '127.0.0.3']))
    // one connection at a time through each proxy, so two at the server
    expect(a.maxOpenTunnels).toBe(1)
    expect(b.maxOpenTunnels).toBe(1)
    expect(server.maxOpenConnections).toBe(2)
  })

  it('wrong credentials: unavailable (free), one smtp_proxy_failed warning that never shows the password', async () => {
    const server = await smtpServer()
    const proxy = await socks({ users: { checker: 'right' } })
    net = await startMailNet(ZONES, server.port)
    const w = warnings()
    const rc = net.riskcheck({ credits: 3, onWarning: w.onWarning, smtp: { proxy: proxy.url('checker', 'wrong-pass') } })
    for (const local of ['jane', 'john']) {
      const r = await rc.email(`${local}@proxied-mail.org`)
      expect(r.details.smtp_check).toBe('unavailable')
      expect(r.metadata.credits_used).toBe(0)
      expect(r.partial).toBe(true)
    }
    expect(proxy.authFailures).toBe(2)
    expect(server.connections).toBe(0)
    expect(w.seen.map((x) => x.code)).toEqual(['smtp_proxy_failed'])
    expect(w.seen[0]!.message).toContain(`socks5://127.0.0.1:${proxy.port}`)
    expect(w.seen[0]!.message).not.toContain('wrong-pass')
  })

  it('a proxy that will not connect to the SMTP port (not allowed by its rules): unavailable, one warning', async () => {
    const server = await smtpServer()
    const proxy = await socks({ blockedPorts: [server.port] })
    net = await startMailNet(ZONES, server.port)
    const w = warnings()
    const rc = net.riskcheck({ onWarning: w.onWarning, smtp: { proxy: proxy.url() } })
    expect((await rc.email('jane@proxied-mail.org')).details.smtp_check).toBe('unavailable')
    expect(w.seen.map((x) => x.code)).toEqual(['smtp_proxy_failed'])
    expect(w.seen[0]!.message).toMatch(/NotAllowed/)
  })

  it('a bad proxy URL is a TypeError at construction naming the option, without the credentials', () => {
    for (const proxy of ['http://me:topsecret@proxy.example:8080', ['socks5://ok.example:1080', 'socks5://me:topsecret@proxy.example:99999']]) {
      let err: unknown
      try {
        createRiskcheck({ smtp: { proxy } })
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(TypeError)
      expect((err as Error).message).toMatch(/`smtp\.proxy(\[1\])?`/)
      expect((err as Error).message).not.toContain('topsecret')
    }
  })

  it('the CLI takes --smtp-proxy (and refuses a bad one with exit 64, password not printed)', async () => {
    const server = await smtpServer()
    const proxy = await socks({ users: { u: 'p4ss' } })
    net = await startMailNet(ZONES, server.port)
    const args = ['--dns-server', net.dns.address, '--smtp-port', String(server.port), '--smtp-allow-private-hosts', '--no-rdap', '--compact']
    const ok = io()
    expect(await runCli(['email', 'jane@proxied-mail.org', ...args, '--smtp-proxy', proxy.url('u', 'p4ss')], ok.io)).toBe(0)
    expect(JSON.parse(ok.out()).details.smtp_check).toBe('deliverable')
    expect(server.remoteAddresses).toEqual(['127.0.0.2'])
    const bad = io()
    expect(await runCli(['email', 'jane@proxied-mail.org', ...args, '--smtp-proxy', 'https://u:p4ss@proxy.example'], bad.io)).toBe(64)
    expect(bad.err()).toMatch(/smtp\.proxy/)
    expect(bad.err()).not.toContain('p4ss')
  })

  it('riskcheck serve takes the same flags: --smtp-proxy (repeatable), and refuses a bad one without printing it', async () => {
    expect(optionsFromFlags({ 'smtp-proxy': ['socks5://a.example:1080', 'socks5://u:p@b.example'], 'smtp-total-timeout': '5000', 'smtp-max-rejections': '3' })).toEqual({
      smtp: { proxy: ['socks5://a.example:1080', 'socks5://u:p@b.example'], totalTimeoutMs: 5000, maxRejectionsPerSession: 3 },
    })
    const t = io()
    expect(await runServe(['--port', '0', '--db', ':memory:', '--smtp-proxy', 'socks4://u:hunter2@proxy.example:1080'], t.io)).not.toBe(0)
    expect(t.err()).toMatch(/`smtp\.proxy\[0\]`/)
    expect(t.err()).not.toContain('hunter2')
  })
})

describe('a blocked outbound SMTP port', () => {
  /** Four domains whose mail servers (127.0.0.2–5) listen on nothing: connections are refused, DNS answers. */
  const DEAD_ZONES = Object.fromEntries(
    ['one', 'two', 'three', 'four'].flatMap((name, i) => [
      [`${name}-corp.org`, { MX: mxOf(`mx.${name}-corp.org`) }],
      [`mx.${name}-corp.org`, { A: [`127.0.0.${i + 2}`] }],
    ]),
  )

  it('is reported once, after three domains, and every answer is unavailable and free — never invalid', async () => {
    const server = await smtpServer() // listens on 127.0.0.1 only; its port is the SMTP port used
    net = await startMailNet(DEAD_ZONES, server.port)
    const w = warnings()
    const rc = net.riskcheck({ credits: 10, onWarning: w.onWarning })
    for (const name of ['one', 'two']) expect((await rc.email(`jane@${name}-corp.org`)).details.smtp_check).toBe('unavailable')
    expect(w.seen).toEqual([])
    for (const name of ['three', 'four']) {
      const r = await rc.email(`jane@${name}-corp.org`)
      expect(r.details.smtp_check).toBe('unavailable')
      expect(r.verdict.status).toBe('unknown')
      expect(r.metadata.credits_used).toBe(0)
    }
    expect(w.seen.map((x) => x.code)).toEqual(['smtp_port_blocked'])
    expect(w.seen[0]!.message).toContain(`port ${server.port}`)
    expect(w.seen[0]!.message).toMatch(/one-corp\.org, two-corp\.org, three-corp\.org/)
    expect(server.connections).toBe(0)
  })

  it('is not reported once any connection has succeeded', async () => {
    const server = await smtpServer()
    net = await startMailNet({ ...DEAD_ZONES, ...ZONES }, server.port)
    const w = warnings()
    const rc = net.riskcheck({ onWarning: w.onWarning })
    expect((await rc.email('jane@proxied-mail.org')).details.smtp_check).toBe('deliverable')
    for (const name of ['one', 'two', 'three', 'four']) expect((await rc.email(`jane@${name}-corp.org`)).details.smtp_check).toBe('unavailable')
    expect(w.seen).toEqual([])
  })

  it('connects that time out (packets dropped) count too, also when the budget cuts the second MX short', async () => {
    const server = await smtpServer()
    const proxy = await socks({ droppedPorts: [server.port] })
    net = await startMailNet(
      Object.fromEntries(
        ['one', 'two', 'three'].flatMap((name, i) => [
          [`${name}-corp.org`, { MX: mxOf(`mx1.${name}-corp.org`, `mx2.${name}-corp.org`) }],
          [`mx1.${name}-corp.org`, { A: [`127.0.1.${i + 1}`] }],
          [`mx2.${name}-corp.org`, { A: [`127.0.2.${i + 1}`] }],
        ]),
      ),
      server.port,
    )
    const w = warnings()
    const rc = net.riskcheck({ onWarning: w.onWarning, smtp: { proxy: proxy.url(), timeoutMs: 200, totalTimeoutMs: 300 } })
    for (const name of ['one', 'two', 'three']) expect((await rc.email(`jane@${name}-corp.org`)).details.smtp_check).toBe('unavailable')
    expect(w.seen.map((x) => x.code)).toEqual(['smtp_port_blocked'])
    expect(rc.env.ctx.sources.smtp.stats().budgetExceeded).toBe(3)
  })

  it('through a proxy whose own port 25 is blocked (it answers "connection refused"): reported for that proxy', async () => {
    const server = await smtpServer()
    const proxy = await socks()
    net = await startMailNet(DEAD_ZONES, server.port)
    const w = warnings()
    const rc = net.riskcheck({ onWarning: w.onWarning, smtp: { proxy: proxy.url() } })
    for (const name of ['one', 'two', 'three']) expect((await rc.email(`jane@${name}-corp.org`)).details.smtp_check).toBe('unavailable')
    expect(w.seen.map((x) => x.code)).toEqual(['smtp_port_blocked'])
    expect(w.seen[0]!.message).toContain(`from the SOCKS5 proxy socks5://127.0.0.1:${proxy.port}`)
    expect(proxy.destinations).toHaveLength(3)
  })
})

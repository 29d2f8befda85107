import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { PassThrough, Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { helpText, runCli } from '../src/cli/main.js'
import { CHECKS } from '../src/checks/registry.js'
import { assertValidResult } from './validate.js'

function io(stdinText = '') {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  let out = ''
  let err = ''
  stdout.on('data', (d) => (out += d))
  stderr.on('data', (d) => (err += d))
  return {
    io: { stdin: Readable.from([stdinText]), stdout, stderr },
    out: () => out,
    err: () => err,
  }
}

describe('riskcheck CLI', () => {
  it('--help lists every lookup and the global flags', async () => {
    const t = io()
    expect(await runCli(['--help'], t.io)).toBe(0)
    for (const def of Object.values(CHECKS)) expect(t.out()).toContain(def.cli.command)
    for (const flag of ['--mode', '--offline', '--dns-server', '--now']) expect(t.out()).toContain(flag)
    expect(helpText()).toContain('check')
  })

  it('prints one lookup result as JSON (test mode, fixed clock)', async () => {
    const t = io()
    const input = CHECKS.ip.testInputs[0]!.input
    const code = await runCli(['ip', input, '--mode', 'test', '--now', '2026-01-02T03:04:05Z'], t.io)
    expect(code).toBe(0)
    const r = JSON.parse(t.out())
    assertValidResult(r, 'ip')
    expect(r.request.timestamp).toBe('2026-01-02T03:04:05.000Z')
    expect(r.metadata.test_mode).toBe(true)
  })

  it('reads one input per line from stdin and prints JSON lines in input order', async () => {
    const inputs = CHECKS.phone.testInputs.map((t) => t.input).filter((i) => i.trim() !== '')
    const t = io(inputs.join('\n') + '\n\n')
    const code = await runCli(['phone', '--mode', 'test'], t.io)
    const lines = t.out().trim().split('\n').map((l) => JSON.parse(l))
    expect(lines.map((l) => l.request?.input ?? l.input)).toEqual(inputs)
    for (const l of lines) if (!l.error) assertValidResult(l, 'phone')
    expect(code).toBe(lines.some((l) => l.error) ? 1 : 0)
  })

  it('writes an error line (and exit 2, as for one rejected input) for inputs that cannot be looked up, and keeps going', async () => {
    const good = CHECKS.ip.testInputs[0]!.input
    const t = io(`not-an-ip\n${good}\n`)
    expect(await runCli(['ip', '--mode', 'test'], t.io)).toBe(2)
    const [bad, ok] = t.out().trim().split('\n').map((l) => JSON.parse(l))
    expect(bad).toEqual({ input: 'not-an-ip', error: { code: 'INVALID_INPUT', message: expect.any(String) } })
    expect(ok.request.input).toBe(good)
  })

  it('runs the combined check from flags', async () => {
    const t = io()
    const code = await runCli(
      ['check', '--email', CHECKS.email.testInputs[0]!.input, '--ip', CHECKS.ip.testInputs[0]!.input, '--context', 'signup', '--mode', 'test'],
      t.io,
    )
    expect(code).toBe(0)
    const r = JSON.parse(t.out())
    assertValidResult(r, 'check')
    expect(r.details.context).toBe('signup')
  })

  it.each([
    [['nope', 'x'], /unknown command "nope"/],
    [['ip', '1.2.3.4', '--frobnicate'], /Unknown option '--frobnicate'/],
    [['ip', '1.2.3.4', '--mode', 'prod'], /^riskcheck: --mode must be one of 'live', 'test' \(got "prod"\)/],
    [['ip', '1.2.3.4', '--now', 'yesterday'], /--now must be an ISO 8601 date/],
    [['ip', 'a', 'b'], /takes one input/],
    [['email', 'a@b.co', '--dns-server', 'nope::'], /^riskcheck: --dns-server must be an IP address with an optional port: .* \(got "nope::"\)/],
    [['email', 'a@b.co', '--dns-server', '1.1.1.1:0'], /--dns-server must be an IP address .*\(got "1\.1\.1\.1:0"\)/],
    [['ip', '1.2.3.4', '--concurrency', 'many'], /--concurrency must be a whole number/],
    // These three exited 0 before: `new Date()` read --now (`1` was 2001-01-01, an offset-less time local).
    [['ip', '1.2.3.4', '--now', '1'], /^riskcheck: --now must be an ISO 8601 date \(2026-01-31\) or a date-time with Z or an offset .*\(got "1"\)/],
    [['ip', '1.2.3.4', '--now', 'Mar 3 2026'], /--now must be an ISO 8601 date .*\(got "Mar 3 2026"\)/],
    [['ip', '1.2.3.4', '--now', '2026-01-01T00:00:00'], /--now must be .* with Z or an offset/], // else read in the local time zone
    // These two exited 2 before: check ignored a positional, and a bad --context was a rejected input.
    [['check', 'a@gmail.com'], /^riskcheck: check takes its inputs as flags: --email, --ip, --phone \(got "a@gmail\.com"\)/],
    [['check', '--email', 'a@b.co', '--context', 'wedding'], /^riskcheck: --context must be one of signup, lead, checkout \(got "wedding"\)/],
  ])('rejects bad usage %j with exit 64 and one riskcheck: prefix', async (argv, message) => {
    const t = io()
    expect(await runCli(argv, t.io)).toBe(64)
    expect(t.err()).toMatch(message)
    expect(t.err()).not.toMatch(/riskcheck: riskcheck/)
    expect(t.out()).toBe('')
  })

  it.each([
    ['2026-03-03', '2026-03-03T00:00:00.000Z'],
    ['2026-03-03T05:30:00+05:30', '2026-03-03T00:00:00.000Z'],
    ['2026-03-03T12:00:00.5z', '2026-03-03T12:00:00.500Z'],
  ])('--now %s is the same instant in every time zone', async (now, iso) => {
    const t = io()
    expect(await runCli(['ip', CHECKS.ip.testInputs[0]!.input, '--mode', 'test', '--now', now, '--compact'], t.io)).toBe(0)
    expect(JSON.parse(t.out()).request.timestamp).toBe(iso)
  })

  it('a lookup without an input on a terminal prints its usage (exit 64) instead of waiting for stdin', async () => {
    for (const command of ['email', 'phone-type', 'ip']) {
      const t = io()
      const stdin = Object.assign(new PassThrough(), { isTTY: true }) // never ends: waiting would hang the test
      expect(await runCli([command, '--mode', 'test'], { ...t.io, stdin })).toBe(64)
      expect(t.err()).toMatch(new RegExp(`^Usage: riskcheck ${command} <input>`))
      expect(t.out()).toBe('')
    }
  })

  it('--help lists --version and --help, and the exit codes the README documents', async () => {
    const t = io()
    expect(await runCli(['--help'], t.io)).toBe(0)
    expect(t.out()).toMatch(/riskcheck --version \| -v/)
    expect(t.out()).toMatch(/riskcheck --help \| -h/)
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')
    const documented = /Exit codes: (.+?)\.\n/s.exec(readme.slice(readme.indexOf('## CLI')))?.[1]?.replace(/\s+/g, ' ')
    expect(documented).toBe('0 every input answered · 1 a lookup failed (with stdin: at least one) · 2 an input was rejected (with stdin: at least one, none failed; its error JSON is printed in its place) · 64 bad usage')
    expect(t.out().replace(/\s+/g, ' ')).toContain(`Exit codes: ${documented}`)
    const v = io()
    expect(await runCli(['--version'], v.io)).toBe(0)
    expect(v.out()).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('exits 2 with the error JSON for a single input that cannot be looked up', async () => {
    const t = io()
    expect(await runCli(['ip', '999.1.1.1', '--mode', 'test', '--compact'], t.io)).toBe(2)
    expect(JSON.parse(t.out())).toMatchObject({ error: { code: 'INVALID_INPUT' } })
  })

  const bin = fileURLToPath(new URL('../bin/riskcheck.js', import.meta.url))
  const built = existsSync(fileURLToPath(new URL('../dist/cli.js', import.meta.url)))
  it('the installed binary runs the main job on embedded defaults', () => {
    expect(built, 'dist/ is built by `npm install` (prepare) and `npm test` (pretest)').toBe(true)
    const r = spawnSync(process.execPath, [bin, 'check', '--phone', '+44 20 7946 0958', '--ip', '8.8.8.8', '--offline', '--compact'], {
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    const result = JSON.parse(r.stdout)
    assertValidResult(result, 'check')
    expect(result.details.phone.country.code).toBe('GB')
  })
})

describe('riskcheck CLI, live against the loopback fake internet', () => {
  it('checks an email with --dns-server, --smtp-port and --smtp-allow-private-hosts', async () => {
    const { startDnsServer } = await import('./fake-internet/dns-server.js')
    const { startSmtpServer } = await import('./fake-internet/smtp-server.js')
    const smtp = await startSmtpServer({ onRcpt: (address: string) => (address.startsWith('jane@') ? 'accept' : 'reject') })
    const dns = await startDnsServer({
      zones: {
        'corp-mail.org': { MX: [{ priority: 10, exchange: 'mx.corp-mail.org' }], TXT: ['v=spf1 mx -all'] },
        'mx.corp-mail.org': { A: ['127.0.0.1'] },
        '_dmarc.corp-mail.org': { TXT: ['v=DMARC1; p=reject'] },
      },
    })
    try {
      const args = ['--dns-server', dns.address, '--smtp-port', String(smtp.port), '--smtp-allow-private-hosts', '--no-rdap', '--helo', 'verifier.riskcheck-tests.org', '--compact']
      const ok = io()
      expect(await runCli(['email', 'jane@corp-mail.org', ...args], ok.io)).toBe(0)
      const r = JSON.parse(ok.out())
      assertValidResult(r, 'email')
      expect(r.details).toMatchObject({ mx_found: true, smtp_check: 'deliverable', has_spf: true, has_dmarc: true })
      expect(r.recommendation.action).toBe('approve')
      const gone = io()
      expect(await runCli(['email', 'nobody@corp-mail.org', ...args], gone.io)).toBe(0)
      expect(JSON.parse(gone.out()).details.smtp_check).toBe('undeliverable')
      // Without --smtp-allow-private-hosts a mail server on a private address is refused, not probed.
      const refused = io()
      const safeArgs = args.filter((a) => a !== '--smtp-allow-private-hosts')
      expect(await runCli(['email', 'jane@corp-mail.org', ...safeArgs], refused.io)).toBe(0)
      expect(JSON.parse(refused.out()).details.smtp_check).toBe('unavailable')
    } finally {
      await dns.close()
      await smtp.close()
    }
  })
})

/**
 * Helpers of the SMTP tests: a loopback mail network for tests that go through the facade (a fake DNS server whose
 * zones the test gives, `createRiskcheck` options pointing at it and at a fake SMTP server's port, RDAP off, no
 * cache), an in-memory CLI io, and a child Node process with an outer guard.
 */
import { spawn } from 'node:child_process'
import { PassThrough, Readable } from 'node:stream'
import type { CliIO } from '../src/cli/main.js'
import type { RiskcheckOptions } from '../src/options.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { startDnsServer, type FakeDnsServer, type Zones } from './fake-internet/dns-server.js'

/** The running network. */
export interface MailNet {
  dns: FakeDnsServer
  /** A riskcheck instance on this network; `smtp` options are merged over the network's. Closed by close(). */
  riskcheck(options?: RiskcheckOptions): Riskcheck
  close(): Promise<void>
}

/** MX records of `domain` pointing at `hosts`, in that order of preference. */
export function mxOf(...hosts: string[]): Array<{ priority: number; exchange: string }> {
  return hosts.map((exchange, i) => ({ priority: 10 * (i + 1), exchange }))
}

/** Starts the DNS server; every riskcheck instance sends SMTP to `smtpPort` and allows loopback mail servers. */
export async function startMailNet(zones: Zones, smtpPort: number): Promise<MailNet> {
  const dns = await startDnsServer({ zones })
  const instances: Riskcheck[] = []
  return {
    dns,
    riskcheck(options = {}) {
      const rc = createRiskcheck({
        cache: false,
        ...options,
        dns: { servers: [dns.address], timeoutMs: 500, tries: 1 },
        rdap: { enabled: false },
        smtp: { heloName: 'verifier.riskcheck-tests.org', allowPrivateHosts: true, ...options.smtp, port: smtpPort },
      })
      instances.push(rc)
      return rc
    },
    async close() {
      await Promise.all(instances.map((rc) => rc.close()))
      await dns.close()
    },
  }
}

/** CLI io in memory: what the command printed on stdout and stderr. */
export function memoryIo(): { io: CliIO; out(): string; err(): string } {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  let out = ''
  let err = ''
  stdout.on('data', (d) => (out += d))
  stderr.on('data', (d) => (err += d))
  return { io: { stdin: Readable.from(['']), stdout, stderr }, out: () => out, err: () => err }
}

/** How a child process ended: `signal` is SIGKILL when the guard had to stop it. */
export interface ChildRun {
  code: number | null
  signal: NodeJS.Signals | null
  out: string
  err: string
}

/**
 * Runs `node …args` (see test/child-process.ts for the project's entry points) and resolves when it exits on its own — or when the outer guard kills it after
 * `guardMs` (only a child that would hang for much longer should ever meet it; tests assert `signal` is null).
 */
export async function runNode(args: string[], guardMs = 15_000): Promise<ChildRun> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  const guard = setTimeout(() => child.kill('SIGKILL'), guardMs)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])))
  clearTimeout(guard)
  return { code, signal, out, err }
}

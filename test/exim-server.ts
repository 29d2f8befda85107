/**
 * A real Exim (Debian's exim4-daemon-light) for the SMTP tests: a foreground daemon on a free loopback port with a
 * configuration of its own in a temporary directory — `smtp_accept_max_per_host` as the test asks, RCPT accepted
 * for the listed local parts and refused (`550 unknown user`) otherwise, no routers or transports, so it can deliver
 * nothing and never listens on port 25. Null when exim4 is not installed (the suite skips with a note).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

/** A running Exim. */
export interface EximServer {
  port: number
  /** Connections Exim refused as over `smtp_accept_max_per_host`, from its log. */
  refusedConnections(): number
  /** Connections Exim accepted (with `+smtp_connection` logging), from its log. */
  acceptedConnections(): number
  /** Accepted connections that have ended, from its log. */
  closedConnections(): number
  /**
   * The daemon's session processes not yet reaped (from /proc; zombies included): Exim counts a session against
   * `smtp_accept_max_per_host` until it reaps its process, a little after the session logged its end.
   */
  sessionProcesses(): number
  close(): Promise<void>
}

/** Options of {@link startExim}. */
export interface EximOptions {
  /** `smtp_accept_max_per_host`. */
  maxPerHost: number
  /** Local parts whose RCPT is accepted. */
  localParts: string[]
}

/** The exim binary, or null when it is not installed. */
export function eximBinary(): string | null {
  for (const bin of ['/usr/sbin/exim4', '/usr/sbin/exim']) {
    if (existsSync(bin) && spawnSync(bin, ['-bV'], { stdio: 'ignore' }).status === 0) return bin
  }
  return null
}

/** A free loopback port (closed again at once; Exim binds it a moment later). */
async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Resolves once Exim logged that it listens (no connection is made, so none is counted), or rejects. */
async function whenListening(child: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`exim exited: ${log()}`)
    if (/daemon started: .*listening for SMTP/.test(log())) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`exim did not start: ${log()}`)
}

/** Starts Exim in the foreground; close() stops it and removes its directory. */
export async function startExim(bin: string, options: EximOptions): Promise<EximServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'riskcheck-exim-'))
  mkdirSync(path.join(dir, 'spool'))
  mkdirSync(path.join(dir, 'log'))
  const port = await freePort()
  const user = os.userInfo()
  const config = [
    'primary_hostname = mx.exim-test.invalid',
    `daemon_smtp_ports = ${port}`,
    'local_interfaces = <; 127.0.0.1',
    `spool_directory = ${dir}/spool`,
    `log_file_path = ${dir}/log/%slog`,
    'log_selector = +smtp_connection',
    `exim_user = ${user.uid}`,
    `exim_group = ${user.gid}`,
    'never_users =',
    'host_lookup =',
    'rfc1413_hosts =',
    'tls_advertise_hosts =',
    `smtp_accept_max_per_host = ${options.maxPerHost}`,
    'acl_smtp_rcpt = acl_rcpt',
    'begin acl',
    'acl_rcpt:',
    `  accept local_parts = ${options.localParts.join(' : ')}`,
    '  deny message = unknown user',
    'begin routers',
    'begin transports',
    '',
  ].join('\n')
  const conf = path.join(dir, 'exim.conf')
  writeFileSync(conf, config, { mode: 0o644 })
  const mainlog = path.join(dir, 'log', 'mainlog')
  const log = () => (existsSync(mainlog) ? readFileSync(mainlog, 'utf8') : '')
  // -bdf: the daemon in the foreground, so it is this process's child and stops with it; -oX: only this port
  const child = spawn(bin, ['-C', conf, '-bdf', '-oX', String(port)], { stdio: 'ignore' })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  try {
    await whenListening(child, log)
  } catch (e) {
    child.kill('SIGKILL')
    await exited
    rmSync(dir, { recursive: true, force: true })
    throw e
  }
  const count = (re: RegExp) => log().split('\n').filter((l) => re.test(l)).length
  return {
    port,
    refusedConnections: () => count(/refused: too many connections from that IP address/),
    acceptedConnections: () => count(/SMTP connection from .*TCP\/IP connection count/),
    closedConnections: () => count(/SMTP connection from .*(closed by QUIT|lost)/),
    sessionProcesses: () => childrenOf(child.pid!),
    async close() {
      if (child.exitCode === null) child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 2_000)
      await exited
      clearTimeout(timer)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Processes whose parent is `pid` (zombies included), from /proc. */
function childrenOf(pid: number): number {
  let n = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue
    try {
      // stat: pid (comm) state ppid … — comm may hold spaces and parentheses, so read after the last ')'
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) n++
    } catch {
      // the process ended while being read
    }
  }
  return n
}

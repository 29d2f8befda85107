/**
 * `rc.close()` releases every socket and timer of the DNS, RDAP, IP and phone sources and of the cache, so a process
 * exits as soon as its work is done — even with questions still unanswered when it closes. A child process runs
 * lookups against servers that never answer (time limits of a minute), closes, reports what is still active, and
 * must then exit on its own. (The SMTP source has its own close test, test/smtp-close.test.ts.)
 */
import { spawn } from 'node:child_process'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { scriptImport } from './child-process.js'

let dns: FakeDnsServer
let rdap: Server
let rdapUrl: string
const hanging = new Set<ServerResponse>()

beforeAll(async () => {
  dns = await startDnsServer({ zones: {}, everyName: 'timeout' })
  // An RDAP server that takes the request and never answers.
  rdap = createServer((_req, res) => {
    hanging.add(res)
  })
  await new Promise<void>((resolve) => rdap.listen(0, '127.0.0.1', resolve))
  rdapUrl = `http://127.0.0.1:${(rdap.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const res of hanging) res.destroy()
  rdap.closeAllConnections()
  await new Promise((resolve) => rdap.close(resolve))
  await dns.close()
})

/** Runs `body` in a child process (test/child-process.ts); resolves with its exit code and output. */
function runChild(body: string): Promise<{ code: number | null; out: string; err: string; killed: boolean }> {
  const riskcheck = scriptImport('src/riskcheck.ts')
  const script = `const { createRiskcheck } = await import(${JSON.stringify(riskcheck.file)})\n${body}`
  const child = spawn(process.execPath, [...riskcheck.flags, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  // The lookups' own limits are two minutes: a child still alive after 50 s (a generous bound for starting a child on a
  // loaded machine) is held by something close() left behind.
  let killed = false
  const guard = setTimeout(() => {
    killed = true
    child.kill('SIGKILL')
  }, 50_000)
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(guard)
      resolve({ code, out, err, killed })
    }),
  )
}

describe('rc.close() lets the process exit', () => {
  it('with DNS and RDAP questions still unanswered, after IP, phone and cached lookups', { timeout: 60_000 }, async () => {
    const child = await runChild(`
      const baseline = process.getActiveResourcesInfo()
      const rc = createRiskcheck({
        dns: { servers: [${JSON.stringify(dns.address)}], timeoutMs: 120000, tries: 1 },
        rdap: {
          timeoutMs: 120000,
          bootstrapData: { version: '1.0', publication: '2026-11-01T00:00:00Z', services: [[['com'], [${JSON.stringify(`${rdapUrl}/rdap/`)}]]] },
        },
        smtp: { enabled: false },
      })
      const phone = await rc.phone('+1 415 555 0100')
      const again = await rc.phone('+1 415 555 0100')
      // unanswered when close() is called: MX/TXT/DMARC, RDAP, reverse DNS
      const pending = [rc.email('jane@corp-mail.com'), rc.domainAge('corp-mail.com'), rc.ip('8.8.8.8')]
      while (rc.env.ctx.sources.dns.stats().queries < 4 || rc.env.ctx.sources.rdap.stats().queries < 1) {
        await new Promise((resolve) => setImmediate(resolve))
      }
      await rc.close()
      const timersLeft = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
      const settled = await Promise.allSettled(pending)
      // Sockets destroyed by close() finish closing within a few turns of the event loop (counted, not timed; on a
      // loaded machine fetch's own socket teardown may take longer — the process exit below is the proof).
      let turns = 0
      while (process.getActiveResourcesInfo().length > baseline.length && turns < 100) {
        turns++
        await new Promise((resolve) => setImmediate(resolve))
      }
      const left = process.getActiveResourcesInfo()
      for (const r of baseline) left.splice(left.indexOf(r), 1)
      console.log(JSON.stringify({ timersLeft, left, turns, cacheHit: again.metadata.cache_hit, valid: phone.details.valid, settled: settled.map((s) => s.status) }))
    `)
    expect(child.err, child.out).toBe('')
    expect(child.killed).toBe(false)
    expect(child.code).toBe(0)
    const report = JSON.parse(child.out.trim().split('\n').pop() as string)
    expect(report, child.out).toMatchObject({ timersLeft: 0, cacheHit: true, valid: true, settled: ['fulfilled', 'fulfilled', 'fulfilled'] })
    // nothing left but a destroyed request socket still closing (a live one would have kept the child from exiting)
    for (const r of report.left as string[]) expect(r, child.out).toBe('TCPSocketWrap')
    expect((report.left as string[]).length, child.out).toBeLessThanOrEqual(1)
  })
})

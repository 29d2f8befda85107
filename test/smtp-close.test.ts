import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { startSmtpServer, type FakeSmtpServer } from './fake-internet/smtp-server.js'
import { mxOf, runNode } from './smtp-helpers.js'
import { scriptImport } from './child-process.js'

// A process exits as soon as its work is done: close() of the SMTP source (and rc.close()) releases every socket and
// timer at once, including those of checks still in flight. Each test runs a script in a child process that must exit
// on its own; the outer guard only catches a child that would otherwise run for a minute (its timeouts are 60 s).

let server: FakeSmtpServer
let tarpit: FakeSmtpServer
let dns: FakeDnsServer
beforeAll(async () => {
  server = await startSmtpServer({ onRcpt: () => 'accept' })
  tarpit = await startSmtpServer({ tarpit: true })
  dns = await startDnsServer({
    zones: { 'tarpit-mail.org': { MX: mxOf('mx.tarpit-mail.org') }, 'mx.tarpit-mail.org': { A: ['127.0.0.1'] } },
  })
})
afterAll(async () => {
  await Promise.all([server.close(), tarpit.close(), dns.close()])
})

const smtp = scriptImport('src/sources/smtp/index.ts')
const riskcheck = scriptImport('src/riskcheck.ts')
const smtpModule = JSON.stringify(smtp.file)
const riskcheckModule = JSON.stringify(riskcheck.file)

/** Runs `script` (an ES module body) in a child Node process. */
const runChild = (script: string) => runNode([...smtp.flags, '--input-type=module', '-e', script])

/** Script lines that print the active handles and timers, less stdio's pipes. */
const PRINT_RESOURCES = `console.log(JSON.stringify(process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap' && r !== 'TTYWrap')))`

describe('SMTP source close()', () => {
  it('lets a script that awaits close() last run to completion', async () => {
    const r = await runChild(`
      const { createSmtpSource } = await import(${smtpModule})
      const smtp = createSmtpSource({ port: ${server.port}, allowPrivateHosts: true, resolveHost: async () => '127.0.0.1', heloName: 'test.riskcheck.org' })
      const r = await smtp.verify('jane@close-test.org', ['mx.close-test.org'])
      await smtp.close()
      console.log('closed', r.smtp_check)
    `)
    expect(r.err).toBe('')
    expect(r.out.trim()).toMatch(/^closed (deliverable|catch_all)$/)
    expect(r.code).toBe(0)
  })

  it('ends a check in flight against a server that never replies: it answers unavailable, nothing stays active', async () => {
    const r = await runChild(`
      const { createSmtpSource } = await import(${smtpModule})
      const smtp = createSmtpSource({
        port: ${tarpit.port}, allowPrivateHosts: true, resolveHost: async () => '127.0.0.1', heloName: 'test.riskcheck.org',
        connectTimeoutMs: 60000, replyTimeoutMs: 60000, totalTimeoutMs: 60000, idleMs: 60000,
      })
      const pending = smtp.verify('jane@tarpit-mail.org', ['mx.tarpit-mail.org'])
      while (smtp.stats().connectionsOpened === 0) await new Promise((r) => setTimeout(r, 10))
      await smtp.close()
      const r = await pending
      console.log(r.smtp_check)
      ${PRINT_RESOURCES}
    `)
    expect(r.err).toBe('')
    expect(r.signal).toBeNull() // not killed by the guard: it exited on its own
    expect(r.code).toBe(0)
    const [check, resources] = r.out.trim().split('\n')
    expect(check).toBe('unavailable')
    expect(JSON.parse(resources!)).toEqual([])
  })

  it('rc.close() after a combined check whose email part timed out: the process exits, nothing stays active', async () => {
    const r = await runChild(`
      const { createRiskcheck } = await import(${riskcheckModule})
      const rc = createRiskcheck({
        dns: { servers: [${JSON.stringify(dns.address)}], timeoutMs: 500, tries: 1 },
        rdap: { enabled: false },
        cache: false,
        partTimeoutMs: 300,
        smtp: { port: ${tarpit.port}, allowPrivateHosts: true, heloName: 'test.riskcheck.org', timeoutMs: 60000, totalTimeoutMs: 60000 },
      })
      const r = await rc.check({ email: 'jane@tarpit-mail.org' })
      await rc.close()
      console.log(JSON.stringify({ partial: r.partial, smtp: r.details.email.smtp_check }))
      ${PRINT_RESOURCES}
    `)
    expect(r.err).toBe('')
    expect(r.signal).toBeNull()
    expect(r.code).toBe(0)
    const [result, resources] = r.out.trim().split('\n')
    expect(JSON.parse(result!)).toMatchObject({ partial: true })
    expect(JSON.parse(resources!)).toEqual([])
  })
})

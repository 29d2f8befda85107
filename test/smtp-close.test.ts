import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSmtpServer, type FakeSmtpServer } from './fake-internet/smtp-server.js'

// close() must keep the process alive until the QUIT of idle sessions completes: a script whose last act is
// `await smtp.close()` must finish normally (not exit 13 with the promise unsettled).
let server: FakeSmtpServer
beforeAll(async () => {
  server = await startSmtpServer({ onRcpt: () => 'accept' })
})
afterAll(() => server.close())

describe('SMTP source close()', () => {
  it('lets a script that awaits close() last run to completion', async () => {
    const smtpModule = fileURLToPath(new URL('../src/sources/smtp/index.ts', import.meta.url))
    const script = `
      const { createSmtpSource } = await import(${JSON.stringify(smtpModule)})
      const smtp = createSmtpSource({ port: ${server.port}, allowPrivateHosts: true, resolveHost: async () => '127.0.0.1', heloName: 'test.riskcheck.org' })
      const r = await smtp.verify('jane@close-test.org', ['mx.close-test.org'])
      await smtp.close()
      console.log('closed', r.smtp_check)
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect(err).toBe('')
    expect(out.trim()).toMatch(/^closed (deliverable|catch_all)$/)
    expect(code).toBe(0)
  })
})

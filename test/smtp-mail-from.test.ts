/**
 * `smtp.mailFrom` (`--mail-from`, `RISKCHECK_MAIL_FROM`) is checked where the other settings are: an address the SMTP
 * source cannot send is refused by `createRiskcheck` (a TypeError naming the option) and by the CLI (exit 64), not
 * taken and then answered as "unknown" on every email lookup.
 */
import { PassThrough, Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { optionsFromFlags, UsageError } from '../src/cli/shared.js'
import { createRiskcheck } from '../src/index.js'
import { resolveSmtpSettings } from '../src/sources/smtp/source-options.js'

const BAD = ['a@b.com\r\nRSET', 'notanemail', '@b.com', 'a@', 'a b@c.com', '<a@b.com>', `a@${'b'.repeat(300)}`]

describe('smtp.mailFrom', () => {
  it.each(BAD)('createRiskcheck refuses %j with a TypeError naming the option', (mailFrom) => {
    expect(() => createRiskcheck({ smtp: { mailFrom } })).toThrow(TypeError)
    expect(() => createRiskcheck({ smtp: { mailFrom } })).toThrow(/option `smtp\.mailFrom` must be/)
  })

  it('takes an address the SMTP source can send, and defaults to verify@ + heloName', async () => {
    for (const smtp of [{ mailFrom: 'bounce@example.org' }, { heloName: 'mx.example.org' }, {}]) {
      const rc = createRiskcheck({ offline: true, smtp })
      await rc.close()
    }
  })

  it('the SMTP source applies the same rule and wording', () => {
    expect(() => resolveSmtpSettings({ mailFrom: 'notanemail' })).toThrow(/option `smtp\.mailFrom` must be/)
    expect(resolveSmtpSettings({ mailFrom: '' }).mailFrom).toBe('') // the null sender <>
  })

  it('--mail-from is refused as a usage error (exit 64)', async () => {
    expect(() => optionsFromFlags({ 'mail-from': 'notanemail' })).toThrow(UsageError)
    expect(() => optionsFromFlags({ 'mail-from': 'notanemail' })).toThrow(/^--mail-from must be .*\(got "notanemail"\)$/)
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    let err = ''
    stderr.on('data', (d) => (err += d))
    const code = await runCli(['email', 'jane@corp-mail.org', '--offline', '--mail-from', 'a@b.com\r\nRSET'], { stdin: Readable.from(['']), stdout, stderr })
    expect(code).toBe(64)
    expect(err).toMatch(/^riskcheck: --mail-from must be /)
  })
})

/**
 * `smtp.heloName` (`--helo`, `RISKCHECK_HELO`) is refused at `createRiskcheck` when EHLO cannot carry it: a host name
 * is at most 253 characters, each label at most 63; without `smtp.mailFrom` it must leave room for the default MAIL
 * FROM (`verify@` + heloName, at most 254), which the SMTP source refused only at the first mailbox check.
 */
import { describe, expect, it } from 'vitest'
import { optionsFromFlags, UsageError } from '../src/cli/shared.js'
import { createRiskcheck } from '../src/index.js'
import { resolveSmtpSettings } from '../src/sources/smtp/source-options.js'

const label = (n: number, c = 'a') => c.repeat(n)
/** A host name of `length` characters made of labels of at most 63. */
function hostOf(length: number): string {
  const labels: string[] = []
  let left = length
  while (left > 64) {
    labels.push(label(63))
    left -= 64
  }
  labels.push(label(left, 'b'))
  return labels.join('.')
}

describe('smtp.heloName', () => {
  it.each([
    ['248 characters, no mailFrom', hostOf(248), {}, 'must be at most 247 characters without `smtp.mailFrom`'],
    ['253 characters, no mailFrom', hostOf(253), {}, 'must be at most 247 characters without `smtp.mailFrom`'],
    ['254 characters', hostOf(254), { mailFrom: 'bounce@example.org' }, 'at most 253 characters'],
    ['a 64-character label', `${label(64)}.example.org`, {}, 'labels are at most 63 characters (one has 64)'],
    ['an empty label', 'mx..example.org', {}, 'no empty label'],
    ['a colon', 'mx.example.org:25', {}, 'must be a host name'],
    ['a broken address literal', '[300.1.2.3]', {}, 'address literal'],
  ])('createRiskcheck refuses %s with a TypeError naming the option and the limit', (_name, heloName, extra, why) => {
    expect(() => createRiskcheck({ smtp: { heloName, ...extra } })).toThrow(TypeError)
    expect(() => createRiskcheck({ smtp: { heloName, ...extra } })).toThrow(`riskcheck: option \`smtp.heloName\` `)
    expect(() => createRiskcheck({ smtp: { heloName, ...extra } })).toThrow(why)
  })

  it.each([
    ['247 characters', hostOf(247), {}],
    ['253 characters with a mailFrom', hostOf(253), { mailFrom: 'bounce@example.org' }],
    ['63-character labels', `${label(63)}.${label(63)}.example.org`, {}],
    ['an IPv4 address literal', '[192.0.2.1]', {}],
    ['an IPv6 address literal', '[IPv6:2001:db8::1]', {}],
  ])('takes %s', async (_name, heloName, extra) => {
    const rc = createRiskcheck({ offline: true, smtp: { heloName, ...extra } })
    await rc.close()
    expect(resolveSmtpSettings({ heloName, ...extra }).heloName).toBe(heloName)
  })

  it('the SMTP source applies the same rule and wording', () => {
    expect(() => resolveSmtpSettings({ heloName: hostOf(250) })).toThrow('option `smtp.heloName` must be at most 247 characters')
    expect(() => resolveSmtpSettings({ heloName: `${label(64)}.org`, mailFrom: 'a@b.org' })).toThrow('option `smtp.heloName` must be a host name whose labels')
  })

  it('--helo is refused as a usage error', () => {
    expect(() => optionsFromFlags({ helo: `${label(64)}.org` })).toThrow(UsageError)
    expect(() => optionsFromFlags({ helo: `${label(64)}.org` })).toThrow(/^--helo must be a host name whose labels are at most 63 characters/)
  })
})

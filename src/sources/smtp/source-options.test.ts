import { describe, expect, it } from 'vitest'
import { resolveOptions } from '../../options.js'
import { SMTP_DEFAULTS } from './defaults.js'
import { resolveSmtpSettings } from './source-options.js'

describe('SMTP options', () => {
  it('one set of defaults for createRiskcheck and the source', () => {
    const o = resolveOptions({}).smtp
    const s = resolveSmtpSettings({})
    expect(o).toMatchObject({
      port: SMTP_DEFAULTS.port,
      heloName: SMTP_DEFAULTS.heloName,
      timeoutMs: SMTP_DEFAULTS.timeoutMs,
      totalTimeoutMs: 15_000,
      maxConnectionsPerHost: 2,
      maxRejectionsPerSession: 5,
      proxy: [],
    })
    expect(s).toMatchObject({
      port: o.port,
      heloName: o.heloName,
      mailFrom: o.mailFrom,
      connectTimeoutMs: o.timeoutMs,
      replyTimeoutMs: o.timeoutMs,
      totalTimeoutMs: o.totalTimeoutMs,
      maxPerHost: o.maxConnectionsPerHost,
      maxRejections: o.maxRejectionsPerSession,
      proxies: [],
    })
  })

  it('takes one proxy URL or a list (kept as given; validated at construction)', () => {
    expect(resolveOptions({ smtp: { proxy: 'socks5://p.example:1080' } }).smtp.proxy).toEqual(['socks5://p.example:1080'])
    expect(resolveOptions({ smtp: { proxy: ['socks5://a.example', 'socks5://b.example'] } }).smtp.proxy).toHaveLength(2)
  })

  it.each([
    [{ totalTimeoutMs: 0 }, /`smtp.totalTimeoutMs`/],
    [{ totalTimeoutMs: 1.5 }, /`smtp.totalTimeoutMs`/],
    [{ maxRejectionsPerSession: 0 }, /`smtp.maxRejectionsPerSession`/],
    [{ proxy: 'socks5://me:pw@proxy.example:0' }, /`smtp.proxy`/],
    [{ proxy: ['socks5://ok.example', 'ftp://x'] }, /`smtp.proxy\[1\]`/],
    [{ proxy: 42 }, /`smtp.proxy`/],
    [{ proxies: ['socks5://x'] }, /`smtp.proxies` is not an option/],
  ])('refuses smtp %j with a TypeError naming it', (smtp, message) => {
    expect(() => resolveOptions({ smtp: smtp as never })).toThrow(TypeError)
    expect(() => resolveOptions({ smtp: smtp as never })).toThrow(message)
  })

  it('the source refuses bad values of its own options', () => {
    expect(() => resolveSmtpSettings({ totalTimeoutMs: -1 })).toThrow(TypeError)
    expect(() => resolveSmtpSettings({ connectionLimitTtlMs: -1 })).toThrow(/smtp\.connectionLimitTtlMs/)
    expect(() => resolveSmtpSettings({ maxRejectionsPerSession: 0 })).toThrow(TypeError)
    expect(() => resolveSmtpSettings({ proxy: 'socks5://u:secret@h:70000' })).toThrow(/smtp\.proxy/)
    expect(() => resolveSmtpSettings({ port: 0 })).toThrow(TypeError)
    expect(() => resolveSmtpSettings({ heloName: 'bad name\r\n' })).toThrow(TypeError)
    expect(() => resolveSmtpSettings({ mailFrom: 'x\r\n@y' })).toThrow(TypeError)
  })
})

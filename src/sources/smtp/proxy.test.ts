import { describe, expect, it } from 'vitest'
import { parseSmtpProxies, parseSmtpProxyUrl } from './proxy.js'

describe('parseSmtpProxyUrl', () => {
  it('reads host, port and percent-encoded credentials; the label has no credentials', () => {
    expect(parseSmtpProxyUrl('socks5://me:p%40ss%3Aw0rd@10.0.0.5:1081', 'smtp.proxy')).toEqual({
      label: 'socks5://10.0.0.5:1081',
      host: '10.0.0.5',
      port: 1081,
      username: 'me',
      password: 'p@ss:w0rd',
    })
    expect(parseSmtpProxyUrl('socks5://proxy.example.org', 'smtp.proxy')).toMatchObject({ port: 1080, username: null, password: null })
    expect(parseSmtpProxyUrl('socks5://[::1]:1080/', 'smtp.proxy')).toMatchObject({ host: '::1', label: 'socks5://[::1]:1080' })
  })

  it.each([
    'http://me:secret@proxy.example:8080',
    'socks4://me:secret@proxy.example:1080',
    'socks5h://me:secret@proxy.example:1080',
    'socks5://me:secret@proxy.example:70000',
    'socks5://me:secret@proxy.example:1080/path',
    'socks5://me:secret@proxy.example:1080?x=1',
    'socks5://:secret@proxy.example:1080',
    'socks5://me:secret@',
    'me:secret@proxy.example:1080',
    '',
  ])('refuses %s with a TypeError naming the option and never the password', (url) => {
    let err: unknown
    try {
      parseSmtpProxyUrl(url, 'smtp.proxy[2]')
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(TypeError)
    expect((err as Error).message).toContain('`smtp.proxy[2]`')
    expect((err as Error).message).not.toContain('secret')
  })
})

describe('parseSmtpProxies', () => {
  it('takes one URL or a list; nothing means no proxy', () => {
    expect(parseSmtpProxies(undefined, 'smtp.proxy')).toEqual([])
    expect(parseSmtpProxies('socks5://a.example:1', 'smtp.proxy')).toHaveLength(1)
    expect(parseSmtpProxies(['socks5://a.example:1', 'socks5://b.example:2'], 'smtp.proxy').map((p) => p.label)).toEqual([
      'socks5://a.example:1',
      'socks5://b.example:2',
    ])
  })

  it('names the bad entry of a list', () => {
    expect(() => parseSmtpProxies(['socks5://a.example:1', 42], 'smtp.proxy')).toThrow(/`smtp.proxy\[1\]`/)
    expect(() => parseSmtpProxies({ url: 'socks5://a' }, 'smtp.proxy')).toThrow(TypeError)
  })
})

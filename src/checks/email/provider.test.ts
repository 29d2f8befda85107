import { describe, expect, it } from 'vitest'
import { detectProvider, PROVIDER_DOMAINS, PROVIDER_MX_SUFFIXES, PROVIDERS } from './provider.js'

describe('detectProvider', () => {
  it('recognises the providers from their own domains', () => {
    const cases: Array<[string, string]> = [
      ['gmail.com', 'google'],
      ['googlemail.com', 'google'],
      ['hotmail.co.uk', 'microsoft'],
      ['outlook.com', 'microsoft'],
      ['live.fr', 'microsoft'],
      ['msn.com', 'microsoft'],
      ['yahoo.com', 'yahoo'],
      ['yahoo.co.jp', 'yahoo'],
      ['ymail.com', 'yahoo'],
      ['aol.com', 'aol'],
      ['icloud.com', 'icloud'],
      ['me.com', 'icloud'],
      ['proton.me', 'proton'],
      ['pm.me', 'proton'],
      ['zoho.com', 'zoho'],
      ['yandex.ru', 'yandex'],
      ['fastmail.com', 'fastmail'],
      ['gmx.de', 'gmx'],
      ['web.de', 'webde'],
      ['mail.ru', 'mailru'],
      ['qq.com', 'tencent'],
      ['163.com', 'netease'],
      ['naver.com', 'naver'],
      ['GMAIL.COM.', 'google'],
    ]
    for (const [domain, id] of cases) expect(detectProvider(domain, []), domain).toBe(id)
  })

  it('recognises hosted mail on a custom domain from its MX hosts', () => {
    const cases: Array<[string[], string]> = [
      [['aspmx.l.google.com.', 'alt1.aspmx.l.google.com.'], 'google'],
      [['smtp.google.com'], 'google'],
      [['aspmx2.googlemail.com'], 'google'],
      [['acme-com.mail.protection.outlook.com'], 'microsoft'],
      [['mta5.am0.yahoodns.net'], 'yahoo'],
      [['mx01.mail.icloud.com'], 'icloud'],
      [['mail.protonmail.ch', 'mailsec.protonmail.ch'], 'proton'],
      [['mx.zoho.eu'], 'zoho'],
      [['mx.yandex.net'], 'yandex'],
      [['in1-smtp.messagingengine.com'], 'fastmail'],
      [['mx00.gmx.net'], 'gmx'],
      [['mxs.mail.ru'], 'mailru'],
      [['mx1.emailsrvr.com'], 'rackspace'],
      [['mx0a-00123401.pphosted.com'], 'proofpoint'],
      [['eu-smtp-inbound-1.mimecast.com'], 'mimecast'],
      [['inbound-smtp.us-east-1.amazonaws.com'], 'amazon'],
      [['route1.mx.cloudflare.net'], 'cloudflare'],
    ]
    for (const [mx, id] of cases) expect(detectProvider('acme-widgets.com', mx), mx.join(',')).toBe(id)
  })

  it('lets the MX win over the domain, and the longest suffix win among MX patterns', () => {
    // aol.com's MX is hosted by Yahoo, but the more specific AOL pattern is matched first
    expect(detectProvider('aol.com', ['mx-aol.mail.gm0.yahoodns.net'])).toBe('aol')
    expect(detectProvider('yahoo.com', ['mta7.am0.yahoodns.net'])).toBe('yahoo')
    expect(detectProvider('gmail.com', ['gmail-smtp-in.l.google.com'])).toBe('google')
    // a consumer domain name served by a different MX reports the MX's provider
    expect(detectProvider('hotmail.de', ['aspmx.l.google.com'])).toBe('google')
  })

  it('tries MX hosts in the order given and skips unknown ones', () => {
    expect(detectProvider('acme.com', ['mx.acme.com', 'backup.mail.protection.outlook.com'])).toBe('microsoft')
    expect(detectProvider('acme.com', ['acme-com.mail.protection.outlook.com', 'aspmx.l.google.com'])).toBe('microsoft')
  })

  it('matches whole labels only, never a substring', () => {
    expect(detectProvider('acme.com', ['notgoogle.com'])).toBeNull()
    expect(detectProvider('acme.com', ['google.com.evil.org'])).toBeNull()
    expect(detectProvider('acme.com', ['mx.fakeyahoodns.net'])).toBeNull()
    expect(detectProvider('gmail.com.evil.org', [])).toBeNull()
  })

  it('returns null for unknown domains and odd input, without throwing', () => {
    expect(detectProvider('acme.com', ['mx.acme.com'])).toBeNull()
    expect(detectProvider('acme.com', [])).toBeNull()
    expect(detectProvider('', [''])).toBeNull()
    expect(detectProvider(null as unknown as string, null as unknown as string[])).toBeNull()
    expect(detectProvider('gmail.com', [42 as unknown as string, 'x'.repeat(10_000)])).toBe('google')
  })
})

describe('provider table', () => {
  it('has unique ids and lower-case entries without trailing dots', () => {
    const ids = PROVIDERS.map((p) => p.id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const key of [...PROVIDER_DOMAINS.keys(), ...PROVIDER_MX_SUFFIXES.keys()]) {
      expect(key).toBe(key.toLowerCase())
      expect(key.endsWith('.')).toBe(false)
      expect(key.includes('.')).toBe(true)
    }
  })
})

import { describe, expect, it } from 'vitest'
import selectorData from '../../../data/email-auth/dkim-selectors.json' with { type: 'json' }
import { createFakeDns } from '../../../test/email-auth-fake-dns.js'
import { checkDkim, DEFAULT_DKIM_SELECTORS, DKIM_SELECTOR_LIST, parseDkimRecord } from './dkim.js'

describe('the bundled selector list', () => {
  it('has 48 unique selectors, each from a documented source list', () => {
    expect(DEFAULT_DKIM_SELECTORS).toHaveLength(48)
    expect(new Set(DEFAULT_DKIM_SELECTORS).size).toBe(48)
    const sources = Object.keys(selectorData.sources)
    for (const s of DKIM_SELECTOR_LIST) {
      expect(s.selector).toMatch(/^[a-z0-9]+$/)
      expect(s.sources.length).toBeGreaterThan(0)
      for (const src of s.sources) expect(sources).toContain(src)
    }
    expect(DEFAULT_DKIM_SELECTORS.slice(0, 3)).toEqual(['google', 'selector1', 'selector2'])
  })
})

describe('parseDkimRecord', () => {
  it('accepts key records with or without v=DKIM1', () => {
    expect(parseDkimRecord('v=DKIM1; k=rsa; p=MIIBIjAN BgkqhkiG9w0B')).toEqual({ keyType: 'rsa', publicKey: 'MIIBIjANBgkqhkiG9w0B', revoked: false })
    expect(parseDkimRecord('k=ed25519; p=11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=')).toMatchObject({ keyType: 'ed25519', revoked: false })
    expect(parseDkimRecord('p=abc')).toMatchObject({ keyType: 'rsa' })
  })

  it('recognizes revoked keys and rejects other records', () => {
    expect(parseDkimRecord('v=DKIM1; p=')).toMatchObject({ revoked: true })
    expect(parseDkimRecord('v=spf1 -all')).toBeNull()
    expect(parseDkimRecord('v=DKIM1; k=rsa')).toBeNull()
    expect(parseDkimRecord('k=rsa; v=DKIM1; p=abc')).toBeNull() // v must come first
    expect(parseDkimRecord('v=DKIM2; p=abc')).toBeNull()
  })
})

describe('checkDkim', () => {
  it('probes every selector concurrently and lists those with a key', async () => {
    const dns = createFakeDns(
      {
        'google._domainkey.example.com': { TXT: ['v=DKIM1; k=rsa; p=MIIB'] },
        's1._domainkey.example.com': { CNAME: 's1.domainkey.provider.example' },
        's1.domainkey.provider.example': { TXT: [['v=DKIM1; k=rsa; ', 'p=MIIB']] },
        'default._domainkey.example.com': { TXT: ['v=DKIM1; p='] },
        'x._domainkey.example.com': { TXT: ['not dkim'] },
      },
      { delayMs: 10 },
    )
    const r = await checkDkim(dns, 'example.com')
    expect(r).toMatchObject({ status: 'found', found: true, selectorsFound: ['google', 's1'], selectorsChecked: 48, revoked: ['default'], failed: [] })
    expect(dns.calls).toHaveLength(48)
    expect(dns.maxInFlight()).toBe(48)
  })

  it('not_found when every selector answers without a key; unknown when some failed', async () => {
    expect((await checkDkim(createFakeDns({}), 'none.example')).status).toBe('not_found')
    const r = await checkDkim(createFakeDns({ 'k1._domainkey.t.example': { behaviour: 'timeout' } }), 't.example')
    expect(r).toMatchObject({ status: 'unknown', found: false, failed: ['k1'] })
    const custom = await checkDkim(createFakeDns({ 'sel2024._domainkey.c.example': { TXT: ['p=abc'] } }), 'c.example', ['sel2024'])
    expect(custom).toMatchObject({ status: 'found', selectorsChecked: 1, selectorsFound: ['sel2024'] })
  })
})

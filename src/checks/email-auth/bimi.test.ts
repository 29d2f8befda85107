import { describe, expect, it } from 'vitest'
import { createFakeDns } from '../../../test/email-auth-fake-dns.js'
import { checkBimi, parseBimiRecord } from './bimi.js'

describe('parseBimiRecord', () => {
  it('parses l= and a=', () => {
    expect(parseBimiRecord('v=BIMI1; l=https://example.com/logo.svg; a=https://example.com/vmc.pem')).toEqual({
      logo: 'https://example.com/logo.svg',
      authority: 'https://example.com/vmc.pem',
    })
    expect(parseBimiRecord('v=BIMI1; l=; a=')).toEqual({ logo: '', authority: '' })
  })

  it('rejects records that do not start with v=BIMI1 or are malformed', () => {
    expect(parseBimiRecord('l=https://x; v=BIMI1')).toBeNull()
    expect(parseBimiRecord('v=DMARC1; p=none')).toBeNull()
    expect(parseBimiRecord('v=BIMI1; l=a; l=b')).toBeNull()
  })
})

describe('checkBimi', () => {
  const rec = 'v=BIMI1; l=https://corp.example/logo.svg; a=https://corp.example/vmc.pem'

  it('finds the record at default._bimi.<host>', async () => {
    const r = await checkBimi(createFakeDns({ 'default._bimi.corp.example': { TXT: [rec] } }), 'corp.example', 'corp.example')
    expect(r).toMatchObject({ status: 'found', found: true, record: rec, hasAuthority: true, location: 'default._bimi.corp.example' })
  })

  it('falls back to the organizational domain, asking both names at once', async () => {
    const dns = createFakeDns({ 'default._bimi.corp.example': { TXT: [rec] } }, { delayMs: 5 })
    const r = await checkBimi(dns, 'mail.corp.example', 'corp.example')
    expect(r).toMatchObject({ found: true, location: 'default._bimi.corp.example' })
    expect(dns.maxInFlight()).toBe(2)
  })

  it('none, invalid, unknown', async () => {
    expect((await checkBimi(createFakeDns({}), 'a.example', 'a.example')).status).toBe('none')
    const two = await checkBimi(createFakeDns({ 'default._bimi.b.example': { TXT: [rec, rec] } }), 'b.example', 'b.example')
    expect(two).toMatchObject({ status: 'invalid', found: false })
    const slow = await checkBimi(createFakeDns({ 'default._bimi.c.example': { behaviour: 'timeout' } }), 'c.example', 'c.example')
    expect(slow).toMatchObject({ status: 'unknown', found: false })
  })
})

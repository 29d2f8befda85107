import { describe, expect, it } from 'vitest'
import { createFakeDns, type FakeZone } from '../../../test/email-auth-fake-dns.js'
import { checkDmarc, isDmarcRecord, parseDmarcRecord, parseTagList } from './dmarc.js'

describe('parseTagList', () => {
  it('parses tag=value pairs with whitespace and a trailing ";"', () => {
    const l = parseTagList(' v = DMARC1 ;p=reject;  rua=mailto:a@example.com,mailto:b@example.com ; ')
    expect(l.order).toEqual(['v', 'p', 'rua'])
    expect(l.tags.get('rua')).toBe('mailto:a@example.com,mailto:b@example.com')
    expect(l.errors).toEqual([])
  })

  it('reports duplicates, names that are not names and pairs without "="', () => {
    expect(parseTagList('v=DMARC1; p=none; p=reject').errors).toEqual(['duplicate tag "p"'])
    expect(parseTagList('v=DMARC1; 1p=none').errors[0]).toMatch(/invalid tag name/)
    expect(parseTagList('v=DMARC1; reject').errors[0]).toMatch(/not a tag=value/)
    expect(parseTagList('x'.repeat(5000)).errors[0]).toMatch(/longer than/)
  })
})

describe('isDmarcRecord', () => {
  it('selects records starting with v=DMARC1', () => {
    expect(isDmarcRecord('v=DMARC1; p=none')).toBe(true)
    expect(isDmarcRecord('v=DMARC1')).toBe(true)
    expect(isDmarcRecord('v=dmarc1;p=none')).toBe(true)
    expect(isDmarcRecord('v=DMARC10; p=none')).toBe(false)
    expect(isDmarcRecord('p=none; v=DMARC1')).toBe(false)
    expect(isDmarcRecord('v=spf1 -all')).toBe(false)
  })
})

describe('parseDmarcRecord', () => {
  it('parses p, sp, rua, pct, adkim, aspf with defaults', () => {
    expect(parseDmarcRecord('v=DMARC1; p=reject')).toMatchObject({
      valid: true, policy: 'reject', subdomainPolicy: null, rua: null, pct: 100, adkim: 'r', aspf: 'r',
    })
    expect(parseDmarcRecord('v=DMARC1; p=Quarantine; sp=none; pct=25; adkim=s; aspf=s; rua=mailto:d@example.com')).toMatchObject({
      valid: true, policy: 'quarantine', subdomainPolicy: 'none', pct: 25, adkim: 's', aspf: 's', ruaUris: ['mailto:d@example.com'],
    })
  })

  it('an invalid or missing p without a usable rua makes receivers ignore the record (RFC 7489 §6.6.3)', () => {
    expect(parseDmarcRecord('v=DMARC1; p=bob')).toMatchObject({ valid: false, policy: null, pct: 100 })
    expect(parseDmarcRecord('v=DMARC1; p=bob').errors).toEqual(['invalid p value "bob"'])
    expect(parseDmarcRecord('v=DMARC1; pct=100').errors).toEqual(['the p tag is missing'])
    expect(parseDmarcRecord('v=DMARC1; p=reject; sp=sometimes').valid).toBe(false)
  })

  it('an invalid p with a valid rua acts as p=none', () => {
    const r = parseDmarcRecord('v=DMARC1; p=bob; sp=reject; rua=mailto:d@example.com')
    expect(r).toMatchObject({ valid: true, policy: 'none', subdomainPolicy: null })
    expect(r.errors).toEqual(['invalid p value "bob"'])
  })

  it('bad optional values are warnings and fall back to defaults', () => {
    const r = parseDmarcRecord('v=DMARC1; p=reject; pct=500; adkim=x; fo=9; rf=iodef; ri=soon; rua=ftp://x; foo=bar')
    expect(r).toMatchObject({ valid: true, pct: 100, adkim: 'r', ruaUris: [] })
    for (const tag of ['pct', 'rua', 'adkim', 'fo', 'rf', 'ri']) {
      expect(r.warnings.some((w) => w.includes(`${tag} `) || w.startsWith(`invalid ${tag}`))).toBe(true)
    }
    expect(r.warnings).toHaveLength(7)
    expect(r.warnings).toContain('unknown tag "foo" ignored')
  })

  it('duplicate tags invalidate the record', () => {
    expect(parseDmarcRecord('v=DMARC1; p=none; p=reject').valid).toBe(false)
  })
})

describe('checkDmarc', () => {
  const org: FakeZone = {
    '_dmarc.corp.example': { TXT: ['v=DMARC1; p=reject; sp=quarantine; rua=mailto:d@corp.example'] },
  }

  it('uses the record at _dmarc.<host>', async () => {
    const zone: FakeZone = { ...org, '_dmarc.eu.corp.example': { TXT: ['v=DMARC1; p=none', 'some other txt'] } }
    const r = await checkDmarc(createFakeDns(zone), 'eu.corp.example', 'corp.example')
    expect(r).toMatchObject({ status: 'ok', inherited: false, location: '_dmarc.eu.corp.example', policy: 'none', effectivePolicy: 'none', pct: 100 })
  })

  it('falls back to the organizational domain, where sp applies to the subdomain', async () => {
    const dns = createFakeDns(org, { delayMs: 10 })
    const r = await checkDmarc(dns, 'eu.corp.example', 'corp.example')
    expect(r).toMatchObject({
      status: 'ok', found: true, inherited: true, location: '_dmarc.corp.example',
      policy: 'reject', subdomainPolicy: 'quarantine', effectivePolicy: 'quarantine', rua: 'mailto:d@corp.example', ruaValid: true,
    })
    // both names are asked at once
    expect(dns.calls).toHaveLength(2)
    expect(dns.maxInFlight()).toBe(2)
  })

  it('asks one name when the host is the organizational domain', async () => {
    const dns = createFakeDns(org)
    const r = await checkDmarc(dns, 'corp.example', 'corp.example')
    expect(r).toMatchObject({ status: 'ok', inherited: false, effectivePolicy: 'reject' })
    expect(dns.calls).toHaveLength(1)
  })

  it('several records: invalid, no policy and no fallback', async () => {
    const zone: FakeZone = { ...org, '_dmarc.eu.corp.example': { TXT: ['v=DMARC1; p=none', 'v=DMARC1; p=reject'] } }
    const r = await checkDmarc(createFakeDns(zone), 'eu.corp.example', 'corp.example')
    expect(r).toMatchObject({ status: 'invalid', found: true, inherited: false, policy: null, effectivePolicy: null, pct: null })
  })

  it('an ignored record (invalid p) is reported as invalid', async () => {
    const r = await checkDmarc(createFakeDns({ '_dmarc.x.example': { TXT: ['v=DMARC1; p=bob'] } }), 'x.example', 'x.example')
    expect(r).toMatchObject({ status: 'invalid', found: true, record: 'v=DMARC1; p=bob', policy: null })
    expect(r.errors).toEqual(['invalid p value "bob"'])
  })

  it('no record anywhere is none', async () => {
    const r = await checkDmarc(createFakeDns({ '_dmarc.y.example': { TXT: ['v=spf1 -all'] } }), 'y.example', 'y.example')
    expect(r).toMatchObject({ status: 'none', found: false, record: null, pct: null })
  })

  it('DNS failures are temperror, never "no DMARC"', async () => {
    const hostFails = await checkDmarc(createFakeDns({ ...org, '_dmarc.eu.corp.example': { behaviour: 'timeout' } }), 'eu.corp.example', 'corp.example')
    expect(hostFails.status).toBe('temperror')
    const orgFails = await checkDmarc(createFakeDns({ '_dmarc.corp.example': { behaviour: 'servfail' } }), 'eu.corp.example', 'corp.example')
    expect(orgFails.status).toBe('temperror')
    // the org domain failing does not matter when the host has its own record
    const hostHas = await checkDmarc(
      createFakeDns({ '_dmarc.corp.example': { behaviour: 'servfail' }, '_dmarc.eu.corp.example': { TXT: ['v=DMARC1; p=reject'] } }),
      'eu.corp.example',
      'corp.example',
    )
    expect(hostHas.status).toBe('ok')
  })
})

import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { MAX_DOMAIN_INPUT_LENGTH, getOrganizationalDomain, parseDomainInput } from './domain-input.js'

describe('parseDomainInput', () => {
  it.each([
    ['example.com', 'example.com', 'example.com'],
    ['  EXAMPLE.COM.  ', 'example.com', 'example.com'],
    ['example.com..', 'example.com', 'example.com'],
    ['www.Example.co.uk', 'www.example.co.uk', 'example.co.uk'],
    ['x@eu.corp.com', 'eu.corp.com', 'corp.com'],
    ['"quoted"@a.example.org', 'a.example.org', 'example.org'],
    ['mailto:someone@mail.example.net', 'mail.example.net', 'example.net'],
    ['https://user:pw@Bücher.DE:8080/path?q=1#f', 'xn--bcher-kva.de', 'xn--bcher-kva.de'],
    ['http://example.com./', 'example.com', 'example.com'],
    ['example.com/path', 'example.com', 'example.com'],
    ['example.com:8443', 'example.com', 'example.com'],
    ['//cdn.example.com/x.js', 'cdn.example.com', 'example.com'],
    ['пример.рф', 'xn--e1afmkfd.xn--p1ai', 'xn--e1afmkfd.xn--p1ai'],
    ['ＥＸＡＭＰＬＥ．com', 'example.com', 'example.com'],
    ['foo.example.test', 'foo.example.test', 'example.test'],
    ['a.b.c.user.github.io', 'a.b.c.user.github.io', 'github.io'],
    ['www.exa_mple.com', 'www.exa_mple.com', 'exa_mple.com'],
  ])('%j → host %s, registrable %s', (input, host, registrable) => {
    expect(parseDomainInput(input)).toEqual({ host, registrableDomain: registrable, isIp: false })
  })

  it('keeps hosts without a registrable domain (single label, bare public suffix)', () => {
    expect(parseDomainInput('localhost')).toEqual({ host: 'localhost', registrableDomain: null, isIp: false })
    expect(parseDomainInput('user@localhost')).toEqual({ host: 'localhost', registrableDomain: null, isIp: false })
    expect(parseDomainInput('co.uk')).toEqual({ host: 'co.uk', registrableDomain: null, isIp: false })
  })

  it.each([
    [''],
    ['   '],
    ['not a domain'],
    ['a..b.com'],
    ['-bad-.com'],
    ['.example.com'],
    ['xn--zz.com'],
    ['http://exa%20mple.com'],
    ['x@eu.corp.com>'],
    ['@'],
    ['1.2.3.999'],
    ['a.123'],
    ['a'.repeat(64) + '.com'],
    [('a'.repeat(60) + '.').repeat(5) + 'com'],
    ['\u0000'],
  ])('%j has no parsable host', (input) => {
    expect(parseDomainInput(input)).toBeNull()
  })

  it('returns null for non-strings', () => {
    for (const v of [undefined, null, 42, {}, ['example.com'], true, Symbol('x')]) {
      expect(parseDomainInput(v)).toBeNull()
    }
  })

  it('caps the length before parsing', () => {
    const long = 'a.'.repeat(MAX_DOMAIN_INPUT_LENGTH) + 'com'
    expect(parseDomainInput(long)).toBeNull()
    const padded = ' '.repeat(MAX_DOMAIN_INPUT_LENGTH) + 'example.com'
    expect(parseDomainInput(padded)).toBeNull()
  })

  it('rejects IP-literal hosts unless allowIp is set', () => {
    for (const s of ['1.2.3.4', 'http://1.2.3.4:80/x', 'x@[1.2.3.4]', 'http://[::1]:80/', '0x7f.1']) {
      expect(parseDomainInput(s)).toBeNull()
    }
    expect(parseDomainInput('http://1.2.3.4:80/x', { allowIp: true })).toEqual({
      host: '1.2.3.4',
      registrableDomain: null,
      isIp: true,
    })
    expect(parseDomainInput('http://[2001:DB8::1]/', { allowIp: true })).toEqual({
      host: '2001:db8::1',
      registrableDomain: null,
      isIp: true,
    })
    // a legacy numeric host is normalized to its dotted-quad form
    expect(parseDomainInput('0x7f.1', { allowIp: true })).toEqual({
      host: '127.0.0.1',
      registrableDomain: null,
      isIp: true,
    })
  })

  it('never throws and always yields a valid ASCII host (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.domain(), fc.webUrl(), fc.emailAddress()), (s) => {
        const r = parseDomainInput(s)
        if (r === null) return
        expect(r.isIp).toBe(false)
        expect(r.host).toBe(r.host.toLowerCase())
        expect(r.host.endsWith('.')).toBe(false)
        expect(r.host.length).toBeLessThanOrEqual(253)
        for (let i = 0; i < r.host.length; i++) expect(r.host.charCodeAt(i)).toBeLessThan(128)
        if (r.registrableDomain !== null) expect(r.host.endsWith(r.registrableDomain)).toBe(true)
      }),
      { numRuns: 500 },
    )
  })

  it('accepts every generated domain name', () => {
    fc.assert(
      fc.property(fc.domain(), (d) => {
        const r = parseDomainInput(d)
        expect(r?.host).toBe(d.toLowerCase())
      }),
      { numRuns: 300 },
    )
  })
})

describe('getOrganizationalDomain', () => {
  it('returns the registrable domain', () => {
    expect(getOrganizationalDomain('eu.corp.com')).toBe('corp.com')
    expect(getOrganizationalDomain('a.b.example.co.uk')).toBe('example.co.uk')
    expect(getOrganizationalDomain('corp.com')).toBe('corp.com')
    expect(getOrganizationalDomain('mail.bücher.de')).toBe('xn--bcher-kva.de')
  })
  it('returns null without one', () => {
    expect(getOrganizationalDomain('co.uk')).toBeNull()
    expect(getOrganizationalDomain('localhost')).toBeNull()
    expect(getOrganizationalDomain('192.0.2.1')).toBeNull()
    expect(getOrganizationalDomain('')).toBeNull()
  })
})

import { isIP } from 'node:net'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { formatIpv6Words, parseCidr, parseIp } from './parse.js'

describe('parseIp — IPv4', () => {
  it('accepts strict dotted quads and gives the unsigned value', () => {
    expect(parseIp('192.0.2.1')).toEqual({ version: 4, address: '192.0.2.1', value: 0xc0000201, mapped: false })
    expect(parseIp('0.0.0.0')).toMatchObject({ value: 0 })
    expect(parseIp('255.255.255.255')).toMatchObject({ value: 0xffffffff })
    expect(parseIp('  8.8.8.8\t')).toMatchObject({ address: '8.8.8.8' })
  })

  it.each([
    ['010.0.0.1', 'octal-looking (leading zero)'],
    ['01.2.3.4', 'leading zero'],
    ['1.2.3.04', 'leading zero in the last part'],
    ['0x7f.0.0.1', 'hex part'],
    ['0x7f000001', 'hex number'],
    ['2130706433', 'single decimal'],
    ['127.1', 'short form'],
    ['1.2.3', 'three parts'],
    ['1.2.3.4.5', 'five parts'],
    ['256.1.1.1', 'part over 255'],
    ['1.2.3.1000', 'four digits'],
    ['1..2.3', 'empty part'],
    ['1.2.3.4.', 'trailing dot'],
    ['.1.2.3.4', 'leading dot'],
    ['1.2.3.-4', 'sign'],
    ['1.2.3.+4', 'sign'],
    ['1.2.3.4/24', 'CIDR'],
    ['1.2.3.4:80', 'port'],
    ['１.２.３.４', 'full-width digits'],
    ['1.2.3.٤', 'Arabic-Indic digit'],
    ['1 .2.3.4', 'inner space'],
    ['', 'empty'],
    ['   ', 'blank'],
  ])('rejects %j (%s)', (s) => {
    expect(parseIp(s)).toBeNull()
  })

  it('ignores what String.prototype.trim removes around the address (as the email and phone lookups), nothing inside', () => {
    for (const pad of ['\ufeff', '\u00a0', '\u2028', '\u3000', '\u2009', ' \t\r\n\v\f']) {
      expect(parseIp(`${pad}8.8.8.8`), JSON.stringify(pad)).toMatchObject({ address: '8.8.8.8' })
      expect(parseIp(`8.8.8.8${pad}`), JSON.stringify(pad)).toMatchObject({ address: '8.8.8.8' })
      expect(parseIp(`${pad}2001:DB8::1${pad}`), JSON.stringify(pad)).toMatchObject({ address: '2001:db8::1' })
      expect(parseIp(`8.8.${pad}8.8`), JSON.stringify(pad)).toBeNull()
      expect(parseIp(pad)).toBeNull()
    }
    // not in trim's set: still refused
    for (const c of ['\u0085', '\u200b', '\u001f']) expect(parseIp(`${c}8.8.8.8`), JSON.stringify(c)).toBeNull()
    fc.assert(
      fc.property(fc.string({ maxLength: 70, unit: 'binary' }), (s) => {
        expect(parseIp(s)).toEqual(s.length > 64 ? null : parseIp(s.trim()))
      }),
      { numRuns: 2000 },
    )
  })

  it('is at least as strict as node:net isIP for IPv4', () => {
    for (const s of ['01.2.3.4', '1.2.3', '0x1.2.3.4', '1.2.3.256']) expect(isIP(s)).toBe(0)
  })
})

describe('parseIp — IPv6', () => {
  it('canonicalizes per RFC 5952', () => {
    expect(parseIp('2001:DB8:0:0:0:0:0:1')).toMatchObject({ version: 6, address: '2001:db8::1' })
    expect(parseIp('2001:0db8:0000:0000:0001:0000:0000:0001')?.address).toBe('2001:db8::1:0:0:1')
    expect(parseIp('2001:db8:0:1:1:1:1:1')?.address).toBe('2001:db8:0:1:1:1:1:1') // a single zero group is not compressed
    expect(parseIp('0:0:0:0:0:0:0:0')?.address).toBe('::')
    expect(parseIp('::1')?.address).toBe('::1')
    expect(parseIp('1::')?.address).toBe('1::')
    expect(parseIp('1:0:0:2:0:0:0:3')?.address).toBe('1:0:0:2::3')
    expect(parseIp('::1.2.3.4')?.address).toBe('::102:304') // IPv4-compatible (deprecated) stays IPv6
    expect(parseIp('64:ff9b::192.0.2.33')?.address).toBe('64:ff9b::c000:221')
  })

  it('gives the four 32-bit words', () => {
    const ip = parseIp('2001:db8:1:2:3:4:5:6')
    expect(ip?.version).toBe(6)
    if (ip?.version === 6) expect(ip.words).toEqual([0x20010db8, 0x00010002, 0x00030004, 0x00050006])
  })

  it('parses IPv4-mapped addresses as IPv4', () => {
    expect(parseIp('::ffff:192.0.2.1')).toEqual({ version: 4, address: '192.0.2.1', value: 0xc0000201, mapped: true })
    expect(parseIp('::FFFF:c000:201')).toMatchObject({ version: 4, address: '192.0.2.1', mapped: true })
    expect(parseIp('0:0:0:0:0:ffff:10.0.0.1')).toMatchObject({ version: 4, address: '10.0.0.1' })
  })

  it.each([
    ['fe80::1%eth0', 'zone id'],
    ['fe80::1%25eth0', 'URL-encoded zone id'],
    ['[::1]', 'brackets'],
    ['[::1]:80', 'brackets and port'],
    ['2001:db8::/32', 'CIDR'],
    ['1:2:3:4:5:6:7:8:9', 'nine groups'],
    ['1:2:3:4:5:6:7', 'seven groups without ::'],
    ['1::2::3', 'two ::'],
    [':::', 'triple colon'],
    ['1:::2', 'triple colon inside'],
    [':1:2:3:4:5:6:7', 'leading single colon'],
    ['1:2:3:4:5:6:7:', 'trailing single colon'],
    ['12345::1', 'five hex digits'],
    ['g::1', 'not hex'],
    ['::ffff:01.2.3.4', 'leading zero in embedded IPv4'],
    ['::1.2.3', 'short embedded IPv4'],
    ['1.2.3.4::', 'IPv4 not last'],
    ['::1.2.3.4:5', 'IPv4 in the middle'],
    ['1:2:3:4:5:6:7:1.2.3.4', 'too many groups with IPv4'],
    ['::ffff:1.2.3.4%1', 'zone id after mapped'],
  ])('rejects %j (%s)', (s) => {
    expect(parseIp(s)).toBeNull()
  })

  it('rejects non-strings and over-long input without throwing', () => {
    for (const v of [undefined, null, 42, {}, [], ['1.2.3.4'], Symbol('x')]) expect(parseIp(v)).toBeNull()
    expect(parseIp(`${' '.repeat(60)}1.2.3.4`)).toBeNull() // 67 characters
    expect(parseIp('1'.repeat(100_000))).toBeNull()
  })

  it('round-trips its own canonical text', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: 4, maxLength: 4 }), (words) => {
        const text = formatIpv6Words(words)
        const ip = parseIp(text)
        expect(ip).not.toBeNull()
        if (ip?.version === 6) {
          expect([...ip.words]).toEqual(words)
          expect(ip.address).toBe(text)
        } else {
          // ::ffff:0:0/96 parses as IPv4
          expect(words.slice(0, 3)).toEqual([0, 0, 0xffff])
        }
      }),
      { numRuns: 500 },
    )
  })

  it('agrees with node:net on what is an address (apart from zone ids)', () => {
    fc.assert(
      fc.property(fc.ipV6(), (s) => {
        expect(parseIp(s)).not.toBeNull()
      }),
      { numRuns: 300 },
    )
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9a-fA-F:.]{0,45}$/), (s) => {
        if (parseIp(s) !== null) expect(isIP(s)).not.toBe(0)
      }),
      { numRuns: 2000 },
    )
  })
})

describe('parseCidr', () => {
  it('parses IPv4 and IPv6 networks and bare addresses', () => {
    expect(parseCidr('192.0.2.0/24')).toEqual({ version: 4, first: 0xc0000200, last: 0xc00002ff, prefix: 24 })
    expect(parseCidr('10.1.2.3/8')).toMatchObject({ first: 0x0a000000, last: 0x0affffff })
    expect(parseCidr('1.2.3.4')).toMatchObject({ prefix: 32, first: 0x01020304, last: 0x01020304 })
    expect(parseCidr('0.0.0.0/0')).toMatchObject({ first: 0, last: 0xffffffff })
    expect(parseCidr('2001:db8::/32')).toEqual({
      version: 6,
      first: [0x20010db8, 0, 0, 0],
      last: [0x20010db8, 0xffffffff, 0xffffffff, 0xffffffff],
      prefix: 32,
    })
    expect(parseCidr('2001:db8::1')).toMatchObject({ prefix: 128 })
    expect(parseCidr('::ffff:10.0.0.0/104')).toMatchObject({ version: 4, prefix: 8, first: 0x0a000000 })
  })

  it('rejects bad prefixes', () => {
    for (const s of ['1.2.3.4/33', '1.2.3.4/', '1.2.3.4/08', '1.2.3.4/a', '2001:db8::/129', '::ffff:1.2.3.4/95', '1.2.3.4/24/1'])
      expect(parseCidr(s)).toBeNull()
  })
})

import { describe, expect, it } from 'vitest'
import { getEmbeddedIpv4, getSpecialPurposeRange, isSpecialPurposeAddress } from './bogon.js'
import { parseIp, type ParsedIp } from './parse.js'

const p = (s: string): ParsedIp => {
  const ip = parseIp(s)
  if (!ip) throw new Error(`test input is not an IP: ${s}`)
  return ip
}

describe('special-purpose IPv4 (IANA registry)', () => {
  it.each([
    ['0.1.2.3', '0.0.0.0/8'],
    ['10.255.0.1', '10.0.0.0/8'],
    ['100.64.0.1', '100.64.0.0/10'],
    ['100.127.255.255', '100.64.0.0/10'],
    ['127.0.0.1', '127.0.0.0/8'],
    ['169.254.169.254', '169.254.0.0/16'],
    ['172.16.0.1', '172.16.0.0/12'],
    ['172.31.255.255', '172.16.0.0/12'],
    ['192.0.0.1', '192.0.0.0/29'],
    ['192.0.0.8', '192.0.0.8/32'],
    ['192.0.0.100', '192.0.0.0/24'],
    ['192.0.0.170', '192.0.0.170/31'],
    ['192.0.2.55', '192.0.2.0/24'],
    ['192.88.99.1', '192.88.99.0/24'],
    ['192.168.1.1', '192.168.0.0/16'],
    ['198.18.0.1', '198.18.0.0/15'],
    ['198.19.255.255', '198.18.0.0/15'],
    ['198.51.100.7', '198.51.100.0/24'],
    ['203.0.113.200', '203.0.113.0/24'],
    ['224.0.0.251', '224.0.0.0/4'],
    ['239.255.255.250', '224.0.0.0/4'],
    ['240.0.0.1', '240.0.0.0/4'],
    ['255.255.255.255', '255.255.255.255/32'],
  ])('%s is special (%s)', (ip, cidr) => {
    expect(getSpecialPurposeRange(p(ip))?.cidr).toBe(cidr)
    expect(isSpecialPurposeAddress(ip)).toBe(true)
  })

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '100.63.255.255', // just below CGNAT
    '100.128.0.0', // just above CGNAT
    '172.15.255.255',
    '172.32.0.0',
    '192.0.0.9', // PCP anycast: globally reachable
    '192.0.0.10', // TURN anycast: globally reachable
    '192.31.196.1', // AS112-v4: globally reachable
    '192.52.193.1', // AMT: globally reachable
    '192.175.48.1', // AS112 direct delegation: globally reachable
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
  ])('%s is globally reachable', (ip) => {
    expect(getSpecialPurposeRange(p(ip))).toBeNull()
    expect(isSpecialPurposeAddress(ip)).toBe(false)
  })

  it('IPv4-mapped IPv6 is judged as its IPv4 address', () => {
    expect(isSpecialPurposeAddress('::ffff:127.0.0.1')).toBe(true)
    expect(isSpecialPurposeAddress('::ffff:10.1.2.3')).toBe(true)
    expect(isSpecialPurposeAddress('::ffff:8.8.8.8')).toBe(false)
    expect(isSpecialPurposeAddress('::ffff:c0a8:101')).toBe(true)
  })
})

describe('special-purpose IPv6 (IANA registry)', () => {
  it.each([
    ['::', '::/128'],
    ['::1', '::1/128'],
    ['::1.2.3.4', '::/3'], // IPv4-compatible (deprecated)
    ['64:ff9b:1::1', '64:ff9b:1::/48'],
    ['100::1', '100::/64'],
    ['100:0:0:1::1', '100:0:0:1::/64'],
    ['2001:2::1', '2001:2::/48'],
    ['2001:10::1', '2001:10::/28'],
    ['2001:100::1', '2001::/23'],
    ['2001:db8::1', '2001:db8::/32'],
    ['3fff::1', '3fff::/20'],
    ['5f00::1', '5f00::/16'],
    ['fc00::1', 'fc00::/7'],
    ['fd12:3456::1', 'fc00::/7'],
    ['fe80::1', 'fe80::/10'],
    ['fec0::1', 'fec0::/10'],
    ['ff02::1', 'ff00::/8'],
    ['4000::1', '4000::/2'],
    ['8000::1', '8000::/1'],
  ])('%s is special (%s)', (ip, cidr) => {
    expect(getSpecialPurposeRange(p(ip))?.cidr).toBe(cidr)
  })

  it.each([
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '2001:4860:4860::8888',
    '2001:1::1', // PCP anycast
    '2001:1::3', // DNS-SD SRP anycast
    '2001:3::1', // AMT
    '2001:4:112::1', // AS112-v6
    '2001:20::1', // ORCHIDv2
    '2001:30::1', // drone remote ID
    '2620:4f:8000::1', // AS112 direct delegation
    '3fff:1000::1', // just outside 3fff::/20
  ])('%s is globally reachable', (ip) => {
    expect(getSpecialPurposeRange(p(ip))).toBeNull()
  })
})

describe('transition forms carry an IPv4 address', () => {
  it('6to4 (2002::/16) of private space is special, of public space is not', () => {
    expect(getSpecialPurposeRange(p('2002:c0a8:101::1'))).toMatchObject({ cidr: '192.168.0.0/16', embedded: '192.168.1.1' })
    expect(getSpecialPurposeRange(p('2002:0a00:0001::'))).toMatchObject({ cidr: '10.0.0.0/8', embedded: '10.0.0.1' })
    expect(getSpecialPurposeRange(p('2002:808:808::1'))).toBeNull()
  })

  it('NAT64 (64:ff9b::/96) of private space is special', () => {
    expect(getSpecialPurposeRange(p('64:ff9b::10.0.0.1'))).toMatchObject({ cidr: '10.0.0.0/8', embedded: '10.0.0.1' })
    expect(getSpecialPurposeRange(p('64:ff9b::7f00:1'))).toMatchObject({ cidr: '127.0.0.0/8' })
    expect(getSpecialPurposeRange(p('64:ff9b::8.8.8.8'))).toBeNull()
  })

  it('Teredo (2001::/32): the server and the (complemented) client address are judged', () => {
    // RFC 4380 example: server 65.54.227.120, client 192.0.2.45 (obfuscated as 3fff:fdd2) → documentation range
    expect(getSpecialPurposeRange(p('2001:0:4136:e378:8000:63bf:3fff:fdd2'))).toMatchObject({ cidr: '192.0.2.0/24', embedded: '192.0.2.45' })
    // client 10.0.0.1 → ~0x0a000001 = f5ff:fffe
    expect(getSpecialPurposeRange(p('2001:0:4136:e378:8000:63bf:f5ff:fffe'))).toMatchObject({ cidr: '10.0.0.0/8' })
    // client 8.8.8.8 → f7f7:f7f7, public server → fine
    expect(getSpecialPurposeRange(p('2001:0:4136:e378:8000:63bf:f7f7:f7f7'))).toBeNull()
    // server in private space
    expect(getSpecialPurposeRange(p('2001:0:a00:1:8000:63bf:f7f7:f7f7'))).toMatchObject({ cidr: '10.0.0.0/8', embedded: '10.0.0.1' })
  })

  it('getEmbeddedIpv4 extracts the addresses', () => {
    const w = (s: string) => {
      const ip = p(s)
      if (ip.version !== 6) throw new Error('v6 expected')
      return ip.words
    }
    expect(getEmbeddedIpv4(w('2002:c000:0201::'))).toEqual([0xc0000201])
    expect(getEmbeddedIpv4(w('64:ff9b::c000:201'))).toEqual([0xc0000201])
    expect(getEmbeddedIpv4(w('2001:0:4136:e378:8000:63bf:3fff:fdd2'))).toEqual([0x4136e378, 0xc000022d])
    expect(getEmbeddedIpv4(w('2606:4700::1'))).toEqual([])
  })
})

describe('isSpecialPurposeAddress fails closed', () => {
  it.each(['not-an-ip', '', '127.1', '0x7f000001', '010.0.0.1', 'fe80::1%eth0', '[::1]'])('%j → true', (s) => {
    expect(isSpecialPurposeAddress(s)).toBe(true)
  })
})

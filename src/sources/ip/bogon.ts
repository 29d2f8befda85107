/**
 * Special-purpose ("bogon") addresses: the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and the
 * RFCs each entry cites), multicast, unallocated IPv6 outside 2000::/3, and the transition forms that carry an IPv4
 * address. What counts as special: docs/decisions.md, "IP checks" → "special-purpose addresses".
 */
import { formatIpv4, parseIp, type ParsedIp } from './parse.js'

/** Why an address is special: the registry block it falls in. */
export interface SpecialPurposeRange {
  /** the block, e.g. `10.0.0.0/8` */
  cidr: string
  /** the registry name, e.g. `Private-Use` */
  name: string
  /** the RFC that defines it, e.g. `RFC 1918` */
  rfc: string
  /** for transition forms: the embedded IPv4 address that made it special */
  embedded?: string
}

interface V4Entry {
  base: number
  mask: number
  prefix: number
  name: string
  rfc: string
  /** true: globally reachable exception inside a special block */
  reachable: boolean
}

const v4 = (cidr: string, name: string, rfc: string, reachable = false): V4Entry => {
  const [a, p] = cidr.split('/') as [string, string]
  const prefix = Number(p)
  const ip = parseIp(a)
  if (!ip || ip.version !== 4) throw new Error(`bad table entry ${cidr}`)
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0
  return { base: ip.value, mask, prefix, name, rfc, reachable }
}

/** IPv4 special-purpose blocks (IANA registry + multicast), most specific first where they nest. */
const V4_TABLE: readonly V4Entry[] = [
  v4('192.0.0.9/32', 'Port Control Protocol Anycast', 'RFC 7723', true),
  v4('192.0.0.10/32', 'Traversal Using Relays around NAT Anycast', 'RFC 8155', true),
  v4('192.0.0.0/29', 'IPv4 Service Continuity Prefix', 'RFC 7335'),
  v4('192.0.0.8/32', 'IPv4 dummy address', 'RFC 7600'),
  v4('192.0.0.170/31', 'NAT64/DNS64 Discovery', 'RFC 8880'),
  v4('192.0.0.0/24', 'IETF Protocol Assignments', 'RFC 6890'),
  v4('0.0.0.0/8', '"This network"', 'RFC 791'),
  v4('10.0.0.0/8', 'Private-Use', 'RFC 1918'),
  v4('100.64.0.0/10', 'Shared Address Space', 'RFC 6598'),
  v4('127.0.0.0/8', 'Loopback', 'RFC 1122'),
  v4('169.254.0.0/16', 'Link Local', 'RFC 3927'),
  v4('172.16.0.0/12', 'Private-Use', 'RFC 1918'),
  v4('192.0.2.0/24', 'Documentation (TEST-NET-1)', 'RFC 5737'),
  v4('192.88.99.0/24', 'Deprecated (6to4 Relay Anycast)', 'RFC 7526'),
  v4('192.168.0.0/16', 'Private-Use', 'RFC 1918'),
  v4('198.18.0.0/15', 'Benchmarking', 'RFC 2544'),
  v4('198.51.100.0/24', 'Documentation (TEST-NET-2)', 'RFC 5737'),
  v4('203.0.113.0/24', 'Documentation (TEST-NET-3)', 'RFC 5737'),
  v4('224.0.0.0/4', 'Multicast', 'RFC 5771'),
  v4('255.255.255.255/32', 'Limited Broadcast', 'RFC 919'),
  v4('240.0.0.0/4', 'Reserved', 'RFC 1112'),
]

interface V6Entry {
  base: readonly [number, number, number, number]
  mask: readonly [number, number, number, number]
  name: string
  rfc: string
  reachable: boolean
  /** how to find an embedded IPv4 address, if the block carries one */
  embed?: 'nat64' | '6to4' | 'teredo'
  cidr: string
}

const v6 = (cidr: string, name: string, rfc: string, reachable = false, embed?: V6Entry['embed']): V6Entry => {
  const [a, p] = cidr.split('/') as [string, string]
  const prefix = Number(p)
  const ip = parseIp(a)
  if (!ip || ip.version !== 6) throw new Error(`bad table entry ${cidr}`)
  const mask: number[] = []
  const base: number[] = []
  for (let i = 0; i < 4; i++) {
    const bits = Math.min(32, Math.max(0, prefix - 32 * i))
    const m = bits === 0 ? 0 : bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0
    mask.push(m)
    base.push(((ip.words[i] as number) & m) >>> 0)
  }
  const e: V6Entry = {
    base: base as unknown as V6Entry['base'],
    mask: mask as unknown as V6Entry['mask'],
    name,
    rfc,
    reachable,
    cidr,
  }
  if (embed) e.embed = embed
  return e
}

/** IPv6 special-purpose blocks, most specific first where they nest. Transition blocks carry `embed`. */
const V6_TABLE: readonly V6Entry[] = [
  v6('::/128', 'Unspecified Address', 'RFC 4291'),
  v6('::1/128', 'Loopback Address', 'RFC 4291'),
  v6('64:ff9b:1::/48', 'IPv4-IPv6 Translat. (local use)', 'RFC 8215'),
  v6('64:ff9b::/96', 'IPv4-IPv6 Translat.', 'RFC 6052', true, 'nat64'),
  v6('100::/64', 'Discard-Only Address Block', 'RFC 6666'),
  v6('100:0:0:1::/64', 'Dummy IPv6 Prefix', 'RFC 9780'),
  v6('2001:1::1/128', 'Port Control Protocol Anycast', 'RFC 7723', true),
  v6('2001:1::2/128', 'Traversal Using Relays around NAT Anycast', 'RFC 8155', true),
  v6('2001:1::3/128', 'DNS-SD Service Registration Protocol Anycast', 'RFC 9665', true),
  v6('2001:2::/48', 'Benchmarking', 'RFC 5180'),
  v6('2001:3::/32', 'AMT', 'RFC 7450', true),
  v6('2001:4:112::/48', 'AS112-v6', 'RFC 7535', true),
  v6('2001:10::/28', 'Deprecated (previously ORCHID)', 'RFC 4843'),
  v6('2001:20::/28', 'ORCHIDv2', 'RFC 7343', true),
  v6('2001:30::/28', 'Drone Remote ID Protocol Entity Tags (DETs) Prefix', 'RFC 9374', true),
  v6('2001::/32', 'TEREDO', 'RFC 4380', true, 'teredo'),
  v6('2001::/23', 'IETF Protocol Assignments', 'RFC 2928'),
  v6('2001:db8::/32', 'Documentation', 'RFC 3849'),
  v6('2002::/16', '6to4', 'RFC 3056', true, '6to4'),
  v6('2620:4f:8000::/48', 'Direct Delegation AS112 Service', 'RFC 7534', true),
  v6('3fff::/20', 'Documentation', 'RFC 9637'),
  v6('5f00::/16', 'Segment Routing (SRv6) SIDs', 'RFC 9602'),
  v6('fc00::/7', 'Unique-Local', 'RFC 4193'),
  v6('fe80::/10', 'Link-Local Unicast', 'RFC 4291'),
  v6('fec0::/10', 'Deprecated (site-local)', 'RFC 3879'),
  v6('ff00::/8', 'Multicast', 'RFC 4291'),
  // Everything outside 2000::/3 not listed above is "Reserved by IETF" in the IPv6 Address Space registry
  // (includes the deprecated IPv4-compatible form ::a.b.c.d). Checked last, after the exceptions above.
  v6('::/3', 'Reserved by IETF', 'RFC 4291'),
  v6('4000::/2', 'Reserved by IETF', 'RFC 4291'),
  v6('8000::/1', 'Reserved by IETF', 'RFC 4291'),
]

function cidrOfV4(e: V4Entry): string {
  return `${formatIpv4(e.base)}/${e.prefix}`
}

function matchV4(value: number): V4Entry | null {
  for (const e of V4_TABLE) if (((value & e.mask) >>> 0) === e.base) return e
  return null
}

/** The special-purpose block of an IPv4 address (as unsigned 32-bit integer), or null when globally reachable. */
function specialRangeV4(value: number): SpecialPurposeRange | null {
  const e = matchV4(value >>> 0)
  if (!e || e.reachable) return null
  return { cidr: cidrOfV4(e), name: e.name, rfc: e.rfc }
}

function matchV6(w: readonly number[]): V6Entry | null {
  for (const e of V6_TABLE) {
    if (
      (((w[0] as number) & e.mask[0]) >>> 0) === e.base[0] &&
      (((w[1] as number) & e.mask[1]) >>> 0) === e.base[1] &&
      (((w[2] as number) & e.mask[2]) >>> 0) === e.base[2] &&
      (((w[3] as number) & e.mask[3]) >>> 0) === e.base[3]
    )
      return e
  }
  return null
}

/** The IPv4 addresses an IPv6 transition address carries (empty for other addresses). */
export function getEmbeddedIpv4(words: readonly number[]): number[] {
  const e = matchV6(words)
  if (!e?.embed) return []
  const w0 = words[0] as number
  const w1 = words[1] as number
  const w3 = words[3] as number
  switch (e.embed) {
    case 'nat64':
      return [w3 >>> 0]
    case '6to4':
      // 2002:AABB:CCDD::/48 → AA.BB.CC.DD
      return [(((w0 & 0xffff) << 16) | (w1 >>> 16)) >>> 0]
    case 'teredo':
      // 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC — server in bits 32–63, client = complement of bits 96–127
      return [w1 >>> 0, ~w3 >>> 0]
  }
}

/**
 * The special-purpose block an address belongs to, or null for a globally reachable unicast address.
 * For transition forms (6to4, Teredo, NAT64) the embedded IPv4 addresses are judged too (see the module comment).
 *
 * @example
 * getSpecialPurposeRange(parseIp('10.1.2.3')!)     // { cidr: '10.0.0.0/8', name: 'Private-Use', rfc: 'RFC 1918' }
 * getSpecialPurposeRange(parseIp('2002:c0a8:101::1')!) // { cidr: '192.168.0.0/16', …, embedded: '192.168.1.1' }
 * getSpecialPurposeRange(parseIp('8.8.8.8')!)      // null
 */
export function getSpecialPurposeRange(ip: ParsedIp): SpecialPurposeRange | null {
  if (ip.version === 4) return specialRangeV4(ip.value)
  const e = matchV6(ip.words)
  if (!e) return null
  if (!e.reachable) return { cidr: e.cidr, name: e.name, rfc: e.rfc }
  if (!e.embed) return null
  for (const v of getEmbeddedIpv4(ip.words)) {
    const inner = specialRangeV4(v)
    if (inner) return { ...inner, embedded: formatIpv4(v) }
  }
  return null
}

/**
 * True when an address is not a globally reachable unicast address: private, loopback, link-local, CGNAT,
 * documentation, benchmarking, reserved, multicast, broadcast, or a 6to4/Teredo/NAT64/IPv4-mapped form of one.
 *
 * Accepts a {@link ParsedIp} or a string. A string that is not strictly one IP address (see `parseIp`) returns
 * true — it fails closed, so a connection guard (the webhook SSRF check) never lets an unreadable address through.
 *
 * @example
 * isSpecialPurposeAddress('192.168.1.1')        // true
 * isSpecialPurposeAddress('::ffff:127.0.0.1')   // true (IPv4-mapped loopback)
 * isSpecialPurposeAddress('64:ff9b::a00:1')     // true (NAT64 form of 10.0.0.1)
 * isSpecialPurposeAddress('2606:4700:4700::1111') // false
 */
export function isSpecialPurposeAddress(ip: ParsedIp | string): boolean {
  const parsed = typeof ip === 'string' ? parseIp(ip) : ip
  if (!parsed) return true
  return getSpecialPurposeRange(parsed) !== null
}

/**
 * Strict IP address parsing for the IP lookup: plain dotted-quad IPv4 and RFC 4291 IPv6, surrounding whitespace
 * (what `String.prototype.trim` removes, as in the email and phone lookups: a BOM and NBSP too) ignored; octal, hex
 * and short IPv4 forms, zone ids, brackets, CIDRs and ports are refused (parse → null), so `node:net`'s `isIP` (which
 * takes zone ids) is not used. An IPv4-mapped address parses to its IPv4 address (`mapped: true`). One linear pass,
 * no regular expression (docs/decisions.md, "IP checks" → "input").
 */

/** Longest input (UTF-16 code units, before trimming) that is parsed at all; the API allows 1 to 64 characters (docs/api.md). */
export const MAX_IP_INPUT_LENGTH = 64

/** An IPv4 address. */
export interface ParsedIpv4 {
  version: 4
  /** canonical dotted-quad text (`192.0.2.1`) */
  address: string
  /** the address as an unsigned 32-bit integer */
  value: number
  /** true when the input was written as an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) */
  mapped: boolean
}

/** An IPv6 address (never an IPv4-mapped one: those parse as {@link ParsedIpv4}). */
export interface ParsedIpv6 {
  version: 6
  /** canonical text (RFC 5952: lower case, no leading zeros, longest zero run compressed) */
  address: string
  /** the 128 bits as four unsigned 32-bit words, most significant first */
  words: readonly [number, number, number, number]
  mapped: false
}

/** A strictly parsed IP address. */
export type ParsedIp = ParsedIpv4 | ParsedIpv6

/** Whether `String.prototype.trim` may remove a character with this code: ASCII controls and space, or U+00A0 and up. */
const mayBeTrimmed = (c: number): boolean => c <= 0x20 || c >= 0xa0

/** Decimal value of an octet written strictly (1–3 digits, no leading zero unless "0"), or -1. */
function parseOctet(s: string, start: number, end: number): number {
  const len = end - start
  if (len < 1 || len > 3) return -1
  let v = 0
  for (let i = start; i < end; i++) {
    const d = s.charCodeAt(i) - 48
    if (d < 0 || d > 9) return -1
    v = v * 10 + d
  }
  if (len > 1 && s.charCodeAt(start) === 48) return -1
  return v > 255 ? -1 : v
}

/** Strict dotted-quad between `start` and `end` as an unsigned 32-bit integer, or -1. */
function parseIpv4Range(s: string, start: number, end: number): number {
  let value = 0
  let partStart = start
  let parts = 0
  for (let i = start; i <= end; i++) {
    if (i === end || s.charCodeAt(i) === 46 /* . */) {
      const o = parseOctet(s, partStart, i)
      if (o < 0) return -1
      value = value * 256 + o
      parts++
      if (parts > 4) return -1
      partStart = i + 1
    }
  }
  return parts === 4 ? value : -1
}

function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48
  if (c >= 97 && c <= 102) return c - 87
  if (c >= 65 && c <= 70) return c - 55
  return -1
}

/**
 * Parses IPv6 text between `start` and `end` into 8 16-bit groups, or returns false.
 * Grammar (RFC 4291 §2.2): groups of 1–4 hex digits, at most one `::`, an optional dotted-quad in the last 32 bits.
 */
function parseIpv6Groups(s: string, start: number, end: number, out: number[]): boolean {
  const head: number[] = []
  const tail: number[] = []
  let target = head
  let compressed = false
  let i = start
  if (i >= end) return false
  if (s.charCodeAt(i) === 58 /* : */) {
    // must be "::"
    if (i + 1 >= end || s.charCodeAt(i + 1) !== 58) return false
    compressed = true
    target = tail
    i += 2
    if (i === end) {
      for (let k = 0; k < 8; k++) out[k] = 0
      return true
    }
  }
  for (;;) {
    // one group (or a trailing IPv4)
    const gStart = i
    let v = 0
    let n = 0
    let sawDot = false
    while (i < end) {
      const c = s.charCodeAt(i)
      if (c === 58) break
      if (c === 46) {
        sawDot = true
        break
      }
      const d = hexDigit(c)
      if (d < 0 || n === 4) return false
      v = v * 16 + d
      n++
      i++
    }
    if (sawDot) {
      const v4 = parseIpv4Range(s, gStart, end)
      if (v4 < 0) return false
      target.push(Math.floor(v4 / 65536), v4 % 65536)
      i = end
    } else {
      if (n === 0) return false
      target.push(v)
    }
    if (head.length + tail.length > 8) return false
    if (i === end) break
    // at ':'
    i++
    if (i < end && s.charCodeAt(i) === 58) {
      if (compressed) return false
      compressed = true
      target = tail
      i++
      if (i === end) break
    } else if (i === end) {
      return false // trailing single ':'
    }
  }
  const total = head.length + tail.length
  if (compressed ? total > 7 : total !== 8) return false
  let k = 0
  for (const g of head) out[k++] = g
  for (let z = 8 - total; z > 0; z--) out[k++] = 0
  for (const g of tail) out[k++] = g
  return true
}

/** Text of an unsigned 32-bit IPv4 value. */
export function formatIpv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`
}

/** RFC 5952 text of 8 groups. */
function formatIpv6Groups(g: readonly number[]): string {
  let bestStart = -1
  let bestLen = 1
  for (let i = 0; i < 8; ) {
    if (g[i] === 0) {
      let j = i
      while (j < 8 && g[j] === 0) j++
      if (j - i > bestLen) {
        bestStart = i
        bestLen = j - i
      }
      i = j
    } else i++
  }
  if (bestStart < 0) return g.map((x) => x.toString(16)).join(':')
  const left = g.slice(0, bestStart).map((x) => x.toString(16)).join(':')
  const right = g.slice(bestStart + bestLen).map((x) => x.toString(16)).join(':')
  return `${left}::${right}`
}

/** Canonical RFC 5952 text of an IPv6 address given as four 32-bit words. */
export function formatIpv6Words(words: readonly number[]): string {
  const g: number[] = []
  for (let i = 0; i < 4; i++) {
    const w = (words[i] ?? 0) >>> 0
    g.push(w >>> 16, w & 0xffff)
  }
  return formatIpv6Groups(g)
}

/**
 * Parses an IP address strictly (see the module comment for what is accepted).
 *
 * Returns null for anything that is not exactly one IPv4 or IPv6 address — never throws, whatever the input's type.
 * It does not judge the address (private, reserved…): see `./bogon.ts`.
 *
 * @example
 * parseIp('192.0.2.1')        // { version: 4, address: '192.0.2.1', value: 3221225985, mapped: false }
 * parseIp('2001:DB8:0::1')    // { version: 6, address: '2001:db8::1', words: [0x20010db8, 0, 0, 1], mapped: false }
 * parseIp('::ffff:192.0.2.1') // { version: 4, address: '192.0.2.1', …, mapped: true }
 * parseIp('010.0.0.1')        // null (octal-looking)
 * parseIp('fe80::1%eth0')     // null (zone id)
 */
export function parseIp(input: unknown): ParsedIp | null {
  if (typeof input !== 'string' || input.length === 0 || input.length > MAX_IP_INPUT_LENGTH) return null
  // Trimmed as the email and phone lookups trim (a BOM or NBSP too); an input that starts and ends with a character
  // no trim removes (the common case) is not copied.
  const text = mayBeTrimmed(input.charCodeAt(0)) || mayBeTrimmed(input.charCodeAt(input.length - 1)) ? input.trim() : input
  const end = text.length
  if (end === 0) return null
  let hasColon = false
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 58) {
      hasColon = true
      break
    }
  }
  if (!hasColon) {
    const v = parseIpv4Range(text, 0, end)
    return v < 0 ? null : { version: 4, address: formatIpv4(v), value: v, mapped: false }
  }
  const g: number[] = new Array<number>(8)
  if (!parseIpv6Groups(text, 0, end, g)) return null
  const g0 = g[0] as number
  const g1 = g[1] as number
  const g2 = g[2] as number
  const g3 = g[3] as number
  const g4 = g[4] as number
  const g5 = g[5] as number
  const g6 = g[6] as number
  const g7 = g[7] as number
  if ((g0 | g1 | g2 | g3 | g4) === 0 && g5 === 0xffff) {
    const v = g6 * 65536 + g7
    return { version: 4, address: formatIpv4(v), value: v, mapped: true }
  }
  const words = [
    (g0 * 65536 + g1) >>> 0,
    (g2 * 65536 + g3) >>> 0,
    (g4 * 65536 + g5) >>> 0,
    (g6 * 65536 + g7) >>> 0,
  ] as const
  return { version: 6, address: formatIpv6Groups(g), words, mapped: false }
}

/** A parsed CIDR network. IPv4-mapped IPv6 networks (`::ffff:a.b.c.d/(96+n)`) are returned as IPv4 `/n`. */
export type ParsedCidr =
  | { version: 4; first: number; last: number; prefix: number }
  | { version: 6; first: readonly [number, number, number, number]; last: readonly [number, number, number, number]; prefix: number }

/**
 * Parses `a.b.c.d/n`, `x:y::/n` or a bare address (a /32 or /128) strictly; host bits below the prefix are ignored
 * (`10.1.2.3/8` → `10.0.0.0/8`). Returns null for anything else. Used for range lists (blocklists, build scripts).
 *
 * @example
 * parseCidr('192.0.2.0/24') // { version: 4, first: 3221225984, last: 3221226239, prefix: 24 }
 */
export function parseCidr(input: string): ParsedCidr | null {
  if (typeof input !== 'string' || input.length > 64 + 4) return null
  const text = input.trim()
  const slash = text.indexOf('/')
  const ipText = slash < 0 ? text : text.slice(0, slash)
  const ip = parseIp(ipText)
  if (!ip) return null
  let prefix: number
  if (slash < 0) prefix = ip.version === 4 && !ip.mapped ? 32 : 128
  else {
    const p = text.slice(slash + 1)
    if (p.length < 1 || p.length > 3) return null
    prefix = 0
    for (let i = 0; i < p.length; i++) {
      const d = p.charCodeAt(i) - 48
      if (d < 0 || d > 9) return null
      prefix = prefix * 10 + d
    }
    if (p.length > 1 && p.charCodeAt(0) === 48) return null
  }
  if (ip.version === 4) {
    if (ip.mapped) {
      if (prefix < 96 || prefix > 128) return null
      prefix -= 96
    } else if (prefix > 32) return null
    const size = 2 ** (32 - prefix)
    const first = ip.value - (ip.value % size)
    return { version: 4, first, last: first + size - 1, prefix }
  }
  if (prefix > 128) return null
  const first: number[] = []
  const last: number[] = []
  for (let i = 0; i < 4; i++) {
    const bits = Math.min(32, Math.max(0, prefix - i * 32))
    const mask = bits === 0 ? 0 : bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0
    const w = ip.words[i] as number
    first.push((w & mask) >>> 0)
    last.push((w | ~mask) >>> 0)
  }
  return {
    version: 6,
    first: first as unknown as [number, number, number, number],
    last: last as unknown as [number, number, number, number],
    prefix,
  }
}

/**
 * The open ASN data of `@ip-location-db/asn` (RouteViews + RIR delegations + DB-IP ASN Lite, CC BY 4.0): CSV files
 * of inclusive ranges `start,end,asn,"organization"`, turned into compact sorted tables (typed arrays + binary
 * search) with the organization names de-duplicated.
 *
 * Both families are read from the `-num` files (`asn-ipv4-num.csv`, `asn-ipv6-num.csv`: decimal bounds, 128-bit for
 * IPv6), parsed byte by byte. Each family loads on its first lookup, which waits for it: IPv4 412k rows, ≈ 11 MB
 * (typed arrays 6.3 MB + names); IPv6 103k rows, ≈ 7 MB. scripts/bench/ip-first-lookup.ts measures the load.
 */
import { readFileSync } from 'node:fs'
import { buildIpv4Table, buildIpv6Table, Ipv4RangeTable, Ipv6RangeTable, type Ipv4Row, type Ipv6Row } from './range-table.js'

/** An ASN answer. */
export interface AsnRecord {
  asn: number
  name: string | null
}

/** A loaded ASN table of one address family. */
export interface AsnTable {
  /** number of ranges */
  readonly size: number
  /** the ASN record of an address (IPv4: unsigned 32-bit value; IPv6: four 32-bit words), or null */
  lookupV4(value: number): AsnRecord | null
  lookupV6(words: readonly number[]): AsnRecord | null
}

/**
 * Splits one CSV line into fields (RFC 4180 quoting: `"a, b"`, `""` for a quote). Linear, no regex.
 * @internal exported for tests
 */
export function splitCsvLine(line: string): string[] {
  const out: string[] = []
  let i = 0
  const n = line.length
  for (;;) {
    if (i < n && line.charCodeAt(i) === 34) {
      let s = ''
      i++
      for (;;) {
        const q = line.indexOf('"', i)
        if (q < 0) {
          s += line.slice(i)
          i = n
          break
        }
        s += line.slice(i, q)
        if (line.charCodeAt(q + 1) === 34) {
          s += '"'
          i = q + 2
        } else {
          i = q + 1
          break
        }
      }
      out.push(s)
      const comma = line.indexOf(',', i)
      if (comma < 0) break
      i = comma + 1
    } else {
      const comma = line.indexOf(',', i)
      if (comma < 0) {
        out.push(line.slice(i))
        break
      }
      out.push(line.slice(i, comma))
      i = comma + 1
    }
  }
  return out
}

const NO_NAME = 0xffffffff


function makeTable(
  v4: { table: Ipv4RangeTable; asns: Uint32Array; nameIds: Uint32Array } | null,
  v6: { table: Ipv6RangeTable; asns: Uint32Array; nameIds: Uint32Array } | null,
  names: readonly string[],
): AsnTable {
  const rec = (asn: number, nameId: number): AsnRecord => ({ asn, name: nameId === NO_NAME ? null : (names[nameId] ?? null) })
  return {
    size: v4 ? v4.table.size : v6 ? v6.table.size : 0,
    lookupV4(value) {
      if (!v4) return null
      const i = v4.table.find(value)
      return i < 0 ? null : rec(v4.asns[i] as number, v4.nameIds[i] as number)
    },
    lookupV6(words) {
      if (!v6) return null
      const i = v6.table.find(words)
      return i < 0 ? null : rec(v6.asns[i] as number, v6.nameIds[i] as number)
    },
  }
}

/** Growable typed-array builder. */
class U32Builder {
  data = new Uint32Array(1 << 16)
  length = 0
  push(v: number): void {
    if (this.length === this.data.length) {
      const next = new Uint32Array(this.data.length * 2)
      next.set(this.data)
      this.data = next
    }
    this.data[this.length++] = v
  }
  finish(): Uint32Array {
    return this.data.slice(0, this.length)
  }
}

/**
 * Name ids by ASN: an open-addressing table of 32-bit keys in typed arrays. A Map keyed by ASNs boxes every one
 * above 2^30 and hashes it as a heap number: its lookups were half of a load.
 */
class NameIds {
  /** The id of an ASN seen without a name. */
  static readonly NONE = -2
  private keys = new Uint32Array(1 << 16)
  private ids = new Int32Array(1 << 16).fill(-1)
  private used = 0

  /** The name id of `asn`: -1 when not seen, {@link NameIds.NONE} when seen without a name. */
  get(asn: number): number {
    const mask = this.keys.length - 1
    for (let i = Math.imul(asn, 0x9e3779b1) & mask; ; i = (i + 1) & mask) {
      const id = this.ids[i] as number
      if (id === -1 || this.keys[i] === asn) return id
    }
  }

  set(asn: number, id: number): void {
    if (2 * (this.used + 1) > this.keys.length) this.grow()
    const mask = this.keys.length - 1
    let i = Math.imul(asn, 0x9e3779b1) & mask
    while (this.ids[i] !== -1 && this.keys[i] !== asn) i = (i + 1) & mask
    if (this.ids[i] === -1) this.used++
    this.keys[i] = asn
    this.ids[i] = id
  }

  private grow(): void {
    const { keys, ids } = this
    this.keys = new Uint32Array(keys.length * 2)
    this.ids = new Int32Array(keys.length * 2).fill(-1)
    this.used = 0
    for (let i = 0; i < keys.length; i++) if (ids[i] !== -1) this.set(keys[i] as number, ids[i] as number)
  }
}

/** The rows a load collects: bounds (one or four words each), ASNs, and each ASN's name once (the first seen). */
class AsnRows {
  readonly starts = new U32Builder()
  readonly ends = new U32Builder()
  readonly asns = new U32Builder()
  readonly names: string[] = []
  private readonly nameByAsn = new NameIds()

  /** Adds a row's ASN and, the first time it is seen, its name: the CSV field of `buf[from..to)`. */
  asn(asn: number, buf: Buffer, from: number, to: number): void {
    this.asns.push(asn)
    if (this.nameByAsn.get(asn) === -1) {
      const s = decodeCsvField(buf, from, to)
      this.nameByAsn.set(asn, s ? this.names.push(s) - 1 : NameIds.NONE)
    }
  }

  /** The name id of each of `asns` (NO_NAME for an ASN without one), for the table. */
  nameIdsOf(asns: Uint32Array): Uint32Array {
    const out = new Uint32Array(asns.length)
    for (let i = 0; i < asns.length; i++) {
      const id = this.nameByAsn.get(asns[i] as number)
      out[i] = id < 0 ? NO_NAME : id
    }
    return out
  }
}

/**
 * Reads the rows of an `@ip-location-db/asn-ipv6-num` CSV from bytes: `start,end,asn,name` with 128-bit decimal
 * bounds, calling `row` for every well-formed line. One pass, no regex, no per-line
 * strings except a name seen for the first time for its ASN.
 */
function scanNumCsv(
  buf: Buffer,
  row: (first: Uint32Array, last: Uint32Array, asn: number, nameStart: number, lineEnd: number) => void,
): void {
  const n = buf.length
  const first = new Uint32Array(4)
  const last = new Uint32Array(4)
  const limbs = new Uint32Array(8)
  let pos = 0
  // parses a 128-bit decimal at pos into `out` (four 32-bit words); returns the position after it or -1
  const readNumber = (out: Uint32Array): number => {
    let p = pos
    let digits = 0
    limbs.fill(0)
    for (;;) {
      // up to 4 digits at a time: limbs = limbs * 10^k + chunk
      let chunk = 0
      let mul = 1
      while (mul < 10000 && p < n) {
        const d = (buf[p] as number) - 48
        if (d < 0 || d > 9) break
        chunk = chunk * 10 + d
        mul *= 10
        p++
        digits++
      }
      if (mul === 1) break
      let carry = chunk
      for (let k = 7; k >= 0; k--) {
        const x = (limbs[k] as number) * mul + carry
        limbs[k] = x & 0xffff
        carry = Math.floor(x / 65536)
      }
      if (carry !== 0) return -1
      if (mul < 10000) break
    }
    if (digits === 0 || digits > 39) return -1
    for (let k = 0; k < 4; k++) out[k] = ((limbs[2 * k] as number) * 65536 + (limbs[2 * k + 1] as number)) >>> 0
    return p
  }
  while (pos < n) {
    let eol = buf.indexOf(10, pos)
    if (eol < 0) eol = n
    const lineEnd = eol > pos && buf[eol - 1] === 13 ? eol - 1 : eol
    let p = readNumber(first)
    if (p >= 0 && buf[p] === 44) {
      pos = p + 1
      p = readNumber(last)
    } else p = -1
    let asn = -1
    if (p >= 0 && buf[p] === 44) {
      pos = p + 1
      // the ASN is always a 32-bit decimal
      let v = 0
      let q = pos
      while (q < lineEnd) {
        const d = (buf[q] as number) - 48
        if (d < 0 || d > 9) break
        v = v * 10 + d
        q++
      }
      if (q > pos && q - pos <= 10 && v <= 0xffffffff && (q === lineEnd || buf[q] === 44)) asn = v
      p = q
    }
    if (asn >= 0) {
      row(first, last, asn, p < lineEnd ? p + 1 : lineEnd, lineEnd)
    }
    pos = eol + 1
  }
}

/** The text of the last CSV field of a line (the rest of the line, quotes removed). */
function decodeCsvField(buf: Buffer, start: number, end: number): string {
  if (start >= end) return ''
  const raw = buf.toString('utf8', start, end)
  if (raw.charCodeAt(0) !== 34) return raw
  return splitCsvLine(raw).join(',')
}

/**
 * Loads an IPv4 ASN table from an `asn-ipv4-num.csv` file (decimal bounds). One name per ASN is kept (the first
 * seen; in the published data every ASN has exactly one name). Malformed lines are skipped; overlapping rows are
 * clipped. Throws only when the file cannot be read.
 */
export function loadAsnCsvV4(path: string): AsnTable {
  return loadAsnNumCsv(readFileSync(path), 1)
}

/** Loads an IPv6 ASN table from an `asn-ipv6-num.csv` file (128-bit decimal bounds). See {@link loadAsnCsvV4}. */
export function loadAsnCsvV6(path: string): AsnTable {
  return loadAsnNumCsv(readFileSync(path), 4)
}

/** Loads an ASN table from the bytes of a `-num` CSV (`words` 1: IPv4, 4: IPv6). See {@link loadAsnCsvV4}. */
export function loadAsnNumCsv(buf: Buffer, words: 1 | 4): AsnTable {
  return words === 1 ? loadV4(buf) : loadV6(buf)
}

/** {@link loadAsnNumCsv} of an IPv6 file: 128-bit bounds, as four 32-bit words each. */
function loadV6(buf: Buffer): AsnTable {
  const rows = new AsnRows()
  const { starts, ends } = rows
  let sorted = true
  const prevStart = new Uint32Array(4)
  const prevEnd = new Uint32Array(4)
  const start = new Uint32Array(4)
  let havePrev = false
  const less = (a: Uint32Array, b: Uint32Array): boolean => {
    for (let k = 0; k < 4; k++) if (a[k] !== b[k]) return (a[k] as number) < (b[k] as number)
    return false
  }
  scanNumCsv(buf, (first, last, asn, nameStart, lineEnd) => {
    if (less(last, first)) return
    start.set(first)
    if (havePrev && !less(prevEnd, first)) {
      // overlaps the previous row: clip it to start after it (the published data has a handful of these)
      if (less(first, prevStart)) sorted = false
      else {
        if (!less(prevEnd, last)) return
        start.set(prevEnd)
        for (let k = 3; k >= 0; k--) {
          start[k] = ((start[k] as number) + 1) >>> 0
          if (start[k] !== 0) break
        }
      }
    }
    prevStart.set(start)
    prevEnd.set(last)
    havePrev = true
    for (let k = 0; k < 4; k++) {
      starts.push(start[k] as number)
      ends.push(last[k] as number)
    }
    rows.asn(asn, buf, nameStart, lineEnd)
  })
  let s = starts.finish()
  let e = ends.finish()
  let a = rows.asns.finish()
  if (!sorted) {
    // rare path: sort and clip through the generic builder
    const listed: Ipv6Row[] = []
    for (let i = 0; i < a.length; i++) listed.push({ first: Array.from(s.subarray(i * 4, i * 4 + 4)), last: Array.from(e.subarray(i * 4, i * 4 + 4)), payload: a[i] as number })
    const built = buildIpv6Table(listed, false)
    s = built.table.starts
    e = built.table.ends
    a = built.payloads
  }
  return makeTable(null, { table: new Ipv6RangeTable(s, e), asns: a, nameIds: rows.nameIdsOf(a) }, rows.names)
}

/** The decimal at `p` (1 to 10 digits, at most 2^32 - 1) as `[value, end]` in `out`; false when there is none. */
function decimalAt(buf: Buffer, p: number, end: number, out: Float64Array): boolean {
  let v = 0
  const from = p
  while (p < end) {
    const d = (buf[p] as number) - 48
    if (d < 0 || d > 9) break
    v = v * 10 + d
    p++
  }
  if (p === from || p - from > 10 || v > 0xffffffff) return false
  out[0] = v
  out[1] = p
  return true
}

/**
 * {@link loadAsnNumCsv} of an IPv4 file: the rows, clipping and names of {@link loadV6}, with each bound a plain
 * number rather than four words.
 */
function loadV4(buf: Buffer): AsnTable {
  const rows = new AsnRows()
  const { starts, ends } = rows
  const num = new Float64Array(2)
  const n = buf.length
  let sorted = true
  let prevStart = -1
  let prevEnd = -1
  for (let pos = 0; pos < n; ) {
    let eol = buf.indexOf(10, pos)
    if (eol < 0) eol = n
    const lineEnd = eol > pos && buf[eol - 1] === 13 ? eol - 1 : eol
    const line = pos
    pos = eol + 1
    if (!decimalAt(buf, line, lineEnd, num) || buf[num[1] as number] !== 44) continue
    const first = num[0] as number
    if (!decimalAt(buf, (num[1] as number) + 1, lineEnd, num) || buf[num[1] as number] !== 44) continue
    const last = num[0] as number
    if (!decimalAt(buf, (num[1] as number) + 1, lineEnd, num)) continue
    const asn = num[0] as number
    const q = num[1] as number
    if (q !== lineEnd && buf[q] !== 44) continue
    if (last < first) continue
    let start = first
    if (prevEnd >= first) {
      // overlaps the previous row: clip it to start after it (the published data has a handful of these)
      if (first < prevStart) sorted = false
      else {
        if (last <= prevEnd) continue
        start = prevEnd + 1
      }
    }
    prevStart = start
    prevEnd = last
    starts.push(start)
    ends.push(last)
    rows.asn(asn, buf, q < lineEnd ? q + 1 : lineEnd, lineEnd)
  }
  let s = starts.finish()
  let e = ends.finish()
  let a = rows.asns.finish()
  if (!sorted) {
    // rare path: sort and clip through the generic builder
    const listed: Ipv4Row[] = []
    for (let i = 0; i < a.length; i++) listed.push({ first: s[i] as number, last: e[i] as number, payload: a[i] as number })
    const built = buildIpv4Table(listed, false)
    s = built.table.starts
    e = built.table.ends
    a = built.payloads
  }
  return makeTable({ table: new Ipv4RangeTable(s, e), asns: a, nameIds: rows.nameIdsOf(a) }, null, rows.names)
}

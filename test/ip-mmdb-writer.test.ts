/**
 * The MMDB writer (src/data/mmdb-writer.ts), checked by reading its output back with the `maxmind` reader.
 */
import { Reader } from 'maxmind'
import { describe, expect, it } from 'vitest'
import { MmdbWriter, mmdbType, type MmdbMap } from '../src/data/mmdb-writer.js'
import { formatIpv4 } from '../src/sources/ip/parse.js'
import { xorshift } from './xorshift.js'

const replace = (_old: MmdbMap | null, n: MmdbMap) => n

describe('round trip through the maxmind reader', () => {
  for (const recordSize of [24, 28, 32] as const) {
    for (const ipVersion of [4, 6] as const) {
      it(`random IPv4 networks, last insert wins (${recordSize}-bit records, IPv${ipVersion} tree)`, () => {
        const next = xorshift(recordSize * 10 + ipVersion)
        const nets: { first: number; last: number; prefix: number; rec: MmdbMap }[] = []
        const w = new MmdbWriter({ ipVersion, databaseType: 'Round-Trip-Test', recordSize, buildEpoch: 1_700_000_000 })
        for (let i = 0; i < 400; i++) {
          const prefix = 8 + (next() % 25)
          const size = 2 ** (32 - prefix)
          const first = next() // any address
          const base = first - (first % size)
          const rec = { id: i, group: `g${i % 7}`, even: i % 2 === 0 }
          nets.push({ first: base, last: base + size - 1, prefix, rec })
          w.insert(`${formatIpv4(base)}/${prefix}`, rec, { merge: replace })
        }
        const buf = w.toBuffer()
        const reader = new Reader<MmdbMap>(buf)
        expect(reader.metadata).toMatchObject({ recordSize, ipVersion, databaseType: 'Round-Trip-Test', binaryFormatMajorVersion: 2 })
        const expected = (v: number) => {
          for (let i = nets.length - 1; i >= 0; i--) {
            const n = nets[i]!
            if (v >= n.first && v <= n.last) return n.rec
          }
          return null
        }
        const probes: number[] = []
        for (const n of nets) probes.push(n.first, n.last, n.first + Math.floor((n.last - n.first) / 2))
        for (let i = 0; i < 2000; i++) probes.push(next())
        for (const v of probes) {
          const ip = formatIpv4(v)
          expect(reader.get(ip), ip).toEqual(expected(v))
          if (ipVersion === 6) expect(reader.get(`::ffff:${ip}`), `mapped ${ip}`).toEqual(expected(v))
        }
      })
    }
  }

  it('IPv6 networks, prefix lengths and the ::/0 network', () => {
    const w = new MmdbWriter({ ipVersion: 6, databaseType: 'V6-Test' })
    w.insert('::/0', { everywhere: true })
    w.insert('2001:db8::/32', { doc: true })
    w.insert('2001:db8:1::/48', { doc: true, sub: 1 })
    w.insert('2001:db8:1::1', { host: true }) // a /128, merged over the /48
    const r = new Reader<MmdbMap>(w.toBuffer())
    expect(r.getWithPrefixLength('2001:db8:1::1')).toEqual([{ everywhere: true, doc: true, sub: 1, host: true }, 128])
    expect(r.getWithPrefixLength('2001:db8:1::2')).toEqual([{ everywhere: true, doc: true, sub: 1 }, 127])
    expect(r.getWithPrefixLength('2001:db8:2::')).toEqual([{ everywhere: true, doc: true }, 47])
    expect(r.get('2606:4700::1')).toEqual({ everywhere: true })
    expect(r.get('1.2.3.4')).toEqual({ everywhere: true })
  })

  it('IPv4 lives at ::/96 and is aliased at ::ffff:0:0/96 and 2002::/16 (unless disabled)', () => {
    for (const aliases of [true, false]) {
      const w = new MmdbWriter({ ipVersion: 6, databaseType: 'Alias-Test', ipv4Aliases: aliases })
      w.insert('192.0.2.0/24', { net: 'doc1' })
      w.insert('2001:db8::/32', { net: 'v6' })
      const r = new Reader<MmdbMap>(w.toBuffer())
      expect(r.getWithPrefixLength('192.0.2.7')).toEqual([{ net: 'doc1' }, 24])
      expect(r.getWithPrefixLength('::192.0.2.7')).toEqual([{ net: 'doc1' }, 120])
      expect(r.get('::ffff:192.0.2.7')).toEqual(aliases ? { net: 'doc1' } : null)
      expect(r.get('2002:c000:0207::1')).toEqual(aliases ? { net: 'doc1' } : null)
      expect(r.get('2001:db8::5')).toEqual({ net: 'v6' })
      expect(r.get('198.51.100.1')).toBeNull()
    }
  })

  it('adjacent networks with equal data collapse into one record', () => {
    const w = new MmdbWriter({ ipVersion: 4, databaseType: 'Collapse-Test' })
    w.insert('10.0.0.0/9', { a: 1 })
    w.insert('10.128.0.0/9', { a: 1 })
    const r = new Reader<MmdbMap>(w.toBuffer())
    expect(r.getWithPrefixLength('10.200.0.1')).toEqual([{ a: 1 }, 8])
    expect(r.metadata.nodeCount).toBe(8) // the path to 10.0.0.0/8 only
  })
})

describe('data section types', () => {
  it('encodes every type the MaxMind DB format has and the reader decodes them', () => {
    const long300 = 'x'.repeat(300)
    const long70k = 'y'.repeat(70_000)
    const rec: MmdbMap = {
      str: 'héllo ✓',
      empty: '',
      s29: 'z'.repeat(29),
      s300: long300,
      s70k: long70k,
      t: true,
      f: false,
      u32: 4_000_000_000,
      zero: 0,
      neg: -123456,
      dbl: 1.25,
      u16: mmdbType.uint16(65535),
      u64: mmdbType.uint64(2n ** 63n + 5n),
      u128: mmdbType.uint128(2n ** 100n),
      big: 2n ** 70n,
      i32: mmdbType.int32(-1),
      i32pos: mmdbType.int32(70000),
      float: mmdbType.float(1.5),
      double: mmdbType.double(-0.1),
      bytes: new Uint8Array([0, 1, 254, 255]),
      arr: [1, 'two', [3], { four: 4 }],
      nested: { a: { b: { c: ['deep'] } } },
    }
    const w = new MmdbWriter({ ipVersion: 4, databaseType: 'Types-Test', languages: ['en', 'de'], description: { en: 'types', de: 'Typen' }, buildEpoch: 1_234_567_890 })
    w.insert('1.2.3.0/24', rec)
    const r = new Reader<Record<string, unknown>>(w.toBuffer())
    const got = r.get('1.2.3.4')!
    expect(got['str']).toBe('héllo ✓')
    expect(got['empty']).toBe('')
    expect(got['s29']).toBe('z'.repeat(29))
    expect(got['s300']).toBe(long300)
    expect(got['s70k']).toBe(long70k)
    expect(got['t']).toBe(true)
    expect(got['f']).toBe(false)
    expect(got['u32']).toBe(4_000_000_000)
    expect(got['zero']).toBe(0)
    expect(got['neg']).toBe(-123456)
    expect(got['dbl']).toBe(1.25)
    expect(got['u16']).toBe(65535)
    expect(BigInt(got['u64'] as bigint)).toBe(2n ** 63n + 5n)
    expect(BigInt(got['u128'] as bigint)).toBe(2n ** 100n)
    expect(BigInt(got['big'] as bigint)).toBe(2n ** 70n)
    expect(got['i32']).toBe(-1)
    expect(got['i32pos']).toBe(70000)
    expect(got['float']).toBe(1.5)
    expect(got['double']).toBe(-0.1)
    expect([...(got['bytes'] as Uint8Array)]).toEqual([0, 1, 254, 255])
    expect(got['arr']).toEqual([1, 'two', [3], { four: 4 }])
    expect(got['nested']).toEqual({ a: { b: { c: ['deep'] } } })
    expect(r.metadata.languages).toEqual(['en', 'de'])
    expect(r.metadata.description).toEqual({ en: 'types', de: 'Typen' })
    expect(r.metadata.buildEpoch.getTime()).toBe(1_234_567_890_000)
  })

  it('repeated strings become pointers of every size and decode correctly', () => {
    const w = new MmdbWriter({ ipVersion: 4, databaseType: 'Pointer-Test' })
    const pad = (i: number) => `string-${i}-${'p'.repeat(200)}`
    const n = 3000 // ≈ 650 KB of unique strings: pointers of 11, 19 and 27 bits
    for (let i = 0; i < n; i++) w.insert(`${formatIpv4(0x0a000000 + i * 256)}/24`, { own: pad(i), prev: pad(Math.max(0, i - 1)), first: pad(0) })
    const buf = w.toBuffer()
    expect(buf.length).toBeLessThan(n * 230 + 200_000) // each long string stored once
    expect(buf.length).toBeGreaterThan(526_336) // the data section reaches 3-byte pointer offsets
    const r = new Reader<Record<string, string>>(buf)
    for (const i of [0, 1, 9, 10, 2500, n - 1]) {
      expect(r.get(formatIpv4(0x0a000000 + i * 256 + 7))).toEqual({ own: pad(i), prev: pad(Math.max(0, i - 1)), first: pad(0) })
    }
  })

  it('identical records are stored once', () => {
    const one = new MmdbWriter({ ipVersion: 4, databaseType: 'Dedup-Test' })
    one.insert('1.0.0.0/24', { provider: 'example-provider-name', is_vpn: true })
    const many = new MmdbWriter({ ipVersion: 4, databaseType: 'Dedup-Test' })
    for (let i = 0; i < 200; i++) many.insert(`${formatIpv4(0x01000000 + i * 512)}/24`, { provider: 'example-provider-name', is_vpn: true })
    expect(many.recordCount).toBe(1)
    const b1 = one.toBuffer()
    const b2 = many.toBuffer()
    const r1 = new Reader(b1)
    const r2 = new Reader(b2)
    expect(r2.metadata.nodeCount).toBeGreaterThan(r1.metadata.nodeCount)
    // the same data section: only the tree grew
    const marker = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex')
    const dataSection = (b: Buffer, treeSize: number) => b.subarray(treeSize + 16, b.lastIndexOf(marker))
    expect(dataSection(b2, r2.metadata.searchTreeSize)).toEqual(dataSection(b1, r1.metadata.searchTreeSize))
    expect(many.toBuffer()).toBe(b2) // cached
  })
})

describe('errors', () => {
  it('rejects bad networks, IPv6 in an IPv4 tree, inserts after toBuffer and records too small', () => {
    const w = new MmdbWriter({ ipVersion: 4, databaseType: 'Err-Test' })
    expect(() => w.insert('nope', {})).toThrow(/not a network/)
    expect(() => w.insert('1.2.3.4/33', {})).toThrow(/not a network/)
    expect(() => w.insert('2001:db8::/32', {})).toThrow(/IPv6 network in an IPv4 tree/)
    w.insert('1.2.3.0/24', { a: 1 })
    w.toBuffer()
    expect(() => w.insert('1.2.4.0/24', {})).toThrow(/after toBuffer/)
    expect(() => new MmdbWriter({ ipVersion: 5 as 4, databaseType: 'x' })).toThrow(TypeError)
    expect(() => new MmdbWriter({ ipVersion: 4, databaseType: '' })).toThrow(TypeError)
    const big = new MmdbWriter({ ipVersion: 4, databaseType: 'Big', recordSize: 24 })
    big.insert('1.0.0.0/8', { s: 'q'.repeat(70_000 * 300) }) // a 21 MB data section cannot be addressed by 24-bit records
    expect(() => big.toBuffer()).toThrow(RangeError)
  })
})

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadAsnCsvV4, loadAsnCsvV6, splitCsvLine } from './asn.js'
import { getDefaultIpDataPaths } from './data-paths.js'
import { parseIp } from './parse.js'
import { buildIpv4Table, buildIpv6Table } from './range-table.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-asn-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const v4 = (s: string) => {
  const ip = parseIp(s)
  if (ip?.version !== 4) throw new Error(s)
  return ip.value
}
const v6 = (s: string) => {
  const ip = parseIp(s)
  if (ip?.version !== 6) throw new Error(s)
  return ip.words
}

describe('splitCsvLine', () => {
  it('handles quotes, escaped quotes and commas inside quotes', () => {
    expect(splitCsvLine('1,2,13335,"Cloudflare, Inc."')).toEqual(['1', '2', '13335', 'Cloudflare, Inc.'])
    expect(splitCsvLine('1,2,3,"say ""hi"", ok"')).toEqual(['1', '2', '3', 'say "hi", ok'])
    expect(splitCsvLine('a,,b')).toEqual(['a', '', 'b'])
    expect(splitCsvLine('"unterminated')).toEqual(['unterminated'])
  })
})

describe('range tables', () => {
  it('IPv4: finds the range, clips overlaps, merges when asked', () => {
    const rows = [
      { first: 10, last: 20, payload: 1 },
      { first: 30, last: 40, payload: 2 },
      { first: 15, last: 25, payload: 3 }, // overlaps the first: clipped to 21–25
      { first: 12, last: 14, payload: 4 }, // inside the first: dropped
    ]
    const { table, payloads } = buildIpv4Table(rows.map((r) => ({ ...r })), false)
    const at = (v: number) => {
      const i = table.find(v)
      return i < 0 ? null : payloads[i]
    }
    expect([at(9), at(10), at(14), at(20), at(21), at(25), at(26), at(30), at(40), at(41)]).toEqual([null, 1, 1, 1, 3, 3, null, 2, 2, null])
    const merged = buildIpv4Table(rows.map((r) => ({ ...r })), true).table
    expect(merged.size).toBe(2)
    expect(merged.find(25)).toBe(0)
    expect(merged.find(0xffffffff)).toBe(-1)
  })

  it('IPv6: 128-bit comparisons across word boundaries', () => {
    const { table } = buildIpv6Table(
      [
        { first: v6('2001:db8::'), last: v6('2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'), payload: 0 },
        { first: v6('2001:db9::'), last: v6('2001:db9::ffff'), payload: 1 },
      ],
      true, // adjacent → merged
    )
    expect(table.size).toBe(1)
    expect(table.find(v6('2001:db8:1234::1'))).toBe(0)
    expect(table.find(v6('2001:db9::ffff'))).toBe(0)
    expect(table.find(v6('2001:db9::1:0'))).toBe(-1)
    expect(table.find(v6('2001:db7:ffff::'))).toBe(-1)
  })
})

describe('ASN CSV loading', () => {
  it('IPv4 -num layout: lookups, names, clipping, bad lines skipped', () => {
    const path = join(dir, 'v4.csv')
    writeFileSync(
      path,
      [
        `${v4('1.0.0.0')},${v4('1.0.0.255')},13335,"Cloudflare, Inc."`,
        `${v4('1.0.4.0')},${v4('1.0.7.255')},38803,Gtelecom Pty Ltd`,
        `${v4('1.0.6.0')},${v4('1.0.8.255')},64500,Overlapping Example`, // clipped to start at 1.0.8.0
        'garbage line',
        `${v4('2.0.0.0')},${v4('1.0.0.0')},1,reversed`, // end < start: skipped
        `${v4('3.0.0.0')},${v4('3.0.0.255')},65000,`, // no name
        '',
      ].join('\r\n'),
    )
    const t = loadAsnCsvV4(path)
    expect(t.size).toBe(4)
    expect(t.lookupV4(v4('1.0.0.1'))).toEqual({ asn: 13335, name: 'Cloudflare, Inc.' })
    expect(t.lookupV4(v4('1.0.7.1'))).toEqual({ asn: 38803, name: 'Gtelecom Pty Ltd' })
    expect(t.lookupV4(v4('1.0.8.1'))).toEqual({ asn: 64500, name: 'Overlapping Example' })
    expect(t.lookupV4(v4('3.0.0.9'))).toEqual({ asn: 65000, name: null })
    expect(t.lookupV4(v4('1.0.1.0'))).toBeNull()
    expect(t.lookupV6(v6('2001:db8::1'))).toBeNull()
  })

  it('IPv4: names by ASN across the whole 32-bit range and past the name table\'s first size (80,000 ASNs)', () => {
    const path = join(dir, 'many.csv')
    const asnOf = (i: number) => (i * 53_687 + 4_294_000_000) % 4_294_967_296 // spread over 0 … 2^32 - 1, distinct
    const rows = Array.from({ length: 80_000 }, (_, i) => `${i * 256},${i * 256 + 255},${asnOf(i)},${i % 7 === 0 ? '' : `Org ${i}`}`)
    // an ASN seen again keeps its first name; one first seen without a name keeps none
    rows.push(`${80_000 * 256},${80_000 * 256 + 255},${asnOf(5)},Renamed`, `${80_001 * 256},${80_001 * 256 + 255},${asnOf(7)},Named later`)
    writeFileSync(path, rows.join('\n'))
    const t = loadAsnCsvV4(path)
    expect(t.size).toBe(80_002)
    for (const i of [0, 1, 5, 7, 8, 40_000, 79_999]) expect(t.lookupV4(i * 256 + 9)).toEqual({ asn: asnOf(i), name: i % 7 === 0 ? null : `Org ${i}` })
    expect(t.lookupV4(80_000 * 256)).toEqual({ asn: asnOf(5), name: 'Org 5' })
    expect(t.lookupV4(80_001 * 256)).toEqual({ asn: asnOf(7), name: null })
    expect(Math.max(...[0, 1, 2, 3].map((i) => t.lookupV4(i * 256)!.asn))).toBeGreaterThan(2 ** 31)
  })

  it('IPv4: unsorted input falls back to sorting', () => {
    const path = join(dir, 'unsorted.csv')
    writeFileSync(path, `${v4('9.0.0.0')},${v4('9.0.0.255')},9,Nine\n${v4('8.0.0.0')},${v4('8.0.0.255')},8,Eight\n`)
    const t = loadAsnCsvV4(path)
    expect(t.lookupV4(v4('8.0.0.5'))?.asn).toBe(8)
    expect(t.lookupV4(v4('9.0.0.5'))?.asn).toBe(9)
  })

  it('IPv6 -num layout: 128-bit decimal bounds', () => {
    const path = join(dir, 'v6.csv')
    // 2001:200:: = 42540528726795050063891204319802818560
    writeFileSync(
      path,
      [
        '42540528726795050063891204319802818560,42540528727329395276160870415022948351,2500,WIDE Project',
        '340282366920938463463374607431768211455,340282366920938463463374607431768211455,1,"Top, Address"',
        '340282366920938463463374607431768211456,340282366920938463463374607431768211456,2,overflow',
      ].join('\n'),
    )
    const t = loadAsnCsvV6(path)
    expect(t.size).toBe(2)
    expect(t.lookupV6(v6('2001:200::1'))).toEqual({ asn: 2500, name: 'WIDE Project' })
    expect(t.lookupV6(v6('2001:200:1b9:ffff::'))).toEqual({ asn: 2500, name: 'WIDE Project' })
    expect(t.lookupV6(v6('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'))).toEqual({ asn: 1, name: 'Top, Address' })
    expect(t.lookupV6(v6('2001:1ff::'))).toBeNull()
  })

  it('the bundled @ip-location-db/asn data answers well-known networks', () => {
    const paths = getDefaultIpDataPaths()
    const t4 = loadAsnCsvV4(paths.asnV4)
    expect(t4.size).toBeGreaterThan(300_000)
    expect(t4.lookupV4(v4('1.1.1.1'))).toEqual({ asn: 13335, name: 'Cloudflare, Inc.' })
    expect(t4.lookupV4(v4('8.8.8.8'))?.asn).toBe(15169)
    const t6 = loadAsnCsvV6(paths.asnV6)
    expect(t6.size).toBeGreaterThan(50_000)
    expect(t6.lookupV6(v6('2001:4860:4860::8888'))?.asn).toBe(15169)
    expect(t6.lookupV6(v6('2606:4700:4700::1111'))?.asn).toBe(13335)
  })
})

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { getDefaultIpDataPaths } from '../sources/ip/data-paths.js'
import { buildIpFlags, countListEntries, listInputsIn } from './build-ip-flags.js'
import { bundledListFilesOf, listFilesOf, readListLines, TOR_BULK_EXIT_LIST } from './ip-lists.js'

describe('the flags builder', () => {
  it('rebuilds the bundled flags byte for byte from the bundled list snapshot (reproducible build)', () => {
    const p = getDefaultIpDataPaths()
    const files = [...listFilesOf('datacenter'), ...listFilesOf('cloud'), ...listFilesOf('vpn'), ...bundledListFilesOf('tor')]
    const r = buildIpFlags(listInputsIn(p.lists, files), Math.floor(Date.parse('2026-08-22') / 1000))
    expect(r.mmdb.equals(readFileSync(p.flags))).toBe(true)
    const json = JSON.parse(readFileSync(p.asnFlags, 'utf8')) as { hosting: number[]; vpn: Record<string, string> }
    expect(r.asnFlags).toEqual({ hosting: json.hosting, vpn: json.vpn })
  }, 30_000)

  it('a required list that is missing or has no network is an error naming it', () => {
    const dir = join(__dirname, 'no-such-dir')
    expect(() => buildIpFlags(listInputsIn(dir, listFilesOf('tor')), 0)).toThrow(/required list missing: .*torproject\/torbulkexitlist/)
  })

  it('reads the Tor Project list formats: bulk (one address a line) and TorDNSEL exit-addresses', () => {
    const tor = listFilesOf('tor')[0]!
    expect(tor.url).toBe(TOR_BULK_EXIT_LIST)
    const dnsel = 'ExitNode 0011BD2485AD45D984EC4159C88FC066E5E3300E\nPublished 2026-11-23 05:00:00\nLastStatus 2026-11-23 06:00:00\nExitAddress 192.0.2.7 2026-11-23 05:10:00\n'
    expect(readListLines(dnsel)).toEqual(['192.0.2.7'])
    expect(countListEntries(`${dnsel}2001:db8::1\n<html>\n`, tor)).toEqual({ entries: 2, skipped: 1 })
  })
})

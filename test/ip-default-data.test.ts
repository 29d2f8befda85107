/**
 * The bundled default data answers on a fresh install with no configuration: DB-IP Lite city, the ASN CSVs and the
 * compiled flags in data/ip/. Pins the compiled files (a bad refresh is caught) and a few well-known networks.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Reader } from 'maxmind'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createRiskcheck } from '../src/index.js'
import { getDefaultIpDataPaths } from '../src/sources/ip/data-paths.js'
import { clearIpDataCache, createIpSource } from '../src/sources/ip/index.js'

/** Files read by the source modules (node:fs wrapped; every call still goes to the real one). */
const fileReads = vi.hoisted(() => ({ count: 0 }))
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>()
  const readFileSync = ((...args: Parameters<typeof fs.readFileSync>) => {
    fileReads.count++
    return fs.readFileSync(...args)
  }) as typeof fs.readFileSync
  return { ...fs, default: { ...fs, readFileSync }, readFileSync }
})
import { parseIp } from '../src/sources/ip/parse.js'
import { assertValidResult } from './validate.js'

const ip = (s: string) => {
  const p = parseIp(s)
  if (!p) throw new Error(s)
  return p
}
const tmp = mkdtempSync(join(tmpdir(), 'riskcheck-ipdata-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

describe('data/ip (compiled by scripts/build-ip-data.ts)', () => {
  const paths = getDefaultIpDataPaths()

  it('flags.mmdb is a small riskcheck-ip-flags IPv6 database', () => {
    const size = statSync(paths.flags).size
    expect(size).toBeGreaterThan(1_000_000)
    expect(size).toBeLessThan(5_000_000)
    const r = new Reader(readFileSync(paths.flags))
    expect(r.metadata).toMatchObject({ databaseType: 'riskcheck-ip-flags', ipVersion: 6, recordSize: 24, binaryFormatMajorVersion: 2 })
    expect(r.metadata.nodeCount).toBeGreaterThan(200_000)
    expect(r.metadata.buildEpoch.toISOString().slice(0, 10)).toBe('2026-08-22')
  })

  it('asn-flags.json lists the hosting ASNs and single-company VPN ASNs', () => {
    const j = JSON.parse(readFileSync(paths.asnFlags, 'utf8')) as { built: string; hosting: number[]; vpn: Record<string, string> }
    expect(j.hosting.length).toBeGreaterThan(800)
    expect(j.hosting.length).toBeLessThan(1200)
    expect(j.hosting).toContain(14061) // DigitalOcean
    expect(j.hosting).toEqual([...j.hosting].sort((a, b) => a - b))
    expect(j.vpn).toEqual({ '50525': 'privadovpn', '136787': 'nordvpn', '207137': 'nordvpn', '208172': 'protonvpn', '209854': 'surfshark' })
  })

  it('the npm data packages are where the source expects them', () => {
    for (const p of [paths.cityV4, paths.cityV6, paths.asnV4, paths.asnV6]) expect(statSync(p).size).toBeGreaterThan(1_000_000)
  })
})

describe('default lookups (no configuration)', () => {
  const src = createIpSource()

  it('a cloud provider range: AWS', () => {
    const r = src.lookup(ip('52.94.76.10'))
    expect(r.flags).toMatchObject({ is_cloud: true, cloud_provider: 'aws', is_datacenter: true, is_vpn: false, is_tor: false })
    expect(r.network).toMatchObject({ asn: 16509, as_name: 'Amazon.com, Inc.', connection_type: 'datacenter' })
    expect(r.location.country_code).toBe('US')
    expect(r.dataSources).toEqual(['dbip-city-lite', 'ip-location-db-asn', 'riskcheck-ip-flags'])
    expect(r.failed).toEqual([])
  })

  it.each([
    ['20.33.0.1', 'azure'],
    ['139.59.0.1', 'digitalocean'],
    ['45.33.0.1', 'linode'],
    ['104.16.0.1', 'cloudflare'],
    ['2606:4700::1', 'cloudflare'],
  ])('%s is cloud provider %s', (addr, provider) => {
    expect(src.lookup(ip(addr)).flags).toMatchObject({ is_cloud: true, cloud_provider: provider })
  })

  it('company infrastructure is datacenter but not cloud (GitHub)', () => {
    expect(src.lookup(ip('140.82.112.3')).flags).toMatchObject({ is_datacenter: true, is_cloud: false, cloud_provider: null })
  })

  it('a Tor exit from the list (IPv4 and IPv6) is Tor, not a VPN', () => {
    expect(src.lookup(ip('101.99.92.179')).flags).toMatchObject({ is_tor: true, is_vpn: false })
    expect(src.lookup(ip('185.220.101.1')).flags).toMatchObject({ is_tor: true, is_vpn: false })
    expect(src.lookup(ip('2001:470:1:908::9001')).flags.is_tor).toBe(true)
    expect(src.lookup(ip('185.220.101.1')).network.asn).toBe(60729)
  })

  it('VPN ranges by provider', () => {
    expect(src.lookup(ip('23.144.160.67')).flags).toMatchObject({ is_vpn: true, vpn_provider: 'mullvad' })
    expect(src.lookup(ip('31.171.155.134')).flags).toMatchObject({ is_vpn: true, vpn_provider: 'private_internet_access' })
    expect(src.lookup(ip('2.58.241.67')).flags).toMatchObject({ is_vpn: true, vpn_provider: 'protonvpn' })
    expect(src.lookup(ip('104.28.28.1')).flags).toMatchObject({ is_vpn: true, vpn_provider: 'icloud_private_relay' })
  })

  it('an IPv6 address: location, ASN and cloud flags', () => {
    const r = src.lookup(ip('2001:4860:4860::8888'))
    expect(r.network.asn).toBe(15169)
    expect(r.location.country_code).toMatch(/^[A-Z]{2}$/)
    expect(r.location.continent).not.toBeNull()
    expect(r.flags).toMatchObject({ is_cloud: true, cloud_provider: 'google_cloud' })
  })

  it('an eyeball address has location and network but no flags', () => {
    const r = src.lookup(ip('81.2.69.160'))
    expect(r.location).toMatchObject({ country: 'United Kingdom', country_code: 'GB', continent: 'Europe' })
    expect(r.location.lat).toEqual(expect.any(Number))
    expect(r.network.asn).toBe(20712)
    expect(r.network.connection_type).toBeNull() // no guess without data
    expect(r.flags).toMatchObject({ is_vpn: false, is_proxy: false, is_tor: false, is_datacenter: false, is_cloud: false })
  })

  it('every located address has a time zone (DB-IP Lite carries none: derived), one that covers its country', async () => {
    const { default: tz } = await import('../data/ip/timezones.json', { with: { type: 'json' } })
    const zones = tz.zones as unknown as Record<string, string[]>
    expect(src.lookup(ip('81.2.69.160')).location.timezone).toBe('Europe/London')
    let seed = 99
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0)
    let located = 0
    for (let i = 0; i < 3000; i++) {
      const a = `${(next() % 223) + 1}.${next() % 256}.${next() % 256}.${next() % 256}`
      const loc = src.lookup(ip(a)).location
      if (loc.country_code === null && loc.lat === null) {
        expect(loc.timezone, a).toBeNull()
        continue
      }
      located++
      expect(loc.timezone, a).not.toBeNull()
      if (loc.country_code !== null && tz.countries[loc.country_code as keyof typeof tz.countries]) {
        expect(zones[loc.timezone!], `${a} ${loc.country_code} → ${loc.timezone}`).toContain(loc.country_code)
      }
    }
    expect(located).toBeGreaterThan(1000)
  })

  it('bundled data is shared: a second source answers without reloading (no file read at all)', () => {
    createIpSource().lookup(ip('52.94.76.10')) // make sure the first one loaded
    createIpSource().lookup(ip('2001:4860:4860::8888'))
    const before = fileReads.count
    const second = createIpSource()
    second.lookup(ip('52.94.76.10'))
    second.lookup(ip('2001:4860:4860::8888'))
    expect(second.warm()).toEqual([])
    expect(fileReads.count).toBe(before)
    // (the counter does count: a fresh load reads the files)
    clearIpDataCache()
    createIpSource().lookup(ip('52.94.76.10'))
    expect(fileReads.count).toBeGreaterThan(before)
  })
})

describe('through rc.ip()', () => {
  it('default data end to end: cloud, Tor, private address, IPv6', async () => {
    const rc = createRiskcheck({ offline: true })
    const aws = await rc.ip('52.94.76.10')
    assertValidResult(aws, 'ip')
    expect(aws.risk.factors.sort()).toEqual(['ip_cloud', 'ip_datacenter'])
    expect(aws.verdict.status).toBe('risky')
    const tor = await rc.ip('101.99.92.179')
    expect(tor.risk.factors).toContain('ip_tor')
    expect(tor.details.flags.is_tor).toBe(true)
    const priv = await rc.ip('192.168.1.20')
    assertValidResult(priv, 'ip')
    expect(priv.verdict.status).toBe('invalid')
    expect(priv.verdict.reason).toMatch(/192\.168\.0\.0\/16.*Private-Use/)
    expect(priv.details.flags.is_bogon).toBe(true)
    expect(priv.partial).toBe(false)
    const v6 = await rc.ip('2a02:6b8::1')
    assertValidResult(v6, 'ip')
    expect(v6.details).toMatchObject({ ip: '2a02:6b8::1', version: 6, network: { asn: 13238 } })
    expect(v6.verdict.status).toBe('valid')
    await rc.close()
  })
})

describe('hosting / VPN ASNs and missing bundled data', () => {
  it('an address whose ASN is a hosting ASN is datacenter; a VPN-company ASN names the provider', () => {
    const asnFlags = join(tmp, 'asn-flags.json')
    writeFileSync(asnFlags, JSON.stringify({ built: '2026-01-01', hosting: [20712], vpn: { '13238': 'example_vpn' } }))
    const src = createIpSource({ bundledPaths: { asnFlags } })
    expect(src.lookup(ip('81.2.69.160')).flags.is_datacenter).toBe(true)
    expect(src.lookup(ip('81.2.69.160')).network.connection_type).toBe('datacenter')
    expect(src.lookup(ip('2a02:6b8::1')).flags).toMatchObject({ is_vpn: true, vpn_provider: 'example_vpn' })
  })

  it('missing bundled files make lookups partial (failed names them), never throw', () => {
    const src = createIpSource({ bundledPaths: { cityV4: join(tmp, 'missing-city.mmdb'), flags: join(tmp, 'missing-flags.mmdb') } })
    const r = src.lookup(ip('52.94.76.10'))
    expect(r.failed.sort()).toEqual(['dbip-city-lite', 'riskcheck-ip-flags'])
    expect(r.location.country_code).toBeNull()
    expect(r.network.asn).toBe(16509) // the ASN data still answers
    expect(src.warm([4])).toEqual([expect.stringMatching(/^dbip-city-lite: /), expect.stringMatching(/^riskcheck-ip-flags: /)])
  })

  it('defaults: false uses no bundled data at all', () => {
    const r = createIpSource({ defaults: false }).lookup(ip('52.94.76.10'))
    expect(r.dataSources).toEqual([])
    expect(r.location.country_code).toBeNull()
    expect(r.flags.is_cloud).toBe(false)
  })
})

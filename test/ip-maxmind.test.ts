/**
 * MaxMind's official test databases end to end: every network of their source-data JSON is looked up through the IP
 * source (and a sample through the full `rc.ip()` facade) and the answer is checked against the JSON record.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Reader } from 'maxmind'
import { describe, expect, it } from 'vitest'
import { MmdbWriter } from '../src/data/mmdb-writer.js'
import { createRiskcheck, type RiskcheckOptions } from '../src/index.js'
import { getSpecialPurposeRange } from '../src/sources/ip/bogon.js'
import { createIpSource, type IpSourceOptions } from '../src/sources/ip/index.js'
import { formatIpv4, formatIpv6Words, parseCidr, parseIp, type ParsedCidr, type ParsedIp } from '../src/sources/ip/parse.js'
import { deriveTimezone } from '../src/sources/ip/timezone.js'
import { assertValidResult } from './validate.js'

const FIX = join(import.meta.dirname, 'fixtures/maxmind')
const db = (name: string) => join(FIX, `${name}.mmdb`)

type Rec = Record<string, any>
interface Net {
  cidr: ParsedCidr
  rec: Rec
}

/** The networks of a source-data JSON file. */
function loadJson(name: string): Net[] {
  const rows = JSON.parse(readFileSync(join(FIX, `${name}.json`), 'utf8')) as Array<Record<string, Rec>>
  return rows.map((row) => {
    const [key, rec] = Object.entries(row)[0]!
    let cidr = parseCidr(key)
    if (!cidr) throw new Error(`bad network in ${name}.json: ${key}`)
    // MaxMind writes IPv4 networks as ::a.b.c.d/(96+n): the IPv4 subtree of an IPv6 database
    if (cidr.version === 6 && cidr.prefix >= 96 && cidr.first[0] === 0 && cidr.first[1] === 0 && cidr.first[2] === 0) {
      cidr = { version: 4, first: cidr.first[3], last: cidr.last[3], prefix: cidr.prefix - 96 }
    }
    return { cidr, rec }
  })
}

const cmp = (a: readonly number[], b: readonly number[]) => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number) ? -1 : 1
  return 0
}
function contains(c: ParsedCidr, ip: ParsedIp): boolean {
  if (c.version !== ip.version) return false
  if (c.version === 4 && ip.version === 4) return ip.value >= c.first && ip.value <= c.last
  if (c.version === 6 && ip.version === 6) return cmp(ip.words, c.first) >= 0 && cmp(ip.words, c.last) <= 0
  return false
}

/** A probe address inside each network (the first address and the middle one), with its expected record. */
function probes(nets: Net[]): Array<{ ip: ParsedIp; rec: Rec }> {
  const out: Array<{ ip: ParsedIp; rec: Rec }> = []
  for (const n of nets) {
    const texts: string[] = []
    if (n.cidr.version === 4) texts.push(formatIpv4(n.cidr.first), formatIpv4(n.cidr.first + Math.floor((n.cidr.last - n.cidr.first) / 2)))
    else texts.push(formatIpv6Words(n.cidr.first))
    for (const t of texts) {
      const ip = parseIp(t)!
      // addresses the lookup never sends to a database (bogons), and the 6to4 block the writer aliases to IPv4
      if (getSpecialPurposeRange(ip) || (ip.version === 6 && ip.words[0]! >>> 16 === 0x2002)) continue
      // the most specific network containing the probe is the one the database answers with
      let best: Net | null = null
      for (const m of nets) if (contains(m.cidr, ip) && (!best || m.cidr.prefix > best.cidr.prefix)) best = m
      out.push({ ip, rec: best!.rec })
    }
  }
  return out
}

const en = (v: any): string | null => v?.names?.en ?? null
const source = (opts: IpSourceOptions) => createIpSource({ defaults: false, ...opts })

describe('GeoIP2 / GeoLite2 City and Country test databases', () => {
  for (const name of ['GeoIP2-City-Test', 'GeoIP2-Enterprise-Test']) {
    it(`${name}: every network's location matches the source data`, () => {
      const src = source({ cityDb: db(name) })
      const list = probes(loadJson(name))
      expect(list.length).toBeGreaterThan(20)
      for (const { ip, rec } of list) {
        const got = src.lookup(ip)
        expect(got.failed).toEqual([])
        expect(got.location, ip.address).toEqual({
          country: en(rec.country),
          country_code: rec.country?.iso_code ?? null,
          region: en(rec.subdivisions?.[0]) ?? rec.subdivisions?.[0]?.iso_code ?? null,
          city: en(rec.city),
          postal: rec.postal?.code ?? null,
          lat: rec.location?.latitude ?? null,
          lon: rec.location?.longitude ?? null,
          // a record without a zone gets one from its coordinates or country
          timezone: rec.location?.time_zone ?? deriveTimezone(rec.country?.iso_code ?? null, rec.location?.latitude ?? null, rec.location?.longitude ?? null),
          continent: en(rec.continent),
        })
      }
    })
  }

  it('GeoIP2-Enterprise-Test: traits give network facts', () => {
    const src = source({ cityDb: db('GeoIP2-Enterprise-Test') })
    for (const { ip, rec } of probes(loadJson('GeoIP2-Enterprise-Test'))) {
      const t = rec.traits ?? {}
      const got = src.lookup(ip).network
      expect(got.asn, ip.address).toBe(t.autonomous_system_number ?? null)
      expect(got.as_name, ip.address).toBe(t.autonomous_system_organization ?? null)
      expect(got.isp, ip.address).toBe(t.isp ?? null)
      expect(got.org, ip.address).toBe(t.organization ?? null)
    }
  })

  it('GeoIP2-Country-Test: country and continent, the country’s time zone, nothing finer', () => {
    const src = source({ countryDb: db('GeoIP2-Country-Test') })
    const list = probes(loadJson('GeoIP2-Country-Test'))
    expect(list.length).toBeGreaterThan(100)
    for (const { ip, rec } of list) {
      const loc = src.lookup(ip).location
      expect(loc.country_code, ip.address).toBe(rec.country?.iso_code ?? null)
      expect(loc.country, ip.address).toBe(en(rec.country))
      expect(loc.continent, ip.address).toBe(en(rec.continent))
      expect([loc.city, loc.region, loc.postal, loc.lat]).toEqual([null, null, null, null])
      expect(loc.timezone, ip.address).toBe(deriveTimezone(loc.country_code, null, null))
      if (loc.country_code !== null) expect(loc.timezone, ip.address).not.toBeNull()
    }
  })

  it('a country database fills in when the city database has no answer', () => {
    const src = source({ cityDb: db('GeoIP2-City-Test'), countryDb: db('GeoIP2-Country-Test') })
    // 2.125.160.216 is in the Country test data; find a Country network absent from the City data
    const city = loadJson('GeoIP2-City-Test')
    const onlyCountry = probes(loadJson('GeoIP2-Country-Test')).find(({ ip, rec }) => rec.country && !city.some((n) => contains(n.cidr, ip)))
    expect(onlyCountry).toBeDefined()
    const got = src.lookup(onlyCountry!.ip)
    expect(got.location.country_code).toBe(onlyCountry!.rec.country.iso_code)
    expect(got.dataSources).toEqual(['GeoIP2-City', 'GeoIP2-Country'])
  })
})

describe('network databases', () => {
  it('GeoLite2-ASN-Test: asn and as_name of every network', () => {
    const src = source({ asnDb: db('GeoLite2-ASN-Test') })
    const list = probes(loadJson('GeoLite2-ASN-Test'))
    expect(list.length).toBeGreaterThan(500)
    for (const { ip, rec } of list) {
      const n = src.lookup(ip).network
      expect([n.asn, n.as_name], ip.address).toEqual([rec.autonomous_system_number ?? null, rec.autonomous_system_organization ?? null])
    }
  })

  it('GeoIP2-ISP-Test: isp, org, asn, as_name of every network', () => {
    const src = source({ ispDb: db('GeoIP2-ISP-Test') })
    const list = probes(loadJson('GeoIP2-ISP-Test'))
    expect(list.length).toBeGreaterThan(1000)
    for (const { ip, rec } of list) {
      const n = src.lookup(ip).network
      expect(n, ip.address).toEqual({
        asn: rec.autonomous_system_number ?? null,
        as_name: rec.autonomous_system_organization ?? null,
        isp: rec.isp ?? null,
        org: rec.organization ?? null,
        connection_type: null,
      })
    }
  })

  it('GeoIP2-Connection-Type-Test: mapped connection types', () => {
    const src = source({ connectionTypeDb: db('GeoIP2-Connection-Type-Test') })
    const map: Record<string, string> = { 'Cable/DSL': 'residential', Cellular: 'mobile', Corporate: 'business', Satellite: 'residential', Dialup: 'residential' }
    const list = probes(loadJson('GeoIP2-Connection-Type-Test'))
    const seen = new Set<string>()
    for (const { ip, rec } of list) {
      expect(src.lookup(ip).network.connection_type, ip.address).toBe(map[rec.connection_type] ?? null)
      seen.add(rec.connection_type)
    }
    expect([...seen].sort()).toEqual(['Cable/DSL', 'Cellular', 'Corporate', 'Satellite'])
  })
})

describe('anonymity databases', () => {
  it('GeoIP2-Anonymous-IP-Test: every flag of every network; unlisted ({}) is clean', () => {
    const src = source({ anonymousDb: db('GeoIP2-Anonymous-IP-Test') })
    const list = probes(loadJson('GeoIP2-Anonymous-IP-Test'))
    expect(list.length).toBeGreaterThan(5)
    for (const { ip, rec } of list) {
      const f = src.lookup(ip).flags
      expect(f.is_vpn, ip.address).toBe(rec.is_anonymous_vpn === true)
      expect(f.is_tor, ip.address).toBe(rec.is_tor_exit_node === true)
      expect(f.is_public_proxy, ip.address).toBe(rec.is_public_proxy === true)
      expect(f.is_residential_proxy, ip.address).toBe(rec.is_residential_proxy === true)
      expect(f.is_proxy, ip.address).toBe(rec.is_public_proxy === true || rec.is_residential_proxy === true)
      expect(f.is_datacenter, ip.address).toBe(rec.is_hosting_provider === true)
    }
    const clean = src.lookup(parseIp('8.8.8.8')!)
    expect(clean.flags).toMatchObject({ is_vpn: false, is_proxy: false, is_tor: false, is_datacenter: false })
    expect(clean.network.connection_type).toBeNull()
    // hosting → datacenter connection type
    expect(src.lookup(parseIp('71.160.223.1')!).network.connection_type).toBe('datacenter')
  })

  it('GeoIP-Anonymous-Plus-Test: provider_name becomes vpn_provider', () => {
    const src = source({ anonymousDb: db('GeoIP-Anonymous-Plus-Test') })
    for (const { ip, rec } of probes(loadJson('GeoIP-Anonymous-Plus-Test'))) {
      const f = src.lookup(ip).flags
      expect(f.is_vpn, ip.address).toBe(rec.is_anonymous_vpn === true)
      expect(f.vpn_provider, ip.address).toBe(rec.is_anonymous_vpn === true ? (rec.provider_name ?? null) : null)
    }
    expect(src.lookup(parseIp('1.2.0.1')!).flags.vpn_provider).toBe('foo')
  })

  it('GeoIP-Residential-Proxy-Test: every listed address is a residential proxy', () => {
    const src = source({ anonymousDb: db('GeoIP-Residential-Proxy-Test') })
    const list = probes(loadJson('GeoIP-Residential-Proxy-Test'))
    expect(list.length).toBeGreaterThan(5)
    for (const { ip } of list) expect(src.lookup(ip).flags, ip.address).toMatchObject({ is_residential_proxy: true, is_proxy: true, is_vpn: false })
    expect(src.lookup(parseIp('8.8.8.8')!).flags.is_proxy).toBe(false)
  })
})

describe('the full lookup with MaxMind databases as drop-ins', () => {
  const ip: RiskcheckOptions['ip'] = {
    cityDb: db('GeoIP2-City-Test'),
    asnDb: db('GeoLite2-ASN-Test'),
    ispDb: db('GeoIP2-ISP-Test'),
    connectionTypeDb: db('GeoIP2-Connection-Type-Test'),
    anonymousDb: db('GeoIP2-Anonymous-IP-Test'),
    defaults: false,
  }

  it('rc.ip() answers from the given databases with a schema-valid result', async () => {
    const rc = createRiskcheck({ offline: true, ip })
    const r = await rc.ip('81.2.69.160')
    assertValidResult(r, 'ip')
    expect(r.details.location).toMatchObject({ city: 'London', country_code: 'GB', region: 'England', timezone: 'Europe/London', continent: 'Europe' })
    // 81.2.69.0/24 has every Anonymous-IP flag in the test data
    expect(r.details.flags).toMatchObject({ is_vpn: true, is_proxy: true, is_tor: true, is_datacenter: true, is_bogon: false })
    expect(r.risk.factors).toEqual(expect.arrayContaining(['ip_tor', 'ip_public_proxy', 'ip_residential_proxy', 'ip_vpn', 'ip_datacenter']))
    expect(r.verdict.status).toBe('risky')
    expect(r.metadata.data_sources).toEqual(
      expect.arrayContaining(['GeoIP2-City', 'GeoIP2-Connection-Type', 'GeoIP2-ISP', 'GeoLite2-ASN', 'GeoIP2-Anonymous-IP']),
    )
    expect(r.partial).toBe(false) // offline: reverse DNS not asked, which is no failure

    const isp = await rc.ip('1.128.0.1')
    expect(isp.details.network).toMatchObject({ asn: 1221, as_name: 'Telstra Pty Ltd', isp: 'Telstra Internet' })
    const conn = await rc.ip('1.0.1.1')
    expect(conn.details.network.connection_type).toBe('mobile')
    const v6 = await rc.ip('2001:218::1')
    expect(v6.details).toMatchObject({ version: 6, ip: '2001:218::1', location: { country_code: 'JP' } })
    await rc.close()
  })

  it('a missing or corrupt database fails at createRiskcheck with the option and path named', () => {
    const missing = join(FIX, 'does-not-exist.mmdb')
    expect(() => createRiskcheck({ ip: { cityDb: missing } })).toThrow(TypeError)
    expect(() => createRiskcheck({ ip: { cityDb: missing } })).toThrow(`option ip.cityDb: file not found (${missing})`)
    const broken = db('GeoIP2-City-Test-Invalid-Node-Count')
    expect(() => createRiskcheck({ ip: { anonymousDb: db('GeoIP2-Anonymous-IP-Test'), cityDb: broken } })).toThrow(/option ip\.cityDb: corrupt MaxMind DB file/)
    expect(() => createRiskcheck({ ip: { asnDb: db('GeoIP2-City-Test') } })).toThrow(/option ip\.asnDb: expected an ASN or ISP database/)
  })

  it('a record that cannot be decoded at lookup time makes the result partial, never a crash', async () => {
    // a valid City database whose record for 5.5.5.0/24 is corrupted after writing (the probes at open time miss it)
    const w = new MmdbWriter({ ipVersion: 6, databaseType: 'GeoIP2-City' })
    w.insert('5.5.5.0/24', { country: { iso_code: 'XX', names: { en: 'Broken' } } })
    w.insert('6.6.6.0/24', { country: { iso_code: 'DE', names: { en: 'Germany' } } })
    const buf = Buffer.from(w.toBuffer())
    const reader = new Reader(buf)
    const offset = reader.metadata.searchTreeSize + 16 // the first record of the data section: 5.5.5.0/24's
    buf[offset] = 0x00 // the map's control byte becomes "extended type", read from the next byte: an unknown type
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-broken-'))
    const path = join(dir, 'broken-city.mmdb')
    writeFileSync(path, buf)
    try {
      const rc = createRiskcheck({ offline: true, ip: { cityDb: path, defaults: false } })
      const bad = await rc.ip('5.5.5.5')
      assertValidResult(bad, 'ip')
      expect(bad.partial).toBe(true)
      expect(bad.risk.factors).toEqual(['ip_source_unavailable'])
      expect(bad.verdict.status).toBe('unknown')
      expect(bad.details.location.country_code).toBeNull()
      const good = await rc.ip('6.6.6.6')
      expect(good.details.location.country_code).toBe('DE')
      expect(good.risk.factors).toEqual([])
      await rc.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

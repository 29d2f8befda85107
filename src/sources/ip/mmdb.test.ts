import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'
import { mapConnectionType, openMmdb, readAnonymity, readFlags, readLocation, readNetwork } from './mmdb.js'

const FIX = join(import.meta.dirname, '../../../test/fixtures/maxmind')
const fixture = (name: string) => join(FIX, name)
const tmp = mkdtempSync(join(tmpdir(), 'riskcheck-mmdb-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

describe('openMmdb validates at open time', () => {
  it('opens a good file and reports its type', () => {
    const db = openMmdb(fixture('GeoIP2-City-Test.mmdb'), 'ip.cityDb', 'city')
    expect(db.databaseType).toBe('GeoIP2-City')
    expect(db.ipVersion).toBe(6)
    expect(db.reader.get('81.2.69.160')).not.toBeNull()
  })

  it('a missing file names the option and the path', () => {
    const path = join(tmp, 'nope.mmdb')
    expect(() => openMmdb(path, 'ip.cityDb', 'city')).toThrow(`option ip.cityDb: file not found (${path})`)
  })

  it('a directory, an empty file, garbage, gzip and a truncated file are refused', () => {
    expect(() => openMmdb(tmp, 'ip.asnDb', 'asn')).toThrow(/option ip\.asnDb: is a directory/)
    const empty = join(tmp, 'empty.mmdb')
    writeFileSync(empty, '')
    expect(() => openMmdb(empty, 'ip.cityDb', 'city')).toThrow(/option ip\.cityDb: not a valid MaxMind DB file/)
    const garbage = join(tmp, 'garbage.mmdb')
    writeFileSync(garbage, 'hello, this is not a database\n'.repeat(100))
    expect(() => openMmdb(garbage, 'ip.cityDb', 'city')).toThrow(/not a valid MaxMind DB file.*garbage\.mmdb/)
    const good = readFileSync(fixture('GeoIP2-City-Test.mmdb'))
    const gz = join(tmp, 'city.mmdb.gz')
    writeFileSync(gz, gzipSync(good))
    expect(() => openMmdb(gz, 'ip.cityDb', 'city')).toThrow(/gzip-compressed/)
    const truncated = join(tmp, 'truncated.mmdb')
    writeFileSync(truncated, good.subarray(0, 5000))
    expect(() => openMmdb(truncated, 'ip.cityDb', 'city')).toThrow(/option ip\.cityDb: .*(not a valid|corrupt)/)
    // tree and data cut away, metadata kept: the reader opens it, the structure check does not
    const gutted = join(tmp, 'gutted.mmdb')
    writeFileSync(gutted, Buffer.concat([good.subarray(0, 100), good.subarray(good.length - 400)]))
    expect(() => openMmdb(gutted, 'ip.cityDb', 'city')).toThrow(/corrupt MaxMind DB file/)
  })

  it("MaxMind's broken test database (node count larger than the file) is refused", () => {
    expect(() => openMmdb(fixture('GeoIP2-City-Test-Invalid-Node-Count.mmdb'), 'ip.cityDb', 'city')).toThrow(
      /corrupt MaxMind DB file: node_count 100000 does not fit the file/,
    )
  })

  it('a search tree pointing outside the data section is refused', () => {
    const good = Buffer.from(readFileSync(fixture('GeoIP2-Connection-Type-Test.mmdb')))
    // node 0's left record (28-bit): set it to the largest value → beyond the data section
    good[0] = 0xff
    good[1] = 0xff
    good[2] = 0xff
    good[3] = good[3]! | 0xf0
    const bad = join(tmp, 'bad-tree.mmdb')
    writeFileSync(bad, good)
    expect(() => openMmdb(bad, 'ip.connectionTypeDb', 'connection-type')).toThrow(/points outside the data section/)
  })

  it('a database of the wrong kind is refused with both types named', () => {
    expect(() => openMmdb(fixture('GeoLite2-ASN-Test.mmdb'), 'ip.cityDb', 'city')).toThrow(
      /option ip\.cityDb: expected a City, Country or Enterprise database .* database_type is "GeoLite2-ASN"/,
    )
    expect(() => openMmdb(fixture('GeoIP2-City-Test.mmdb'), 'ip.anonymousDb', 'anonymous')).toThrow(/"GeoIP2-City"/)
    expect(() => openMmdb(fixture('GeoIP2-City-Test.mmdb'), 'ip.connectionTypeDb', 'connection-type')).toThrow(/Connection-Type/)
    // ISP databases carry ASN fields, so they are accepted as asnDb
    expect(openMmdb(fixture('GeoIP2-ISP-Test.mmdb'), 'ip.asnDb', 'asn').databaseType).toBe('GeoIP2-ISP')
  })
})

describe('record projections', () => {
  it('MaxMind City schema', () => {
    const loc = readLocation({
      city: { names: { en: 'London', de: 'London' } },
      continent: { code: 'EU', names: { en: 'Europe' } },
      country: { iso_code: 'GB', names: { en: 'United Kingdom' } },
      location: { latitude: 51.5142, longitude: -0.0931, time_zone: 'Europe/London' },
      postal: { code: 'EC1A' },
      subdivisions: [{ iso_code: 'ENG', names: { en: 'England' } }, { iso_code: 'X', names: { en: 'Second level' } }],
    })
    expect(loc).toEqual({
      country: 'United Kingdom',
      country_code: 'GB',
      region: 'England',
      city: 'London',
      postal: 'EC1A',
      lat: 51.5142,
      lon: -0.0931,
      timezone: 'Europe/London',
      continent: 'Europe',
    })
  })

  it('MaxMind names without English fall back to another language; a continent code alone is named', () => {
    const loc = readLocation({ country: { iso_code: 'JP', names: { ja: '日本' } }, continent: { code: 'AS' } })
    expect(loc.country).toBe('日本')
    expect(loc.continent).toBe('Asia')
  })

  it('DB-IP Lite schema: flat fields, empty strings → null, names derived, float coordinates rounded, zone from the coordinates', () => {
    const loc = readLocation({
      city: 'Mountain View',
      country_code: 'US',
      latitude: 37.422000885009766,
      longitude: -122.08499908447266,
      postcode: '',
      state1: 'California',
      state2: '',
      timezone: '',
    })
    expect(loc).toEqual({
      country: 'United States',
      country_code: 'US',
      region: 'California',
      city: 'Mountain View',
      postal: null,
      lat: 37.422,
      lon: -122.085,
      timezone: 'America/Los_Angeles',
      continent: 'North America',
    })
    expect(readLocation({ country_code: 'ZZ', city: '' })).toMatchObject({ country_code: null, country: null, continent: null })
  })

  it('garbage records give empty facts, never throw', () => {
    for (const r of [null, undefined, 42, 'x', [], { country: 'nope', location: { latitude: 'x' } }]) {
      expect(readLocation(r).country_code).toBeNull()
      expect(readNetwork(r).asn).toBeNull()
      expect(readAnonymity(r, 'GeoIP2-Anonymous-IP').is_vpn).toBe(false)
      expect(readFlags(r).is_tor).toBe(false)
    }
  })

  it('network facts from ASN, ISP, Connection-Type and Enterprise traits', () => {
    expect(readNetwork({ autonomous_system_number: 15169, autonomous_system_organization: 'Google' })).toMatchObject({ asn: 15169, as_name: 'Google' })
    expect(readNetwork({ isp: 'Telstra Internet', organization: 'Telstra' })).toMatchObject({ isp: 'Telstra Internet', org: 'Telstra' })
    expect(readNetwork({ traits: { user_type: 'hosting', autonomous_system_number: 1 } })).toMatchObject({ asn: 1, connection_type: 'datacenter' })
    expect(readNetwork({ traits: { connection_type: 'Cellular', user_type: 'residential' } }).connection_type).toBe('mobile')
  })

  it('connection types map to the documented vocabulary', () => {
    expect(['Cable/DSL', 'Cellular', 'Corporate', 'Dialup', 'Satellite', 'Other', 42].map(mapConnectionType)).toEqual([
      'residential',
      'mobile',
      'business',
      'residential',
      'residential',
      null,
      null,
    ])
  })

  it('anonymity: Anonymous-IP booleans, Anonymous-Plus provider, Residential-Proxy records, {} = nothing', () => {
    expect(readAnonymity({}, 'GeoIP2-Anonymous-IP')).toEqual({
      is_vpn: false,
      vpn_provider: null,
      is_public_proxy: false,
      is_residential_proxy: false,
      is_tor: false,
      is_datacenter: false,
    })
    expect(
      readAnonymity({ is_anonymous: true, is_anonymous_vpn: true, is_hosting_provider: true, is_tor_exit_node: true, provider_name: 'foo' }, 'GeoIP-Anonymous-Plus'),
    ).toMatchObject({ is_vpn: true, vpn_provider: 'foo', is_datacenter: true, is_tor: true })
    expect(readAnonymity({ provider_name: 'quickshift' }, 'GeoIP-Residential-Proxy')).toMatchObject({ is_residential_proxy: true, is_vpn: false, vpn_provider: null })
    expect(readAnonymity({}, 'GeoIP-Residential-Proxy').is_residential_proxy).toBe(false)
  })
})

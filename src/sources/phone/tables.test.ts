import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { findPhoneDataDir, loadPhoneTables, parsePrefixTable, parseZoneCountries } from './tables.js'

const SAMPLE = [
  '# comment line',
  '@44 4',
  'v\tAlpha\tBeta',
  '07 0', // "7" → Alpha
  '112 1', // shares "7" with the previous entry: "712" → Beta
  '1701 1', // "7" + "701": "7701" → Beta
  '23 -', // "77" + "3": "773" → no data
  '@7 1',
  'v\tRussia',
  'c 0',
  '0 0',
  '%zones',
  'Europe/London\tGB',
  'Europe/Moscow\tRU',
  '',
].join('\n')

describe('parsePrefixTable (compiled text format)', () => {
  const t = parsePrefixTable(SAMPLE)

  it('decodes shared-prefix entries and answers the longest prefix', () => {
    expect(t.lookup('44', '7700900123')).toBe('Alpha')
    expect(t.lookup('44', '7701123456')).toBe('Beta')
    expect(t.lookup('44', '7123456789')).toBe('Beta')
    expect(t.lookup('44', '2079460958')).toBeNull()
  })

  it('treats "-" entries as holes cut into a parent range', () => {
    expect(t.lookup('44', '7730000000')).toBeNull()
  })

  it('has a calling-code-level entry (empty digits) and an exact country-level value', () => {
    expect(t.lookup('7', '9161234567')).toBe('Russia')
    expect(t.countryLevel('7')).toBe('Russia')
    expect(t.countryLevel('44')).toBeNull()
  })

  it('answers null for calling codes it has no section for', () => {
    expect(t.lookup('99', '123')).toBeNull()
    expect(t.callingCodes().sort()).toEqual(['44', '7'])
    expect(t.size('44')).toBe(4)
  })

  it('reads the %zones block', () => {
    expect([...parseZoneCountries(SAMPLE)]).toEqual([
      ['Europe/London', 'GB'],
      ['Europe/Moscow', 'RU'],
    ])
  })
})

describe('the shipped data/phone tables', () => {
  const dir = findPhoneDataDir()
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
    source: { commit: string }
    tables: Record<string, { file: string; sections: number; sourceEntries: number; entries: number; gzipBytes: number }>
  }
  const tables = loadPhoneTables(dir)

  it('are pinned: sizes and entry counts match the manifest of the build (a bad refresh is caught)', () => {
    expect(manifest.source.commit).toBe('f7e3e88c92b905c8d6edb81f336dbe25edc05b52')
    expect(manifest.tables.carrier).toMatchObject({ sections: 206, sourceEntries: 28970, entries: 17704 })
    expect(manifest.tables.geocoding).toMatchObject({ sections: 151, sourceEntries: 269389, entries: 225045 })
    expect(manifest.tables.timezones).toMatchObject({ sections: 206, sourceEntries: 3295, entries: 3068 })
    let total = 0
    for (const t of Object.values(manifest.tables)) {
      const size = statSync(join(dir, t.file)).size
      expect(size).toBe(t.gzipBytes)
      total += size
    }
    expect(total).toBeLessThan(1_000_000) // well within "a few MB"
    expect(tables.carrier.callingCodes()).toHaveLength(206)
    expect(tables.geocoding.callingCodes()).toHaveLength(151)
    expect(tables.geocoding.size('1')).toBeGreaterThan(20_000)
  })

  it('answer like Google libphonenumber resources for known prefixes', () => {
    // carrier/en/44.txt 447400 → Three; 33.txt 3364000 → Globalstar Europe; 336410 → La poste telecom
    expect(tables.carrier.lookup('44', '7400123456')).toBe('Three')
    expect(tables.carrier.lookup('33', '640001234')).toBe('Globalstar Europe')
    expect(tables.carrier.lookup('33', '641012345')).toBe('La poste telecom')
    // no carrier data for the US
    expect(tables.carrier.lookup('1', '2015550123')).toBeNull()
    // geocoding/en/1.txt 1201 → New Jersey, 1201200 → Jersey City, NJ; 41.txt 4144 → Zurich
    expect(tables.geocoding.lookup('1', '2015550123')).toBe('New Jersey')
    expect(tables.geocoding.lookup('1', '2012001234')).toBe('Jersey City, NJ')
    expect(tables.geocoding.lookup('41', '446681800')).toBe('Zurich')
    // timezones/map_data.txt 1201 → America/New_York; 44 (country level) → four zones
    expect(tables.timezones.lookup('1', '2015550123')).toBe('America/New_York')
    expect(tables.timezones.countryLevel('44')).toBe('Europe/Guernsey&Europe/Isle_of_Man&Europe/Jersey&Europe/London')
    expect(tables.zoneCountries.get('Europe/Guernsey')).toBe('GG')
    expect(tables.zoneCountries.get('Asia/Calcutta')).toBe('IN') // an old name, through tzdata's links
  })

  it('every zone of the time-zone table has a country', () => {
    const text = readFileSync(join(dir, 'manifest.json'), 'utf8')
    expect(JSON.parse(text).zonesWithoutCountry).toEqual([])
    for (const cc of tables.timezones.callingCodes()) {
      const zones = tables.timezones.countryLevel(cc)
      if (zones) for (const z of zones.split('&')) expect(tables.zoneCountries.has(z), z).toBe(true)
    }
  })
})

describe('loadPhoneTables', () => {
  it('reads nothing until first use, then fails clearly for a missing folder', () => {
    const t = loadPhoneTables('/nonexistent/phone-data')
    expect(() => t.carrier.lookup('44', '7400123456')).toThrow(/ENOENT/)
  })

  it('findPhoneDataDir fails clearly when there is no data above a folder', () => {
    expect(() => findPhoneDataDir('/')).toThrow(/data\/phone/)
  })
})

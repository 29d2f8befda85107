import { describe, expect, it } from 'vitest'
import data from '../../../data/ip/timezones.json' with { type: 'json' }
import { parseIso6709, buildTimezoneData } from '../../../scripts/build-timezone-data.js'
import { deriveTimezone, TIMEZONE_DATA_VERSION } from './timezone.js'

const COUNTRIES = data.countries as unknown as Record<string, Array<[string, number, number]>>
const ZONES = data.zones as unknown as Record<string, string[]>
const isIanaZone = (z: string) => {
  try {
    new Intl.DateTimeFormat('en', { timeZone: z })
    return true
  } catch {
    return false
  }
}

describe('deriveTimezone', () => {
  it.each([
    ['GB', 51.5142, -0.0931, 'Europe/London'],
    ['US', 37.7697, -122.3933, 'America/Los_Angeles'],
    ['US', 40.7128, -74.006, 'America/New_York'],
    ['US', 41.8781, -87.6298, 'America/Chicago'],
    ['DE', 52.5244, 13.4105, 'Europe/Berlin'],
    ['JP', 35.6895, 139.6917, 'Asia/Tokyo'],
    ['IN', 28.6139, 77.209, 'Asia/Kolkata'],
    ['AU', -33.8688, 151.2093, 'Australia/Sydney'],
    ['AU', -31.9523, 115.8613, 'Australia/Perth'],
    ['BR', -23.5505, -46.6333, 'America/Sao_Paulo'],
    ['RU', 55.7558, 37.6173, 'Europe/Moscow'],
  ] as const)('%s at %f,%f → %s', (cc, lat, lon, zone) => {
    expect(deriveTimezone(cc, lat, lon)).toBe(zone)
  })

  it('without coordinates: the country’s zone, its principal one when it has several', () => {
    expect(deriveTimezone('DE', null, null)).toBe('Europe/Berlin')
    expect(deriveTimezone('JP', null, null)).toBe('Asia/Tokyo')
    expect(deriveTimezone('US', null, null)).toBe('America/New_York')
  })

  it('null only when neither coordinates nor a known country are there', () => {
    expect(deriveTimezone(null, null, null)).toBeNull()
    expect(deriveTimezone('ZZ', null, null)).toBeNull()
    expect(deriveTimezone(null, 48.8566, 2.3522)).toBe('Europe/Paris')
    expect(deriveTimezone(null, 0, -30)).toMatch(/^Etc\/GMT[+-]\d+$/) // open ocean
    expect(deriveTimezone('FR', Number.NaN, 2.35)).toBe('Europe/Paris') // broken coordinates: the country
    expect(deriveTimezone(null, 91, 0)).toBeNull() // out of range
  })

  it('a zone that does not cover the country is replaced by the country’s zone nearest the coordinates', () => {
    // coordinates in Toronto with the country US (IP data does disagree like this): not America/Toronto
    expect(deriveTimezone('US', 43.6532, -79.3832)).toBe('America/Detroit')
    // a single-zone country: its zone, wherever the point is
    expect(deriveTimezone('FR', 52.5244, 13.4105)).toBe('Europe/Paris')
  })

  it('at every principal place of the zone table, the zone found covers the country', () => {
    for (const [cc, rows] of Object.entries(COUNTRIES)) {
      for (const [, lat, lon] of rows) {
        const zone = deriveTimezone(cc, lat, lon)
        expect(zone, `${cc} ${lat},${lon}`).not.toBeNull()
        expect(ZONES[zone as string], `${cc} ${lat},${lon} → ${zone}`).toContain(cc)
      }
    }
  })

  it('names only zones the runtime knows', () => {
    for (const rows of Object.values(COUNTRIES)) for (const [zone] of rows) expect(isIanaZone(zone), zone).toBe(true)
  })
})

describe('the country ↔ zone table (data/ip/timezones.json)', () => {
  it('is a complete tzdata release: every country of zone.tab, every zone', () => {
    expect(TIMEZONE_DATA_VERSION).toMatch(/^20\d\d[a-z]$/)
    expect(Object.keys(COUNTRIES).length).toBeGreaterThanOrEqual(240)
    expect(Object.keys(ZONES).length).toBeGreaterThanOrEqual(400)
    expect(COUNTRIES.US!.length).toBeGreaterThanOrEqual(25)
  })

  it('is built from zone.tab and zone1970.tab', () => {
    expect(parseIso6709('+404251-0740023')).toEqual([40.7142, -74.0064])
    expect(parseIso6709('-3352+15113')).toEqual([-33.8667, 151.2167])
    const built = buildTimezoneData('US\t+404251-0740023\tAmerica/New_York\tEastern\nOM\t+2336+05835\tAsia/Muscat\n', 'AE,OM\t+2518+05518\tAsia/Dubai\n', '2025b')
    expect(built).toEqual({
      version: '2025b',
      countries: { OM: [['Asia/Muscat', 23.6, 58.5833]], US: [['America/New_York', 40.7142, -74.0064]] },
      zones: { 'America/New_York': ['US'], 'Asia/Dubai': ['AE', 'OM'], 'Asia/Muscat': ['OM'] },
    })
  })
})

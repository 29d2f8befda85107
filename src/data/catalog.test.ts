import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DATA_SOURCE_NAMES, DATA_SOURCES, isDataSourceName, parseDuration } from './catalog.js'

describe('the data source catalog', () => {
  it('has the documented sources, each with a distinct data_sources name, an upstream, a license and a maximum age', () => {
    expect([...DATA_SOURCE_NAMES]).toEqual(['tor', 'vpn', 'datacenter', 'cloud', 'disposable', 'dbip-city', 'asn'])
    const labels = DATA_SOURCE_NAMES.map((n) => DATA_SOURCES[n].label)
    expect(new Set(labels).size).toBe(labels.length)
    for (const n of DATA_SOURCE_NAMES) {
      const s = DATA_SOURCES[n]
      expect(s.name).toBe(n)
      expect(s.upstream).toMatch(/^https:\/\//)
      expect(s.license.length).toBeGreaterThan(2)
      expect(s.maxAgeMs).toBeGreaterThanOrEqual(86_400_000)
    }
    expect(DATA_SOURCES.tor.maxAgeMs).toBe(86_400_000)
    expect(isDataSourceName('tor')).toBe(true)
    expect(isDataSourceName('geo')).toBe(false)
  })
})

describe('parseDuration', () => {
  it.each([
    ['6h', 21_600_000],
    ['30m', 1_800_000],
    ['1d', 86_400_000],
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    [' 2H ', 7_200_000],
    ['500ms', 500],
  ])('%s → %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms))

  it.each(['', '6', 'h', '6 h', '-1h', '0h', '1.5h', '6hours', '1w', 'x'.repeat(40)])('%j is not a duration', (text) => expect(parseDuration(text)).toBeNull())

  it('never throws and answers null or a positive whole number (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.stringMatching(/^(\d{1,3}[smhd]){1,3}$/)), (s) => {
        const v = parseDuration(s)
        expect(v === null || (Number.isSafeInteger(v) && v > 0)).toBe(true)
      }),
    )
  })
})

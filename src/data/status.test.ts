import { describe, expect, it } from 'vitest'
import { getBundledDataSet, labelOf, type DataSet } from './data-set.js'
import { DATA_SOURCE_NAMES, type DataSourceName } from './catalog.js'
import type { ManifestSource } from './manifest.js'
import { computeDataStatus, dataNotice, formatAge } from './status.js'

/** A set whose every source is dated `date` (tor: `torDate`). */
function setDated(date: string, torDate = date): DataSet {
  const bundled = getBundledDataSet()
  const sources = {} as Record<DataSourceName, ManifestSource>
  for (const n of DATA_SOURCE_NAMES)
    sources[n] = { origin: 'fetched', upstream: 'http://127.0.0.1/x', version: 'v', data_date: n === 'tor' ? torDate : date, fetched_at: date, entries: 1, checksum: 'none', files: [] }
  const labels = Object.fromEntries(DATA_SOURCE_NAMES.map((n) => [n, labelOf(n, sources[n])])) as Record<DataSourceName, string>
  return { ...bundled, id: '20261123T000000Z-abcdef', dir: '/d/sets/x', createdAt: date, sources, labels }
}

describe('data status with an injected clock', () => {
  it('a set is fresh until a source passes its maximum age (Tor: one day)', () => {
    const set = setDated('2026-11-20T00:00:00Z', '2026-11-23T06:00:00Z')
    const fresh = computeDataStatus(set, '/d', new Date('2026-11-23T12:00:00Z'))
    expect(fresh.stale).toBe(false)
    expect(fresh.sources.find((s) => s.name === 'tor')).toMatchObject({ age_seconds: 6 * 3600, max_age_seconds: 86_400, stale: false })
    const later = computeDataStatus(set, '/d', new Date('2026-11-24T06:00:01Z'))
    expect(later.stale_sources).toEqual(['tor'])
    expect(dataNotice(fresh)).toBeNull()
    // an installed set that went stale is a warning (its updates stopped), naming the one command that fixes it
    expect(dataNotice(later)).toEqual({
      level: 'warn',
      message: 'open data: data set 20261123T000000Z-abcdef in /d is stale (tor from 2026-11-23 (max 1d)). Fetch current data with: riskcheck data update --data-dir /d (or serve --refresh-data 6h)',
    })
    // the weekly lists go stale after 14 days, DB-IP after 45
    const month = computeDataStatus(set, '/d', new Date('2026-12-05T00:00:01Z'))
    expect(month.stale_sources).toEqual(['tor', 'vpn', 'datacenter', 'cloud', 'disposable'])
    expect(computeDataStatus(set, '/d', new Date('2027-01-05T00:00:00Z')).stale_sources).toEqual([...DATA_SOURCE_NAMES])
  })

  it('an unknown date is stale; a date in the future is age 0', () => {
    const set = setDated('2026-11-23T00:00:00Z')
    const s = { ...set, sources: { ...set.sources, asn: { ...set.sources.asn, data_date: null } } }
    const st = computeDataStatus(s, null, new Date('2026-11-22T00:00:00Z'))
    expect(st.sources.find((x) => x.name === 'asn')).toMatchObject({ age_seconds: null, stale: true })
    expect(st.sources.find((x) => x.name === 'tor')).toMatchObject({ age_seconds: 0, stale: false })
  })

  it('the bundled data reports its snapshot dates', () => {
    const st = computeDataStatus(getBundledDataSet(), null, new Date('2024-02-27T12:00:00Z'))
    expect(st).toMatchObject({ data_dir: null, set: 'bundled', problem: null })
    expect(st.sources.find((s) => s.name === 'tor')).toMatchObject({ version: '2024-02-27', data_date: '2024-02-27T03:57:52Z', origin: 'bundled', stale: false })
    expect(st.sources.find((s) => s.name === 'dbip-city')).toMatchObject({ version: '2026-06', origin: 'bundled' })
    // the bundled snapshot ages by design: a notice (not a warning) with the one command that fetches current data
    const notice = dataNotice(computeDataStatus(getBundledDataSet(), null, new Date('2026-11-23T00:00:00Z')))
    expect(notice?.level).toBe('info')
    expect(notice?.message).toMatch(/^open data: the bundled snapshot answers \(tor from 2024-02-27 \(max 1d\), /)
    expect(notice?.message).toMatch(/Fetch current data with: riskcheck data update --data-dir DIR, then give that --data-dir \(or RISKCHECK_DATA_DIR\) to serve and the lookups$/)
  })

  it('formats ages for people', () => {
    expect([formatAge(null), formatAge(12), formatAge(2400), formatAge(3600), formatAge(3 * 86_400 + 4 * 3600)]).toEqual(['unknown', '12s', '40m', '1h', '3d 4h'])
  })
})

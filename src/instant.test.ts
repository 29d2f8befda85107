/** The one reading of an instant written as text (src/instant.ts): list expiries, outcome times, --now. */
import { describe, expect, it } from 'vitest'
import { instantOfText } from './instant.js'

describe('instantOfText', () => {
  it('reads a date as midnight UTC and a date-time with Z or an offset, the same in every time zone', () => {
    expect(instantOfText('2026-12-31')).toBe(Date.UTC(2026, 11, 31))
    expect(instantOfText('2026-12-31T23:59:59Z')).toBe(Date.UTC(2026, 11, 31, 23, 59, 59))
    expect(instantOfText('2026-12-31T05:30+05:30')).toBe(Date.UTC(2026, 11, 31))
    expect(instantOfText('2028-02-29T00:00:00.5z')).toBe(Date.UTC(2028, 1, 29, 0, 0, 0, 500))
  })

  it('refuses a day the month does not have and a time past 23:59:59 (Date.parse moved them to another day)', () => {
    for (const text of ['2026-02-30T00:00:00Z', '2026-04-31', '2026-02-29', '2026-12-31T24:00:00Z', '2026-13-01', '2026-00-10', '2026-01-00', '2026-01-01T12:60Z', '2026-01-01T00:00+24:00'])
      expect(instantOfText(text), text).toBeNull()
    for (const text of ['2026-01-01T00:00:00', '1', 'Mar 3 2026', '', '2026-1-1']) expect(instantOfText(text), text).toBeNull()
  })

  it('counts leap years of every year alike, 0000–0099 included (Date.UTC reads those as 1900–1999)', () => {
    expect(instantOfText('0000-02-29')).toBe(Date.parse('0000-02-29T00:00:00Z'))
    expect(instantOfText('0004-02-29')).toBe(Date.parse('0004-02-29T00:00:00Z'))
    expect(instantOfText('2000-02-29')).toBe(Date.UTC(2000, 1, 29))
    for (const text of ['0001-02-29', '0100-02-29', '1900-02-29', '2100-02-29']) expect(instantOfText(text), text).toBeNull()
  })
})

import { describe, expect, it } from 'vitest'
import {
  FAILING_WINDOW_MS,
  MAX_DELIVERY_ATTEMPTS,
  RETRY_DELAYS_MS,
  RETRY_SPAN_MS,
  nextAttemptAt,
  shouldDisable,
} from './schedule.js'

const T0 = new Date('2026-03-01T12:00:00Z')
const MIN = 60_000
const HOUR = 60 * MIN

describe('nextAttemptAt', () => {
  it('follows 0, +1 min, +5 min, +15 min, +30 min, +1 h, +2 h, +3 h, +4 h, +6 h, +7 h — 11 attempts', () => {
    const expected = [0, 1 * MIN, 5 * MIN, 15 * MIN, 30 * MIN, 1 * HOUR, 2 * HOUR, 3 * HOUR, 4 * HOUR, 6 * HOUR, 7 * HOUR]
    const times: string[] = []
    let at = T0
    for (let made = 0; made < MAX_DELIVERY_ATTEMPTS; made++) {
      const next = nextAttemptAt(made, at)
      expect(next, `after ${made} attempts`).not.toBeNull()
      expect((next as Date).getTime() - at.getTime()).toBe(expected[made])
      at = next as Date
      times.push(at.toISOString())
    }
    expect(MAX_DELIVERY_ATTEMPTS).toBe(11)
    expect(times).toEqual([
      '2026-03-01T12:00:00.000Z',
      '2026-03-01T12:01:00.000Z',
      '2026-03-01T12:06:00.000Z',
      '2026-03-01T12:21:00.000Z',
      '2026-03-01T12:51:00.000Z',
      '2026-03-01T13:51:00.000Z',
      '2026-03-01T15:51:00.000Z',
      '2026-03-01T18:51:00.000Z',
      '2026-03-01T22:51:00.000Z',
      '2026-03-02T04:51:00.000Z',
      '2026-03-02T11:51:00.000Z',
    ])
    expect(nextAttemptAt(11, at)).toBeNull()
    expect(nextAttemptAt(12, at)).toBeNull()
  })

  it('spans 23 h 51 min ("about 24 hours")', () => {
    expect(RETRY_SPAN_MS).toBe(23 * HOUR + 51 * MIN)
    expect(RETRY_DELAYS_MS).toHaveLength(10)
  })

  it('jitter stays within ±ratio and is off by default', () => {
    const lo = nextAttemptAt(5, T0, { jitterRatio: 0.2, random: () => 0 })
    const hi = nextAttemptAt(5, T0, { jitterRatio: 0.2, random: () => 0.999999 })
    expect((lo as Date).getTime() - T0.getTime()).toBe(0.8 * HOUR)
    expect((hi as Date).getTime() - T0.getTime()).toBeCloseTo(1.2 * HOUR, -2)
    expect((nextAttemptAt(5, T0) as Date).getTime() - T0.getTime()).toBe(HOUR)
  })

  it('rejects a bad attempt count', () => {
    expect(() => nextAttemptAt(-1, T0)).toThrow(TypeError)
    expect(() => nextAttemptAt(1.5, T0)).toThrow(TypeError)
  })
})

describe('shouldDisable', () => {
  const created = new Date('2026-02-01T00:00:00Z')
  it('disables after a final failure with no success for the failing window', () => {
    const now = new Date(created.getTime() + FAILING_WINDOW_MS)
    expect(shouldDisable({ lastAttemptFailedFinal: true, lastSuccessAt: null, endpointCreatedAt: created, now })).toBe(true)
  })

  it('does not disable while retries remain', () => {
    const now = new Date(created.getTime() + 10 * 24 * HOUR)
    expect(shouldDisable({ lastAttemptFailedFinal: false, lastSuccessAt: null, endpointCreatedAt: created, now })).toBe(false)
  })

  it('a success within the window keeps the endpoint enabled', () => {
    const now = new Date('2026-02-10T00:00:00Z')
    const lastSuccessAt = new Date(now.getTime() - 2 * HOUR)
    expect(shouldDisable({ lastAttemptFailedFinal: true, lastSuccessAt, endpointCreatedAt: created, now })).toBe(false)
    const old = new Date(now.getTime() - FAILING_WINDOW_MS)
    expect(shouldDisable({ lastAttemptFailedFinal: true, lastSuccessAt: old, endpointCreatedAt: created, now })).toBe(true)
  })

  it('a young endpoint or a recent re-enable starts a fresh window', () => {
    const now = new Date('2026-02-10T00:00:00Z')
    const young = new Date(now.getTime() - FAILING_WINDOW_MS + 1)
    expect(shouldDisable({ lastAttemptFailedFinal: true, lastSuccessAt: null, endpointCreatedAt: young, now })).toBe(false)
    const enabledAt = new Date(now.getTime() - HOUR)
    expect(shouldDisable({ lastAttemptFailedFinal: true, lastSuccessAt: null, endpointCreatedAt: created, enabledAt, now })).toBe(false)
  })
})

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createMemoryVelocityStore, DAY_MS, HOUR_MS, type WindowCount } from './store.js'

const T0 = Date.UTC(2026, 10, 22, 12)

describe('in-memory velocity store', () => {
  it('counts each key in the last hour and 24 hours, this check included, sliding', () => {
    const s = createMemoryVelocityStore()
    expect(s.hit(['a', 'b'], T0)).toEqual([
      { hour: 1, day: 1 },
      { hour: 1, day: 1 },
    ])
    expect(s.hit(['a'], T0)).toEqual([{ hour: 2, day: 2 }]) // the same millisecond
    expect(s.hit(['a'], T0 + HOUR_MS - 1)).toEqual([{ hour: 3, day: 3 }])
    expect(s.hit(['a'], T0 + HOUR_MS)).toEqual([{ hour: 2, day: 4 }]) // the two at T0 left the hour exactly now
    expect(s.hit(['a'], T0 + DAY_MS)).toEqual([{ hour: 1, day: 3 }])
    expect(s.hit(['b'], T0 + DAY_MS)).toEqual([{ hour: 1, day: 1 }])
  })

  it('a check recorded again under its id within the day is counted, not recorded again', () => {
    const s = createMemoryVelocityStore()
    expect(s.hit(['a', 'b'], T0, 'c1')).toEqual([{ hour: 1, day: 1 }, { hour: 1, day: 1 }])
    expect(s.hit(['a', 'b'], T0 + 1000, 'c1')).toEqual([{ hour: 1, day: 1 }, { hour: 1, day: 1 }])
    expect(s.hit(['a'], T0 + 2000, 'c2')).toEqual([{ hour: 2, day: 2 }])
    expect(s.hit(['a'], T0 + 3000)).toEqual([{ hour: 3, day: 3 }])
    // a retry with other values (a refused request sent again with another body): a key the id has not recorded is
    // recorded, as the SQLite and Redis stores do (before, it was answered 0 and never recorded)
    expect(s.hit(['a', 'c'], T0 + 4000, 'c1')).toEqual([{ hour: 3, day: 3 }, { hour: 1, day: 1 }])
    expect(s.hit(['c'], T0 + 5000, 'c1')).toEqual([{ hour: 1, day: 1 }])
    expect(s.hit(['a'], T0 + DAY_MS + 1, 'c1')).toEqual([{ hour: 1, day: 3 }]) // a day later the id is a new check
  })

  it('a clock stepping back records the check in order', () => {
    const s = createMemoryVelocityStore()
    s.hit(['a'], T0)
    s.hit(['a'], T0 + 10 * 60_000)
    expect(s.hit(['a'], T0 + 5 * 60_000)).toEqual([{ hour: 3, day: 3 }])
    expect(s.hit(['a'], T0 + 5 * 60_000 + HOUR_MS)).toEqual([{ hour: 2, day: 4 }]) // T0 + 10 min and this one
  })

  it('forgets keys idle for a day, and the least recently checked beyond maxKeys', () => {
    const s = createMemoryVelocityStore({ maxKeys: 3 })
    s.hit(['a', 'b'], T0)
    s.hit(['c'], T0 + DAY_MS)
    expect(s.size).toBe(1)
    s.hit(['d', 'e', 'f'], T0 + DAY_MS + 1)
    expect(s.size).toBe(3)
    expect(s.hit(['c'], T0 + DAY_MS + 2)).toEqual([{ hour: 1, day: 1 }]) // c was forgotten for d, e, f
  })

  it('agrees with a plain log of times (property: random times, some out of order)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 3 * DAY_MS })), { maxLength: 300 }), (events) => {
        const s = createMemoryVelocityStore()
        const log = new Map<string, number[]>()
        let now = T0
        for (const [key, step] of events) {
          now = step % 5 === 0 ? now - (step % HOUR_MS) : now + (step % (2 * HOUR_MS)) // mostly forward, sometimes back
          const times = [...(log.get(key) ?? []), now]
          log.set(key, times)
          const want: WindowCount = { hour: times.filter((t) => t > now - HOUR_MS && t <= now).length, day: times.filter((t) => t > now - DAY_MS && t <= now).length }
          const [got] = s.hit([key], now) as WindowCount[]
          // checks recorded later in time than `now` (the clock stepped back) are counted too: they are in the window's future
          const future = times.filter((t) => t > now).length
          expect(got).toEqual({ hour: want.hour + future, day: want.day + future })
        }
      }),
      { numRuns: 200 },
    )
  })
})

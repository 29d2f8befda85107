import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createMemoryVelocityStore, DAY_MS, HOUR_MS, type WindowCount } from './store.js'
import { TagStore } from './tag-store.js'

const T0 = Date.UTC(2026, 10, 22, 12)

/**
 * Tags whose first words share their low bits, so that they fall on the same slots of the table; their second words'
 * top bits (kept in the table) are the same for n and n + 4 and differ otherwise.
 */
const tagOf = (n: number): [number, number] => [n << 12, ((n & 3) << 28) ^ n ^ 0x5a5a5a5a]
const hit = (s: TagStore, n: number, now: number): WindowCount => s.hit(...tagOf(n), now)

describe('velocity store by tag', () => {
  it('counts each tag in the last hour and 24 hours, this check included, sliding', () => {
    const s = new TagStore()
    expect([hit(s, 1, T0), hit(s, 2, T0)]).toEqual([
      { hour: 1, day: 1 },
      { hour: 1, day: 1 },
    ])
    expect(hit(s, 1, T0)).toEqual({ hour: 2, day: 2 })
    expect(hit(s, 1, T0 + HOUR_MS - 1)).toEqual({ hour: 3, day: 3 })
    expect(hit(s, 1, T0 + HOUR_MS)).toEqual({ hour: 2, day: 4 })
    expect(hit(s, 1, T0 + DAY_MS)).toEqual({ hour: 1, day: 3 })
    expect(hit(s, 2, T0 + DAY_MS)).toEqual({ hour: 1, day: 1 })
  })

  it('peek answers the counts a hit would have without recording one', () => {
    const s = new TagStore()
    const peek = (n: number, now: number) => s.peek(...tagOf(n), now)
    expect(peek(1, T0)).toEqual({ hour: 0, day: 0 })
    hit(s, 1, T0)
    expect(peek(1, T0)).toEqual({ hour: 1, day: 1 }) // checked once: its time is in the record
    expect(peek(1, T0 + HOUR_MS)).toEqual({ hour: 0, day: 1 })
    expect(peek(1, T0 + DAY_MS)).toEqual({ hour: 0, day: 0 })
    hit(s, 1, T0 + 10)
    expect(peek(1, T0 + 20)).toEqual({ hour: 2, day: 2 }) // in a block of the pool
    expect(peek(1, T0 + HOUR_MS + 5)).toEqual({ hour: 1, day: 2 })
    expect(hit(s, 1, T0 + 30)).toEqual({ hour: 3, day: 3 }) // peeks recorded nothing
    expect(peek(5, T0)).toEqual({ hour: 0, day: 0 }) // shares 1's slot and top bits: found apart by its words
  })

  it('tells tags apart by both words', () => {
    const s = new TagStore()
    s.hit(1, 2, T0)
    expect(s.hit(1, 3, T0)).toEqual({ hour: 1, day: 1 })
    expect(s.hit(3, 2, T0)).toEqual({ hour: 1, day: 1 })
    expect(s.hit(1, 2, T0)).toEqual({ hour: 2, day: 2 })
    expect(s.size).toBe(3)
  })

  it('grows its records in place up to room for the most keys, and by a copy beyond it (keys held between evictions)', () => {
    const s = new TagStore(10)
    // 2,000 keys before an eviction: past the in-place room of 10 keys and its margin
    for (let n = 0; n < 2000; n++) expect(hit(s, n, T0)).toEqual({ hour: 1, day: 1 })
    expect(s.size).toBe(2000)
    for (let n = 0; n < 2000; n++) expect(hit(s, n, T0 + 1)).toEqual({ hour: 2, day: 2 })
    s.evict(T0 + 1)
    expect(s.size).toBe(10)
    for (let n = 1990; n < 2000; n++) expect(hit(s, n, T0 + 2)).toEqual({ hour: 3, day: 3 })
  })

  it('forgets tags idle for a day, and the least recently checked beyond the most keys', () => {
    const s = new TagStore(3)
    hit(s, 1, T0)
    hit(s, 2, T0)
    s.evict(T0)
    hit(s, 3, T0 + DAY_MS)
    s.evict(T0 + DAY_MS)
    expect(s.size).toBe(1)
    for (const n of [4, 5, 6]) hit(s, n, T0 + DAY_MS + 1)
    s.evict(T0 + DAY_MS + 1)
    expect(s.size).toBe(3)
    expect(hit(s, 3, T0 + DAY_MS + 2)).toEqual({ hour: 1, day: 1 }) // 3 was forgotten for 4, 5, 6
  })

  it('answers as the string-keyed store does (property: tags sharing slots, times out of order, forgetting)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 3 * DAY_MS })), { maxLength: 600 }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 41 }),
        (checks, maxKeys, range) => {
          const tags = new TagStore(maxKeys)
          const strings = createMemoryVelocityStore({ maxKeys })
          let now = T0
          for (const [keys, step] of checks) {
            now = step % 5 === 0 ? now - (step % HOUR_MS) : now + (step % (2 * HOUR_MS)) // mostly forward, sometimes back
            const distinct = [...new Set(keys.map((n) => n % range))] // few keys: long logs, compacted
            const got = distinct.map((n) => hit(tags, n, now))
            tags.evict(now)
            expect(got).toEqual(strings.hit(distinct.map(String), now))
            expect(tags.size).toBe(strings.size)
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  it('keeps every tag of a large store findable after many are forgotten (the table moves entries back)', () => {
    const s = new TagStore(5000)
    const spread = (n: number) => s.hit(Math.imul(n, 0x9e3779b1), Math.imul(n, 0x85ebca6b), T0 + n)
    for (let n = 0; n < 20_000; n++) {
      spread(n)
      s.evict(T0 + n)
    }
    expect(s.size).toBe(5000)
    for (let n = 15_000; n < 20_000; n++) expect(spread(n)).toEqual({ hour: 2, day: 2 })
    expect(s.size).toBe(5000)
  })
})

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { KeyFilter } from './key-filter.js'

describe('list key filter', () => {
  it('holds every key it was made with (property: strings and numbers)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.integer(), fc.nat(0xffffffff)), { maxLength: 300 }), (keys) => {
        const f = new KeyFilter(keys, keys.length)
        return keys.every((k) => f.has(k))
      }),
      { numRuns: 100 },
    )
  })

  it('holds nothing when made empty', () => {
    const f = new KeyFilter([], 0)
    expect(['', 'a', 0, 17].some((k) => f.has(k))).toBe(false)
    expect(f.work).toBe(4)
  })

  it('answers "maybe" for few absent keys: under 1 % at 100,000 keys (counted)', () => {
    const keys = Array.from({ length: 100_000 }, (_, i) => `+4474${String(i * 7919).padStart(8, '0')}`)
    const f = new KeyFilter(keys, keys.length)
    let maybe = 0
    for (let i = 0; i < 100_000; i++) if (f.has(`+4475${String(i * 104_729).padStart(8, '0')}`)) maybe++
    expect(maybe).toBeLessThan(1000)
    const asns = new KeyFilter(Array.from({ length: 100_000 }, (_, i) => i * 3), 100_000)
    let maybeAsn = 0
    for (let i = 0; i < 100_000; i++) if (asns.has(i * 3 + 1)) maybeAsn++
    expect(maybeAsn).toBeLessThan(1000)
  })
})

import { describe, expect, it } from 'vitest'
import { createTtlCache } from './ttl-cache.js'

function clock(start = 1_000) {
  let t = start
  return { now: () => t, advance: (ms: number) => (t += ms) }
}

describe('createTtlCache', () => {
  it('keeps an entry for its TTL by the injected clock, then forgets it', () => {
    const c = clock()
    const cache = createTtlCache<boolean>({ ttlMs: 100, now: c.now })
    cache.set('a.test', true)
    c.advance(99)
    expect(cache.get('a.test')).toBe(true)
    c.advance(1)
    expect(cache.get('a.test')).toBeUndefined()
    expect(cache.size).toBe(0)
  })

  it('takes a per-entry TTL; 0 stores nothing', () => {
    const c = clock()
    const cache = createTtlCache<string>({ ttlMs: 100, now: c.now })
    cache.set('long', 'x', 1_000)
    cache.set('none', 'y', 0)
    c.advance(500)
    expect(cache.get('long')).toBe('x')
    expect(cache.get('none')).toBeUndefined()
    const off = createTtlCache<string>({ ttlMs: 0, now: c.now })
    off.set('k', 'v')
    expect(off.get('k')).toBeUndefined()
  })

  it('setIfAbsent keeps a live entry and replaces an expired one', () => {
    const c = clock()
    const cache = createTtlCache<boolean | null>({ ttlMs: 10, now: c.now })
    cache.set('d', true)
    cache.setIfAbsent('d', false)
    expect(cache.get('d')).toBe(true)
    c.advance(10)
    cache.setIfAbsent('d', false)
    expect(cache.get('d')).toBe(false)
  })

  it('is bounded: the oldest entry makes room', () => {
    const c = clock()
    const cache = createTtlCache<number>({ ttlMs: 1_000, now: c.now, maxEntries: 3 })
    for (let i = 0; i < 5; i++) cache.set(`k${i}`, i)
    expect(cache.size).toBe(3)
    expect(cache.get('k0')).toBeUndefined()
    expect(cache.get('k1')).toBeUndefined()
    expect(cache.get('k4')).toBe(4)
  })

  it('delete and clear', () => {
    const cache = createTtlCache<number>({ ttlMs: 1_000, now: () => 0 })
    cache.set('a', 1)
    cache.set('b', 2)
    cache.delete('a')
    expect(cache.get('a')).toBeUndefined()
    cache.clear()
    expect(cache.size).toBe(0)
  })
})

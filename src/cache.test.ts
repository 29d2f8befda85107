import { describe, expect, it } from 'vitest'
import { copyJsonData, createMemoryCache } from './cache.js'

describe('copyJsonData', () => {
  it('copies JSON-shaped data deeply, like a JSON round trip', () => {
    const data = { a: 1, b: 'x', c: null, d: [1, { e: [true, false] }], f: { g: { h: 'deep' } }, u: undefined }
    const copy = copyJsonData(data)
    expect(copy).toEqual(JSON.parse(JSON.stringify(data)))
    expect('u' in copy).toBe(false)
    copy.d.push(3)
    ;(copy.d[1] as { e: boolean[] }).e[0] = false
    copy.f.g.h = 'changed'
    expect(data).toEqual({ a: 1, b: 'x', c: null, d: [1, { e: [true, false] }], f: { g: { h: 'deep' } }, u: undefined })
  })
})

describe('the memory cache', () => {
  it('keeps its own copy and hands out a new copy on every hit', () => {
    const cache = createMemoryCache()
    const outcome = { details: { list: ['a'] }, factors: [], partial: false, dataSources: ['x'] }
    cache.set('k', { outcome, storedAt: 0 }, 1000)
    outcome.details.list.push('changed after set')
    const first = cache.get('k', 1) as { outcome: { details: { list: string[] } } }
    expect(first.outcome.details.list).toEqual(['a'])
    first.outcome.details.list.push('changed by a caller')
    expect((cache.get('k', 2) as { outcome: { details: { list: string[] } } }).outcome.details.list).toEqual(['a'])
    expect(cache.get('k', 1000)).toBeUndefined()
  })
})

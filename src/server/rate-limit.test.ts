import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { arrivalsArb, burstAcrossEdge, compliantTimes, maxInAnySpan, slidingLogModel, startArb } from '../../test/rate-limit-model.js'
import { createRateLimiter, rateLimitHeaders } from './rate-limit.js'

describe('rate limiter', () => {
  it('30 requests across a second’s edge against 10 a second: 10 accepted, never more than 10 in one second', () => {
    let now = 0
    const limiter = createRateLimiter({ now: () => now })
    const accepted: number[] = []
    for (const t of burstAcrossEdge()) {
      now = t
      if (limiter.hit('key:test', 10, 'key').allowed) accepted.push(t)
    }
    expect(maxInAnySpan(accepted)).toBe(10)
    expect(accepted).toHaveLength(10)
  })

  it('random arrivals: no one-second span accepts more than the limit, and a request is refused only when the limit was reached in the second before it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), startArb, arrivalsArb(['a', 'b']), (limit, start, arrivals) => {
        let now = start
        const limiter = createRateLimiter({ now: () => now })
        const models = { a: slidingLogModel(limit), b: slidingLogModel(limit) }
        const accepted: Record<string, number[]> = { a: [], b: [] }
        for (const { gap, bucket } of arrivals) {
          now += gap
          const s = limiter.hit(bucket, limit, 'key')
          const m = models[bucket as 'a' | 'b'](now)
          expect({ allowed: s.allowed, remaining: s.remaining, resetSeconds: s.resetSeconds }).toEqual(m)
          if (s.allowed) accepted[bucket]!.push(now)
        }
        expect(maxInAnySpan(accepted.a!)).toBeLessThanOrEqual(limit)
        expect(maxInAnySpan(accepted.b!)).toBeLessThanOrEqual(limit)
      }),
      { numRuns: 400 },
    )
  })

  it('a client that never sends more than the limit in a second is never refused (pacing at exactly the limit included)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        startArb,
        fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 400 })), { minLength: 1, maxLength: 150 }),
        (limit, start, gaps) => {
          const paced = Array.from({ length: limit * 4 }, (_, i) => start + Math.floor((i * 1000) / limit))
          for (const times of [paced, compliantTimes(start, gaps, limit)]) {
            let now = start
            const limiter = createRateLimiter({ now: () => now })
            for (const t of times) {
              now = t
              expect(limiter.hit('key:paced', limit, 'key').allowed).toBe(true)
            }
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  it('Retry-After and the RateLimit t are the seconds until the oldest counted request leaves the window', () => {
    let now = 100_000
    const limiter = createRateLimiter({ now: () => now, windowMs: 10_000 })
    expect(limiter.hit('a', 3, 'key')).toMatchObject({ allowed: true, remaining: 2, resetSeconds: 10, windowSeconds: 10 })
    now = 104_000
    expect(limiter.hit('a', 3, 'key')).toMatchObject({ allowed: true, remaining: 1, resetSeconds: 6 })
    now = 107_000
    expect(limiter.hit('a', 3, 'key')).toMatchObject({ allowed: true, remaining: 0, resetSeconds: 3 })
    now = 108_500
    const refused = limiter.hit('a', 3, 'key')
    expect(refused).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 2 })
    expect(rateLimitHeaders(refused)).toMatchObject({ 'Retry-After': '2', RateLimit: '"key";r=0;t=2', 'X-RateLimit-Reset': '2' })
    // 1 ms before the first request leaves: still refused, Retry-After rounds up to 1
    now = 109_999
    expect(limiter.hit('a', 3, 'key')).toMatchObject({ allowed: false, resetSeconds: 1 })
    // the first request has left; the two of 104 s and 107 s still count
    now = 110_000
    expect(limiter.hit('a', 3, 'key')).toMatchObject({ allowed: true, remaining: 0, resetSeconds: 4 })
    now = 111_000
    expect(limiter.hit('a', 3, 'key')).toMatchObject({ allowed: false, resetSeconds: 3 })
  })

  it('holds at most maxBuckets buckets; idle ones go first, a bucket in use keeps its count', () => {
    let now = 0
    const limiter = createRateLimiter({ now: () => now, maxBuckets: 10 })
    for (let i = 0; i < 1000; i++) limiter.hit(`ip:${i}`, 1, 'ip')
    expect(limiter.size()).toBe(10)
    // a second later all of them are idle: the first new bucket clears them
    now = 1000
    expect(limiter.hit('key:busy', 2, 'key').allowed).toBe(true)
    expect(limiter.size()).toBe(1)
    expect(limiter.hit('key:busy', 2, 'key').allowed).toBe(true)
    for (let i = 0; i < 9; i++) expect(limiter.hit(`ip:new${i}`, 1, 'ip').allowed).toBe(true)
    expect(limiter.size()).toBe(10)
    now = 1500
    expect(limiter.hit('key:busy', 2, 'key')).toMatchObject({ allowed: false, remaining: 0 })
    // more buckets in use than the cap: the least recently accepted is forgotten, the count stays bounded
    for (let i = 0; i < 95; i++) limiter.hit(`ip:flood${i}`, 1, 'ip')
    expect(limiter.size()).toBe(10)
    expect(limiter.hit('ip:flood86', 1, 'ip').allowed).toBe(false)
    limiter.reset()
    expect(limiter.size()).toBe(0)
  })

  it('a plan changed to a lower limit applies at once to the requests already counted', () => {
    let now = 900
    const limiter = createRateLimiter({ now: () => now })
    for (let i = 0; i < 5; i++) expect(limiter.hit('k', 5, 'key').allowed).toBe(true)
    now = 1100
    expect(limiter.hit('k', 2, 'key')).toMatchObject({ allowed: false, remaining: 0 })
    now = 1900
    expect(limiter.hit('k', 2, 'key')).toMatchObject({ allowed: true, remaining: 1 })
    expect(limiter.hit('k', 8, 'key')).toMatchObject({ allowed: true, remaining: 6 })
  })

  it('writes the IETF draft fields, the X-RateLimit triple and Retry-After when refused', () => {
    const ok = rateLimitHeaders({ policy: 'key', allowed: true, limit: 20, remaining: 19, resetSeconds: 1, windowSeconds: 1 })
    expect(ok).toEqual({
      'RateLimit-Policy': '"key";q=20;w=1',
      RateLimit: '"key";r=19;t=1',
      'X-RateLimit-Limit': '20',
      'X-RateLimit-Remaining': '19',
      'X-RateLimit-Reset': '1',
    })
    const no = rateLimitHeaders({ policy: 'ip', allowed: false, limit: 5, remaining: 0, resetSeconds: 1, windowSeconds: 1 })
    expect(no['Retry-After']).toBe('1')
    expect(no.RateLimit).toBe('"ip";r=0;t=1')
  })
})

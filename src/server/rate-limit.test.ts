import { describe, expect, it } from 'vitest'
import { createRateLimiter, rateLimitHeaders } from './rate-limit.js'

describe('rate limiter', () => {
  it('allows `limit` hits a window per bucket, then refuses until the next window', () => {
    let now = 5_000
    const limiter = createRateLimiter({ now: () => now })
    const states = Array.from({ length: 4 }, () => limiter.hit('a', 3, 'key'))
    expect(states.map((s) => [s.allowed, s.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ])
    expect(limiter.hit('b', 3, 'key').allowed).toBe(true)
    now = 5_999
    expect(limiter.hit('a', 3, 'key').allowed).toBe(false)
    now = 6_000
    expect(limiter.hit('a', 3, 'key')).toMatchObject({ allowed: true, remaining: 2, resetSeconds: 1 })
  })

  it('bounds its memory', () => {
    let now = 0
    const limiter = createRateLimiter({ now: () => now, maxBuckets: 10 })
    for (let i = 0; i < 10; i++) limiter.hit(`k${i}`, 1, 'key')
    now = 1000
    for (let i = 10; i < 30; i++) expect(limiter.hit(`k${i}`, 1, 'key').allowed).toBe(true)
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

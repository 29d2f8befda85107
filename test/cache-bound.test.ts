/**
 * A result cache of the caller's whose `get` or `set` never settles does not hold a lookup: a `get` not answered
 * within `cacheTimeoutMs` is a miss, a `set` not finished within it is not waited for. Fake timers stand in for the
 * wait, so nothing here depends on the machine's speed.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createRiskcheck, type ResultCache } from '../src/index.js'
import { setting } from '../src/settings.js'

const never = () => new Promise<never>(() => undefined)

/** A cache whose `get` (or `set`) never answers; the other answers a miss (or stores nothing) at once. */
function stuck(which: 'get' | 'set'): ResultCache & { calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    get: (key) => (calls.push(`get ${key}`), which === 'get' ? never() : undefined),
    set: (key) => (calls.push(`set ${key}`), which === 'set' ? never() : undefined),
  }
}

/** `p`'s value once the fake clock has moved `ms` on (undefined when it has not settled by then). */
async function after<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let value: T | undefined
  let failed: unknown
  p.then((v) => (value = v), (e: unknown) => (failed = e))
  await vi.advanceTimersByTimeAsync(ms)
  if (failed) throw failed
  return value
}

afterEach(() => {
  vi.useRealTimers()
})

describe('a result cache that never answers', () => {
  // offline with a metered ledger: the IP lookup is billed, so it goes through the cache, and nothing leaves the host
  const bound = setting('cacheTimeoutMs').default as number

  it.each(['get', 'set'] as const)('a lookup answers within the default bound when `%s` never settles, and leaves no timer behind', async (which) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const cache = stuck(which)
    const rc = createRiskcheck({ offline: true, credits: 100, cache })
    try {
      const r = await after(rc.ip('8.8.8.8'), bound)
      expect(r, 'answered').toBeDefined()
      expect(r!.details.ip).toBe('8.8.8.8')
      expect(r!.metadata.cache_hit).toBe(false)
      expect(cache.calls).toEqual(['get ip:offline:8.8.8.8', 'set ip:offline:8.8.8.8']) // a late get is a miss: looked up, then stored
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      await rc.close()
    }
  })

  it.each(['get', 'set'] as const)('the combined check answers each part itself (not its time-out fallback) when `%s` never settles', async (which) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const cache = stuck(which)
    const rc = createRiskcheck({ offline: true, credits: 100, cache, cacheTimeoutMs: 50, partTimeoutMs: 10_000 })
    try {
      const r = await after(rc.check({ ip: '8.8.8.8', phone: '+14155552671' }), 50)
      expect(r, 'answered').toBeDefined()
      expect(r!.details.ip?.ip).toBe('8.8.8.8')
      expect(r!.partial).toBe(false)
      expect(r!.metadata.credits_used).toBeGreaterThan(0) // billed answers, not the unbilled fallback of a part past its limit
      expect(cache.calls.some((c) => c.startsWith(which))).toBe(true)
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      await rc.close()
    }
  })

  it("close() finishes within the bound when the cache's `close` never settles, and still closes the velocity store", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    let velocityClosed = false
    const store = { hit: (keys: readonly string[]) => keys.map(() => ({ hour: 0, day: 0 })), close: async () => void (velocityClosed = true) }
    const cache: ResultCache = { get: () => undefined, set: () => undefined, close: never }
    const rc = createRiskcheck({ offline: true, cache, cacheTimeoutMs: 50, velocity: { store, secret: 'a-secret-of-16-chars' } })
    const closed = await after(rc.close().then(() => 'closed'), 50)
    expect(closed).toBe('closed')
    expect(velocityClosed).toBe(true)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a cache that answers in time is still used: a hit costs nothing', async () => {
    const rc = createRiskcheck({ offline: true, credits: 100, cacheTimeoutMs: 60_000 })
    const first = await rc.ip('8.8.8.8')
    const second = await rc.ip('8.8.8.8')
    expect([first.metadata.cache_hit, second.metadata.cache_hit, second.metadata.credits_used]).toEqual([false, true, 0])
    await rc.close()
  })

  it('`cacheTimeoutMs` is checked like the other time options', () => {
    expect(() => createRiskcheck({ cacheTimeoutMs: 0 })).toThrow('option `cacheTimeoutMs` must be a whole number from 1 to 60000')
  })
})

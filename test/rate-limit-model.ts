/**
 * The rate-limit rule written out plainly, for the tests of the in-memory and the Redis limiters: a request is
 * accepted when fewer than `limit` requests were accepted in the window before it, (t − window, t]. Also the
 * property both tests hold the limiters to (no window-long span accepts more than the limit) and the random
 * arrival sequences they are fed.
 */
import fc from 'fast-check'

/** What the rule says of one request. */
export interface ModelState {
  allowed: boolean
  remaining: number
  resetSeconds: number
}

/** The rule for one bucket: call it with each request's time (unix ms, not decreasing). */
export function slidingLogModel(limit: number, windowMs = 1000): (t: number) => ModelState {
  const accepted: number[] = []
  return (t) => {
    const inWindow = accepted.filter((a) => a > t - windowMs)
    const allowed = inWindow.length < limit
    if (allowed) {
      accepted.push(t)
      inWindow.push(t)
    }
    return {
      allowed,
      remaining: Math.max(0, limit - inWindow.length),
      resetSeconds: Math.max(1, Math.ceil((Math.min(...inWindow) + windowMs - t) / 1000)),
    }
  }
}

/** The most accepted requests in any span [s, s + window) — a fixed window lets up to twice the limit into one. */
export function maxInAnySpan(acceptedTimes: number[], windowMs = 1000): number {
  const ts = [...acceptedTimes].sort((a, b) => a - b)
  let best = 0
  let j = 0
  for (let i = 0; i < ts.length; i++) {
    while ((ts[j] as number) <= (ts[i] as number) - windowMs) j++
    best = Math.max(best, i - j + 1)
  }
  return best
}

/** The case: 30 requests 20 ms apart from 300 ms before a second's edge (700 ms into a second). */
export function burstAcrossEdge(start = Date.parse('2026-11-22T00:00:00Z') + 700): number[] {
  return Array.from({ length: 30 }, (_, i) => start + 20 * i)
}

/** Random arrivals: gaps (many 0, many short, some past a window) and the bucket of each request. */
export const arrivalsArb = (buckets: string[], maxLength = 120) =>
  fc.array(
    fc.record({
      gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 1_500 })),
      bucket: fc.constantFrom(...buckets),
    }),
    { minLength: 1, maxLength },
  )

/** Where the clock starts: anywhere within a second (so bursts fall on every side of a second's edge). */
export const startArb = fc.integer({ min: 0, max: 2_000 }).map((ms) => Date.parse('2026-11-22T00:00:00Z') + ms)

/**
 * A client that never sends more than `limit` requests in any window: arbitrary gaps, each request moved to at least
 * one window after the request `limit` before it.
 */
export function compliantTimes(start: number, gaps: number[], limit: number, windowMs = 1000): number[] {
  const ts: number[] = []
  let t = start
  for (const gap of gaps) {
    t += gap
    const back = ts[ts.length - limit]
    if (back !== undefined && t < back + windowMs) t = back + windowMs
    ts.push(t)
  }
  return ts
}

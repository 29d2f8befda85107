/**
 * Benchmark and check: the sliding-log rate limiter (src/server/rate-limit.ts, src/server/queue/redis-rate-limit.ts)
 * against the fixed window it replaced (copied below), GCRA (written below) and the kept libraries
 * `rate-limiter-flexible` (fixed windows from a key's first request) and `rolling-rate-limiter` (a sliding log that
 * also logs refused requests).
 *
 * 1. What each lets through, limit 10 a second, on a simulated clock (in memory): bursts built to cross a window's
 *    edge (a second's, a window started by a key's first request, a token bucket's refill), the worst one-second span
 *    over 400 random arrival sequences (fast-check), a client that sends 10 at once every second (never over the
 *    limit: refusals are starvation), and one that sends 20 a second for 5 s.
 * 2. Cost per hit in memory (CPU time, awaited as the server calls it) and on Redis (one at a time; 50 in flight on
 *    one connection; Redis's own time per hit), on two loads: 10 hits per bucket against a limit of 20 (accepted),
 *    and hits on 20 buckets against a limit of 10 (mostly refused). The candidates take turns, round after round, and
 *    the median round of each is printed (the machine's load then weighs on all alike); ratios are to the sliding log.
 *
 * The libraries are not dependencies of riskcheck; install them anywhere and point the script at them (without them
 * the script compares the sliding log with the fixed window and GCRA only):
 *   npm install --prefix /tmp/rl-candidates rate-limiter-flexible@11 rolling-rate-limiter@0.4
 *   RL_CANDIDATES=/tmp/rl-candidates REDIS_URL=redis://127.0.0.1:6379 npx tsx scripts/bench/rate-limit.ts
 */
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import { createRedisRateLimiter } from '../../src/server/queue/redis-rate-limit.js'
import { createRateLimiter } from '../../src/server/rate-limit.js'

/** The libraries are loaded untyped (they are not dependencies). */
type Any = any
const LIMIT = 10
const dir = process.env.RL_CANDIDATES
const load = (name: string): Any => {
  if (!dir) return undefined
  try {
    return createRequire(join(dir, 'node_modules', 'x.js'))(name)
  } catch {
    console.log(`(${name} not found under ${dir}/node_modules)`)
    return undefined
  }
}
const rlf = load('rate-limiter-flexible')
const rolling = load('rolling-rate-limiter')
const microtime = rolling ? load('microtime') : undefined

// ---- the clock every candidate reads in part 1 (Date.now for rate-limiter-flexible, microtime for rolling) ----
let simNow = 0
const realDateNow = Date.now
function simulate<T>(f: () => Promise<T>): Promise<T> {
  Date.now = () => simNow
  const realMicro = microtime?.now
  if (microtime) microtime.now = () => simNow * 1000
  return f().finally(() => {
    Date.now = realDateNow
    if (microtime) microtime.now = realMicro
  })
}

// ---- the fixed window this replaced (src/server/rate-limit.ts before the sliding log, its state object included) ----
function fixedWindow(now: () => number) {
  const buckets = new Map<string, { window: number; count: number }>()
  return (bucket: string, limit: number) => {
    const t = now()
    const window = Math.floor(t / 1000)
    let b = buckets.get(bucket)
    if (!b || b.window !== window) {
      if (!b && buckets.size >= 100_000) {
        for (const [k, v] of buckets) if (v.window !== window) buckets.delete(k)
        if (buckets.size >= 100_000) buckets.clear()
      }
      b = { window, count: 0 }
      buckets.set(bucket, b)
    }
    b.count++
    const allowed = b.count <= limit
    const resetMs = (window + 1) * 1000 - t
    return { policy: 'key', allowed, limit, remaining: Math.max(0, limit - b.count), resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)), windowSeconds: 1 }
  }
}
const FIXED_LUA = `
local now = tonumber(ARGV[3])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local windowMs = tonumber(ARGV[2])
local window = math.floor(now / windowMs)
local key = KEYS[1] .. ARGV[1] .. ':' .. window
local count = redis.call('INCR', key)
if count == 1 then redis.call('PEXPIRE', key, windowMs * 2) end
return { count, (window + 1) * windowMs - now }
`

// ---- GCRA: emission interval T = window / limit, burst tolerance (burst − 1) · T ----
function gcra(now: () => number, burst: number) {
  const tat = new Map<string, number>()
  return (bucket: string, limit: number) => {
    const t = now()
    const T = 1000 / limit
    const next = Math.max(tat.get(bucket) ?? t, t)
    if (next - t > (burst - 1) * T) return false
    tat.set(bucket, next + T)
    return true
  }
}

type Decide = (bucket: string, limit: number) => boolean | Promise<boolean>
const candidates: Array<[string, () => Decide]> = [
  ['sliding log (riskcheck)', () => {
    const l = createRateLimiter({ now: () => simNow })
    return (b, n) => l.hit(b, n, 'key').allowed
  }],
  ['fixed window (before)', () => {
    const f = fixedWindow(() => simNow)
    return (b, n) => f(b, n).allowed
  }],
  ['GCRA, burst = limit', () => gcra(() => simNow, LIMIT)],
  ['GCRA, burst = 1', () => gcra(() => simNow, 1)],
]
if (rlf) {
  candidates.push(['rate-limiter-flexible Memory', () => {
    const l = new rlf.RateLimiterMemory({ points: LIMIT, duration: 1 })
    return (b) => l.consume(b).then(() => true, () => false)
  }])
}
if (rolling) {
  candidates.push(['rolling-rate-limiter InMemory', () => {
    const l = new rolling.InMemoryRateLimiter({ interval: 1000, maxInInterval: LIMIT })
    return async (b) => !(await l.limit(b))
  }])
}

/** Accepted times of one bucket fed `times`. */
async function run(make: () => Decide, times: number[]): Promise<number[]> {
  return simulate(async () => {
    const decide = make()
    const accepted: number[] = []
    for (const t of times) {
      simNow = t
      if (await decide('k', LIMIT)) accepted.push(t)
    }
    return accepted
  })
}
function maxInAnySpan(ts: number[]): number {
  let best = 0
  for (let i = 0, j = 0; i < ts.length; i++) {
    while ((ts[j] as number) <= (ts[i] as number) - 1000) j++
    best = Math.max(best, i - j + 1)
  }
  return best
}

const base = Date.parse('2026-11-22T00:00:00Z')
const gapArb = fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 250 }), fc.integer({ min: 0, max: 1_500 })), {
  minLength: 1,
  maxLength: 200,
})
const randoms = fc.sample(fc.tuple(fc.integer({ min: 0, max: 1_999 }), gapArb), { numRuns: 400, seed: 42 }).map(([start, gaps]) => {
  let t = base + 100_000 + start
  return gaps.map((g) => (t += g))
})
/** Arrival times (ms from `at`): `n` requests at each of the given offsets. */
const times = (at: number, ...groups: Array<[offset: number, n: number]>) => groups.flatMap(([o, n]) => Array<number>(n).fill(at + o))
const scenarios: Array<[string, number[]]> = [
  // the case: 30 requests 20 ms apart from 700 ms into a second
  ['edge', Array.from({ length: 30 }, (_, i) => base + 10_000 + 700 + 20 * i)],
  // one request, 9 at 990 ms, 10 at 1000 ms: the edge of a window that starts at a key's first request
  ['first+edge', times(base + 20_500, [0, 1], [990, 9], [1000, 10])],
  // 10 at once, then one every 20 ms for a second: a token bucket refills within the second
  ['burst+steady', [...times(base + 30_000, [0, 10]), ...Array.from({ length: 49 }, (_, i) => base + 30_000 + 20 * (i + 1))]],
]
const compliant = Array.from({ length: 5 * LIMIT }, (_, i) => base + 40_000 + Math.floor(i / LIMIT) * 1000)
const eager = Array.from({ length: 100 }, (_, i) => base + 50_000 + i * 50)

console.log(`1. What gets through, limit ${LIMIT}/s: accepted/most in any one-second span per case; refusals of a client that`)
console.log('   never exceeds the limit (10 at once, each second, 5 times); accepted of a client sending 20/s for 5 s')
console.log(`${'candidate'.padEnd(30)} ${scenarios.map(([n]) => n.padEnd(13)).join('')}${'random worst'.padEnd(13)}${'compliant refused'.padEnd(18)}eager accepted`)
for (const [name, make] of candidates) {
  const cells: string[] = []
  for (const [, ts] of scenarios) {
    const a = await run(make, ts)
    cells.push(`${a.length}/${maxInAnySpan(a)}`.padEnd(13))
  }
  let worst = 0
  for (const ts of randoms) worst = Math.max(worst, maxInAnySpan(await run(make, ts)))
  const c = await run(make, compliant)
  const g = await run(make, eager)
  console.log(`${name.padEnd(30)} ${cells.join('')}${String(worst).padEnd(13)}${String(compliant.length - c.length).padEnd(18)}${g.length}`)
}

// ---- 2. cost per hit ----
const N = 10_000
// n hits: 10 per bucket against a limit of 20 (all accepted), or n / 20 per bucket against 10 (mostly refused)
const loads: Array<[string, (n: number) => (i: number) => string, number]> = [
  ['under the limit', (n) => (i) => `key:${i % (n / 10)}`, 20],
  ['hammered', () => (i) => `key:${i % 20}`, LIMIT],
]
type Hit = (bucket: string, limit: number) => unknown
const memoryCandidates: Array<[string, () => Hit]> = [
  ['sliding log (riskcheck)', () => {
    const l = createRateLimiter()
    return (b, n) => l.hit(b, n, 'key')
  }],
  ['fixed window (before)', () => fixedWindow(Date.now)],
]
if (rlf) {
  memoryCandidates.push(['rate-limiter-flexible Memory', () => {
    const ls = new Map<number, Any>()
    return (b, n) => {
      let l = ls.get(n)
      if (!l) ls.set(n, (l = new rlf.RateLimiterMemory({ points: n, duration: 1 })))
      return l.consume(b).catch(() => undefined)
    }
  }])
}
if (rolling) {
  memoryCandidates.push(['rolling-rate-limiter InMemory', () => {
    const ls = new Map<number, Any>()
    return (b, n) => {
      let l = ls.get(n)
      if (!l) ls.set(n, (l = new rolling.InMemoryRateLimiter({ interval: 1000, maxInInterval: n })))
      return l.limitWithInfo(b)
    }
  }])
}

const ROUNDS = 5
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
console.log(`\n2a. In memory: CPU ns per awaited hit, the median of ${ROUNDS} rounds of 50,000 taken in turn after a warm-up; ratio to the sliding log`)
const M = 50_000
for (const [loadName, bucketsOf, limit] of loads) {
  const keys = Array.from({ length: M }, (_, i) => bucketsOf(M)(i))
  const rounds = memoryCandidates.map((): number[] => [])
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [c, [, make]] of memoryCandidates.entries()) {
      const hit = make()
      const c0 = process.cpuUsage()
      for (let i = 0; i < M; i++) await hit(keys[i] as string, limit)
      const used = process.cpuUsage(c0)
      if (round > 0) rounds[c]!.push(((used.user + used.system) * 1e3) / M)
    }
  }
  const ns = rounds.map(median)
  for (const [c, [name]] of memoryCandidates.entries()) {
    console.log(`  ${loadName.padEnd(16)} ${name.padEnd(32)} ${(ns[c] as number).toFixed(0).padStart(6)} ns  ${((ns[c] as number) / (ns[0] as number)).toFixed(2)}×`)
  }
}

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
const prefix = `riskcheck-bench:${randomUUID().slice(0, 8)}:`
redis.defineCommand('benchFixedWindow', { numberOfKeys: 1, lua: FIXED_LUA })
const redisCandidates: Array<[string, () => Hit]> = [
  ['sliding log (riskcheck)', () => {
    const l = createRedisRateLimiter({ redis, prefix: `${prefix}log:` })
    return (b, n) => l.hit(b, n, 'key')
  }],
  ['fixed window (before)', () => (b) => (redis as Any).benchFixedWindow(`${prefix}fixed:`, b, '1000', '')],
]
if (rlf) {
  redisCandidates.push(['rate-limiter-flexible Redis', () => {
    const ls = new Map<number, Any>()
    return (b, n) => {
      let l = ls.get(n)
      if (!l) ls.set(n, (l = new rlf.RateLimiterRedis({ storeClient: redis, points: n, duration: 1, keyPrefix: `${prefix}rlf${n}` })))
      return l.consume(b).catch((e: unknown) => {
        if (e instanceof Error) throw e
      })
    }
  }])
}
if (rolling) {
  redisCandidates.push(['rolling-rate-limiter IORedis', () => {
    const ls = new Map<number, Any>()
    return (b, n) => {
      let l = ls.get(n)
      if (!l) ls.set(n, (l = new rolling.IORedisRateLimiter({ client: redis, namespace: `${prefix}rolling${n}:`, interval: 1000, maxInInterval: n })))
      return l.limitWithInfo(b)
    }
  }])
}

/** Microseconds Redis spent on commands so far (INFO commandstats; other clients of the same Redis count too). */
const redisUsec = async () => [...(await redis.info('commandstats')).matchAll(/usec=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0)
console.log(`\n2b. On Redis, the median of ${ROUNDS} rounds of ${N.toLocaleString('en-US')} taken in turn: one at a time (hits/s, p50) and 50 in flight on one`)
console.log('    connection (hits/s), ratio = our rate / theirs; Redis time per hit (INFO commandstats: clean on a Redis of')
console.log('    its own), ratio = theirs / ours')
for (const [loadName, bucketsOf, limit] of loads) {
  const bucketOf = bucketsOf(N)
  const hits = redisCandidates.map(([, make]) => make())
  const rounds = redisCandidates.map((): Array<{ seq: number; lat: number; conc: number; cpu: number }> => [])
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [c, hit] of hits.entries()) {
      if (round === 0) {
        for (let i = 0; i < 1000; i++) await hit(`warm:${i % 10}`, limit)
        continue
      }
      const usec0 = await redisUsec()
      const lat: number[] = []
      let t0 = performance.now()
      for (let i = 0; i < N; i++) {
        const s = performance.now()
        await hit(bucketOf(i), limit)
        lat.push(performance.now() - s)
      }
      const seq = N / ((performance.now() - t0) / 1000)
      t0 = performance.now()
      let next = 0
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < N) await hit(bucketOf(next++), limit)
        }),
      )
      const conc = N / ((performance.now() - t0) / 1000)
      const cpu = ((await redisUsec()) - usec0) / (2 * N)
      rounds[c]!.push({ seq, lat: median(lat), conc, cpu })
    }
  }
  const med = rounds.map((rs) => ({
    seq: median(rs.map((r) => r.seq)),
    lat: median(rs.map((r) => r.lat)),
    conc: median(rs.map((r) => r.conc)),
    cpu: median(rs.map((r) => r.cpu)),
  }))
  const ours = med[0]!
  for (const [c, [name]] of redisCandidates.entries()) {
    const b = med[c]!
    const rate = (x: number) => Math.round(x).toLocaleString('en-US').padStart(7)
    console.log(
      `  ${loadName.padEnd(16)} ${name.padEnd(30)} ${rate(b.seq)}/s p50 ${b.lat.toFixed(3)} ms (${(ours.seq / b.seq).toFixed(2)}×)   50 in flight ${rate(b.conc)}/s (${(ours.conc / b.conc).toFixed(2)}×)   Redis ${b.cpu.toFixed(1)} µs/hit (${(b.cpu / ours.cpu).toFixed(2)}×)`,
    )
  }
}

let cursor = '0'
do {
  const [c, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
  cursor = c
  if (keys.length) await redis.del(...keys)
} while (cursor !== '0')
await redis.quit()

/**
 * Benchmark: what the shared Redis rate limiter costs per request, against the in-memory one.
 *
 * Measured in one process: 20,000 `hit()` calls of the in-memory limiter; then the Redis limiter (one Lua call —
 * INCR + PEXPIRE on the Redis clock — per hit) sequentially (round-trip latency: p50/p99) and with 50 hits in flight
 * (throughput of one client connection, as one API instance under load). Keys go under a random prefix and are
 * deleted afterwards.
 *
 * Run: REDIS_URL=redis://127.0.0.1:6379 npx tsx scripts/bench/redis-rate-limit.ts
 */
import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { Redis } from 'ioredis'
import { createRateLimiter } from '../../src/server/rate-limit.js'
import { createRedisRateLimiter } from '../../src/server/queue/redis-rate-limit.js'

const N = 20_000
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
const prefix = `riskcheck-bench:${randomUUID().slice(0, 8)}:`
const pct = (xs: number[], p: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] as number

const memory = createRateLimiter()
let t = performance.now()
for (let i = 0; i < N; i++) memory.hit(`key:${i % 100}`, 1_000_000, 'key')
const memoryPerSec = N / ((performance.now() - t) / 1000)

const shared = createRedisRateLimiter({ redis, prefix })
for (let i = 0; i < 1000; i++) await shared.hit(`key:${i % 100}`, 1_000_000, 'key') // warm-up (script load)
const lat: number[] = []
t = performance.now()
for (let i = 0; i < N; i++) {
  const s = performance.now()
  await shared.hit(`key:${i % 100}`, 1_000_000, 'key')
  lat.push(performance.now() - s)
}
const seqPerSec = N / ((performance.now() - t) / 1000)

t = performance.now()
let next = 0
await Promise.all(
  Array.from({ length: 50 }, async () => {
    while (next < N) {
      const i = next++
      await shared.hit(`key:${i % 100}`, 1_000_000, 'key')
    }
  }),
)
const concPerSec = N / ((performance.now() - t) / 1000)

let cursor = '0'
do {
  const [c, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
  cursor = c
  if (keys.length) await redis.del(...keys)
} while (cursor !== '0')
await redis.quit()

console.log(`in-memory limiter        ${Math.round(memoryPerSec).toLocaleString('en-US')} hits/s`)
console.log(`Redis limiter, 1 at once  ${Math.round(seqPerSec).toLocaleString('en-US')} hits/s · p50 ${pct(lat, 50).toFixed(3)} ms · p99 ${pct(lat, 99).toFixed(3)} ms`)
console.log(`Redis limiter, 50 at once ${Math.round(concPerSec).toLocaleString('en-US')} hits/s`)

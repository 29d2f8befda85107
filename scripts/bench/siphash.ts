/**
 * Velocity's hashing alone: SipHash-1-3-64 of a value's UTF-16 code units (the counter's own in-memory tags) and
 * SipHash-2-4-128 of its UTF-8 bytes (the store keys shared through Redis, SQLite or PostgreSQL), against Node's
 * HMAC-SHA-256 (`crypto.createHmac`, the keyed hash a hand-written one has to beat), on sign-up values (addresses,
 * networks, emails, phone numbers). The three take turns over the same values, 30 rounds; prints the median ns per
 * value and the ratios.
 *
 *   npx tsx scripts/bench/siphash.ts [--values N]
 */
import { createHmac } from 'node:crypto'
import os from 'node:os'
import { sipHash128Words, sipHash64Utf16, sipKey } from '../../src/velocity/siphash.js'
import { xorshift } from '../../test/xorshift.js'

const i = process.argv.indexOf('--values')
const N = i >= 0 ? Number(process.argv[i + 1]) : 50_000
const rnd = xorshift(5)
const values = Array.from({ length: N }, (_, k) =>
  [
    () => `${rnd() % 223}.${rnd() % 256}.${rnd() % 256}.${rnd() % 256}`,
    () => `${rnd() % 223}.${rnd() % 256}.${rnd() % 256}.0/24`,
    () => `user${rnd() % 1_000_000}.${rnd() % 100}@gmail.com`,
    () => `+447${rnd() % 1e9}`,
  ][k % 4]!(),
)
const bytes = values.map((v) => Buffer.from(v, 'utf8'))
const keyBytes = Buffer.alloc(16, 7)
const key = sipKey(keyBytes)
const out = new Int32Array(4)

const runs: Record<string, () => void> = {
  'SipHash-1-3-64 (UTF-16)': () => {
    for (let k = 0; k < N; k++) sipHash64Utf16(key, values[k]!, out, 1, 3)
  },
  'SipHash-2-4-128 (UTF-8)': () => {
    for (let k = 0; k < N; k++) sipHash128Words(key, bytes[k]!, bytes[k]!.length, out)
  },
  'HMAC-SHA-256 (node:crypto)': () => {
    for (let k = 0; k < N; k++) createHmac('sha256', keyBytes).update(values[k]!).digest()
  },
}
const times: Record<string, number[]> = {}
for (let r = 0; r < 30; r++) {
  for (const [name, run] of Object.entries(runs)) {
    const t = process.hrtime.bigint()
    run()
    ;(times[name] ??= []).push(Number(process.hrtime.bigint() - t) / N)
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
const hmac = median(times['HMAC-SHA-256 (node:crypto)']!)
console.log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${N.toLocaleString('en-US')} values, median of 30 rounds`)
for (const [name, xs] of Object.entries(times)) console.log(`${name.padEnd(28)} ${median(xs).toFixed(0).padStart(6)} ns per value   ×${(median(xs) / hmac).toFixed(3)} of HMAC`)

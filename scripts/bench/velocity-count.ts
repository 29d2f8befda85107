/**
 * Velocity's `count()` alone, in memory: the counter's own store (SipHash-1-3-64 tags in typed arrays, what
 * `createRiskcheck({ velocity: true })` uses) against the same counter over the pluggable string-keyed memory store
 * (`createMemoryVelocityStore`: SipHash-2-4 store keys as base64url strings), on the values of a sign-up stream — IP,
 * network, email, one check in three with its own email domain, phone; new values every check. The two take turns in
 * chunks of 1,000 checks, so a busy machine slows both alike. Prints CPU µs per check and the ratio.
 *
 *   npx tsx scripts/bench/velocity-count.ts [--checks N]
 */
import os from 'node:os'
import { createVelocityCounter, type VelocityCounter, type VelocityValues } from '../../src/velocity/counter.js'
import { createMemoryVelocityStore } from '../../src/velocity/store.js'
import { xorshift } from '../../test/xorshift.js'

const i = process.argv.indexOf('--checks')
const N = i >= 0 ? Number(process.argv[i + 1]) : 200_000
const CHUNK = 1000

const rnd = xorshift(9)
const values: VelocityValues[] = Array.from({ length: N }, () => {
  const v: VelocityValues = {}
  v.ip = `${rnd() % 223}.${rnd() % 256}.${rnd() % 256}.${rnd() % 256}`
  v.network = `${rnd() % 223}.${rnd() % 256}.${rnd() % 256}.0/24`
  if (rnd() % 3 === 0) {
    const domain = `d${rnd() % 100_000}.example.net`
    v.email = `user${rnd()}@${domain}`
    v.email_domain = domain
  } else v.email = `user${rnd()}@gmail.com`
  v.phone = `+447${rnd() % 1e9}`
  return v
})

const secret = 'a benchmark secret of some length'
const own = createVelocityCounter({ secret })
const pluggable = createVelocityCounter({ secret, store: createMemoryVelocityStore() })
const t0 = Date.now()
/** CPU µs of `counter` over values [from, to). */
const cpu = (counter: VelocityCounter, from: number, to: number): number => {
  const c0 = process.cpuUsage()
  for (let k = from; k < to; k++) counter.count(values[k]!, false, t0 + k)
  const c = process.cpuUsage(c0)
  return c.user + c.system
}

console.log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.cpus().length} cores; ${N.toLocaleString('en-US')} checks, new values each`)
let a = 0
let b = 0
for (let from = 0, k = 0; from < N; from += CHUNK, k++) {
  const to = Math.min(N, from + CHUNK)
  if (k % 2 === 0) {
    a += cpu(own, from, to)
    b += cpu(pluggable, from, to)
  } else {
    b += cpu(pluggable, from, to)
    a += cpu(own, from, to)
  }
}
console.log(`own store (SipHash-1-3-64 tags, typed arrays)   ${(a / N).toFixed(2).padStart(6)} µs per check`)
console.log(`memory store (SipHash-2-4 keys, strings)        ${(b / N).toFixed(2).padStart(6)} µs per check   own ÷ memory ×${(a / b).toFixed(3)}`)

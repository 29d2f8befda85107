/**
 * Compiling large lists: 1,000,000 items of one type (emails, IP networks, phone numbers), compiled at once
 * (`compileLists`) and a few thousand items a turn (`compileListsAsync`, what the server and `reloadLists` use), with
 * the longest the event loop waited between two of its turns meanwhile — what a request of another org waits at most.
 *
 *   npx tsx scripts/bench/lists-compile.ts [--items N]
 */
import os from 'node:os'
import { compileLists, compileListsAsync } from '../../src/lists/compile.js'

const i = process.argv.indexOf('--items')
const N = i >= 0 ? Number(process.argv[i + 1]) : 1_000_000
const gen: Record<string, (i: number) => string> = {
  email: (i) => `user${i}.x@d${i % 5000}.example.com`,
  ip: (i) => `${(i * 2654435761) >>> 24}.${(i >>> 8) & 255}.${i & 255}.0/24`, // not in start order
  phone: (i) => `+4477${String(i).padStart(8, '0')}`,
}

console.log(`load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores; ${N.toLocaleString('en-US')} items per list`)
for (const [type, f] of Object.entries(gen)) {
  const def = () => [{ name: type, kind: 'block', itemType: type, items: Array.from({ length: N }, (_, k) => f(k)) }]
  let defs = def()
  let t = performance.now()
  if (!compileLists(defs).ok) throw new Error(type)
  const once = performance.now() - t
  defs = def()
  let last = performance.now()
  let longest = 0
  let turns = 0
  let done = false
  const tick = () => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
    turns++
    if (!done) setImmediate(tick)
  }
  setImmediate(tick)
  t = performance.now()
  if (!(await compileListsAsync(defs)).ok) throw new Error(type)
  done = true
  const spread = performance.now() - t
  console.log(`${type.padEnd(6)} at once ${once.toFixed(0).padStart(5)} ms (one turn)   a turn at a time ${spread.toFixed(0).padStart(5)} ms in ${turns} turns, the longest ${longest.toFixed(0)} ms`)
}

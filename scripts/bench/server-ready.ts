/**
 * What a server costs to start: the CPU time from `createServer` to ready (SQLite in memory, offline lookups, every
 * route registered), module loading excluded, each run in a fresh process (the compiled schemas live in the process),
 * then the first request of a route (its schemas compiled at first use). Prints each run and the median. To compare
 * with another checkout, run the script of that checkout (`git worktree add DIR REV`, its node_modules linked).
 *
 *   npx tsx scripts/bench/server-ready.ts [--runs 5]
 */
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const { values } = parseArgs({ options: { runs: { type: 'string' }, child: { type: 'boolean' } } })

if (values.child) {
  const { createServer } = await import('../../src/server/app.js')
  const t0 = process.cpuUsage()
  const app = createServer({ db: ':memory:', riskcheck: { offline: true }, purgeIntervalMs: 0 })
  await app.ready()
  const ready = process.cpuUsage(t0)
  const t1 = process.cpuUsage()
  const r = await app.inject({ method: 'POST', url: '/v1/ip', payload: { ip: '81.2.69.142' } }) // 401: no key
  const first = process.cpuUsage(t1)
  await app.close()
  const ms = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000
  console.log(JSON.stringify({ ready: ms(ready), first: ms(first), status: r.statusCode }))
} else {
  const runs = Number(values.runs ?? 5)
  const self = fileURLToPath(import.meta.url)
  const got: Array<{ ready: number; first: number }> = []
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', self, '--child'], { encoding: 'utf8' })
    const run = JSON.parse(out.trim().split('\n').pop()!) as { ready: number; first: number }
    got.push(run)
    console.log(`run ${i + 1}: ready ${run.ready.toFixed(0)} ms CPU, first request ${run.first.toFixed(1)} ms`)
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  console.log(`median: ready ${median(got.map((g) => g.ready)).toFixed(0)} ms CPU, first request ${median(got.map((g) => g.first)).toFixed(1)} ms`)
}

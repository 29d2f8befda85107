/**
 * Where the SQLite time of a billed `POST /v1/ip` goes under load: every better-sqlite3 statement execution of the
 * server (COMMIT and the savepoints included) timed by its SQL, with autocannon in a separate process asking about
 * another address each time; per request,
 * the executions, their mean time, their time, and the part of it spent in executions over 2 ms (a COMMIT that ran
 * a checkpoint). `--inline-checkpoints` leaves WAL checkpoints to SQLite inside the commits, as before they moved to
 * a worker thread; `--no-velocity` runs the server without velocity counts.
 *
 *   npx tsx scripts/bench/server-sqlite-time.ts [--seconds 8] [--connections 16] [--inline-checkpoints] [--no-velocity]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { aroundStatements } from './support/sqlite-statements.js'

const { values } = parseArgs({ options: { seconds: { type: 'string' }, connections: { type: 'string' }, 'inline-checkpoints': { type: 'boolean' }, 'no-velocity': { type: 'boolean' } } })

// every statement execution of the process, timed by its SQL (only while `timing`)
const times = new Map<string, { n: number; ns: number; slow: number }>()
let timing = false
aroundStatements((m, sql, execute) => {
  if (!timing) return execute()
  const t = process.hrtime.bigint()
  try {
    return execute()
  } finally {
    const ns = Number(process.hrtime.bigint() - t)
    const k = `${m} ${sql.replace(/\s+/g, ' ').slice(0, 70)}`
    const e = times.get(k) ?? { n: 0, ns: 0, slow: 0 }
    e.n++
    e.ns += ns
    if (ns > 2e6) e.slow += ns
    times.set(k, e)
  }
})
const { createServer } = await import('../../src/server/app.js')
const { addressBodies, autocannon, benchCaller, bodyStream } = await import('./support/server-load.js')
const { createSqliteStore } = await import('../../src/server/store/sqlite/store.js')

const dir = mkdtempSync(join(tmpdir(), 'rc-sqlite-time-'))
const db = createSqliteStore(join(dir, 't.sqlite'), { backgroundCheckpoints: !values['inline-checkpoints'] })
const app = createServer({ db, riskcheck: { offline: true }, purgeIntervalMs: 0, velocity: values['no-velocity'] !== true })
await app.listen({ host: '127.0.0.1', port: 0 })
const { secret } = await benchCaller(app.store)
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1/ip`
// each request asks about another address (./support/server-load.ts, addressBodies)
const bodies = bodyStream(addressBodies(200_000, { bypass_cache: true }))
const load = (seconds: string) => autocannon({ url, secret, bodies, connections: values.connections ?? '16', seconds })
await load('2') // warm-up
timing = true
const r = await load(values.seconds ?? '8')
timing = false
const total = r.requests.total
console.log(`${values['inline-checkpoints'] ? 'checkpoints inside commits' : 'checkpoints in a worker thread'}: ${r.requests.average} req/s, p99 ${r.latency.p99} ms, ${total} requests`)
console.log('per request: executions, mean µs, µs, µs in executions over 2 ms, statement')
const sorted = [...times].sort((a, b) => b[1].ns - a[1].ns)
// the statements taking at least 1 µs a request, then the sum of all
for (const [k, e] of sorted.filter(([, e]) => e.ns / total >= 1000)) {
  console.log(`${(e.n / total).toFixed(2).padStart(5)} ${(e.ns / e.n / 1000).toFixed(1).padStart(7)} ${(e.ns / total / 1000).toFixed(1).padStart(7)} ${(e.slow / total / 1000).toFixed(1).padStart(6)}  ${k}`)
}
const sum = sorted.reduce((a, [, e]) => ({ n: a.n + e.n, ns: a.ns + e.ns }), { n: 0, ns: 0 })
console.log(`${(sum.n / total).toFixed(2).padStart(5)} ${(sum.ns / sum.n / 1000).toFixed(1).padStart(7)} ${(sum.ns / total / 1000).toFixed(1).padStart(7)}         every statement`)
await app.close()
rmSync(dir, { recursive: true, force: true })

/**
 * SQLite statements one `POST /v1/ip` runs (every statement execution of better-sqlite3 counted, the savepoints and
 * commits of transaction functions included), billed and cache hits, alone and 16 at once: a count of work that the
 * load of a shared machine does not change, beside the timings of ./server.ts.
 *
 *   npx tsx scripts/bench/server-statements.ts
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { aroundStatements } from './support/sqlite-statements.js'
// count every statement execution (savepoints and commits of transaction functions included)
let n = 0
aroundStatements((_m, _sql, execute) => {
  n++
  return execute()
})
const { createServer } = await import('../../src/server/app.js')
const { benchCaller } = await import('./support/server-load.js')
const dir = mkdtempSync(join(tmpdir(), 'rc-cnt-'))
const app = createServer({ db: join(dir, 'p.sqlite'), riskcheck: { offline: true }, purgeIntervalMs: 0 })
await app.ready()
const { secret } = await benchCaller(app.store)
const one = (cache: boolean) => app.inject({ method: 'POST', url: '/v1/ip', headers: { authorization: `Bearer ${secret}` }, payload: { ip: '8.8.8.8', ...(cache ? {} : { bypass_cache: true }) } })
for (let i = 0; i < 200; i++) await one(i % 2 === 0)
const out: string[] = []
for (const [label, conc] of [['alone', 1], ['16 at once', 16]] as const) for (const cache of [false, true]) {
  const n0 = n
  const N = 320
  for (let i = 0; i < N / conc; i++) await Promise.all(Array.from({ length: conc }, () => one(cache)))
  out.push(`${cache ? 'cache hit' : 'billed'} ${label}: ${((n - n0) / N).toFixed(1)}`)
}
console.log('SQLite statements per request — ' + out.join(', '))
await app.close()

/**
 * WAL pages a `POST /v1/ip` writes on SQLite (billed and cache hits, 16 connections from autocannon), by table or
 * index, with the requests per commit: each commit writes every page it changed and checkpoints copy them again, so
 * pages per request are what a request's writes cost beside its statements (./server-statements.ts). `--no-velocity`: the
 * server without velocity counts.
 *
 *   npx tsx scripts/bench/server-wal.ts [--seconds 3] [--no-velocity]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createServer } from '../../src/server/app.js'
import { addressBodies, autocannon, benchCaller, bodyStream, type Bodies } from './support/server-load.js'
import { aroundStatements } from './support/sqlite-statements.js'
import type { SqliteStore } from '../../src/server/store/sqlite/store.js'

const { values } = parseArgs({ options: { seconds: { type: 'string' }, 'no-velocity': { type: 'boolean' } } })
// commits counted at the statement (transaction functions run COMMIT as one)
let commits = 0
aroundStatements((_m, sql, execute) => {
  if (sql === 'COMMIT') commits++
  return execute()
})
const dir = mkdtempSync(join(tmpdir(), 'rc-wal-'))
const app = createServer({ db: join(dir, 'p.sqlite'), riskcheck: { offline: true }, purgeIntervalMs: 0, velocity: values['no-velocity'] !== true })
await app.listen({ host: '127.0.0.1', port: 0 })
const db = (app.store as SqliteStore).db
const { orgId, secret } = await benchCaller(app.store)
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1/ip`
// billed requests ask about another address each time (./support/server-load.ts, addressBodies); cache hits about one
const loads: Record<string, { body: unknown } | { bodies: Bodies }> = { billed: { bodies: bodyStream(addressBodies(200_000, { bypass_cache: true })) }, 'cache hit': { body: { ip: '1.1.1.1' } } }
const load = (what: { body: unknown } | { bodies: Bodies }, seconds: string) => autocannon({ url, secret, ...what, connections: 16, seconds })
for (const what of Object.values(loads)) await load(what, '1') // warm-up
for (const [name, what] of Object.entries(loads)) {
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.pragma('wal_autocheckpoint = 0') // the run's frames stay in the WAL to be read
  const before = (await app.store.getOrg(orgId, Date.now()))!.usage.totalLookups
  const c0 = commits
  await load(what, values.seconds ?? '3')
  const requests = (await app.store.getOrg(orgId, Date.now()))!.usage.totalLookups - before
  // each frame: a 24-byte header (its page number first) and the page
  const wal = readFileSync(join(dir, 'p.sqlite-wal'))
  const pageSize = wal.readUInt32BE(8)
  const owner = new Map((db.prepare('SELECT name, pageno FROM dbstat').all() as Array<{ name: string; pageno: number }>).map((r) => [r.pageno, r.name]))
  const pages = new Map<string, number>()
  let frames = 0
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    const page = wal.readUInt32BE(at)
    if (page === 0) break
    frames++
    const name = owner.get(page) ?? '?'
    pages.set(name, (pages.get(name) ?? 0) + 1)
  }
  db.pragma('wal_autocheckpoint = 1000')
  const by = [...pages].sort((a, b) => b[1] - a[1]).filter(([, n]) => n / requests >= 0.01)
  console.log(`${name}: ${(frames / requests).toFixed(2)} WAL pages per request, ${(requests / Math.max(1, commits - c0)).toFixed(1)} requests per commit (${requests} requests)`)
  console.log(`  ${by.map(([k, n]) => `${k} ${(n / requests).toFixed(2)}`).join(', ')}`)
}
await app.close()
rmSync(dir, { recursive: true, force: true })

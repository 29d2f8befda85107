/**
 * The lists storage at a full org: what one value added with the limits checked (`addItems` with `listRoom`, as the
 * API and `riskcheck admin list add` call it), one list read and the org's lists read cost when the org holds
 * `--items` items (default 900,000), against reading the same lists with their rows counted (`COUNT(*)` per list,
 * what the stored `item_count` column replaced), in one run. SQLite on a temporary file; PostgreSQL too with
 * `--database-url` (a schema of its own, dropped at the end). Prints medians of `--repeat` calls (default 15), in ms.
 *
 *   npx tsx scripts/bench/lists-store.ts [--items N] [--repeat R] [--database-url postgres://…]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { listRoom } from '../../src/server/org-lists.js'
import type { ListOwner, ListsStore } from '../../src/server/store/contracts/lists.js'
import { listsStoreOf, openStorage } from '../../src/server/store/open-storage.js'
import type { ServiceStorage } from '../../src/server/store/contracts/service-storage.js'

const { values: args } = parseArgs({ options: { items: { type: 'string' }, repeat: { type: 'string' }, 'database-url': { type: 'string' } } })
const ITEMS = Number(args.items ?? 900_000)
const REPEAT = Number(args.repeat ?? 15)
const CHUNK = 100_000

/** An engine to measure: its storage, a raw query on its database, and how to drop what it made. */
interface Engine {
  name: string
  storage: ServiceStorage
  query(sql: string, params: unknown[]): Promise<unknown>
  drop(): Promise<void>
}

async function sqlite(): Promise<Engine> {
  const dir = mkdtempSync(join(tmpdir(), 'rc-lists-store-'))
  const storage = openStorage({ sqlite: join(dir, 'bench.sqlite') })
  const db = (storage.store as unknown as { db: import('better-sqlite3').Database }).db
  return { name: 'SQLite', storage, query: async (sql, params) => db.prepare(sql.replace(/\$\d+/g, '?')).all(...params), drop: async () => rmSync(dir, { recursive: true, force: true }) }
}

async function postgres(url: string): Promise<Engine> {
  const schema = `rc_lists_bench_${process.pid}`
  const admin = new pg.Pool({ connectionString: url, max: 1 })
  await admin.query(`CREATE SCHEMA ${schema}`)
  const storage = await openStorage({ postgres: url, schema })
  const pool = (storage.store as unknown as { pool: pg.Pool }).pool
  return {
    name: 'PostgreSQL',
    storage,
    query: async (sql, params) => (await pool.query(sql, params)).rows,
    drop: async () => {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
      await admin.end()
    },
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number

async function timed(run: (i: number) => Promise<unknown>): Promise<number> {
  const t: number[] = []
  for (let i = 0; i < REPEAT; i++) {
    const t0 = performance.now()
    await run(i)
    t.push(performance.now() - t0)
  }
  return median(t)
}

async function measure(e: Engine): Promise<void> {
  const lists = listsStoreOf(e.storage.store) as ListsStore
  const owner: ListOwner = { orgId: (await e.storage.store.createOrg({ name: 'Full', planId: 'starter' }, 1)).id, mode: 'live' }
  const big = await lists.createList(owner, { name: 'Big', kind: 'block', itemType: 'email' }, 1)
  const small = await lists.createList(owner, { name: 'Small', kind: 'block', itemType: 'email' }, 1)
  for (let i = 0; i < ITEMS; i += CHUNK) {
    const n = Math.min(CHUNK, ITEMS - i)
    await lists.addItems(owner, big.id, Array.from({ length: n }, (_, k) => ({ value: `u${i + k}@big.example`, reason: null, expiresAt: null })), 1)
  }
  if (e.name === 'PostgreSQL') await e.query('ANALYZE', [])
  const add = await timed((i) => lists.addItems(owner, small.id, [{ value: `one${i}@small.example`, reason: null, expiresAt: null }], 2, listRoom))
  const one = await timed(() => lists.getList(owner, big.id))
  const all = await timed(() => lists.listLists(owner))
  const counted = await timed(() =>
    e.query('SELECT l.id, (SELECT COUNT(*) FROM list_items i WHERE i.list_id = l.id) AS items FROM lists l WHERE l.org_id = $1 AND l.mode = $2', [owner.orgId, owner.mode]),
  )
  const f = (ms: number) => `${ms.toFixed(2).padStart(8)} ms`
  console.log(`${e.name}, ${ITEMS.toLocaleString('en-US')} items, median of ${REPEAT}`)
  console.log(`  one value added, limits checked ${f(add)}`)
  console.log(`  one list read                   ${f(one)}`)
  console.log(`  the org's lists read            ${f(all)}`)
  console.log(`  the org's lists, rows counted   ${f(counted)}   ×${(counted / all).toFixed(0)} the stored counts' read`)
}

async function main() {
  const engines = [await sqlite(), ...(args['database-url'] ? [await postgres(args['database-url'])] : [])]
  for (const e of engines) {
    try {
      await measure(e)
    } finally {
      await e.storage.close()
      await e.drop()
    }
  }
}

void main()

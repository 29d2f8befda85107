/**
 * Deleting a large list on SQLite: the longest the event loop (and the file's only write lock) is held, and the whole
 * time until the items are gone, for the store's `deleteList` (a large list marked deleted, then emptied a few
 * thousand items a turn) against the same list deleted in one transaction (what the store did before), in one run on
 * one temporary file. A timer ticking every millisecond meanwhile measures how late it ran: what every request of the
 * server would wait.
 *
 *   npx tsx scripts/bench/lists-delete.ts [--items N]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { createSqliteListsStore } from '../../src/server/store/sqlite/lists.js'
import type { ListOwner } from '../../src/server/store/contracts/lists.js'

const { values: args } = parseArgs({ options: { items: { type: 'string' } } })
const ITEMS = Number(args.items ?? 1_000_000)
const T0 = Date.parse('2026-11-28T00:00:00Z')

const dir = mkdtempSync(join(tmpdir(), 'rc-lists-delete-'))
const store = createSqliteStore(join(dir, 'l.sqlite'))
const lists = createSqliteListsStore(store.db, { afterLargeCommit: () => store.afterLargeCommit() })
const owner: ListOwner = { orgId: store.createOrg({ name: 'Big', planId: 'free' }, T0).id, mode: 'live' }

async function filled(name: string): Promise<string> {
  const list = await lists.createList(owner, { name, kind: 'block', itemType: 'email' }, T0)
  for (let from = 0; from < ITEMS; from += 100_000) {
    const values = Array.from({ length: Math.min(100_000, ITEMS - from) }, (_, i) => ({ value: `user${from + i}@${name}.example`, reason: null, expiresAt: null }))
    await lists.addItems(owner, list.id, values, T0)
  }
  return list.id
}

/** Runs `work` while a 1 ms timer ticks; answers the longest the timer was late and the time `work` took, in ms. */
async function measured(work: () => Promise<unknown>): Promise<{ worstLateMs: number; totalMs: number }> {
  let worst = 0
  let last = performance.now()
  const tick = setInterval(() => {
    const now = performance.now()
    worst = Math.max(worst, now - last - 1)
    last = now
  }, 1)
  await new Promise((go) => setTimeout(go, 20))
  const t0 = performance.now()
  await work()
  const totalMs = performance.now() - t0
  await new Promise((go) => setTimeout(go, 20))
  clearInterval(tick)
  return { worstLateMs: Math.max(worst, performance.now() - last - 1), totalMs }
}

const oneTransaction = await filled('old')
const inSteps = await filled('new')
const count = (id: string) => store.db.prepare('SELECT COUNT(*) FROM list_items WHERE list_id = ?').pluck().get(id) as number
const before = await measured(async () => {
  store.db.transaction(() => {
    store.db.prepare('DELETE FROM list_items WHERE list_id = ?').run(oneTransaction)
    store.db.prepare('DELETE FROM lists WHERE id = ?').run(oneTransaction)
  }).immediate()
})
const after = await measured(async () => {
  await lists.deleteList(owner, inSteps)
  await lists.emptied()
})
if (count(oneTransaction) !== 0 || count(inSteps) !== 0) throw new Error('items left')
const f = (n: number) => n.toFixed(1).padStart(8)
console.log(`deleting a list of ${ITEMS.toLocaleString('en-US')} items (SQLite file), ms: longest the event loop was held, and the whole deletion`)
console.log(`one transaction (before)      ${f(before.worstLateMs)} ${f(before.totalMs)}`)
console.log(`deleteList (marked, in steps) ${f(after.worstLateMs)} ${f(after.totalMs)}`)
store.close()
rmSync(dir, { recursive: true, force: true })

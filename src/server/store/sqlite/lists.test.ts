/**
 * What only the SQLite lists store has to show: a large list is deleted without holding the file's write lock for
 * long — gone for every reader at once, its items removed DELETE_CHUNK at a time with turns of the event loop between
 * (each step told to the store's checkpointer), and finished by the next store on the file when the process stopped. (Its contract runs on every
 * engine from test/store-contract/contracts.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createSqliteStore, type SqliteStore } from './store.js'
import { createSqliteListsStore, DELETE_CHUNK } from './lists.js'
import type { ListOwner } from '../contracts/lists.js'

const T0 = Date.parse('2026-11-28T00:00:00Z')
const open: SqliteStore[] = []
const dirs: string[] = []
afterEach(() => {
  for (const s of open.splice(0)) if (s.db.open) s.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** A store on a file of its own, an owner and a list of `n` items (added a chunk per call). */
async function withList(n: number, path?: string) {
  const file = path ?? join(dirs[dirs.push(mkdtempSync(join(tmpdir(), 'rc-lists-'))) - 1]!, 'l.sqlite')
  const store = createSqliteStore(file)
  open.push(store)
  const large = { commits: 0 }
  const lists = createSqliteListsStore(store.db, { afterLargeCommit: () => void large.commits++ })
  const org = store.createOrg({ name: 'Big', planId: 'free' }, T0)
  const owner: ListOwner = { orgId: org.id, mode: 'live' }
  const list = await lists.createList(owner, { name: 'many', kind: 'block', itemType: 'ip' }, T0)
  for (let from = 0; from < n; from += 10_000) {
    const values = Array.from({ length: Math.min(10_000, n - from) }, (_, i) => ({ value: `10.${(from + i) >> 16}.${((from + i) >> 8) & 255}.${(from + i) & 255}`, reason: null, expiresAt: null }))
    await lists.addItems(owner, list.id, values, T0)
  }
  const rows = () => store.db.prepare('SELECT COUNT(*) FROM list_items WHERE list_id = ?').pluck().get(list.id) as number
  const listRows = () => store.db.prepare('SELECT COUNT(*) FROM lists WHERE id = ?').pluck().get(list.id) as number
  return { file, store, lists, owner, list, rows, listRows, large }
}

describe('deleting a large list (SQLite)', () => {
  it('is gone for every reader at once; its items go DELETE_CHUNK per transaction, other writes between them', async () => {
    const n = 3 * DELETE_CHUNK + 7
    const { lists, owner, list, rows, listRows, large } = await withList(n)
    const other = await lists.createList(owner, { name: 'other', kind: 'allow', itemType: 'ip' }, T0)
    const version = await lists.version(owner)
    expect(await lists.deleteList(owner, list.id)).toBe(true)
    // answered: the list is no list — not listed, not read, not in a snapshot, nothing added to it — and the version moved
    expect(await lists.getList(owner, list.id)).toBeNull()
    expect((await lists.listLists(owner)).map((l) => l.id)).toEqual([other.id])
    expect(await lists.listItems(owner, list.id, { after: null, limit: 10 })).toBeNull()
    expect(await lists.addItems(owner, list.id, [{ value: '192.0.2.1', reason: null, expiresAt: null }], T0)).toBeNull()
    expect((await lists.snapshot(owner, T0)).lists.map((l) => l.id)).toEqual([other.id])
    expect(await lists.version(owner)).toBe((version ?? 0) + 1)
    expect(await lists.deleteList(owner, list.id)).toBe(false)
    // …while its items are still there: the answer removed none of them
    expect(rows()).toBe(n)
    // then a step a turn, each at most DELETE_CHUNK items, and another write between two steps
    const steps: number[] = []
    let wroteBetween = false
    for (let r = rows(); r > 0; ) {
      await new Promise<void>((go) => setImmediate(go))
      const now = rows()
      steps.push(r - now)
      if (!wroteBetween && now > 0 && now < n) {
        await lists.addItems(owner, other.id, [{ value: '192.0.2.9', reason: null, expiresAt: null }], T0)
        wroteBetween = true
      }
      r = now
      expect(steps.length).toBeLessThan(50) // never a loop without end
    }
    await lists.emptied()
    expect(wroteBetween).toBe(true)
    expect(Math.max(...steps)).toBe(DELETE_CHUNK)
    expect(steps.filter((d) => d > 0)).toHaveLength(Math.ceil(n / DELETE_CHUNK))
    // each step told the store, whose checkpointer then copies the WAL back before SQLite would inside a commit
    expect(large.commits).toBe(Math.ceil(n / DELETE_CHUNK))
    expect([rows(), listRows()]).toEqual([0, 0])
    expect((await lists.listItems(owner, other.id, { after: null, limit: 10 }))?.items.map((i) => i.value)).toEqual(['192.0.2.9'])
  })

  it('a small list goes in one transaction, row and items', async () => {
    const { lists, owner, list, rows, listRows } = await withList(DELETE_CHUNK)
    expect(await lists.deleteList(owner, list.id)).toBe(true)
    expect([rows(), listRows()]).toEqual([0, 0])
  })

  it('a process stopped while emptying: the next store on the file finishes, and the list never comes back', async () => {
    const n = 2 * DELETE_CHUNK + 1
    const first = await withList(n)
    expect(await first.lists.deleteList(first.owner, first.list.id)).toBe(true)
    // stopped before the first step's turn
    first.store.close()
    const again = createSqliteStore(first.file)
    open.push(again)
    const count = () => again.db.prepare('SELECT COUNT(*) FROM list_items WHERE list_id = ?').pluck().get(first.list.id) as number
    expect(count()).toBe(n)
    const lists = createSqliteListsStore(again.db)
    expect(await lists.getList(first.owner, first.list.id)).toBeNull()
    await lists.emptied()
    expect(count()).toBe(0)
    expect(again.db.prepare('SELECT COUNT(*) FROM lists WHERE id = ?').pluck().get(first.list.id)).toBe(0)
  })
})

/**
 * Allow/block lists on SQLite (../contracts/lists.ts): every change is one IMMEDIATE transaction that also bumps the
 * owner's row of `list_versions`, which the API-key read returns with the key (./accounts.ts). A snapshot is read a
 * page a turn and kept only when the version did not move meanwhile. A large list is deleted in steps (migration 017).
 */
import { newListId } from '../common/list-ids.js'
import type Database from 'better-sqlite3'
import type { ListItemType, ListKind } from '../../../lists/types.js'
import { RiskcheckError } from '../../../errors.js'
import { runInTurns, runNow, type Steps } from '../../../steps.js'
import type { ListItemRecord, ListOwner, ListRecord, ListRoom, ListsSnapshot, ListsStore } from '../contracts/lists.js'

interface ListRow {
  id: string
  name: string
  kind: string
  item_type: string
  created_at: number
  items: number
}
interface ItemRow {
  value: string
  reason: string | null
  expires_at: number | null
  created_at: number
}

const toList = (r: ListRow): ListRecord => ({
  id: r.id,
  name: r.name,
  kind: r.kind as ListKind,
  itemType: r.item_type as ListItemType,
  createdAt: r.created_at,
  items: r.items,
})
const toItem = (r: ItemRow): ListItemRecord => ({ value: r.value, reason: r.reason, expiresAt: r.expires_at, createdAt: r.created_at })

/** Items a snapshot reads in one turn of the event loop. */
const SNAPSHOT_PAGE = 4096
/** Snapshots read a page a turn before one is read in a single transaction (the owner's lists kept changing meanwhile). */
const SNAPSHOT_TRIES = 3
/**
 * Items one transaction deletes: a list with more is marked deleted and emptied this many at a time, a turn of the
 * event loop between two (a few milliseconds of the write lock each, where a million items held it for most of a second).
 */
export const DELETE_CHUNK = 5000

/**
 * The lists store over the SQLite store's database (migration 006). `afterLargeCommit`: told after each step of
 * emptying a deleted list (the store's checkpointer then copies the WAL back before it grows large).
 */
export function createSqliteListsStore(db: Database.Database, options: { afterLargeCommit?: () => void } = {}): ListsStore & { emptied(): Promise<void> } {
  // each list's count is kept by the transactions that change its items (migration 016): no rows counted here
  // a list marked deleted is no list (migration 017): every read leaves it out
  const counted = `SELECT l.id, l.name, l.kind, l.item_type, l.created_at, l.item_count AS items FROM lists l`
  const q = {
    insertList: db.prepare('INSERT INTO lists (id, org_id, mode, name, kind, item_type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    all: db.prepare(`${counted} WHERE l.org_id = ? AND l.mode = ? AND l.deleted = 0 ORDER BY l.created_at, l.id`),
    one: db.prepare(`${counted} WHERE l.id = ? AND l.org_id = ? AND l.mode = ? AND l.deleted = 0`),
    owned: db.prepare('SELECT item_count FROM lists WHERE id = ? AND org_id = ? AND mode = ? AND deleted = 0').pluck(),
    insertItem: db.prepare('INSERT INTO list_items (list_id, value, reason, expires_at, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING'),
    page: db.prepare('SELECT value, reason, expires_at, created_at FROM list_items WHERE list_id = ? AND value > ? ORDER BY value LIMIT ?'),
    item: db.prepare('SELECT value, reason, expires_at, created_at FROM list_items WHERE list_id = ? AND value = ?'),
    removeItem: db.prepare('DELETE FROM list_items WHERE list_id = ? AND value = ?'),
    counted: db.prepare('UPDATE lists SET item_count = item_count + ? WHERE id = ?'),
    bump: db.prepare(
      'INSERT INTO list_versions (org_id, mode, version) VALUES (?, ?, 1) ON CONFLICT (org_id, mode) DO UPDATE SET version = version + 1',
    ),
    version: db.prepare('SELECT version FROM list_versions WHERE org_id = ? AND mode = ?'),
    ownerLists: db.prepare('SELECT id, name, kind, item_type FROM lists WHERE org_id = ? AND mode = ? AND deleted = 0 ORDER BY created_at, id'),
  }
  const owns = (o: ListOwner, id: string) => q.owned.get(id, o.orgId, o.mode) !== undefined
  const bump = (o: ListOwner) => q.bump.run(o.orgId, o.mode)

  const create = db.transaction((o: ListOwner, input: Pick<ListRecord, 'name' | 'kind' | 'itemType'>, nowMs: number): ListRecord => {
    const id = newListId()
    q.insertList.run(id, o.orgId, o.mode, input.name, input.kind, input.itemType, nowMs)
    bump(o)
    return { id, name: input.name, kind: input.kind, itemType: input.itemType, createdAt: nowMs, items: 0 }
  })
  const deletion = listDeletion(db, q.owned, bump, options.afterLargeCommit)
  const add = db.transaction((o: ListOwner, id: string, items: ReadonlyArray<Omit<ListItemRecord, 'createdAt'>>, nowMs: number, room?: ListRoom) => {
    if (room) {
      // the owner's lists, the one added to among them (the transaction is IMMEDIATE: no other add runs between this
      // count and the inserts)
      const all = (q.all.all(o.orgId, o.mode) as ListRow[]).map(toList)
      const list = all.find((l) => l.id === id)
      if (!list) return null
      const full = room(all, list, items.length)
      if (full !== null) throw new RiskcheckError('INPUT_LIMIT_EXCEEDED', full, { field: 'values' })
    } else if (!owns(o, id)) return null
    let added = 0
    for (const it of items) added += q.insertItem.run(id, it.value, it.reason, it.expiresAt, nowMs).changes
    if (added > 0) {
      q.counted.run(added, id)
      bump(o)
    }
    return { added, alreadyPresent: items.length - added }
  })
  const removeOne = db.transaction((o: ListOwner, id: string, value: string): boolean | null => {
    if (!owns(o, id)) return null
    const gone = q.removeItem.run(id, value).changes > 0
    if (gone) {
      q.counted.run(-1, id)
      bump(o)
    }
    return gone
  })
  const removeMany = db.transaction((o: ListOwner, id: string, values: readonly string[]): number | null => {
    if (!owns(o, id)) return null
    let gone = 0
    for (const v of values) gone += q.removeItem.run(id, v).changes
    if (gone > 0) {
      q.counted.run(-gone, id)
      bump(o)
    }
    return gone
  })
  /** The owner's lists version; null when it never had a list. */
  const storedVersion = (o: ListOwner) => (q.version.get(o.orgId, o.mode) as { version: number } | undefined)?.version ?? null
  const versionOf = (o: ListOwner) => storedVersion(o) ?? 0
  /** The owner's lists and their items live at `nowMs`, read a page at a time (a `yield` between two pages). */
  function* reading(o: ListOwner, nowMs: number): Steps<ListsSnapshot> {
    const version = versionOf(o)
    const lists: ListsSnapshot['lists'] = []
    for (const l of q.ownerLists.all(o.orgId, o.mode) as Array<Omit<ListRow, 'items' | 'created_at'>>) {
      const items: ListsSnapshot['lists'][number]['items'] = []
      for (let after = ''; ; ) {
        const rows = q.page.all(l.id, after, SNAPSHOT_PAGE) as ItemRow[]
        for (const r of rows) if (r.expires_at === null || r.expires_at > nowMs) items.push({ value: r.value, reason: r.reason, expiresAt: r.expires_at })
        if (rows.length < SNAPSHOT_PAGE) break
        after = (rows[rows.length - 1] as ItemRow).value
        yield
      }
      lists.push({ id: l.id, name: l.name, kind: l.kind as ListKind, itemType: l.item_type as ListItemType, items })
    }
    return { version, lists }
  }
  const readAtOnce = db.transaction((o: ListOwner, nowMs: number) => runNow(reading(o, nowMs)))

  return {
    createList: async (o, input, nowMs) => create.immediate(o, input, nowMs),
    listLists: async (o) => (q.all.all(o.orgId, o.mode) as ListRow[]).map(toList),
    async getList(o, id) {
      const r = q.one.get(id, o.orgId, o.mode) as ListRow | undefined
      return r ? toList(r) : null
    },
    deleteList: async (o, id) => deletion.deleteList(o, id),
    /** Resolves once the lists marked deleted that this store is emptying are gone (or left to the next store). */
    emptied: () => deletion.emptied(),
    addItems: async (o, id, items, nowMs, room) => add.immediate(o, id, items, nowMs, room),
    async listItems(o, id, page) {
      if (!owns(o, id)) return null
      if (page.value !== undefined) {
        const r = q.item.get(id, page.value) as ItemRow | undefined
        return { items: r ? [toItem(r)] : [], next: null }
      }
      const rows = q.page.all(id, page.after ?? '', page.limit + 1) as ItemRow[]
      const more = rows.length > page.limit
      const items = rows.slice(0, page.limit).map(toItem)
      return { items, next: more ? (items[items.length - 1]?.value ?? null) : null }
    },
    removeItem: async (o, id, value) => removeOne.immediate(o, id, value),
    removeItems: async (o, id, values) => removeMany.immediate(o, id, values),
    version: async (o) => storedVersion(o),
    async snapshot(o, nowMs) {
      // a page a turn (a large list holds neither the only connection nor the event loop for long), kept when the
      // version did not move meanwhile: every change bumps it, so a snapshot at one version saw no change
      for (let i = 0; i < SNAPSHOT_TRIES; i++) {
        const read = await runInTurns(reading(o, nowMs))
        if (versionOf(o) === read.version) return read
      }
      return readAtOnce.deferred(o, nowMs)
    },
  }
}

/**
 * Deleting lists: a small one (DELETE_CHUNK items or fewer) with its items in one transaction; a larger one marked
 * deleted (every read leaves it out) and then emptied a step a turn. `owned` reads a list's item count (none: not the
 * owner's); `bump` moves the owner's version. Lists found marked when it is made (a process stopped halfway) are emptied too.
 */
function listDeletion(db: Database.Database, owned: Database.Statement, bump: (o: ListOwner) => unknown, afterLargeCommit?: () => void) {
  const q = {
    deleteItems: db.prepare('DELETE FROM list_items WHERE list_id = ?'),
    deleteList: db.prepare('DELETE FROM lists WHERE id = ?'),
    markDeleted: db.prepare('UPDATE lists SET deleted = 1 WHERE id = ?'),
    marked: db.prepare('SELECT id FROM lists WHERE deleted = 1').pluck(),
    deleteChunk: db.prepare('DELETE FROM list_items WHERE list_id = ? AND value IN (SELECT value FROM list_items WHERE list_id = ? LIMIT ?)'),
  }
  /** Deletes the list at once when it is small; else marks it deleted and answers 'emptying'. */
  const remove = db.transaction((o: ListOwner, id: string): false | 'deleted' | 'emptying' => {
    const items = owned.get(id, o.orgId, o.mode) as number | undefined
    if (items === undefined) return false
    bump(o)
    if (items > DELETE_CHUNK) {
      q.markDeleted.run(id)
      return 'emptying'
    }
    q.deleteItems.run(id)
    q.deleteList.run(id)
    return 'deleted'
  })
  /** One step of emptying a marked list: up to DELETE_CHUNK items, and the list's row once none is left. */
  const emptyStep = db.transaction((id: string): number => {
    const gone = q.deleteChunk.run(id, id, DELETE_CHUNK).changes
    if (gone < DELETE_CHUNK) q.deleteList.run(id)
    return gone
  })
  const running = new Map<string, Promise<void>>()
  /**
   * Empties a list marked deleted, a step a turn; a step that fails (the file closed, a busy lock past its timeout)
   * leaves the rest to the next store opened on the file, which empties every marked list it finds.
   */
  async function empty(id: string): Promise<void> {
    try {
      for (;;) {
        await new Promise<void>((go) => setImmediate(go))
        if (!db.open) return
        const gone = emptyStep.immediate(id)
        afterLargeCommit?.()
        if (gone < DELETE_CHUNK) return
      }
    } catch {
      // left marked: emptied by the next store on this file
    } finally {
      running.delete(id)
    }
  }
  const emptying = (id: string) => {
    if (!running.has(id)) running.set(id, empty(id))
  }
  for (const id of q.marked.all() as string[]) emptying(id)
  return {
    deleteList(o: ListOwner, id: string): boolean {
      const done = remove.immediate(o, id)
      if (done === 'emptying') emptying(id)
      return done !== false
    },
    async emptied(): Promise<void> {
      while (running.size > 0) await Promise.all(running.values())
    },
  }
}

/**
 * Allow/block lists on PostgreSQL (../contracts/lists.ts): every change is one transaction that also bumps the
 * owner's row of `list_versions` (read with the API key by the auth statement), items are added by chunks of one
 * multi-row statement each, and a snapshot is read at one version (REPEATABLE READ), fetched a page a statement.
 */
import type pg from 'pg'
import type { ListItemType, ListKind } from '../../../lists/types.js'
import { RiskcheckError } from '../../../errors.js'
import type { ListItemRecord, ListOwner, ListRecord, ListRoom, ListsSnapshot, ListsStore } from '../contracts/lists.js'
import { newListId } from '../common/list-ids.js'
import { inTransaction, type Num, type Queryable } from './client.js'

/** Items inserted by one statement (its arrays are bound as 4 parameters). */
export const ITEMS_PER_STATEMENT = 20_000

/** Items a snapshot fetches in one statement. */
const SNAPSHOT_PAGE = 8192

interface ListRow {
  id: string
  name: string
  kind: string
  item_type: string
  created_at: Num
  items: Num
}
interface ItemRow {
  value: string
  reason: string | null
  expires_at: Num | null
  created_at: Num
}

const toList = (r: ListRow): ListRecord => ({
  id: r.id,
  name: r.name,
  kind: r.kind as ListKind,
  itemType: r.item_type as ListItemType,
  createdAt: Number(r.created_at),
  items: Number(r.items),
})
const toItem = (r: ItemRow): ListItemRecord => ({
  value: r.value,
  reason: r.reason,
  expiresAt: r.expires_at === null ? null : Number(r.expires_at),
  createdAt: Number(r.created_at),
})

// each list's count is kept by the transactions that change its items (migration 13): no rows counted here
const COUNTED = `SELECT l.id, l.name, l.kind, l.item_type, l.created_at, l.item_count AS items FROM lists l`
const BUMP = `INSERT INTO list_versions (org_id, mode, version) VALUES ($1, $2, 1)
  ON CONFLICT (org_id, mode) DO UPDATE SET version = list_versions.version + 1`
/** {@link BUMP}, and the list's count changed by the items added or removed, in the same statement (no round trip more). */
const BUMP_COUNTED = `WITH counted AS (UPDATE lists SET item_count = item_count + $3 WHERE id = $4) ${BUMP}`

/** Locks the owner's list row (null when the owner has no such list). */
async function lockOwned(c: Queryable, o: ListOwner, id: string): Promise<boolean> {
  const { rowCount } = await c.query('SELECT 1 FROM lists WHERE id = $1 AND org_id = $2 AND mode = $3 FOR UPDATE', [id, o.orgId, o.mode])
  return (rowCount ?? 0) > 0
}

/** The lists store over the PostgreSQL store's pool (migration 6). */
export function createPostgresListsStore(pool: pg.Pool): ListsStore {
  const bump = (c: Queryable, o: ListOwner) => c.query(BUMP, [o.orgId, o.mode])
  const bumpCounted = (c: Queryable, o: ListOwner, id: string, change: number) => c.query(BUMP_COUNTED, [o.orgId, o.mode, change, id])
  const owned = async (o: ListOwner, id: string) =>
    ((await pool.query('SELECT 1 FROM lists WHERE id = $1 AND org_id = $2 AND mode = $3', [id, o.orgId, o.mode])).rowCount ?? 0) > 0

  return {
    createList: (o, input, nowMs) =>
      inTransaction(pool, async (c) => {
        const id = newListId()
        await c.query('INSERT INTO lists (id, org_id, mode, name, kind, item_type, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
          id, o.orgId, o.mode, input.name, input.kind, input.itemType, nowMs,
        ])
        await bump(c, o)
        return { id, name: input.name, kind: input.kind, itemType: input.itemType, createdAt: nowMs, items: 0 }
      }),
    async listLists(o) {
      const { rows } = await pool.query<ListRow>(`${COUNTED} WHERE l.org_id = $1 AND l.mode = $2 ORDER BY l.created_at, l.id`, [o.orgId, o.mode])
      return rows.map(toList)
    },
    async getList(o, id) {
      const { rows } = await pool.query<ListRow>(`${COUNTED} WHERE l.id = $1 AND l.org_id = $2 AND l.mode = $3`, [id, o.orgId, o.mode])
      return rows[0] ? toList(rows[0]) : null
    },
    deleteList: (o, id) =>
      inTransaction(pool, async (c) => {
        if (!(await lockOwned(c, o, id))) return false
        await c.query('DELETE FROM list_items WHERE list_id = $1', [id])
        await c.query('DELETE FROM lists WHERE id = $1', [id])
        await bump(c, o)
        return true
      }),
    addItems: (o, id, items, nowMs, room) =>
      inTransaction(pool, async (c) => {
        if (room) {
          // every list of the owner locked, in id order, as its count is read: concurrent adds count one after the other
          const locked = await c.query<ListRow>(`${COUNTED} WHERE l.org_id = $1 AND l.mode = $2 ORDER BY l.id FOR UPDATE`, [o.orgId, o.mode])
          const all = locked.rows.map(toList)
          const list = all.find((l) => l.id === id)
          if (!list) return null
          const full = room(all, list, items.length)
          if (full !== null) throw new RiskcheckError('INPUT_LIMIT_EXCEEDED', full, { field: 'values' })
        } else if (!(await lockOwned(c, o, id))) return null
        let added = 0
        for (let i = 0; i < items.length; i += ITEMS_PER_STATEMENT) {
          const chunk = items.slice(i, i + ITEMS_PER_STATEMENT)
          const r = await c.query(
            `INSERT INTO list_items (list_id, value, reason, expires_at, created_at)
             SELECT $1, v, r, e, $5 FROM unnest($2::text[], $3::text[], $4::bigint[]) AS t(v, r, e)
             ON CONFLICT DO NOTHING`,
            [id, chunk.map((x) => x.value), chunk.map((x) => x.reason), chunk.map((x) => x.expiresAt), nowMs],
          )
          added += r.rowCount ?? 0
        }
        if (added > 0) await bumpCounted(c, o, id, added)
        return { added, alreadyPresent: items.length - added }
      }),
    async listItems(o, id, page) {
      if (!(await owned(o, id))) return null
      if (page.value !== undefined) {
        const { rows } = await pool.query<ItemRow>('SELECT value, reason, expires_at, created_at FROM list_items WHERE list_id = $1 AND value = $2', [id, page.value])
        return { items: rows.map(toItem), next: null }
      }
      const { rows } = await pool.query<ItemRow>(
        'SELECT value, reason, expires_at, created_at FROM list_items WHERE list_id = $1 AND value > $2 ORDER BY value LIMIT $3',
        [id, page.after ?? '', page.limit + 1],
      )
      const more = rows.length > page.limit
      const list = rows.slice(0, page.limit).map(toItem)
      return { items: list, next: more ? (list[list.length - 1]?.value ?? null) : null }
    },
    removeItem: (o, id, value) =>
      inTransaction(pool, async (c) => {
        if (!(await lockOwned(c, o, id))) return null
        const gone = ((await c.query('DELETE FROM list_items WHERE list_id = $1 AND value = $2', [id, value])).rowCount ?? 0) > 0
        if (gone) await bumpCounted(c, o, id, -1)
        return gone
      }),
    removeItems: (o, id, values) =>
      inTransaction(pool, async (c) => {
        if (!(await lockOwned(c, o, id))) return null
        let gone = 0
        for (let i = 0; i < values.length; i += ITEMS_PER_STATEMENT) {
          const chunk = values.slice(i, i + ITEMS_PER_STATEMENT)
          gone += (await c.query('DELETE FROM list_items WHERE list_id = $1 AND value = ANY($2::text[])', [id, chunk])).rowCount ?? 0
        }
        if (gone > 0) await bumpCounted(c, o, id, -gone)
        return gone
      }),
    async version(o) {
      const { rows } = await pool.query<{ version: Num }>('SELECT version FROM list_versions WHERE org_id = $1 AND mode = $2', [o.orgId, o.mode])
      return rows[0] ? Number(rows[0].version) : null
    },
    snapshot: (o, nowMs) =>
      inTransaction(pool, async (c) => {
        await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY')
        const v = await c.query<{ version: Num }>('SELECT version FROM list_versions WHERE org_id = $1 AND mode = $2', [o.orgId, o.mode])
        const lists = await c.query<Omit<ListRow, 'items' | 'created_at'>>(
          'SELECT id, name, kind, item_type FROM lists WHERE org_id = $1 AND mode = $2 ORDER BY created_at, id',
          [o.orgId, o.mode],
        )
        // fetched a page a statement (its rows handled in a turn of their own) from one cursor, in the one snapshot
        await c.query(
          `DECLARE list_snapshot NO SCROLL CURSOR FOR
           SELECT i.list_id, i.value, i.reason, i.expires_at FROM list_items i JOIN lists l ON l.id = i.list_id
           WHERE l.org_id = $1 AND l.mode = $2 AND (i.expires_at IS NULL OR i.expires_at > $3)`,
          [o.orgId, o.mode, nowMs],
        )
        const byList = new Map(lists.rows.map((l) => [l.id, [] as ListsSnapshot['lists'][number]['items']]))
        for (;;) {
          const page = await c.query<ItemRow & { list_id: string }>(`FETCH ${SNAPSHOT_PAGE} FROM list_snapshot`)
          for (const r of page.rows) byList.get(r.list_id)?.push({ value: r.value, reason: r.reason, expiresAt: r.expires_at === null ? null : Number(r.expires_at) })
          if (page.rows.length < SNAPSHOT_PAGE) break
        }
        return {
          version: v.rows[0] ? Number(v.rows[0].version) : 0,
          lists: lists.rows.map((l) => ({ id: l.id, name: l.name, kind: l.kind as ListKind, itemType: l.item_type as ListItemType, items: byList.get(l.id) ?? [] })),
        }
      }),
  }
}

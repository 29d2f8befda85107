/**
 * The contract of the lists storage's item counts (src/server/store/contracts/lists.ts): each list's count is stored
 * and kept by the transactions that add and remove its items, so it always equals its rows; the limits of an add read
 * that count (not a count of up to a million rows inside the adding transaction); the migration that brought the
 * column counts the items of older lists. Run by ./contracts.test.ts on every engine of ./engines.ts.
 */
import { expect, it } from 'vitest'
import { listRoom, MAX_ITEMS_PER_OWNER } from '../../src/server/org-lists.js'
import type { ListOwner, ListRecord, ListsStore } from '../../src/server/store/contracts/lists.js'
import type { ListItemType, ListKind } from '../../src/lists/types.js'
import type { Store } from '../../src/server/store/contracts/store.js'
import type { Migration } from '../../src/server/store/common/migration.js'

/** A lists store made for one case, over the database of `store`, with that database's own SQL. */
export interface ContractLists {
  lists: ListsStore
  store: Store
  /** Runs one statement on the database (no parameters) and answers its rows. */
  sql(text: string): Promise<Array<Record<string, unknown>>>
  /** The engine's service migrations. */
  migrations: readonly Migration[]
  done(): Promise<void>
}

const item = (value: string) => ({ value, reason: null, expiresAt: null })

export function listsContract(open: () => Promise<ContractLists>): void {
  /** Every list of the owner: the stored count and the rows counted, by list id. */
  const counts = async (s: ContractLists, owner: ListOwner) => {
    const out: Record<string, { stored: number; rows: number }> = {}
    for (const l of await s.lists.listLists(owner)) {
      const [r] = await s.sql(`SELECT COUNT(*) AS n FROM list_items WHERE list_id = '${l.id}'`)
      out[l.id] = { stored: l.items, rows: Number(r!.n) }
    }
    return out
  }
  /** A case on a fresh storage: an org's live lists A and B (each `kind item type`), closed or dropped after it. */
  const onLists =
    (org: string, [ak, at]: [ListKind, ListItemType], [bk, bt]: [ListKind, ListItemType], run: (s: ContractLists, owner: ListOwner, a: ListRecord, b: ListRecord) => Promise<void>) =>
    async () => {
      const s = await open()
      try {
        const owner: ListOwner = { orgId: (await s.store.createOrg({ name: org, planId: 'starter' }, 1)).id, mode: 'live' }
        await run(s, owner, await s.lists.createList(owner, { name: 'A', kind: ak, itemType: at }, 1), await s.lists.createList(owner, { name: 'B', kind: bk, itemType: bt }, 1))
      } finally {
        await s.done()
      }
    }

  it('a list’s item count follows its adds (repeats included), removals and deletion', onLists('Counts', ['block', 'email'], ['block', 'email'], async (s, owner, a, b) => {
    expect(await s.lists.addItems(owner, a.id, ['1@c.io', '2@c.io', '2@c.io', '3@c.io'].map(item), 2)).toEqual({ added: 3, alreadyPresent: 1 })
    expect(await s.lists.addItems(owner, a.id, ['3@c.io', '4@c.io'].map(item), 3)).toEqual({ added: 1, alreadyPresent: 1 })
    expect(await s.lists.addItems(owner, b.id, ['1@c.io'].map(item), 3)).toEqual({ added: 1, alreadyPresent: 0 })
    expect(await counts(s, owner)).toEqual({ [a.id]: { stored: 4, rows: 4 }, [b.id]: { stored: 1, rows: 1 } })
    expect(await s.lists.removeItem(owner, a.id, '2@c.io')).toBe(true)
    expect(await s.lists.removeItem(owner, a.id, '2@c.io')).toBe(false)
    expect(await s.lists.removeItems(owner, a.id, ['1@c.io', 'nobody@c.io', '4@c.io'])).toBe(2)
    expect((await s.lists.getList(owner, a.id))!.items).toBe(1)
    expect(await counts(s, owner)).toEqual({ [a.id]: { stored: 1, rows: 1 }, [b.id]: { stored: 1, rows: 1 } })
    // another owner's list is not changed (nor counted) through this owner
    const other: ListOwner = { orgId: owner.orgId, mode: 'test' }
    expect(await s.lists.addItems(other, b.id, ['9@c.io'].map(item), 4)).toBeNull()
    expect(await s.lists.removeItem(other, b.id, '1@c.io')).toBeNull()
    expect(await s.lists.deleteList(owner, a.id)).toBe(true)
    expect(await counts(s, owner)).toEqual({ [b.id]: { stored: 1, rows: 1 } })
  }))

  it('the limits of an add read the stored counts, not the rows', onLists('Full', ['block', 'email'], ['block', 'email'], async (s, owner, a, b) => {
    // a count as a million rows would leave it, written directly (the rows themselves would take a while to make)
    await s.sql(`UPDATE lists SET item_count = ${MAX_ITEMS_PER_OWNER - 1} WHERE id = '${a.id}'`)
    await expect(s.lists.addItems(owner, b.id, ['x@c.io', 'y@c.io'].map(item), 2, listRoom)).rejects.toMatchObject({
      code: 'INPUT_LIMIT_EXCEEDED',
      message: `The lists of an org hold at most ${MAX_ITEMS_PER_OWNER.toLocaleString('en-US')} items together in each mode; they hold ${(MAX_ITEMS_PER_OWNER - 1).toLocaleString('en-US')}.`,
    })
    expect(await s.lists.addItems(owner, b.id, ['x@c.io'].map(item), 2, listRoom)).toEqual({ added: 1, alreadyPresent: 0 })
    expect(Object.fromEntries((await s.lists.listLists(owner)).map((l) => [l.id, l.items]))).toEqual({ [a.id]: MAX_ITEMS_PER_OWNER - 1, [b.id]: 1 })
  }))

  it('the migration that brought the counts counts the items of lists made before it', onLists('Older', ['block', 'ip'], ['allow', 'asn'], async (s, owner, a, b) => {
    await s.lists.addItems(owner, a.id, Array.from({ length: 1500 }, (_, i) => item(`10.0.${i >> 8}.${i & 255}`)), 2)
    // the table as it was before the migration, then the migration's own SQL
    const migration = s.migrations.filter((m) => m.sql.includes('ADD COLUMN item_count'))
    expect(migration).toHaveLength(1)
    await s.sql('ALTER TABLE lists DROP COLUMN item_count')
    for (const statement of migration[0]!.sql.split(';').filter((x) => x.trim() !== '')) await s.sql(statement)
    expect(await counts(s, owner)).toEqual({ [a.id]: { stored: 1500, rows: 1500 }, [b.id]: { stored: 0, rows: 0 } })
  }))
}

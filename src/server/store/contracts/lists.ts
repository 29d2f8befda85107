/**
 * The storage of the service's allow/block lists (docs/lists-and-velocity.md "In the service"): lists owned by an org
 * and a key mode, their items in normalised form, and the per-(org, mode) version every change bumps in its own
 * transaction. Interfaces and records only; the engines are ../sqlite/lists.ts and ../postgres/lists.ts.
 */
import type { ListItemType, ListKind } from '../../../lists/types.js'

/** Who owns a list: an org, in the mode of the key (test and live keys see separate lists). */
export interface ListOwner {
  orgId: string
  mode: 'live' | 'test'
}

/** A stored list. */
export interface ListRecord {
  id: string
  name: string
  kind: ListKind
  itemType: ListItemType
  /** Unix ms. */
  createdAt: number
  /** Items stored (expired ones included until removed). */
  items: number
}

/** A stored item; `value` is normalised (src/lists/normalize.ts). */
export interface ListItemRecord {
  value: string
  reason: string | null
  /** Unix ms from which it no longer matches, or null. */
  expiresAt: number | null
  createdAt: number
}

/**
 * Why `adding` values cannot go to `list`, given the owner's lists `all` with their item counts (read in the adding
 * transaction); null when they fit.
 */
export type ListRoom = (all: readonly ListRecord[], list: ListRecord, adding: number) => string | null

/** What {@link ListsStore.addItems} counted. */
export interface AddItemsResult {
  added: number
  /** Values already on the list (or given twice in the call): left as they were. */
  alreadyPresent: number
}

/** A page of items in value order. */
export interface ListItemsPage {
  items: ListItemRecord[]
  /** The value after which the next page starts, or null when this is the last page. */
  next: string | null
}

/** Everything an owner's matching needs, read at one version. */
export interface ListsSnapshot {
  /** The owner's lists version the snapshot was read at (0 when it never had a list). */
  version: number
  lists: Array<Omit<ListRecord, 'items' | 'createdAt'> & { items: Array<Pick<ListItemRecord, 'value' | 'reason' | 'expiresAt'>> }>
}

/**
 * The lists storage of one database. Every change (create, delete, add, remove) bumps the owner's version in the same
 * transaction, so a reader that sees the new version sees the change. A list of another owner is never returned:
 * its id answers as unknown (null / false).
 */
export interface ListsStore {
  createList(owner: ListOwner, input: Pick<ListRecord, 'name' | 'kind' | 'itemType'>, nowMs: number): Promise<ListRecord>
  /** The owner's lists, oldest first, with their item counts. */
  listLists(owner: ListOwner): Promise<ListRecord[]>
  getList(owner: ListOwner, id: string): Promise<ListRecord | null>
  /** Deletes the list and its items; false when the owner has no such list. */
  deleteList(owner: ListOwner, id: string): Promise<boolean>
  /**
   * Resolves once the items of deleted lists are gone, where a store removes them after `deleteList` answered (SQLite
   * empties a large list a step a turn). A process about to close the store awaits it. Absent: nothing is left running.
   */
  emptied?(): Promise<void>
  /**
   * Adds normalised, distinct-or-not items in one transaction; null when the owner has no such list. With `room`, the
   * owner's lists are locked and counted first, in that transaction: when `room` answers a sentence, nothing is added
   * and the call rejects with INPUT_LIMIT_EXCEEDED and that sentence (concurrent adds cannot pass a limit together).
   */
  addItems(owner: ListOwner, id: string, items: ReadonlyArray<Omit<ListItemRecord, 'createdAt'>>, nowMs: number, room?: ListRoom): Promise<AddItemsResult | null>
  /** Items in value order after `after` (exclusive), at most `limit`; with `value`, that item alone. Null: no such list. */
  listItems(owner: ListOwner, id: string, page: { after: string | null; limit: number; value?: string }): Promise<ListItemsPage | null>
  /** Removes one item (normalised value): true removed, false not on the list, null no such list. */
  removeItem(owner: ListOwner, id: string, value: string): Promise<boolean | null>
  /** Removes items (normalised values) in one transaction: how many were on the list, or null (no such list). */
  removeItems(owner: ListOwner, id: string, values: readonly string[]): Promise<number | null>
  /** The owner's lists version (null when it never had a list). */
  version(owner: ListOwner): Promise<number | null>
  /** All lists and their items not expired at `nowMs`, at one version. */
  snapshot(owner: ListOwner, nowMs: number): Promise<ListsSnapshot>
}

/**
 * The allow/block list model: what a caller gives (`createRiskcheck({ lists })`) and what a lookup reports when its
 * input is on a list (`details.lists`). See docs/lists-and-velocity.md.
 */
import { LIST_ITEM_TYPES, LIST_KINDS } from '../schema.js'

export { LIST_ITEM_TYPES, LIST_KINDS }
/** `block`: a match blocks (factor `list_blocked`); `allow`: a match approves unless a block list matches too. */
export type ListKind = (typeof LIST_KINDS)[number]

/** What a list's items are. */
export type ListItemType = (typeof LIST_ITEM_TYPES)[number]

/** One item as given: the value alone, or with a reason and an expiry. */
export type ListItemInput =
  | string
  | number
  | {
      value: string | number
      /** Why it is on the list (shown in the verdict reason of a block match). */
      reason?: string | null
      /** When it stops matching: a Date, an ISO 8601 date-time or Unix ms. */
      expiresAt?: Date | string | number | null
    }

/** A list as given to `createRiskcheck({ lists })` or returned by a loader. */
export interface ListDefinition {
  /** Stable id reported as `list_id` (default: `lst_` + a hash of kind, item type and name). */
  id?: string
  name: string
  kind: ListKind
  itemType: ListItemType
  items: readonly ListItemInput[]
}

/** A list match as reported in `details.lists`. */
export interface ListMatch {
  list_id: string
  name: string
  kind: ListKind
  item_type: ListItemType
  /** The list item that matched, in its normalised form (`example.com`, `203.0.113.0/24`, `+14155550100`, `AS64500`). */
  value: string
}

/** What `createRiskcheck({ lists })` takes: the lists, or a function that loads them (called again on reload). */
export type ListsOption = readonly ListDefinition[] | (() => readonly ListDefinition[] | Promise<readonly ListDefinition[]>)

/** One value that could not be used, and why. */
export interface InvalidListItem {
  /** Position of the list in the definitions. */
  list: number
  /** Position of the item in its list (-1: the list itself is malformed). */
  index: number
  value: string
  reason: string
}

/** A loaded list, for display (`rc.listsSummary()`). */
export interface ListSummary {
  id: string
  name: string
  kind: ListKind
  item_type: ListItemType
  /** Distinct items (a value given twice counts once). */
  items: number
}

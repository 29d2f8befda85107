/**
 * Compiling list definitions into one index per item type across all lists: a hash map from the compared form of a
 * value to the lists holding it (emails, domains, phone numbers, countries, AS numbers), and a prefix index for IP
 * addresses and networks (./prefix-index.ts). A lookup costs one map probe per candidate (for a domain, per suffix as
 * long as a listed domain) or one binary search, whatever the number of items or lists. Nothing is compiled when a
 * value is unusable (each named). {@link compileListsAsync} compiles a few thousand items a turn.
 */
import { createHash } from 'node:crypto'
import type { ParsedCidr } from '../sources/ip/parse.js'
import { MAX_VALUE_LENGTH, normalizeListValue } from './normalize.js'
import { runInTurns, runNow, type Steps } from '../steps.js'
import { KeyFilter } from './key-filter.js'
import { PrefixIndex } from './prefix-index.js'
import { LIST_ITEM_TYPES, LIST_KINDS, type InvalidListItem, type ListDefinition, type ListItemType, type ListKind, type ListSummary } from './types.js'
import { instantOfText } from '../instant.js'

/** A list as compiled. */
export interface ListInfo {
  id: string
  name: string
  kind: ListKind
  itemType: ListItemType
  /** Position in the definitions (the order matches are reported in). */
  position: number
}

/** One item of one list. */
export interface ListEntry {
  list: ListInfo
  /** The normalised value (as reported in `details.lists[].value`). */
  value: string
  reason: string | null
  /**
   * Unix ms from which it no longer matches; null: never (not Infinity: a number field holds each entry's own boxed
   * number, one more object per item for the collector to walk).
   */
  expiresAt: number | null
}

/**
 * The entries under one value: the entry itself when one list holds it (the usual case: one object less per item
 * for the collector to walk), else one per list.
 */
export type Entries = ListEntry | ListEntry[]

/** Every list's items, indexed for matching. */
export interface ListIndex {
  readonly lists: readonly ListInfo[]
  readonly email: ReadonlyMap<string, Entries>
  readonly emailDomain: ReadonlyMap<string, Entries>
  readonly phone: ReadonlyMap<string, Entries>
  readonly country: ReadonlyMap<string, Entries>
  /** By AS number. */
  readonly asn: ReadonlyMap<number, Entries>
  readonly ip: PrefixIndex<Entries>
  /**
   * The label counts of the listed email domains: `domainLabels[n]` is 1 when some listed domain has n labels. A
   * domain's suffixes of other lengths are not asked about at all.
   */
  readonly domainLabels: Uint8Array
  /** The keys of the large maps, asked before the map (most values are on no list). */
  readonly filters: { readonly email: KeyFilter; readonly emailDomain: KeyFilter; readonly phone: KeyFilter; readonly asn: KeyFilter }
  /** Distinct items per list id. */
  readonly counts: ReadonlyMap<string, number>
}

/** The result of {@link compileLists}: the index, or every unusable value. */
export type CompiledLists = { ok: true; index: ListIndex } | { ok: false; invalid: InvalidListItem[] }

/** Most lists in one index, and most items in one list. */
export const MAX_LISTS = 1000
export const MAX_ITEMS_PER_LIST = 1_000_000
/** Longest list name and item reason, in characters (code points, as JSON Schema's maxLength counts them). */
export const MAX_LIST_NAME = 200
export const MAX_ITEM_REASON = 500

/** Characters (code points) of `s`, counted only when its UTF-16 length could pass `max`. */
const longerThan = (s: string, max: number): boolean => s.length > max && [...s].length > max

/**
 * Why `name` cannot name a list (a sentence's end: "must be …"), or null. The one rule of the library, the API, the
 * dashboard and the CLI: a list that one of them accepted compiles in the others.
 */
export function listNameProblem(name: unknown): string | null {
  return typeof name !== 'string' || name.trim() === '' || longerThan(name, MAX_LIST_NAME) ? `must be 1 to ${MAX_LIST_NAME} characters, not only spaces` : null
}

/** Why `reason` cannot be an item's reason, or null (none is fine). See {@link listNameProblem}. */
export function itemReasonProblem(reason: unknown): string | null {
  if (reason === undefined || reason === null) return null
  return typeof reason !== 'string' || longerThan(reason, MAX_ITEM_REASON) ? `must be a string of at most ${MAX_ITEM_REASON} characters` : null
}


const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const shown = (v: unknown): string => (typeof v === 'string' ? v.slice(0, 100) : typeof v === 'number' ? String(v) : typeof v)

/** The default id of a list: `lst_` + 16 hex digits of a hash of its kind, item type and name. */
export function defaultListId(kind: string, itemType: string, name: string): string {
  return `lst_${createHash('sha256').update(`${kind}\u0000${itemType}\u0000${name}`).digest('hex').slice(0, 16)}`
}

/** The expiry of an item in Unix ms (Infinity for none), or null when it is not a date. */
function expiryOf(v: unknown): number | null {
  if (v === undefined || v === null) return Infinity
  if (typeof v === 'string') return instantOfText(v)
  const ms = v instanceof Date ? v.getTime() : typeof v === 'number' ? v : NaN
  return Number.isFinite(ms) ? ms : null
}

/** The list's own fields, checked; null (with the problem added to `invalid`) when unusable. */
function listInfo(def: unknown, position: number, ids: Set<string>, invalid: InvalidListItem[]): (ListInfo & { items: readonly unknown[] }) | null {
  const bad = (reason: string) => {
    invalid.push({ list: position, index: -1, value: isObject(def) ? shown(def.name) : shown(def), reason })
    return null
  }
  if (!isObject(def)) return bad('a list must be an object with name, kind, itemType and items')
  const itemType = def.itemType ?? def.item_type
  const { name, kind, items } = def
  const nameProblem = listNameProblem(name)
  if (nameProblem !== null || typeof name !== 'string') return bad(`name ${nameProblem}`)
  if (!(LIST_KINDS as readonly unknown[]).includes(kind)) return bad(`kind must be one of ${LIST_KINDS.join(', ')}`)
  if (!(LIST_ITEM_TYPES as readonly unknown[]).includes(itemType)) return bad(`itemType must be one of ${LIST_ITEM_TYPES.join(', ')}`)
  if (!Array.isArray(items)) return bad('items must be an array')
  if (items.length > MAX_ITEMS_PER_LIST) return bad(`a list holds at most ${MAX_ITEMS_PER_LIST} items`)
  const id = def.id ?? defaultListId(kind as string, itemType as string, name)
  if (typeof id !== 'string' || id === '' || id.length > 100) return bad('id must be a string of 1 to 100 characters')
  if (ids.has(id)) return bad(`another list has the id ${id}`)
  ids.add(id)
  return { id, name, kind: kind as ListKind, itemType: itemType as ListItemType, position, items }
}

type Item = { value: unknown; reason: unknown; expiresAt: unknown }
const itemOf = (raw: unknown): Item =>
  isObject(raw) ? { value: raw.value, reason: raw.reason, expiresAt: raw.expiresAt ?? raw.expires_at } : { value: raw, reason: undefined, expiresAt: undefined }

/** Adds `entry` under `key`, replacing an entry of the same list (a value given twice: the later one wins). */
function put<K>(map: Map<K, Entries>, key: K, entry: ListEntry): boolean {
  const at = map.get(key)
  if (!at) {
    map.set(key, entry)
    return true
  }
  if (!Array.isArray(at)) {
    if (at.list === entry.list) map.set(key, entry)
    else map.set(key, [at, entry])
    return at.list !== entry.list
  }
  const i = at.findIndex((e) => e.list === entry.list)
  if (i >= 0) at[i] = entry
  else at.push(entry)
  return i < 0
}

type Maps = {
  email: Map<string, Entries>
  email_domain: Map<string, Entries>
  phone: Map<string, Entries>
  country: Map<string, Entries>
  asn: Map<number, Entries>
  ip: Map<string, Entries>
}

/** Adds item `index` of `list` to `maps`, or its problem to `invalid`. True when it is a new value of the list. */
function addItem(maps: Maps, cidrs: Map<string, ParsedCidr>, invalid: InvalidListItem[], list: ListInfo, index: number, raw: unknown): boolean {
  const item = itemOf(raw)
  const n = normalizeListValue(list.itemType, item.value)
  const expiresAt = n.ok ? expiryOf(item.expiresAt) : null
  const reasonProblem = itemReasonProblem(item.reason)
  const problem = !n.ok
    ? n.reason
    : reasonProblem !== null
      ? `reason ${reasonProblem}`
      : expiresAt === null
        ? 'expiresAt must be a date (a Date, Unix ms, or an ISO 8601 date or date-time with Z or an offset)'
        : null
  if (problem !== null || !n.ok || expiresAt === null) {
    invalid.push({ list: list.position, index, value: shown(item.value), reason: problem ?? 'unusable' })
    return false
  }
  const reason = typeof item.reason === 'string' && item.reason !== '' ? item.reason : null
  const entry: ListEntry = { list, value: n.value, reason, expiresAt: expiresAt === Infinity ? null : expiresAt }
  if (n.cidr) cidrs.set(n.key, n.cidr)
  return list.itemType === 'asn' ? put(maps.asn, Number(n.key.slice(2)), entry) : put(maps[list.itemType], n.key, entry)
}

/** The most labels a domain name has (253 characters: 127 one-letter labels). */
const MAX_DOMAIN_LABELS = 127

/** The labels of a domain name (its dots, plus one). */
export function labelsOf(domain: string): number {
  let n = 1
  for (let i = domain.indexOf('.'); i >= 0; i = domain.indexOf('.', i + 1)) n++
  return n
}

/** Items compiled between two turns of the event loop by {@link compileListsAsync}. */
const ITEMS_PER_TURN = 4096

/** The compilation, pausing (a `yield`) every {@link ITEMS_PER_TURN} items and between its last steps. */
function* compiling(defs: unknown): Steps<CompiledLists> {
  const invalid: InvalidListItem[] = []
  if (!Array.isArray(defs)) return { ok: false, invalid: [{ list: -1, index: -1, value: shown(defs), reason: 'lists must be an array of lists' }] }
  if (defs.length > MAX_LISTS) return { ok: false, invalid: [{ list: -1, index: -1, value: String(defs.length), reason: `at most ${MAX_LISTS} lists` }] }
  const maps: Maps = { email: new Map(), email_domain: new Map(), phone: new Map(), country: new Map(), asn: new Map(), ip: new Map() }
  const cidrs = new Map<string, ParsedCidr>()
  const lists: ListInfo[] = []
  const counts = new Map<string, number>()
  const ids = new Set<string>()
  let done = 0
  for (let position = 0; position < defs.length; position++) {
    if (!(position in defs)) continue // a hole of a sparse array, as forEach skips it
    const info = listInfo(defs[position], position, ids, invalid)
    if (!info) continue
    const { items, ...list } = info
    lists.push(list)
    let distinct = 0
    for (let index = 0; index < items.length; index++) {
      const raw = items[index]
      if (raw === undefined && !(index in items)) continue
      if (addItem(maps, cidrs, invalid, list, index, raw)) distinct++
      if (++done % ITEMS_PER_TURN === 0) yield
    }
    counts.set(list.id, distinct)
  }
  if (invalid.length > 0) return { ok: false, invalid }
  const rows: Array<{ cidr: ParsedCidr; payload: Entries }> = []
  for (const [key, payload] of maps.ip) {
    rows.push({ cidr: cidrs.get(key) as ParsedCidr, payload })
    if (rows.length % ITEMS_PER_TURN === 0) yield
  }
  const ip = yield* PrefixIndex.building(rows)
  const filterOf = (map: Map<string | number, Entries>) => KeyFilter.building(map.keys(), map.size, ITEMS_PER_TURN)
  const filters: ListIndex['filters'] = {
    email: yield* filterOf(maps.email),
    emailDomain: yield* filterOf(maps.email_domain),
    phone: yield* filterOf(maps.phone),
    asn: yield* filterOf(maps.asn),
  }
  const domainLabels = new Uint8Array(MAX_DOMAIN_LABELS + 1)
  for (const domain of maps.email_domain.keys()) domainLabels[labelsOf(domain)] = 1
  return {
    ok: true,
    index: { lists, email: maps.email, emailDomain: maps.email_domain, phone: maps.phone, country: maps.country, asn: maps.asn, ip, domainLabels, filters, counts },
  }
}

/**
 * Checks and compiles list definitions. Never throws: unusable lists and values come back in `invalid`, each with
 * the list's position, the item's position, the value and the reason.
 *
 * @example
 * const c = compileLists([{ name: 'Staff', kind: 'allow', itemType: 'email_domain', items: ['acme.io'] }])
 * if (c.ok) c.index.emailDomain.get('acme.io') // [{ list: { name: 'Staff', … }, value: 'acme.io', … }]
 */
export function compileLists(defs: unknown): CompiledLists {
  return runNow(compiling(defs))
}

/**
 * {@link compileLists}, letting the event loop run every few thousand items: a server (or a reload) keeps answering
 * other requests while large lists compile.
 */
export function compileListsAsync(defs: unknown): Promise<CompiledLists> {
  return runInTurns(compiling(defs))
}

/** The loaded lists, for display. */
export function summarize(index: ListIndex): ListSummary[] {
  return index.lists.map((l) => ({ id: l.id, name: l.name, kind: l.kind, item_type: l.itemType, items: index.counts.get(l.id) ?? 0 }))
}

/** A TypeError naming the first unusable values (at most 5), with all of them in `invalid`. */
export class ListsError extends TypeError {
  readonly invalid: readonly InvalidListItem[]
  constructor(invalid: readonly InvalidListItem[]) {
    const first = invalid
      .slice(0, 5)
      // list -1: the option as a whole (not an array, too many lists)
      .map((i) => (i.list < 0 ? i.reason : i.index < 0 ? `lists[${i.list}]: ${i.reason}` : `lists[${i.list}].items[${i.index}] ${JSON.stringify(i.value)}: ${i.reason}`))
    const more = invalid.length > 5 ? ` (and ${invalid.length - 5} more)` : ''
    super(`riskcheck: option \`lists\`: ${first.join('; ')}${more}`)
    this.name = 'ListsError'
    this.invalid = invalid
  }
}

export { MAX_VALUE_LENGTH }

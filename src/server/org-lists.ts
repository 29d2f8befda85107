/**
 * The allow/block lists of each org and key mode in the server (docs/lists-and-velocity.md "In the service"): which
 * compiled lists a request is matched against. The lists version comes with the API key (one read the request makes
 * anyway); the lists compiled at that version are kept in memory per (org, mode), so a request costs no extra round
 * trip unless its lists changed since this instance last compiled them. Why: docs/decisions.md, "Lists in the service".
 */
import { MAX_COMPILED_ITEMS } from './compiled-lists-bound.js'
import { compileLists, compileListsAsync, MAX_ITEMS_PER_LIST, summarize, type ListIndex } from '../lists/compile.js'
import type { ListsHolder } from '../lists/holder.js'
import { normalizeListValue } from '../lists/normalize.js'
import type { ListDefinition, ListItemType } from '../lists/types.js'
import type { Signals } from '../signals.js'
import type { ListOwner, ListRecord, ListsSnapshot, ListsStore } from './store/contracts/lists.js'
import type { Store } from './store/contracts/store.js'
import { listsStoreOf } from './store/open-storage.js'
/** Most values in one POST /v1/lists/{id}/items. */
export const MAX_VALUES_PER_CALL = 100_000

/** Values to add to a list of `type`: normalised (duplicates kept, the store counts them), and the invalid ones. */
export function prepareValues(type: ListItemType, values: readonly string[]) {
  const valid: string[] = []
  const invalid: Array<{ value: string; message: string }> = []
  for (const raw of values) {
    const n = normalizeListValue(type, raw)
    if (n.ok && !n.value.includes('\u0000')) valid.push(n.value)
    else invalid.push({ value: raw.slice(0, 100), message: n.ok ? 'must not contain NUL characters' : n.reason })
  }
  return { valid, invalid }
}

/** Owners whose compiled lists are kept (least recently used dropped first). */
const MAX_OWNERS = 500

/** Most items the lists of one owner (an org in one mode) hold together: what an instance compiles for it. */
export const MAX_ITEMS_PER_OWNER = 1_000_000

/** Least time between two warnings that the items bound dropped an owner's compiled lists, in ms (elapsed time). */
const DROP_WARNING_EVERY_MS = 60_000

/** The limits {@link listRoom} applies. */
export interface ListLimits {
  perList: number
  perOwner: number
}

const LIMITS: ListLimits = { perList: MAX_ITEMS_PER_LIST, perOwner: MAX_ITEMS_PER_OWNER }

/**
 * Why `adding` values cannot go to `list`, of an owner whose lists are `all` (as `listLists` answers): the sentence
 * of the limit they would pass, or null when they fit. Values are counted as given (one already on the list too).
 */
export function listRoom(all: readonly ListRecord[], list: ListRecord, adding: number, limits: ListLimits = LIMITS): string | null {
  const n = (x: number) => x.toLocaleString('en-US')
  if (list.items + adding > limits.perList) return `A list holds at most ${n(limits.perList)} items; this one holds ${n(list.items)}.`
  const total = all.reduce((sum, l) => (l.id === list.id ? sum : sum + l.items), list.items)
  if (total + adding > limits.perOwner)
    return `The lists of an org hold at most ${n(limits.perOwner)} items together in each mode; they hold ${n(total)}.`
  return null
}

/** How long a bulk job's rows use the lists version last read before reading it again, in ms (elapsed time). */
export const BULK_LISTS_RECHECK_MS = 1000

/** The compiled lists of one owner at one version. */
interface Compiled {
  version: number
  index: ListIndex
  /** Its items, all lists together. */
  items: number
}

/** The per-org lists of a server. */
export interface OrgLists {
  /** The storage (undefined when the server's store has none: the lists routes then answer 503 UPSTREAM_UNAVAILABLE). */
  readonly store: ListsStore | undefined
  /**
   * The compiled lists of `owner` at `known` (the version the auth read returned; undefined: ask the store), or null
   * when the owner never had a list. Synchronous when compiled already.
   */
  resolve(owner: ListOwner, known: number | null | undefined): ListIndex | null | Promise<ListIndex | null>
  /** The signals of a request: the owner's lists (when it has any) with the instance's velocity counter. */
  signalsOf(index: ListIndex | null | undefined, base: Signals | undefined): Signals | undefined
  /**
   * The signals of a bulk job of `owner` (no request, no key read with it): a holder whose lists are the owner's
   * current ones — its lists version read again at most once a second ({@link BULK_LISTS_RECHECK_MS}) — or `base`'s
   * when the owner has none.
   */
  bulkSignalsOf(owner: ListOwner, base: Signals | undefined): Signals | undefined
  /** Compilations made (each one read the owner's lists from the store). */
  readonly loads: number
}

/**
 * The definitions of a snapshot (stored values are normalised; a value this version refuses is left out), compiled a
 * few thousand items a turn: the instance answers other requests meanwhile.
 */
async function compileSnapshot(snap: ListsSnapshot, warn: (message: string) => void): Promise<ListIndex> {
  const defs: ListDefinition[] = snap.lists.map((l) => ({
    id: l.id,
    name: l.name,
    kind: l.kind,
    itemType: l.itemType,
    items: l.items.map((i) => ({ value: i.value, reason: i.reason, expiresAt: i.expiresAt })),
  }))
  const first = await compileListsAsync(defs)
  if (first.ok) return first.index
  // a list this version refuses as a whole (index -1: its name …) is left out with its items, as a refused value is
  const badLists = new Set(first.invalid.filter((i) => i.index === -1).map((i) => i.list))
  const bad = new Set(first.invalid.map((i) => `${i.list}:${i.index}`))
  warn(`lists: ${bad.size - badLists.size} stored value(s) and ${badLists.size} list(s) cannot be used and are left out (first: ${first.invalid[0]?.value}: ${first.invalid[0]?.reason})`)
  const kept = defs.flatMap((d, li) => (badLists.has(li) ? [] : [{ ...d, items: d.items.filter((_, ii) => !bad.has(`${li}:${ii}`)) }]))
  const second = await compileListsAsync(kept)
  if (!second.ok) throw new Error(`lists: stored lists cannot be compiled (${second.invalid[0]?.reason})`)
  return second.index
}

const EMPTY: ListIndex = (() => {
  const c = compileLists([])
  if (!c.ok) throw new Error('no lists cannot fail to compile')
  return c.index
})()

const holderOf = (index: ListIndex): ListsHolder => ({
  current: () => index,
  reload: () => Promise.reject(new Error('an org’s lists change through the lists API, not reloadLists')),
  summary: () => summarize(index),
})

/**
 * Creates the per-org lists of a server over `store`'s lists storage. The compiled lists kept are bounded by
 * {@link MAX_OWNERS} owners and `maxItems` items, the least recently used owner dropped first.
 */
export function createOrgLists(store: Store, nowMs: () => number, warn: (message: string) => void, maxItems = MAX_COMPILED_ITEMS): OrgLists {
  const lists = listsStoreOf(store)
  // in order of use, the least recent first
  const compiled = new Map<string, Compiled>()
  let compiledItems = 0
  const loading = new Map<string, Promise<Compiled>>()
  const holders = new WeakMap<ListIndex, ListsHolder>()
  let loads = 0
  let warnedAt = -Infinity
  /** Says (at most once a minute) that the items bound dropped an owner: its next request compiles its lists again. */
  const dropped = (items: number) => {
    const t = performance.now()
    if (t - warnedAt < DROP_WARNING_EVERY_MS) return
    warnedAt = t
    warn(
      `lists: an org's compiled lists (${items.toLocaleString('en-US')} items) were dropped to keep this instance within ${maxItems.toLocaleString('en-US')} compiled items; ` +
        'its next request compiles them again. If this repeats, raise --lists-compiled-items (about 100 bytes an item)',
    )
  }

  /** Keeps `entry` as the most recently used, then drops the least recently used beyond the bounds (never `entry`). */
  const keep = (key: string, entry: Compiled) => {
    const had = compiled.get(key)
    if (had) {
      compiled.delete(key)
      compiledItems -= had.items
    }
    compiled.set(key, entry)
    compiledItems += entry.items
    for (const [k, e] of compiled) {
      if (k === key || (compiled.size <= MAX_OWNERS && compiledItems <= maxItems)) break
      if (compiledItems > maxItems) dropped(e.items)
      compiled.delete(k)
      compiledItems -= e.items
    }
  }

  const load = (key: string, owner: ListOwner, s: ListsStore): Promise<Compiled> => {
    let p = loading.get(key)
    if (!p) {
      p = (async () => {
        loads++
        const snap = await s.snapshot(owner, nowMs())
        const index = await compileSnapshot(snap, warn)
        const entry = { version: snap.version, index, items: [...index.counts.values()].reduce((n, c) => n + c, 0) }
        holders.set(index, holderOf(index))
        const had = compiled.get(key)
        if (!had || had.version <= entry.version) keep(key, entry)
        return entry
      })().finally(() => loading.delete(key))
      loading.set(key, p)
    }
    return p
  }

  const pick = (key: string, owner: ListOwner, s: ListsStore, version: number | null): ListIndex | null | Promise<ListIndex | null> => {
    if (version === null) return null
    const hit = compiled.get(key)
    if (hit && hit.version >= version) {
      // now the most recently used
      compiled.delete(key)
      compiled.set(key, hit)
      return hit.index
    }
    return load(key, owner, s).then(async (e) => (e.version >= version ? e.index : (await load(key, owner, s)).index))
  }

  return {
    store: lists,
    get loads() {
      return loads
    },
    resolve(owner, known) {
      if (!lists) return null
      const key = `${owner.orgId}\u0000${owner.mode}`
      if (known !== undefined) return pick(key, owner, lists, known)
      return lists.version(owner).then((v) => pick(key, owner, lists, v))
    },
    bulkSignalsOf(owner, base) {
      if (!lists) return base
      const key = `${owner.orgId}\u0000${owner.mode}`
      const fallback = base?.lists ?? null
      let readAt = -Infinity
      let current: ListIndex | null | Promise<ListIndex | null> = null
      const ownOrBase = (index: ListIndex | null) => (index ?? fallback?.current() ?? EMPTY)
      const holder: ListsHolder = {
        current() {
          // monotonic time: the service's clock may stand still (tests) or step back
          const t = performance.now()
          if (t - readAt >= BULK_LISTS_RECHECK_MS) {
            readAt = t
            const read = lists.version(owner).then((v) => pick(key, owner, lists, v))
            current = read
            read.then(
              (i) => {
                if (current === read) current = i
              },
              () => {
                readAt = -Infinity // the next row reads again
              },
            )
          }
          const c = current
          return c instanceof Promise ? c.then(ownOrBase) : ownOrBase(c)
        },
        reload: () => Promise.reject(new Error('an org’s lists change through the lists API, not reloadLists')),
        summary: () => [],
      }
      return { lists: holder, velocity: base?.velocity ?? null }
    },
    signalsOf(index, base) {
      if (!index) return base
      return { lists: holders.get(index) ?? holderOf(index), velocity: base?.velocity ?? null }
    },
  }
}

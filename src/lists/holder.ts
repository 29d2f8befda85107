/**
 * The lists in force for one riskcheck instance: compiled from values at once, or from a loader in the background
 * (lookups wait for the first load). `reload` compiles the next lists completely before switching to them, so a
 * lookup sees either the old lists or the new ones, never half of each; a failed reload keeps the lists in force.
 */
import { createReloadable } from '../reloadable.js'
import { compileLists, compileListsAsync, ListsError, summarize, type CompiledLists, type ListIndex } from './compile.js'
import type { ListsOption, ListSummary } from './types.js'

/** The lists of an instance. */
export interface ListsHolder {
  /** The index in force (a promise only while the first load of a loader runs). Rejects when that load failed. */
  current(): ListIndex | Promise<ListIndex>
  /**
   * Loads `next` (default: the loader given at creation; given values: the source of the lists in force) and switches
   * to it once compiled, unless newer lists are in force by then.
   */
  reload(next?: ListsOption): Promise<ListSummary[]>
  /** The lists in force (empty while the first load runs or after it failed). */
  summary(): ListSummary[]
}

/** The index of compiled lists, or a {@link ListsError} that names the unusable values. */
function indexOf(c: CompiledLists): ListIndex {
  if (!c.ok) throw new ListsError(c.invalid)
  return c.index
}

/** Loads and compiles `option`, a few thousand items a turn (lookups of the lists in force go on meanwhile). */
async function load(option: ListsOption): Promise<ListIndex> {
  const defs = typeof option === 'function' ? await option() : option
  return indexOf(await compileListsAsync(defs))
}

/** The error of an option (or reload) that is neither lists nor a loader. */
const notLists = (value: unknown) => new ListsError([{ list: -1, index: -1, value: typeof value, reason: 'lists must be an array of lists or a function that loads them' }])

/**
 * The holder of `option`. Values are compiled now (a {@link ListsError}, a TypeError, when one is unusable); a loader
 * is called now and its lists are in force once loaded. While the first load has failed, lookups reject with
 * UPSTREAM_UNAVAILABLE (a block list that could not be read never lets an answer through unblocked) until a reload
 * succeeds. Loads are ordered as ../reloadable.ts orders them: one that finishes is put in force unless a newer one
 * already is. A reload without `next` calls the loader given here (given values: the source of the lists in force,
 * again).
 */
export function createListsHolder(option: ListsOption): ListsHolder {
  let source = option
  const lists = createReloadable<ListIndex>('allow/block lists')
  if (typeof option === 'function') lists.loadFirst(() => load(option))
  else {
    if (typeof option !== 'object' || option === null) throw notLists(option)
    lists.set(indexOf(compileLists(option)))
  }
  return {
    current: lists.current,
    async reload(next) {
      const from = next ?? source
      if (typeof from !== 'function' && (typeof from !== 'object' || from === null))
        throw notLists(from)
      const loaded = await lists.load(
        () => load(from),
        () => {
          if (typeof option !== 'function') source = from
        },
      )
      return summarize(loaded)
    },
    summary() {
      const index = lists.value()
      return index ? summarize(index) : []
    },
  }
}

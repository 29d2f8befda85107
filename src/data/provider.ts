/**
 * The data in force for one riskcheck instance: the bundled data, or the current set of a data directory, switched
 * without a restart when `riskcheck data update` installs a new one. How a switch stays whole for every answer:
 * docs/decisions.md, "Data updates" → "switching sets".
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { resolve } from 'node:path'
import type { RiskcheckWarning } from '../options.js'
import { getBundledDataSet, openDataSet, type DataSet } from './data-set.js'
import { computeDataStatus, type DataStatus } from './status.js'
import { listSets, pointerStamp, readPointer } from './store.js'

/** Default interval of the pointer check. */
export const DEFAULT_CHECK_INTERVAL_MS = 60_000

/** Options of {@link createDataProvider}. */
export interface DataProviderOptions {
  /** the data directory; none: the bundled data */
  dataDir?: string | null
  /** how often the pointer is checked, in ms (default 60000; 0: only on `refresh()`) */
  checkIntervalMs?: number
  /** host/configuration conditions (a set that cannot be loaded) */
  warn?: (warning: RiskcheckWarning) => void
}

/** What a refresh did. */
export interface DataRefresh {
  /** a new set is in use */
  changed: boolean
  /** the set in use afterwards */
  set: string
  /** why a newer set is not in use */
  error?: string
}

/** The data in force. */
export interface DataProvider {
  readonly dataDir: string | null
  /** the set in use (inside `run`: the set pinned at its start) */
  current(): DataSet
  /** runs `fn` with the current set pinned for everything it calls, also across awaits */
  run<T>(fn: () => T): T
  /** checks the pointer now and switches to a newly installed set (loaded completely first) */
  refresh(): Promise<DataRefresh>
  /** freshness of the set in use at `now` */
  status(now: Date): DataStatus
  /** stops the pointer check and releases the set */
  close(): void
}

interface SharedSet {
  set: DataSet
  holders: number
}
const openSets = new Map<string, SharedSet>()

function acquireSet(dir: string, id: string): DataSet {
  const key = `${dir}\u0000${id}`
  let entry = openSets.get(key)
  if (!entry) {
    entry = { set: openDataSet(dir, id), holders: 0 }
    openSets.set(key, entry)
  }
  entry.holders++
  return entry.set
}

function releaseSet(dir: string, set: DataSet): void {
  if (set.dir === null) return
  const key = `${dir}\u0000${set.id}`
  const entry = openSets.get(key)
  if (entry && entry.set === set && --entry.holders <= 0) {
    openSets.delete(key)
    set.release()
  }
}

const pinned = new AsyncLocalStorage<DataSet>()

/**
 * Creates the provider. Never throws for data reasons: a directory without an installed set, or whose set cannot be
 * loaded, answers with the newest loadable set or the bundled data and reports a warning.
 */
export function createDataProvider(options: DataProviderOptions = {}): DataProvider {
  const dir = options.dataDir ? resolve(options.dataDir) : null
  const warn = options.warn ?? (() => undefined)
  let problem: string | null = null
  const report = (code: string, message: string) => {
    problem = message
    warn({ code, message })
  }

  let current: DataSet = getBundledDataSet()
  let stamp: string | null = null
  let closed = false
  let inflight: Promise<DataRefresh> | undefined
  let timer: NodeJS.Timeout | undefined

  if (dir !== null) {
    stamp = pointerStamp(dir)
    let wanted: string | null = null
    let pointerBroken = false
    try {
      wanted = readPointer(dir)
    } catch (e) {
      pointerBroken = true
      report('data_set_unusable', `data directory ${dir}: ${(e as Error).message}`)
    }
    // the pointer's set; when it cannot be used, the newest set that loads (a damaged set is never used)
    const older = listSets(dir)
      .reverse()
      .filter((id) => id !== wanted)
    const candidates = wanted !== null ? [wanted, ...older] : pointerBroken ? older : []
    if (wanted === null && !pointerBroken)
      report('data_set_missing', `data directory ${dir} has no installed data set yet; the bundled data answers until "riskcheck data update --data-dir ${dir}" installs one`)
    for (const id of candidates) {
      try {
        current = acquireSet(dir, id)
        if (id !== wanted) report('data_set_unusable', `data directory ${dir}: the set in force could not be used; the older set ${id} answers`)
        break
      } catch (e) {
        if (id === wanted) report('data_set_unusable', `data set ${id} in ${dir} could not be loaded: ${(e as Error).message}`)
      }
    }
    const every = options.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS
    if (every > 0) {
      timer = setInterval(() => {
        if (pointerStamp(dir) !== stamp) void refresh()
      }, every)
      timer.unref()
    }
  }

  async function swapTo(id: string): Promise<DataRefresh> {
    const d = dir as string
    let next: DataSet
    try {
      next = acquireSet(d, id)
    } catch (e) {
      report('data_set_unusable', `data set ${id} in ${d} could not be loaded; still using ${current.id}: ${(e as Error).message}`)
      return { changed: false, set: current.id, error: problem ?? undefined }
    }
    // load what the set in use has loaded, before anything uses the new set
    const failures = await next.ip.preload(current.ip.loaded())
    if (failures.length === 0) {
      try {
        next.email.preload(current.email.loaded())
      } catch (e) {
        failures.push(`email lists: ${(e as Error).message}`)
      }
    }
    if (closed) {
      releaseSet(d, next)
      return { changed: false, set: current.id }
    }
    if (failures.length > 0) {
      releaseSet(d, next)
      report('data_set_unusable', `data set ${id} in ${d} could not be loaded; still using ${current.id}: ${failures.join('; ')}`)
      return { changed: false, set: current.id, error: problem ?? undefined }
    }
    const old = current
    current = next
    problem = null
    releaseSet(d, old)
    return { changed: true, set: id }
  }

  function refresh(): Promise<DataRefresh> {
    if (dir === null || closed) return Promise.resolve({ changed: false, set: current.id })
    inflight ??= (async () => {
      stamp = pointerStamp(dir)
      let id: string | null
      try {
        id = readPointer(dir)
      } catch (e) {
        report('data_set_unusable', `data directory ${dir}: ${(e as Error).message}`)
        return { changed: false, set: current.id, error: problem ?? undefined }
      }
      if (id === null || id === current.id) return { changed: false, set: current.id }
      return swapTo(id)
    })().finally(() => {
      inflight = undefined
    })
    return inflight
  }

  return {
    dataDir: dir,
    current: () => pinned.getStore() ?? current,
    // the bundled data never changes: nothing to pin (saves the async-context cost on every lookup)
    run: (fn) => (dir === null || pinned.getStore() ? fn() : pinned.run(current, fn)),
    refresh,
    status: (now) => computeDataStatus(pinned.getStore() ?? current, dir, now, problem),
    close() {
      if (closed) return
      closed = true
      if (timer) clearInterval(timer)
      if (dir !== null) releaseSet(dir, current)
    },
  }
}

/**
 * The freshness of a data directory's current set (or of the bundled data without one) at `now`, without keeping
 * anything open: what `riskcheck data status` prints.
 *
 * @example readDataStatus({ dataDir: '/var/lib/riskcheck' }).stale_sources // ['tor']
 */
export function readDataStatus(options: { dataDir?: string | null; now?: Date } = {}): DataStatus {
  const provider = createDataProvider({ dataDir: options.dataDir ?? null, checkIntervalMs: 0 })
  try {
    return provider.status(options.now ?? new Date())
  } finally {
    provider.close()
  }
}

/**
 * A value an instance holds and loads again on demand (the allow/block lists, the outcomes): set at once, or loaded
 * in the background while callers wait for the first load. Loads are numbered as started: one that finishes is put in
 * force unless a newer one already is, so overlapping loads that finish out of order leave the newest in force.
 */
import { RiskcheckError } from './errors.js'

/** A value held in force and (re)loaded; see {@link createReloadable}. */
export interface Reloadable<T> {
  /** The value in force (null: none yet, the first load runs or failed). */
  value(): T | null
  /**
   * The value in force; while the first load runs, a promise of the first value put in force; once that load failed
   * with none in force, a rejection (UPSTREAM_UNAVAILABLE) until a load succeeds.
   */
  current(): T | Promise<T>
  /** Puts `value` in force now, as a load started and finished now. */
  set(value: T): void
  /** Starts the first load: {@link current} waits for it; its failure, with nothing in force by then, fails the waiters. */
  loadFirst(start: () => Promise<T>): void
  /**
   * Starts a load, numbered now: its value is put in force when it finishes unless a newer load's already is
   * (`onInForce` runs as it is). Resolves with the loaded value either way; rejects with the load's error, nothing
   * changed.
   */
  load(start: () => Promise<T>, onInForce?: (value: T) => void): Promise<T>
}

/**
 * A {@link Reloadable} of `what` (named in its errors: "The outcomes could not be loaded: …").
 *
 * @example
 * const lists = createReloadable<ListIndex>('allow/block lists')
 * lists.loadFirst(() => loadLists(loader))
 * await lists.load(() => loadLists(next)) // in force unless a load started later finished first
 */
export function createReloadable<T>(what: string): Reloadable<T> {
  let value: T | null = null
  let inForce = 0 // the number of the load in force (0: none yet)
  let started = 0
  let failure: RiskcheckError | null = null
  let first: { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } | null = null
  const put = (n: number, loaded: T, onInForce?: (v: T) => void): void => {
    if (n < inForce) return
    inForce = n
    value = loaded
    failure = null
    onInForce?.(loaded)
    first?.resolve(loaded) // callers waiting for the first value take this one
    first = null
  }
  return {
    value: () => value,
    current() {
      if (value !== null) return value
      if (first) return first.promise
      return Promise.reject(failure ?? new RiskcheckError('UPSTREAM_UNAVAILABLE', `The ${what} are not loaded.`))
    },
    set(loaded) {
      put(++started, loaded)
    },
    loadFirst(start) {
      let resolve!: (v: T) => void, reject!: (e: unknown) => void
      const promise = new Promise<T>((y, n) => ((resolve = y), (reject = n)))
      promise.catch(() => undefined) // reported to the callers that wait for it, not as an unhandled rejection
      first = { promise, resolve, reject }
      const n = ++started
      start().then(
        (loaded) => put(n, loaded),
        (e: unknown) => {
          if (!first) return // the value of a later load is in force
          failure = new RiskcheckError('UPSTREAM_UNAVAILABLE', `The ${what} could not be loaded: ${(e as Error)?.message ?? String(e)}`, { cause: e })
          first.reject(failure)
          first = null
        },
      )
    },
    async load(start, onInForce) {
      const n = ++started
      const loaded = await start()
      put(n, loaded, onInForce)
      return loaded
    },
  }
}

/**
 * The PostgreSQL store's hot statements (auth and cache reads, reservations, closes) asked by requests arriving
 * together go out as one `ANY($1)` or `unnest` statement, one at a time: calls made while one is in flight wait for
 * it (up to {@link MAX_WAIT_MS}). Each caller gets its own answer, read after it asked; a failed statement fails all
 * its callers. Why: docs/decisions.md, "PostgreSQL store" → "statements per turn".
 */

/** Longest a call waits for the statements in flight before its own goes out anyway (a slow or failing database). */
export const MAX_WAIT_MS = 20

/** Calls handed to another statement to answer (see `carrier` of {@link PerTurn}). */
export interface Ride<A, R> {
  args: A[]
  /** Answers the calls, in the order of `args`. */
  answer(results: ReadonlyArray<R | PromiseLike<R>>): void
  fail(error: unknown): void
}

/** A batched function, and whether calls wait for their statement. */
export type PerTurn<A, R> = ((arg: A) => Promise<R>) & {
  /** True while calls are queued for a statement not yet sent. */
  readonly queued: boolean
  /**
   * The calls left to ride on another statement, and those queued and not sent yet, taken by a statement that carries
   * them (null for none).
   */
  ride(): Ride<A, R> | null
  /**
   * Registers a statement that can carry these calls: `queued` says whether one is queued and not yet sent. While one
   * is, calls about to go out wait for it instead of costing a round trip of their own (it calls `ride()` when sent;
   * sent first, it takes the calls queued so far as well).
   */
  carrier(queued: () => boolean): void
}

/** Options of {@link perTurn}. */
export interface PerTurnOptions {
  /**
   * The statements sharing one gate (any object, e.g. the pool) go out one at a time: calls wait while a statement of
   * the gate is in flight, and when it answered the kind that waited longest goes next (the others wait again, for
   * it). Default: a gate of this function alone.
   */
  gate?: object
}

interface Gate {
  inFlight: number
  /** Flushes waiting for the gate to open. */
  waiting: Array<() => void>
}
const gates = new WeakMap<object, Gate>()
const gateOf = (key: object): Gate => {
  let g = gates.get(key)
  if (!g) gates.set(key, (g = { inFlight: 0, waiting: [] }))
  return g
}

/**
 * Wraps `run` (answers for many arguments, in their order) into a one-argument function whose calls of one turn share
 * one `run`; calls made while a statement of its gate is in flight share the next one, sent once the gate is free
 * (or after {@link MAX_WAIT_MS}, whatever is in flight). An answer may itself be a promise (a caller whose case is
 * settled on its own): it then fails alone. `run` must not wait for another call of a function of its gate (it would wait for itself).
 */
export function perTurn<A, R>(run: (args: A[]) => Promise<Array<R | PromiseLike<R>>>, options: PerTurnOptions = {}): PerTurn<A, R> {
  type Item = { arg: A; resolve: (r: R | PromiseLike<R>) => void; reject: (e: unknown) => void }
  const gate = options.gate ? gateOf(options.gate) : { inFlight: 0, waiting: [] }
  let queue: Item[] = []
  let riders: Item[] = []
  const carriers: Array<() => boolean> = []
  let scheduled: NodeJS.Immediate | null = null
  let waitTimer: NodeJS.Timeout | null = null
  // set when the calls waited their longest: they go out whatever is in flight
  let forced = false
  const wait = () => {
    gate.waiting.push(schedule)
    waitTimer ??= setTimeout(() => {
      waitTimer = null
      forced = queue.length > 0
      schedule()
    }, MAX_WAIT_MS)
  }
  const flush = async () => {
    scheduled = null
    if (queue.length === 0) return
    // one statement of the gate at a time: another one went out first in this turn
    if (gate.inFlight > 0 && !forced) return wait()
    forced = false
    if (waitTimer) clearTimeout(waitTimer)
    waitTimer = null
    const items = queue
    queue = []
    if (carriers.some((queued) => queued())) {
      riders.push(...items)
      return
    }
    gate.inFlight++
    try {
      const results = await run(items.map((it) => it.arg))
      items.forEach((it, i) => it.resolve(results[i]!))
    } catch (e) {
      for (const it of items) it.reject(e)
    } finally {
      // the gate is free: the calls that waited are scheduled in the order they began to wait (the first one goes)
      if (--gate.inFlight === 0) for (const go of gate.waiting.splice(0)) go()
    }
  }
  const schedule = () => {
    if (queue.length > 0) scheduled ??= setImmediate(() => void flush())
  }
  const call = (arg: A) =>
    new Promise<R>((resolve, reject) => {
      if (queue.push({ arg, resolve, reject }) > 1) return
      if (gate.inFlight === 0) schedule()
      else wait()
    })
  const ride = (): Ride<A, R> | null => {
    // the calls left to ride, and those queued and not yet sent (the carrier goes out first)
    const items = riders.length === 0 ? queue : [...riders, ...queue]
    if (items.length === 0) return null
    riders = []
    queue = []
    if (waitTimer) clearTimeout(waitTimer)
    waitTimer = null
    return {
      args: items.map((it) => it.arg),
      answer: (results) => items.forEach((it, i) => it.resolve(results[i]!)),
      fail: (e) => items.forEach((it) => it.reject(e)),
    }
  }
  return Object.defineProperties(call, {
    queued: { get: () => queue.length > 0 },
    ride: { value: ride },
    carrier: { value: (queued: () => boolean) => void carriers.push(queued) },
  }) as PerTurn<A, R>
}

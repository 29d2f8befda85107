/**
 * Velocity counter stores: each records one check under several keys and answers, per key, how many checks it
 * recorded in the last hour and the last 24 hours (sliding windows, exact to the millisecond). The in-memory store
 * here serves one process (a counter without a store of the caller's keeps the same counts by tag: ./tag-store.ts);
 * ./redis-store.ts shares counts between processes. Keys are opaque (keyed hashes made by
 * ./counter.ts); a store never sees an input.
 */

/** One hour and one day, in ms: the two windows. */
export const HOUR_MS = 60 * 60 * 1000
export const DAY_MS = 24 * HOUR_MS

/** Checks recorded under one key in the last hour and 24 hours, the one just recorded included. */
export interface WindowCount {
  hour: number
  day: number
}

/** Where velocity counts live. Methods may answer synchronously or with a promise. */
export interface VelocityStore {
  /**
   * Records one check at `nowMs` under each key and returns each key's counts, in the order of `keys`. `checkId`
   * (optional) names the check: one recorded again under the same id — a retry of the same request — is counted once
   * (a store that cannot tell ignores it).
   */
  hit(keys: readonly string[], nowMs: number, checkId?: string): WindowCount[] | Promise<WindowCount[]>
  /** Releases resources (optional). */
  close?(): void | Promise<void>
}

/**
 * One key's log: the time of each of its checks, in order (checks in the same millisecond each have an entry), so a
 * window's count is one binary search and a subtraction. One array per key — the store's objects are what the
 * collector walks on every major collection, so each key costs as few as possible.
 */
interface Log {
  /** The key as first stored (the queue refers to the log, so a caller's equal key string is not kept). */
  key: string
  times: number[]
  /** First entry still within the day window. */
  head: number
  /** Number of the key's latest check in the store's queue of checks. */
  last: number
}

/** First index ≥ `from` whose time is after `t`. */
function after(times: readonly number[], from: number, t: number): number {
  let lo = from
  let hi = times.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((times[mid] as number) > t) hi = mid
    else lo = mid + 1
  }
  return lo
}

/** Records one check at `t` (usually the newest; a clock stepping back inserts it in order). */
function record(log: Log, t: number): void {
  const n = log.times.length
  if (n === 0 || t >= (log.times[n - 1] as number)) log.times.push(t)
  else {
    log.head = 0 // the clock stepped back: the day window's start moves back too
    log.times.splice(after(log.times, 0, t), 0, t)
  }
}

/** Drops entries that left the day window once they are many. */
function compact(log: Log): void {
  if (log.head < 64 || log.head * 2 < log.times.length) return
  log.times = log.times.slice(log.head)
  log.head = 0
}

/** Options of {@link createMemoryVelocityStore}. */
export interface MemoryVelocityStoreOptions {
  /**
   * Most keys held (default 1,000,000). Keys whose last check left the day window are dropped; beyond the limit the
   * key checked least recently is forgotten (its counts restart).
   */
  maxKeys?: number
}

/**
 * The in-memory store: exact sliding windows, answers synchronously; a check recorded again under its `checkId`
 * within 24 hours is counted once. Memory grows with the distinct keys of the last 24 hours and their checks (8 bytes
 * each).
 *
 * @example
 * const store = createMemoryVelocityStore()
 * store.hit(['k1'], Date.now()) // [{ hour: 1, day: 1 }]
 */
export function createMemoryVelocityStore(options: MemoryVelocityStoreOptions = {}): VelocityStore & { readonly size: number } {
  const maxKeys = options.maxKeys ?? 1_000_000
  const logs = new Map<string, Log>()
  // Every check's log and number, oldest first: the front tells which key was checked least recently (an entry is
  // stale once its key was checked again), so idle keys are found without scanning the map.
  let queueLogs: Log[] = []
  let queueSeqs: number[] = []
  let head = 0
  let seq = 0
  const one = (key: string, now: number): WindowCount => {
    let log = logs.get(key)
    if (!log) logs.set(key, (log = { key, times: [], head: 0, last: 0 }))
    record(log, now)
    log.last = ++seq
    queueLogs.push(log)
    queueSeqs.push(seq)
    const times = log.times
    log.head = after(times, log.head, now - DAY_MS)
    const day = times.length - log.head
    const hour = times.length - after(times, log.head, now - HOUR_MS)
    compact(log)
    return { hour, day }
  }
  // the keys recorded under a check id in the last 24 hours (id NUL key), oldest first: a key recorded again under its
  // id is counted, not recorded; a key the id has not recorded yet (a retry with other values) is recorded
  const ids = new Map<string, number>()
  const counts = (key: string, now: number): WindowCount => {
    const log = logs.get(key)
    if (!log) return { hour: 0, day: 0 }
    const times = log.times
    const from = after(times, log.head, now - DAY_MS)
    return { hour: times.length - after(times, from, now - HOUR_MS), day: times.length - from }
  }
  const evict = (now: number) => {
    for (const [id, at] of ids) {
      if (at > now - DAY_MS && ids.size <= maxKeys) break
      ids.delete(id)
    }
    while (head < queueLogs.length) {
      const log = queueLogs[head] as Log
      if (log.last === queueSeqs[head] && logs.get(log.key) === log) {
        const newest = log.times[log.times.length - 1] as number
        if (logs.size <= maxKeys && newest > now - DAY_MS) break
        logs.delete(log.key)
      }
      head++
    }
    if (head > 1024 && head * 2 > queueLogs.length) {
      queueLogs = queueLogs.slice(head)
      queueSeqs = queueSeqs.slice(head)
      head = 0
    }
  }
  return {
    get size() {
      return logs.size
    },
    hit(keys, nowMs, checkId) {
      const out: WindowCount[] = new Array(keys.length)
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i] as string
        if (checkId !== undefined) {
          const idKey = `${checkId}\u0000${key}`
          const at = ids.get(idKey)
          if (at !== undefined && at > nowMs - DAY_MS) {
            out[i] = counts(key, nowMs)
            continue
          }
          ids.delete(idKey)
          ids.set(idKey, nowMs)
        }
        out[i] = one(key, nowMs)
      }
      evict(nowMs)
      return out
    },
  }
}

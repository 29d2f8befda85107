/**
 * Work order of a bulk job. Rows are run in lanes: a lane is a run of rows one worker checks one after the other.
 * Without grouping every row is its own lane (workers take rows in input order). With grouping (emails, by domain)
 * each group is split into at most `width` lanes, so at most `width` rows of one domain are in flight at once — the
 * SMTP source's per-host connection limit — and consecutive addresses of a domain reuse its DNS answers, catch-all
 * probe and SMTP session. Output order is unaffected: rows are stored by index.
 */

/** A run of positions `[start, end)` in {@link LaneQueue.order}. */
export interface Lane {
  start: number
  end: number
}

/** Hands out lanes to workers. */
export interface LaneQueue {
  /** Positions into the job's work list, in the order they are run. */
  readonly order: Int32Array
  /** The next lane, or undefined when all are taken. */
  next(): Lane | undefined
}

/**
 * Builds the lanes of `count` work items. `groupOf(i)` names the group of item `i` (null: no grouping for it).
 * Groups keep the order of their first item; items keep input order within a group.
 *
 * @example
 * const q = buildLanes(4, (i) => ['a.com', 'b.com', 'a.com', 'b.com'][i]!, 1)
 * // order [0, 2, 1, 3]; lanes [0,2) and [2,4)
 */
export function buildLanes(count: number, groupOf: ((i: number) => string | null) | null, width: number): LaneQueue {
  if (!groupOf) {
    const order = new Int32Array(count)
    for (let i = 0; i < count; i++) order[i] = i
    let p = 0
    return { order, next: () => (p < count ? { start: p, end: ++p } : undefined) }
  }
  const groups = new Map<string, number[]>()
  const loose: number[] = []
  for (let i = 0; i < count; i++) {
    const g = groupOf(i)
    if (g === null) {
      loose.push(i)
      continue
    }
    const bucket = groups.get(g)
    if (bucket) bucket.push(i)
    else groups.set(g, [i])
  }
  const order = new Int32Array(count)
  const lanes: Lane[] = []
  let p = 0
  for (const bucket of groups.values()) {
    const k = Math.max(1, Math.min(width, bucket.length))
    const size = Math.ceil(bucket.length / k)
    const start = p
    for (const i of bucket) order[p++] = i
    for (let s = start; s < p; s += size) lanes.push({ start: s, end: Math.min(p, s + size) })
  }
  for (const i of loose) {
    order[p] = i
    lanes.push({ start: p, end: ++p })
  }
  let l = 0
  return { order, next: () => lanes[l++] }
}

/** The bound on lookups in flight across all jobs (re-exported for the engine). */
export { Semaphore } from '../semaphore.js'

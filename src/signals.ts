/**
 * Signals from the caller's own traffic, added when an answer is given — after the cache, so a cached answer (which
 * holds only what the check found) is matched against the lists in force now and counted now:
 * - `details.lists`: the allow/block lists the input is on (src/lists/), with the factors `list_blocked` /
 *   `list_allowed`;
 * - `details.velocity`: how many checks had the same values lately (src/velocity/), whose counts the scoring turns
 *   into velocity factors under the policy's thresholds.
 */
import { isPromise } from './awaitable.js'
import type { CheckOutcome } from './checks/types.js'
import type { ListsHolder } from './lists/holder.js'
import type { OutcomesHolder } from './outcomes/holder.js'
import type { ListIndex } from './lists/compile.js'
import { matchLists, NO_MATCH } from './lists/match.js'
import type { Velocity } from './schema.js'
import { velocityValuesOf, type VelocityCounter } from './velocity/counter.js'

/** The lists and the velocity counter of an instance (either may be off). */
export interface Signals {
  lists: ListsHolder | null
  velocity: VelocityCounter | null
  /** The library's outcomes (`createRiskcheck({ outcomes })`): answers wait for a loader's first load. */
  outcomes?: OutcomesHolder | null
}

/** The lookups whose details carry `velocity` (the combined check carries it too, counted once for all its parts). */
export const VELOCITY_TYPES: ReadonlySet<string> = new Set(['email', 'ip', 'phone', 'phone_type'])


/** The outcome with `details.lists` (and `velocity: null` where it applies), the list factors and sentences. */
function withLists<D>(index: ListIndex | null, type: string, outcome: CheckOutcome<D>, nowMs: number, velocityField: boolean, input: unknown, own: boolean): CheckOutcome<D> {
  // Object.assign, not spread syntax: `{ ...details, lists }` costs several times as much on Node 20 (every answer);
  // an outcome that is the caller's own is completed in place, as copying it costs more than the offline lookups
  // matched before the copy (the details are only read); no match at all allocates nothing beyond the empty `lists`
  const m = index && index.lists.length > 0 ? matchLists(index, type, outcome.details, nowMs, input) : NO_MATCH
  const details = (own ? outcome.details : Object.assign({}, outcome.details)) as Record<string, unknown>
  details.lists = m === NO_MATCH ? [] : m.matches
  if (velocityField && VELOCITY_TYPES.has(type)) details.velocity = null
  const answered = own ? outcome : Object.assign({}, outcome)
  answered.details = details as D
  if (m.factors.length > 0) {
    answered.factors = [...outcome.factors, ...m.factors]
    answered.reasons = Object.assign({}, outcome.reasons, m.reasons)
  }
  return answered
}

/**
 * A check's outcome as answered at `nowMs`, with the list matches and, with `velocityField`, a `velocity: null` where
 * velocity applies (single lookups; not a combined check's parts nor bulk rows). A cached outcome is copied; `own`
 * (made for this call alone) is completed in place. `input` is the check's prepared input. A promise only while a
 * loader's lists (or outcomes) are still loading; rejects with UPSTREAM_UNAVAILABLE when they could not be loaded.
 */
export function answerWithLists<D>(
  signals: Signals | undefined,
  type: string,
  outcome: CheckOutcome<D>,
  nowMs: number,
  velocityField = true,
  input: unknown = undefined,
  own = false,
): CheckOutcome<D> | Promise<CheckOutcome<D>> {
  const labels = signals?.outcomes ? signals.outcomes.current() : null
  // once that promise resolves the outcomes are in force: on to the lists, without asking again (which could spin)
  if (isPromise(labels)) return labels.then(() => answerWithLists({ lists: signals!.lists, velocity: null }, type, outcome, nowMs, velocityField, input, own))
  const index = signals?.lists ? signals.lists.current() : null
  if (isPromise(index)) return index.then((i) => withLists(i, type, outcome, nowMs, velocityField, input, own))
  return withLists(index, type, outcome, nowMs, velocityField, input, own)
}

/**
 * Counts the answer's values and sets `details.velocity` (the outcome must be one {@link answerWithLists} made).
 * When the store fails, `velocity` stays null and the outcome is partial. Returns the counts.
 */
export async function countVelocity(signals: Signals | undefined, type: string, outcome: CheckOutcome<unknown>, test: boolean, nowMs: number): Promise<Velocity | null> {
  if (!signals?.velocity || !VELOCITY_TYPES.has(type)) return null
  const counts = await signals.velocity.count(velocityValuesOf(type, outcome.details), test, nowMs)
  ;(outcome.details as Record<string, unknown>).velocity = counts
  if (counts === null) outcome.partial = true
  return counts
}

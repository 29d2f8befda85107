/**
 * The outcomes of one riskcheck instance (`createRiskcheck({ outcomes })`, docs/outcomes.md "In the library"): entries
 * folded into label sets at once, or by a loader in the background (lookups wait for the first load), and applied to
 * answers by the rules the service uses (./rules.ts). `reload` folds the next entries completely before switching.
 */
import { isPromise } from '../awaitable.js'
import { createReloadable } from '../reloadable.js'
import type { AnswerLabels } from '../lookup.js'
import type { OutcomeInputType } from '../schema.js'
import { applyOrder, checkEntry, type OutcomeEntry } from './file.js'
import { answerValues, currentByInput, foldLabels, labelFactors, outcomeInputKey, plainKey, type LabelSets } from './rules.js'

/** What `createRiskcheck({ outcomes })` takes: the entries, or a function that loads them (called again on reload). */
export type OutcomesOption = readonly OutcomeEntry[] | (() => readonly OutcomeEntry[] | Promise<readonly OutcomeEntry[]>)

/** The outcomes in force, for display (`rc.outcomesSummary()`). */
export interface OutcomesSummary {
  /** Entries given. */
  entries: number
  /** Entries by `request_id`, which the library cannot apply (it keeps no requests). */
  ignored: number
  /** Addresses whose latest delivery outcome is `bounced`. */
  bounced: number
  /** Inputs whose current risk outcome is fraud, chargeback or account takeover. */
  fraud: number
}

/** Unusable entries: a TypeError naming each (its position and why). */
export class OutcomesError extends TypeError {
  readonly invalid: Array<{ index: number; reason: string }>
  constructor(invalid: Array<{ index: number; reason: string }>) {
    const first = invalid.slice(0, 3).map((i) => (i.index < 0 ? i.reason : `outcomes[${i.index}]: ${i.reason}`))
    super(`riskcheck: option \`outcomes\`: ${first.join('; ')}${invalid.length > 3 ? `; and ${invalid.length - 3} more` : ''}`)
    this.name = 'OutcomesError'
    this.invalid = invalid
  }
}

interface Folded {
  sets: LabelSets
  summary: OutcomesSummary
}

const MALFORMED = 'outcomes must be an array of outcome entries or a function that loads them'

/**
 * The label sets of entries. Entries are ordered by `at` (an entry without one takes the time of the entry before
 * it; the first ones: the earliest), the given order breaking ties ({@link applyOrder}); per input and axis the last
 * one is current.
 */
export function foldEntries(entries: unknown): Folded {
  if (!Array.isArray(entries)) throw new OutcomesError([{ index: -1, reason: MALFORMED }])
  const invalid: Array<{ index: number; reason: string }> = []
  const checked: OutcomeEntry[] = []
  entries.forEach((raw: unknown, i) => {
    if (raw === null || typeof raw !== 'object') return void invalid.push({ index: i, reason: 'not an object' })
    const r = raw as Record<string, unknown>
    const str = (k: string) => (typeof r[k] === 'string' || r[k] === null ? (r[k] as string | null) : r[k] === undefined ? undefined : String(r[k]))
    const e = checkEntry({ input: str('input'), type: str('type'), request_id: str('request_id'), outcome: str('outcome'), note: str('note'), at: str('at') })
    if (typeof e === 'string') return void invalid.push({ index: i, reason: e })
    checked.push(e)
  })
  if (invalid.length > 0) throw new OutcomesError(invalid)
  let ignored = 0
  const usable: Array<{ type: OutcomeInputType; key: string; outcome: OutcomeEntry['outcome'] }> = []
  for (const i of applyOrder(checked)) {
    const e = checked[i] as OutcomeEntry
    if (e.request_id !== undefined) {
      ignored++
      continue
    }
    const n = outcomeInputKey(e.type!, e.input!)
    if (n.ok) usable.push({ type: e.type!, key: n.key, outcome: e.outcome })
  }
  const sets = foldLabels(currentByInput(usable))
  return { sets, summary: { entries: entries.length, ignored, bounced: sets.bounced.size, fraud: sets.fraud.size } }
}

/** The outcomes of an instance. */
export interface OutcomesHolder {
  /** The label sets in force (a promise only while the first load of a loader runs; rejects when it failed). */
  current(): LabelSets | Promise<LabelSets>
  /** The answer hook over the sets in force (call once {@link current} is no promise). */
  readonly hook: AnswerLabels
  /**
   * Loads `next` (default: the loader given at creation; given entries: the source of the outcomes in force) and
   * switches to it once folded, unless newer outcomes are in force by then.
   */
  reload(next?: OutcomesOption): Promise<OutcomesSummary>
  summary(): OutcomesSummary | null
}

async function load(option: OutcomesOption): Promise<Folded> {
  return foldEntries(typeof option === 'function' ? await option() : option)
}

/**
 * The holder of `option`. Entries are folded now (an {@link OutcomesError}, a TypeError, when one is unusable); a
 * loader is called now and its outcomes are in force once loaded. While the first load has failed, lookups reject
 * with UPSTREAM_UNAVAILABLE (fraud labels that could not be read never let an answer through unlabelled) until a
 * reload succeeds. Loads are ordered as ../reloadable.ts orders them: one that finishes is put in force unless a
 * newer one already is. A reload without `next` calls the loader given here (given entries: the source of the
 * outcomes in force, again).
 */
export function createOutcomesHolder(option: OutcomesOption): OutcomesHolder {
  let source = option
  const outcomes = createReloadable<Folded>('outcomes')
  if (typeof option === 'function') outcomes.loadFirst(() => load(option))
  else outcomes.set(foldEntries(option))
  const keyOf = plainKey
  return {
    current() {
      const folded = outcomes.current()
      return isPromise(folded) ? folded.then((f) => f.sets) : folded.sets
    },
    hook: (type, details) => labelFactors(outcomes.value()?.sets ?? null, answerValues(type, details), keyOf),
    async reload(next) {
      const from = next ?? source
      if (typeof from !== 'function' && !Array.isArray(from)) throw new OutcomesError([{ index: -1, reason: MALFORMED }])
      const f = await outcomes.load(
        () => load(from),
        () => {
          if (typeof option !== 'function') source = from
        },
      )
      return f.summary
    },
    summary: () => outcomes.value()?.summary ?? null,
  }
}

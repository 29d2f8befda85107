/**
 * Backtesting a policy: re-score stored answers under a candidate policy (no network, no credits) and report what would
 * change: the action transition matrix, the changed answers, and with labels the fraud caught and good customers held,
 * with a threshold sweep. Answers stream through once (docs/decisions.md, "Per-org policies" → "backtest cost").
 *
 * @example
 * import { backtest, createPolicy } from 'riskcheck/scoring'
 * const report = await backtest(results, createPolicy({ weights: { ip_vpn: 60 } }), { labels: { 'a@b.example': 'good' } })
 * report.matrix.approve.verify // answers approved before that would now be asked to verify
 */
import { ACTIONS, VELOCITY_KINDS, type Action, type CheckContextName, type LookupType, type Velocity } from '../schema.js'
import { applyContext, evaluate, levelOf } from './engine.js'
import { isFactorCode, type FactorCode } from './factors.js'
import type { Policy, Thresholds } from './rules.js'
import { expandResults, SKIP_REASONS, toStoredAnswer, type SkipReason, type StoredAnswer } from './stored-answer.js'

/** A label of an input: known fraud, or a known good customer. */
export type Label = 'fraud' | 'good'

/**
 * A label with a rank: when several labels match one answer (its input, its request id, another of its keys), the
 * highest rank wins — outcomes use their order of recording, so the latest applies.
 */
export interface RankedLabel {
  label: Label
  rank: number
}

/**
 * The labels: a Map or a record from input to label, or [input, label] pairs. Inputs match case-insensitively. A
 * value may be a {@link RankedLabel}; without ranks the answer's input is tried first, then its other keys in order.
 */
export type Labels =
  | ReadonlyMap<string, Label | RankedLabel>
  | Readonly<Record<string, Label | RankedLabel>>
  | Iterable<readonly [string, Label | RankedLabel]>

/** Options of {@link backtest}. */
export interface BacktestOptions {
  /** Labels of inputs; adds `labels` and `sweep` to the report. */
  labels?: Labels | null
  /** Re-score every answer in this context (default: the context each answer was judged in, if any). */
  context?: CheckContextName | null
  /**
   * Compute the current action under this policy instead of taking the action each answer recorded (compare two
   * policies, or re-score answers stored without an action, such as cached outcomes).
   */
  baseline?: Policy | null
  /** Keep at most this many changes in `report.changes` (default: all). `changed` always counts them all. */
  maxChanges?: number
  /** Called for every change, in input order (e.g. to stream them out). */
  onChange?: (change: BacktestChange) => void
  /**
   * More keys of an item to find its label by, beside its input and request id (e.g. the forms lookups compare its
   * inputs in, when the labels are keyed so).
   */
  keysOf?: (item: unknown) => readonly string[]
}

/** One answer whose action changes. */
export interface BacktestChange {
  input: string
  type: LookupType | null
  context: CheckContextName | null
  label: Label | null
  factors: readonly string[]
  current: { action: Action; score: number | null }
  candidate: { action: Action; score: number; rule: string | null }
}

/** Counts per action. */
export type ActionCounts = Record<Action, number>

/** What the actions of labelled answers were, before and after. */
export interface LabelOutcome {
  current: ActionCounts
  candidate: ActionCounts
}

/** Label metrics of a backtest. */
export interface LabelReport {
  /** Labels given. */
  given: number
  /** Re-scored answers that had a label (several answers may share one label's input). */
  matched: number
  /** Labels that matched no answer (`unmatchedExamples` lists a few). */
  unmatched: number
  unmatchedExamples: string[]
  fraud: LabelOutcome
  good: LabelOutcome
  /** Precision and recall of each action for fraud, and the good customers held, under each policy. */
  metrics: { current: LabelMetrics; candidate: LabelMetrics }
}

/** Precision and recall for fraud of one action (null where the share has no denominator). */
export interface ActionMetrics {
  /** Of the labelled answers with this action, the share that are fraud. */
  precision: number | null
  /** Of the fraud answers, the share with this action. */
  recall: number | null
}

/** The outcome measures of one policy over the labelled answers. */
export interface LabelMetrics {
  /** Per action: precision and recall for fraud. */
  actions: Record<Action, ActionMetrics>
  /** Precision and recall of holding (review or block) for fraud. */
  held: ActionMetrics
  /** Good customers blocked: count and share of all good answers (null without good answers). */
  goodBlocked: { count: number; share: number | null }
  /** Good customers sent to review: count and share of all good answers. */
  goodReview: { count: number; share: number | null }
}

/** The review queue: answers with action review (all answers, labelled or not). */
export interface ReviewQueue {
  current: number
  candidate: number
  /** candidate − current. */
  change: number
  /** candidate / current (null when the current queue is empty). */
  ratio: number | null
}

/** One row of a threshold sweep: what fraud and good answers would get with the threshold at `threshold`. */
export interface SweepRow {
  threshold: number
  fraud: ActionCounts
  good: ActionCounts
}

/**
 * The trade-off of the block threshold (`thresholds.critical`) and the review threshold (`thresholds.high`) of the
 * candidate policy, each moved alone over 0–100 (the other thresholds pushed along only where order requires). A
 * context's own threshold moves by the same amount (so the row at the policy's value is exactly its outcome); hard
 * rules keep their actions.
 */
export interface ThresholdSweep {
  block: { current: number; rows: SweepRow[] }
  review: { current: number; rows: SweepRow[] }
}

/** Score histogram bins: `[0, 5)`, `[5, 10)` … `[95, 100]`. */
export const HISTOGRAM_BINS = 20

/** The result of {@link backtest}. */
export interface BacktestReport {
  /** Items read (after expanding arrays and pages). */
  read: number
  /** Answers re-scored (`read` minus the skipped). */
  scored: number
  skipped: Record<SkipReason, number>
  /** Factor codes outside the vocabulary (ignored by scoring), with how many answers carried each. */
  unknownFactors: Record<string, number>
  /** `matrix[current][candidate]`: answers per transition. */
  matrix: Record<Action, ActionCounts>
  /** Answers whose action changes. */
  changed: number
  /** The changes, in input order (at most `maxChanges`). */
  changes: BacktestChange[]
  /** Answers per current and per candidate action. */
  totals: { current: ActionCounts; candidate: ActionCounts }
  /** Candidate scores per bin of 5 points ({@link HISTOGRAM_BINS}), per label (`unlabelled` without labels). */
  histogram: { fraud: number[]; good: number[]; unlabelled: number[] }
  /** Answers sent to review under the current and the candidate policy. */
  reviewQueue: ReviewQueue
  /** Present when labels were given. */
  labels: LabelReport | null
  /** Present when labels were given. */
  sweep: ThresholdSweep | null
}

const zero = (): ActionCounts => ({ approve: 0, verify: 0, review: 0, block: 0 })
const ACTION_INDEX = new Map<Action, number>(ACTIONS.map((a, i) => [a, i]))

/** What a policy decides for one (context, factor set); memoized. */
interface Decision {
  score: number
  action: Action
  /** Index of `action` in ACTIONS. */
  actionIndex: number
  rule: string | null
  /** The rule's action index + 1, or 0 when the level decided (the sweep re-decides those). */
  ruleAction: number
  unknown: readonly string[]
}

const MEMO_LIMIT = 100_000

function decider(policy: Policy) {
  const memo = new Map<string, Decision>()
  const decide = (factors: readonly string[], context: CheckContextName | null, velocity?: Velocity | null): Decision => {
    let key = context === null ? factors.join('\u0001') : `${context}|${factors.join('\u0001')}`
    if (velocity) key += `|${VELOCITY_KINDS.map((k) => (velocity[k] ? `${velocity[k]!.hour},${velocity[k]!.day}` : '')).join(';')}`
    let d = memo.get(key)
    if (d === undefined) {
      const a = evaluate(factors as readonly FactorCode[], velocity ? { policy, context, velocity } : { policy, context })
      d = {
        score: a.score,
        action: a.action,
        actionIndex: ACTION_INDEX.get(a.action) as number,
        rule: a.rule,
        ruleAction: a.rule === null ? 0 : (ACTION_INDEX.get(a.action) as number) + 1,
        unknown: factors.filter((f) => !isFactorCode(f)),
      }
      if (memo.size < MEMO_LIMIT) memo.set(key, d)
    }
    return d
  }
  return decide
}

// Most inputs are already lower-case and trimmed: test that first rather than build a new string per answer.
const NEEDS_NORMALIZING = /[A-Z\u0080-\uffff]|^\s|\s$/
const normalizeKey = (s: string) => (NEEDS_NORMALIZING.test(s) ? s.trim().toLowerCase() : s)

/** Labels by normalized input: each input's label index (0 fraud, 1 good) and id (for "matched no answer"). */
function labelTable(labels: Labels): { ids: Map<string, number>; keys: string[]; kinds: Uint8Array; ranks: Float64Array | null } {
  const ids = new Map<string, number>()
  const keys: string[] = []
  const kinds: number[] = []
  const ranks: number[] = []
  let ranked = false
  const entries: Iterable<readonly [string, Label | RankedLabel]> =
    labels instanceof Map || Symbol.iterator in (labels as object)
      ? (labels as Iterable<readonly [string, Label | RankedLabel]>)
      : Object.entries(labels as Record<string, Label | RankedLabel>)
  for (const [input, value] of entries) {
    const label = typeof value === 'object' && value !== null ? value.label : value
    const rank = typeof value === 'object' && value !== null ? value.rank : 0
    if (typeof value === 'object' && value !== null) ranked = true
    if (label !== 'fraud' && label !== 'good') throw new TypeError(`riskcheck backtest: the label of ${JSON.stringify(input)} must be fraud or good (got ${String(label)})`)
    // trim + toLowerCase also gives a flat string: a key built by concatenation would be compared piece by piece on
    // every look-up.
    const key = input.trim().toLowerCase()
    let id = ids.get(key)
    if (id === undefined) {
      id = keys.length
      ids.set(key, id)
      keys.push(key)
      kinds.push(0)
      ranks.push(Number.NEGATIVE_INFINITY)
    }
    if (rank < (ranks[id] as number)) continue
    kinds[id] = LABEL_INDEX[label]
    ranks[id] = rank
  }
  return { ids, keys, kinds: Uint8Array.from(kinds), ranks: ranked ? Float64Array.from(ranks) : null }
}

const LABEL_INDEX = { fraud: 0, good: 1 } as const
const LABELS: readonly Label[] = ['fraud', 'good']
const UNLABELLED = 2
const SWEEP_SLOTS = 101 * 5 // score 0–100 × (level decides | rule action 1–4)
const A = ACTIONS.length

/**
 * A backtest fed one item at a time: {@link backtest} for streams you drive yourself (the CLI uses it). `add` takes
 * anything {@link toStoredAnswer} reads (or an array / page of them); `report` may be called at any time.
 *
 * The counters are typed arrays indexed by action, label and bin, so the per-answer work is a memo look-up, a label
 * look-up and a few increments.
 */
export function createBacktest(policy: Policy, options: BacktestOptions = {}) {
  const candidate = decider(policy)
  const baseline = options.baseline ? decider(options.baseline) : null
  const labels = options.labels ? labelTable(options.labels) : null
  const seen = labels ? new Uint8Array(labels.keys.length) : null
  const maxChanges = options.maxChanges ?? Number.POSITIVE_INFINITY
  const override = options.context !== undefined ? options.context : undefined

  let read = 0
  let scored = 0
  let changed = 0
  let matched = 0
  const skipped = Object.fromEntries(SKIP_REASONS.map((r) => [r, 0])) as Record<SkipReason, number>
  const unknownFactors: Record<string, number> = {}
  const matrix = new Float64Array(A * A) // [current * A + candidate]
  const histogram = new Float64Array(3 * HISTOGRAM_BINS) // [label index (2 = unlabelled) * bins + bin]
  const labelled = new Float64Array(2 * 2 * A) // [label * 2A + (0 current | A candidate) + action]
  // Per scoring context and label: answers per (score, rule action), from which any threshold's outcome follows.
  const sweepCounts = new Map<string, [Uint32Array, Uint32Array]>()
  const changes: BacktestChange[] = []

  /** The label id of an answer (by its input, else its other keys), or -1. */
  const labelIdOf = (a: StoredAnswer): number => {
    if (labels!.ranks) return rankedLabelIdOf(a)
    let id = labels!.ids.get(normalizeKey(a.input))
    if (id === undefined && a.keys)
      for (const k of a.keys) {
        id = labels!.ids.get(normalizeKey(k))
        if (id !== undefined) break
      }
    return id ?? -1
  }
  /** With ranks: the highest-ranked label among the input and every key. */
  const rankedLabelIdOf = (a: StoredAnswer): number => {
    const ranks = labels!.ranks!
    let best = labels!.ids.get(normalizeKey(a.input)) ?? -1
    if (a.keys)
      for (const k of a.keys) {
        const id = labels!.ids.get(normalizeKey(k))
        if (id !== undefined && (best < 0 || (ranks[id] as number) > (ranks[best] as number))) best = id
      }
    return best
  }

  const addOne = (item: unknown) => {
    read++
    let a = toStoredAnswer(item)
    if (typeof a === 'string') {
      skipped[a]++
      return
    }
    const more = labels && options.keysOf ? options.keysOf(item) : []
    if (more.length > 0) a = { ...a, keys: [...(a.keys ?? []), ...more] }
    const context = override !== undefined ? override : (a.context ?? null)
    const next = candidate(a.factors, context, a.velocity)
    const current: Action | null = baseline ? baseline(a.factors, context, a.velocity).action : (a.action ?? null)
    if (current === null) {
      skipped.no_action++
      return
    }
    scored++
    if (next.unknown.length > 0) for (const u of next.unknown) unknownFactors[u] = (unknownFactors[u] ?? 0) + 1
    const ci = ACTION_INDEX.get(current) as number
    matrix[ci * A + next.actionIndex]!++
    const id = labels ? labelIdOf(a) : -1
    const li = id < 0 ? UNLABELLED : (labels!.kinds[id] as number)
    histogram[li * HISTOGRAM_BINS + Math.min(HISTOGRAM_BINS - 1, Math.floor(next.score / 5))]!++
    if (li !== UNLABELLED) {
      seen![id] = 1
      matched++
      labelled[li * 2 * A + ci]!++
      labelled[li * 2 * A + A + next.actionIndex]!++
      const group = context ?? ''
      let counts = sweepCounts.get(group)
      if (!counts) sweepCounts.set(group, (counts = [new Uint32Array(SWEEP_SLOTS), new Uint32Array(SWEEP_SLOTS)]))
      counts[li]![next.score * 5 + next.ruleAction]!++
    }
    if (current !== next.action) {
      changed++
      if (changes.length < maxChanges || options.onChange) {
        const change: BacktestChange = {
          input: a.input,
          type: a.type ?? null,
          context,
          label: li === UNLABELLED ? null : (LABELS[li] as Label),
          factors: a.factors,
          current: { action: current, score: baseline ? baseline(a.factors, context, a.velocity).score : (a.score ?? null) },
          candidate: { action: next.action, score: next.score, rule: next.rule },
        }
        if (changes.length < maxChanges) changes.push(change)
        options.onChange?.(change)
      }
    }
  }

  const addItem = (item: unknown): void => {
    if (Array.isArray(item)) for (const v of item) addItem(v)
    else if (item !== null && typeof item === 'object' && 'data' in item) for (const v of expandResults(item)) addOne(v)
    else addOne(item)
  }

  const counts = (array: Float64Array, offset: number): ActionCounts => {
    const out = zero()
    ACTIONS.forEach((a, i) => (out[a] = array[offset + i] as number))
    return out
  }

  return {
    /** Adds one item (a result, a row, a stored answer, or an array / page of them). */
    add: addItem,
    /** The report so far. */
    report(): BacktestReport {
      const unmatchedExamples: string[] = []
      let unmatched = 0
      if (labels)
        labels.keys.forEach((k, id) => {
          if (seen![id]) return
          unmatched++
          if (unmatchedExamples.length < 5) unmatchedExamples.push(k)
        })
      const m = Object.fromEntries(ACTIONS.map((a, i) => [a, counts(matrix, i * A)])) as Record<Action, ActionCounts>
      const totals = { current: zero(), candidate: zero() }
      for (const from of ACTIONS)
        for (const to of ACTIONS) {
          totals.current[from] += m[from][to]
          totals.candidate[to] += m[from][to]
        }
      const bins = (li: number) => Array.from(histogram.subarray(li * HISTOGRAM_BINS, (li + 1) * HISTOGRAM_BINS))
      return {
        read,
        scored,
        skipped: { ...skipped },
        unknownFactors: { ...unknownFactors },
        matrix: m,
        changed,
        changes: [...changes],
        totals,
        histogram: { fraud: bins(0), good: bins(1), unlabelled: bins(UNLABELLED) },
        reviewQueue: reviewQueueOf(totals.current.review, totals.candidate.review),
        labels: labels ? labelReport(labels.keys.length, matched, unmatched, unmatchedExamples, labelled, counts) : null,
        sweep: labels ? sweep(policy, sweepCounts) : null,
      }
    },
  }
}

function reviewQueueOf(current: number, candidate: number): ReviewQueue {
  return { current, candidate, change: candidate - current, ratio: current === 0 ? null : candidate / current }
}

const ratio = (n: number, of: number): number | null => (of === 0 ? null : n / of)

/** Precision and recall per action, and the good customers held, from the counts per label of one policy. */
export function labelMetrics(fraud: ActionCounts, good: ActionCounts): LabelMetrics {
  const fraudTotal = ACTIONS.reduce((n, a) => n + fraud[a], 0)
  const goodTotal = ACTIONS.reduce((n, a) => n + good[a], 0)
  const of = (f: number, g: number): ActionMetrics => ({ precision: ratio(f, f + g), recall: ratio(f, fraudTotal) })
  return {
    actions: Object.fromEntries(ACTIONS.map((a) => [a, of(fraud[a], good[a])])) as Record<Action, ActionMetrics>,
    held: of(fraud.review + fraud.block, good.review + good.block),
    goodBlocked: { count: good.block, share: ratio(good.block, goodTotal) },
    goodReview: { count: good.review, share: ratio(good.review, goodTotal) },
  }
}

function labelReport(
  given: number,
  matched: number,
  unmatched: number,
  unmatchedExamples: string[],
  labelled: Float64Array,
  counts: (array: Float64Array, offset: number) => ActionCounts,
): LabelReport {
  const fraud = { current: counts(labelled, 0), candidate: counts(labelled, A) }
  const good = { current: counts(labelled, 2 * A), candidate: counts(labelled, 3 * A) }
  return {
    given,
    matched,
    unmatched,
    unmatchedExamples,
    fraud,
    good,
    metrics: { current: labelMetrics(fraud.current, good.current), candidate: labelMetrics(fraud.candidate, good.candidate) },
  }
}

/** The outcome per label of the labelled answers when each context's thresholds are replaced by `adjust(…)`. */
function outcomeWith(policy: Policy, counts: Map<string, [Uint32Array, Uint32Array]>, adjust: (t: Thresholds) => Thresholds): { fraud: ActionCounts; good: ActionCounts } {
  const out = { fraud: zero(), good: zero() }
  for (const [group, byLabel] of counts) {
    const effective = applyContext(policy, group === '' ? null : (group as CheckContextName))
    const thresholds = adjust(effective.thresholds)
    byLabel.forEach((slots, li) => {
      const into = li === 0 ? out.fraud : out.good
      for (let s = 0; s <= 100; s++) {
        const levelAction = policy.actions[levelOf(s, thresholds)]
        for (let r = 0; r < 5; r++) {
          const n = slots[s * 5 + r] as number
          if (n > 0) into[r === 0 ? levelAction : (ACTIONS[r - 1] as Action)] += n
        }
      }
    })
  }
  return out
}

const clamp = (v: number) => Math.min(100, Math.max(0, v))

function sweep(policy: Policy, counts: Map<string, [Uint32Array, Uint32Array]>): ThresholdSweep {
  const t = policy.thresholds
  const grid = (current: number) => [...new Set([...Array.from({ length: 21 }, (_, i) => i * 5), current])].sort((a, b) => a - b)
  return {
    block: {
      current: t.critical,
      rows: grid(t.critical).map((v) => ({
        threshold: v,
        ...outcomeWith(policy, counts, (x) => {
          const c = clamp(x.critical + v - t.critical)
          return { medium: Math.min(x.medium, c), high: Math.min(x.high, c), critical: c }
        }),
      })),
    },
    review: {
      current: t.high,
      rows: grid(t.high).map((v) => ({
        threshold: v,
        ...outcomeWith(policy, counts, (x) => {
          const h = clamp(x.high + v - t.high)
          return { medium: Math.min(x.medium, h), high: h, critical: Math.max(x.critical, h) }
        }),
      })),
    },
  }
}

const isAsyncIterable = (v: unknown): v is AsyncIterable<unknown> => v !== null && typeof v === 'object' && Symbol.asyncIterator in v

/**
 * Re-scores stored answers under `policy` and reports what would change. `results` is any iterable or async
 * iterable of what riskcheck writes (lookup results, bulk rows, results pages, {@link StoredAnswer}s — see
 * {@link toStoredAnswer}); each is read once. Pure: no network, no credits, no clock.
 *
 * The current action of each answer is the one it recorded (or, with `baseline`, the one `baseline` gives); the
 * candidate action is `policy`'s, in the answer's own context (or `options.context`).
 *
 * @example
 * // In a unit test of your policy: no good customer of the labelled set is blocked.
 * const report = await backtest(readResults('answers.jsonl'), policy, { labels: await readLabels('labels.csv') })
 * expect(report.labels?.good.candidate.block).toBe(0)
 */
export async function backtest(
  results: Iterable<unknown> | AsyncIterable<unknown>,
  policy: Policy,
  options: BacktestOptions = {},
): Promise<BacktestReport> {
  const run = createBacktest(policy, options)
  if (isAsyncIterable(results)) for await (const item of results) run.add(item)
  else for (const item of results) run.add(item)
  return run.report()
}

/**
 * The backtest of a candidate policy over an org's answer log, labelled by the org's outcomes: what
 * `riskcheck admin policy set` and the dashboard's Policy page show (docs/service.md, "Scoring policy"). An answer is
 * reached by an outcome given for its request id, or for one of its inputs (the keyed hashes its request left in
 * `answer_inputs`); superseded outcomes do not count, and of several the latest wins (docs/decisions.md, "Policies
 * measured on outcomes").
 */
import { createBacktest, type BacktestReport, type Labels, type RankedLabel } from '../scoring/backtest.js'
import type { Policy } from '../scoring/rules.js'
import type { CheckContextName } from '../schema.js'
import { OUTCOME_LABEL, type OutcomeLabelSummary } from '../outcomes/labels.js'
import { ANSWER_LOG_TTL_MS } from './store/common/answer-log.js'
import type { LoggedAnswer, OrgPolicyStore } from './store/contracts/org-policies.js'
import type { InputHashes, OutcomeStore } from './store/contracts/outcomes.js'

/** Request ids asked for at once when reading the input hashes of logged answers. */
const CHUNK = 1000

/** What labelled the backtest. */
export type LabelSource = 'outcomes' | 'file' | 'none'

/** Options of {@link backtestOrg}. */
export interface OrgBacktestOptions {
  policies: OrgPolicyStore
  /** The outcome storage; undefined (a store of your own) or `useOutcomes: false`: no outcome labels. */
  outcomes: OutcomeStore | undefined
  orgId: string
  policy: Policy
  nowMs: number
  maxChanges?: number
  /** Labels of a file instead of the org's outcomes. */
  labels?: Labels | null
  /** With `labels`: more keys of a logged answer to find its label by (createBacktest's `keysOf`). */
  keysOf?: (item: unknown) => readonly string[]
  /** Default true. */
  useOutcomes?: boolean
  /** Judge every answer in this context (default: each answer's own). */
  context?: CheckContextName
}

/** The result of {@link backtestOrg}. */
export interface OrgBacktest {
  report: BacktestReport
  /** Unix ms: the oldest answer the log may hold (now − 7 days). */
  since: number
  labelSource: LabelSource
  /** With outcome labels: how the org's current outcomes became labels, and answers the log kept no request id of. */
  outcomes: (OutcomeLabelSummary & { answersWithoutRequestId: number }) | null
}

const HASH_TYPES = ['email', 'phone', 'ip'] as const

/** The label key of an input hash (what an answer's keys and an input outcome's label share). */
const hashKey = (type: (typeof HASH_TYPES)[number], hash: string) => `${type}#${hash}`

/** The org's current live outcomes as ranked labels (rank: the order of recording). */
async function outcomeLabels(store: OutcomeStore, orgId: string): Promise<{ labels: Map<string, RankedLabel>; summary: OutcomeLabelSummary }> {
  const { rows } = await store.currentLabels(orgId, 'live')
  const labels = new Map<string, RankedLabel>()
  const summary: OutcomeLabelSummary = { outcomes: rows.length, labels: 0, delivery: 0, superseded: 0 }
  for (const r of rows) {
    const label = OUTCOME_LABEL[r.outcome]
    if (label === null) {
      summary.delivery++
      continue
    }
    // An outcome about a request labels that answer; one about an input labels every answer with that input.
    const keys = r.requestId !== null ? [r.requestId] : HASH_TYPES.flatMap((t) => (r[t] ? [hashKey(t, r[t]!)] : []))
    for (const k of keys) labels.set(k, { label, rank: r.seq })
    summary.labels++
  }
  return { labels, summary }
}

/** The logged answers with their request id and input hashes as backtest keys. */
async function keyed(store: OutcomeStore, orgId: string, answers: readonly LoggedAnswer[]): Promise<{ items: unknown[]; withoutId: number }> {
  const ids = answers.flatMap((a) => (a.requestId ? [a.requestId] : []))
  const hashes = new Map<string, InputHashes>()
  for (let i = 0; i < ids.length; i += CHUNK) for (const [k, v] of await store.inputsOf(orgId, 'live', ids.slice(i, i + CHUNK))) hashes.set(k, v)
  let withoutId = 0
  const items = answers.map((a) => {
    if (!a.requestId) {
      withoutId++
      return a
    }
    const h = hashes.get(a.requestId)
    const keys = [a.requestId, ...(h ? HASH_TYPES.flatMap((t) => (h[t] ? [hashKey(t, h[t]!)] : [])) : [])]
    return { ...a, keys }
  })
  return { items, withoutId }
}

/**
 * Backtests `policy` over the org's answers of the last 7 days (live keys), labelled by the org's current outcomes
 * (or by `labels`, or not at all).
 *
 * @example
 * const { report } = await backtestOrg({ policies, outcomes, orgId: 'org_1', policy, nowMs: Date.now() })
 * report.labels?.metrics.candidate.goodBlocked.count // good customers the candidate would block
 */
export async function backtestOrg(o: OrgBacktestOptions): Promise<OrgBacktest> {
  const since = o.nowMs - ANSWER_LOG_TTL_MS
  const answers = await o.policies.listAnswers(o.orgId, since)
  const useOutcomes = !o.labels && o.useOutcomes !== false && o.outcomes !== undefined
  let labels: Labels | null = o.labels ?? null
  let summary: OrgBacktest['outcomes'] = null
  let items: readonly unknown[] = answers
  if (useOutcomes) {
    const got = await outcomeLabels(o.outcomes!, o.orgId)
    const k = await keyed(o.outcomes!, o.orgId, answers)
    labels = got.labels
    items = k.items
    summary = { ...got.summary, answersWithoutRequestId: k.withoutId }
  }
  const run = createBacktest(o.policy, {
    labels,
    ...(o.keysOf && !useOutcomes ? { keysOf: o.keysOf } : {}),
    ...(o.maxChanges !== undefined ? { maxChanges: o.maxChanges } : {}),
    ...(o.context !== undefined ? { context: o.context } : {}),
  })
  for (const item of items) run.add(item)
  return { report: run.report(), since, labelSource: useOutcomes ? 'outcomes' : o.labels ? 'file' : 'none', outcomes: summary }
}

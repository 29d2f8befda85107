/**
 * Outcomes as backtest labels (docs/outcomes.md, "Outcomes as labels"): fraud, chargeback and account_takeover label
 * an answer fraud, legitimate labels it good; delivery outcomes (bounced, delivered, spam_complaint) are not labels.
 * When several outcomes reach one answer, the latest wins (the ranks of {@link RankedLabel}).
 */
import type { Label, RankedLabel } from '../scoring/backtest.js'
import type { OutcomeKind } from '../server/store/contracts/outcomes.js'
import type { LookupType, OutcomeInputType } from '../schema.js'
import { applyOrder, type OutcomeEntry } from './file.js'
import { answerValues, outcomeInputKey } from './rules.js'

/** The backtest label of each outcome; null for the delivery outcomes, which say nothing about fraud. */
export const OUTCOME_LABEL: Readonly<Record<OutcomeKind, Label | null>> = {
  fraud: 'fraud',
  chargeback: 'fraud',
  account_takeover: 'fraud',
  legitimate: 'good',
  bounced: null,
  delivered: null,
  spam_complaint: null,
}

/** How the outcomes became labels. */
export interface OutcomeLabelSummary {
  /** Outcomes read (current ones only, for a server's). */
  outcomes: number
  /** Risk outcomes used as labels (after a later outcome of the same subject replaced an earlier one). */
  labels: number
  /** Delivery outcomes (bounced, delivered, spam_complaint): not labels. */
  delivery: number
  /** Risk outcomes of a file replaced by a later one of the same subject. */
  superseded: number
}

/**
 * The labels of an outcomes file: keyed by `request_id`, or by the input in the form lookups compare it (the lists'
 * normalisation: case, Gmail's dots and `+tags`, E.164, one spelling of an IP address); a later outcome of the same
 * subject replaces an earlier one, in the order the library applies the file ({@link applyOrder}).
 */
export function labelsFromEntries(entries: readonly OutcomeEntry[]): { labels: Map<string, RankedLabel>; summary: OutcomeLabelSummary } {
  const labels = new Map<string, RankedLabel>()
  const summary: OutcomeLabelSummary = { outcomes: entries.length, labels: 0, delivery: 0, superseded: 0 }
  applyOrder(entries).forEach((i, rank) => {
    const e = entries[i] as OutcomeEntry
    const label = OUTCOME_LABEL[e.outcome]
    if (label === null) {
      summary.delivery++
      return
    }
    const key = (e.request_id ?? inputKey(e.type, e.input ?? '')).trim().toLowerCase()
    if (labels.has(key)) summary.superseded++
    labels.set(key, { label, rank })
  })
  summary.labels = labels.size
  return { labels, summary }
}

/** An outcome input in its compared form (as given when it has none). */
function inputKey(type: OutcomeInputType | undefined, input: string): string {
  const n = type ? outcomeInputKey(type, input) : null
  return n?.ok ? n.key : input
}

const INPUT_TYPES: Partial<Record<string, OutcomeInputType>> = { email: 'email', phone: 'phone', phone_type: 'phone', ip: 'ip' }

/**
 * The compared forms of a lookup result's inputs (from its input and its details): the keys a backtest labelled by
 * {@link labelsFromEntries} finds an answer's label by, so `Jane.Doe+x@gmail.com` reported labels the answer about
 * `janedoe@gmail.com` as it marks that lookup. A combined check gives those of its parts; a logged answer of the
 * service (`type`, `input`) those of its input; anything else none.
 */
export function resultInputKeys(item: unknown): string[] {
  if (item === null || typeof item !== 'object') return []
  const r = item as { request?: { type?: unknown; input?: unknown }; details?: Record<string, unknown> | null }
  const type = r.request?.type
  const input = r.request?.input
  const details = r.details && typeof r.details === 'object' ? r.details : {}
  const keys = new Set<string>()
  const add = (t: OutcomeInputType, value: unknown, partDetails: unknown) => {
    if (typeof value === 'string') {
      const n = outcomeInputKey(t, value)
      if (n.ok) keys.add(n.key)
    }
    const v = answerValues(t as LookupType, partDetails)[t]
    if (v) keys.add(v)
  }
  // a logged answer (the service's answer log: `type`, `input`; a combined check's parts joined with ` · `)
  const flat = item as { type?: unknown; input?: unknown }
  if (r.request === undefined && typeof flat.input === 'string') {
    const parts = flat.type === 'check' ? flat.input.split(' · ') : [flat.input]
    const types = flat.type === 'check' ? (['email', 'phone', 'ip'] as const) : typeof flat.type === 'string' && INPUT_TYPES[flat.type] ? [INPUT_TYPES[flat.type]!] : []
    for (const part of parts) for (const t of types) add(t, part, null)
  } else if (type === 'check' && input !== null && typeof input === 'object') {
    for (const t of ['email', 'phone', 'ip'] as const) add(t, (input as Record<string, unknown>)[t], details[t])
  } else if (typeof type === 'string' && INPUT_TYPES[type]) add(INPUT_TYPES[type]!, input, details)
  return [...keys]
}

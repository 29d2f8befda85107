/**
 * Outcomes as backtest labels (docs/outcomes.md, "Outcomes as labels"): fraud, chargeback and account_takeover label
 * an answer fraud, legitimate labels it good; delivery outcomes (bounced, delivered, spam_complaint) are not labels.
 * When several outcomes reach one answer, the latest wins (the ranks of {@link RankedLabel}).
 */
import type { Label, RankedLabel } from '../scoring/backtest.js'
import type { OutcomeKind } from '../server/store/contracts/outcomes.js'
import { applyOrder, type OutcomeEntry } from './file.js'

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
 * The labels of an outcomes file: keyed by `request_id`, or by the input (compared case-insensitively); a later
 * outcome of the same subject replaces an earlier one, in the order the library applies the file ({@link applyOrder}).
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
    const key = (e.request_id ?? e.input ?? '').trim().toLowerCase()
    if (labels.has(key)) summary.superseded++
    labels.set(key, { label, rank })
  })
  summary.labels = labels.size
  return { labels, summary }
}

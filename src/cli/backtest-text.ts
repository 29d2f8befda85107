/**
 * The plain-text report of `riskcheck policy test`: what was read, the transition matrix (counts and shares), the
 * first changes, and with labels the fraud caught and good customers held per action plus the threshold sweeps.
 */
import { ACTIONS, type Action } from '../schema.js'
import { SKIP_REASONS, type ActionCounts, type ActionMetrics, type BacktestReport, type SweepRow } from '../scoring/index.js'
import type { OrgBacktest } from '../server/org-backtest.js'

/** `1,234` */
export const fmtInt = (n: number) => n.toLocaleString('en-US')

/** `12.5%` of `total` (`–` for an empty total). */
export function share(n: number, total: number): string {
  if (total === 0) return '–'
  const p = (n / total) * 100
  return `${p === 0 || p === 100 || p >= 10 ? p.toFixed(1) : p.toFixed(2)}%`
}

function table(rows: string[][], align: Array<'l' | 'r'>): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)))
  return rows.map((r) =>
    r
      .map((c, i) => (align[i] === 'r' ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  )
}

const sum = (c: ActionCounts) => ACTIONS.reduce((n, a) => n + c[a], 0)
const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s)

/** What the policy under test is and where the answers came from, for the report's first line. */
export interface ReportHeading {
  policy: string
  version: string
  results: string
  context: string | null
}

/** The matrix as text rows: current action down, candidate across, each cell `count (share of all)`. */
export function matrixLines(report: BacktestReport): string[] {
  const total = report.scored
  const cell = (n: number) => (n === 0 ? '0' : `${fmtInt(n)} (${share(n, total)})`)
  const rows: string[][] = [['current ↓ / candidate →', ...ACTIONS, 'total']]
  for (const from of ACTIONS) rows.push([from, ...ACTIONS.map((to) => cell(report.matrix[from][to])), cell(report.totals.current[from])])
  rows.push(['total', ...ACTIONS.map((a) => cell(report.totals.candidate[a])), fmtInt(total)])
  return table(rows, ['l', 'r', 'r', 'r', 'r', 'r'])
}

function labelLines(report: BacktestReport): string[] {
  const l = report.labels!
  const out: string[] = []
  const fraud = sum(l.fraud.current)
  const good = sum(l.good.current)
  out.push(
    `Labels: ${fmtInt(l.given)} given; ${fmtInt(l.matched)} answers labelled (fraud ${fmtInt(fraud)}, good ${fmtInt(good)})` +
      (l.unmatched > 0 ? `; ${fmtInt(l.unmatched)} labels matched no answer (e.g. ${l.unmatchedExamples.slice(0, 3).join(', ')})` : ''),
  )
  const row = (label: 'fraud' | 'good', a: Action, total: number) => [
    label,
    a,
    `${fmtInt(l[label].current[a])} (${share(l[label].current[a], total)})`,
    `${fmtInt(l[label].candidate[a])} (${share(l[label].candidate[a], total)})`,
  ]
  const rows: string[][] = [['label', 'action', 'current', 'candidate']]
  for (const a of ACTIONS) rows.push(row('fraud', a, fraud))
  for (const a of ACTIONS) rows.push(row('good', a, good))
  out.push(...table(rows, ['l', 'l', 'r', 'r']).map((s) => `  ${s}`))
  const held = (c: ActionCounts) => c.review + c.block
  const line = (what: string, before: number, after: number, of: number) =>
    `  ${what}: ${fmtInt(before)} → ${fmtInt(after)} of ${fmtInt(of)} (${share(before, of)} → ${share(after, of)})`
  out.push(line('fraud caught (blocked)', l.fraud.current.block, l.fraud.candidate.block, fraud))
  out.push(line('fraud stopped (review or block)', held(l.fraud.current), held(l.fraud.candidate), fraud))
  out.push(line('good customers blocked', l.good.current.block, l.good.candidate.block, good))
  out.push(line('good customers sent to review', l.good.current.review, l.good.candidate.review, good))
  out.push('', 'Precision and recall for fraud, per action (precision: share of the labelled answers with the action that are fraud; recall: share of the fraud given the action)')
  out.push(...metricLines(report).map((s) => `  ${s}`))
  return out
}

/** `0.833` as `83.3%`; null as `–`. */
export const pct = (v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(1)}%`)

/** The precision / recall table: a row per action and one for review or block. */
export function metricLines(report: BacktestReport): string[] {
  const m = report.labels!.metrics
  const row = (name: string, c: ActionMetrics, n: ActionMetrics) => [name, pct(c.precision), pct(n.precision), pct(c.recall), pct(n.recall)]
  const rows: string[][] = [['action', 'precision current', 'candidate', 'recall current', 'candidate']]
  for (const a of ACTIONS) rows.push(row(a, m.current.actions[a], m.candidate.actions[a]))
  rows.push(row('review or block', m.current.held, m.candidate.held))
  return table(rows, ['l', 'r', 'r', 'r', 'r'])
}

/** The review queue line: answers with action review, current → candidate. */
export function reviewQueueLine(report: BacktestReport): string {
  const q = report.reviewQueue
  const sign = q.change > 0 ? '+' : ''
  return (
    `Review queue (answers with action review): ${fmtInt(q.current)} → ${fmtInt(q.candidate)} (${sign}${fmtInt(q.change)}` +
    `${q.ratio === null ? '' : `, ×${q.ratio.toFixed(2)}`}; ${share(q.current, report.scored)} → ${share(q.candidate, report.scored)} of all)`
  )
}

/** One threshold sweep as text: a row per threshold (every 10 points and the policy's own), the policy's marked. */
function sweepLines(title: string, current: number, rows: SweepRow[], pick: (c: ActionCounts) => number, what: string): string[] {
  const out = [title]
  const t: string[][] = [['threshold', `fraud ${what}`, `good ${what}`]]
  for (const r of rows) {
    if (r.threshold % 10 !== 0 && r.threshold !== current) continue
    const fraud = sum(r.fraud)
    const good = sum(r.good)
    t.push([
      `${r.threshold}${r.threshold === current ? ' ◀' : ''}`,
      `${fmtInt(pick(r.fraud))} (${share(pick(r.fraud), fraud)})`,
      `${fmtInt(pick(r.good))} (${share(pick(r.good), good)})`,
    ])
  }
  out.push(...table(t, ['r', 'r', 'r']).map((s) => `  ${s}`))
  return out
}

/** The whole text report; `shown` is how many changes the report lists. */
export function formatBacktestText(report: BacktestReport, heading: ReportHeading, shown: number): string {
  const out: string[] = []
  out.push(
    `Policy ${heading.policy} (${heading.version}) over ${heading.results}` + (heading.context ? `, every answer judged in context ${heading.context}` : ''),
  )
  const skipped = SKIP_REASONS.filter((r) => report.skipped[r] > 0).map((r) => `${r.replace(/_/g, ' ')} ${fmtInt(report.skipped[r])}`)
  out.push(
    `Read ${fmtInt(report.read)} answers: ${fmtInt(report.scored)} re-scored` + (skipped.length > 0 ? `, skipped ${skipped.join(', ')}` : ''),
  )
  const unknown = Object.entries(report.unknownFactors)
  if (unknown.length > 0)
    out.push(`Factor codes this riskcheck does not know (ignored): ${unknown.map(([c, n]) => `${c} (${fmtInt(n)})`).join(', ')}`)
  out.push('', 'Transition matrix (share of all re-scored answers)')
  out.push(...matrixLines(report).map((s) => `  ${s}`))
  out.push('', reviewQueueLine(report))
  out.push(`Changed: ${fmtInt(report.changed)} of ${fmtInt(report.scored)} (${share(report.changed, report.scored)})`)
  if (report.changes.length > 0) {
    const rows: string[][] = [['input', 'current', 'candidate', ...(report.labels ? ['label'] : []), 'rule', 'factors']]
    for (const c of report.changes.slice(0, shown))
      rows.push([
        cut(c.input, 40),
        `${c.current.action}${c.current.score === null ? '' : ` ${c.current.score}`}`,
        `${c.candidate.action} ${c.candidate.score}`,
        ...(report.labels ? [c.label ?? ''] : []),
        c.candidate.rule ?? '',
        cut(c.factors.join(', ') || '(none)', 60),
      ])
    out.push(...table(rows, ['l', 'l', 'l', 'l', 'l', 'l']).map((s) => `  ${s}`))
    if (report.changed > Math.min(shown, report.changes.length))
      out.push(`  … ${fmtInt(report.changed - Math.min(shown, report.changes.length))} more (--changes N lists more; --json lists them all)`)
  }
  if (report.labels && report.sweep) {
    out.push('', ...labelLines(report))
    out.push(
      '',
      ...sweepLines(
        `Block threshold sweep (thresholds.critical moved alone; ◀ = this policy)`,
        report.sweep.block.current,
        report.sweep.block.rows,
        (c) => c.block,
        'blocked',
      ),
    )
    out.push(
      '',
      ...sweepLines(
        `Review threshold sweep (thresholds.high moved alone; review or block; ◀ = this policy)`,
        report.sweep.review.current,
        report.sweep.review.rows,
        (c) => c.review + c.block,
        'held',
      ),
    )
  }
  return out.join('\n') + '\n'
}

/** The line saying where the labels of the backtest came from. */
export function labelSourceLine(bt: OrgBacktest, file: unknown): string {
  if (bt.labelSource === 'file') return `Labels: from ${String(file)}.`
  if (bt.labelSource === 'none' || !bt.outcomes) return 'Labels: none (no outcome storage, or --no-outcomes).'
  const o = bt.outcomes
  return (
    `Labels: the org's outcomes — ${fmtInt(o.labels)} current risk outcome(s) as labels (fraud, chargeback, account_takeover → fraud; legitimate → good)` +
    `${o.delivery > 0 ? `; ${fmtInt(o.delivery)} delivery outcome(s) are not labels` : ''}` +
    `${o.answersWithoutRequestId > 0 ? `; ${fmtInt(o.answersWithoutRequestId)} answer(s) logged without a request id cannot be matched` : ''}.`
  )
}

/** Warnings about what the backtest could not re-score, on stderr. */
export function reportSkipped(report: BacktestReport, io: { stderr: { write(text: string): unknown } }, prefix: string): void {
  if (report.skipped.no_factors > 0)
    io.stderr.write(
      `${prefix}: warning: ${fmtInt(report.skipped.no_factors)} answer(s) carry no factors (written by an older riskcheck) and were skipped\n`,
    )
  const unknown = Object.keys(report.unknownFactors)
  if (unknown.length > 0) io.stderr.write(`${prefix}: warning: factor codes this riskcheck does not know were ignored: ${unknown.join(', ')}\n`)
}

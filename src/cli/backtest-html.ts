/**
 * The HTML report of `riskcheck policy test --html`: one self-contained page — inline CSS and inline SVG, no script,
 * no external asset (a Content-Security-Policy forbids any) — with the transition matrix, the label outcomes, a
 * histogram of the candidate scores split by label with the policy's thresholds marked, the threshold sweeps and the
 * first changes. Every value from the answers (inputs, factor codes) is escaped.
 */
import { ACTIONS, type Action } from '../schema.js'
import { HISTOGRAM_BINS, type ActionCounts, type ActionMetrics, type BacktestReport, type Policy, type SweepRow } from '../scoring/index.js'
import { fmtInt, pct, share, type ReportHeading } from './backtest-text.js'

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text made safe for HTML content and quoted attributes. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c] as string)
}

const sum = (c: ActionCounts) => ACTIONS.reduce((n, a) => n + c[a], 0)
const COLORS = { fraud: '#c0392b', good: '#27ae60', unlabelled: '#7f8c9a' } as const

export function matrixTable(r: BacktestReport): string {
  const total = r.scored
  const head = `<tr><th scope="col">current ↓ / candidate →</th>${ACTIONS.map((a) => `<th scope="col">${a}</th>`).join('')}<th scope="col">total</th></tr>`
  const rows = ACTIONS.map((from) => {
    const cells = ACTIONS.map((to) => {
      const n = r.matrix[from][to]
      const alpha = total === 0 ? 0 : Math.min(0.85, 0.08 + (n / total) * 2)
      const tint = from === to ? `rgba(52,152,219,${alpha.toFixed(3)})` : `rgba(230,126,34,${alpha.toFixed(3)})`
      return `<td class="${from === to ? 'same' : 'moved'}" style="background:${n === 0 ? 'transparent' : tint}">${fmtInt(n)}<small>${share(n, total)}</small></td>`
    }).join('')
    return `<tr><th scope="row">${from}</th>${cells}<td>${fmtInt(r.totals.current[from])}<small>${share(r.totals.current[from], total)}</small></td></tr>`
  }).join('')
  const foot = `<tr><th scope="row">total</th>${ACTIONS.map((a) => `<td>${fmtInt(r.totals.candidate[a])}<small>${share(r.totals.candidate[a], total)}</small></td>`).join('')}<td>${fmtInt(total)}</td></tr>`
  return `<table id="matrix">${head}${rows}${foot}</table>`
}

export function labelTable(r: BacktestReport): string {
  const l = r.labels!
  const rows = (['fraud', 'good'] as const)
    .map((label) => {
      const of = sum(l[label].current)
      return ACTIONS.map(
        (a: Action, i) =>
          `<tr>${i === 0 ? `<th scope="rowgroup" rowspan="4" style="color:${COLORS[label]}">${label} (${fmtInt(of)})</th>` : ''}<td>${a}</td><td>${fmtInt(l[label].current[a])}<small>${share(l[label].current[a], of)}</small></td><td>${fmtInt(l[label].candidate[a])}<small>${share(l[label].candidate[a], of)}</small></td></tr>`,
      ).join('')
    })
    .join('')
  const note =
    `<p>${fmtInt(l.given)} labels given; ${fmtInt(l.matched)} answers labelled` +
    (l.unmatched > 0 ? `; ${fmtInt(l.unmatched)} labels matched no answer (e.g. ${escapeHtml(l.unmatchedExamples.slice(0, 3).join(', '))})` : '') +
    '.</p>'
  return `${note}<table id="labels"><tr><th scope="col">label</th><th scope="col">action</th><th scope="col">current</th><th scope="col">candidate</th></tr>${rows}</table>`
}

/** Precision and recall for fraud per action, and the good customers held, under both policies. */
export function metricsTable(r: BacktestReport): string {
  const m = r.labels!.metrics
  const row = (name: string, c: ActionMetrics, n: ActionMetrics) =>
    `<tr><th scope="row">${name}</th><td>${pct(c.precision)}</td><td>${pct(n.precision)}</td><td>${pct(c.recall)}</td><td>${pct(n.recall)}</td></tr>`
  const rows = ACTIONS.map((a) => row(a, m.current.actions[a], m.candidate.actions[a])).join('') + row('review or block', m.current.held, m.candidate.held)
  const held = (what: string, c: { count: number; share: number | null }, n: { count: number; share: number | null }) =>
    `<tr><th scope="row">${what}</th><td>${fmtInt(c.count)}<small>${pct(c.share)}</small></td><td>${fmtInt(n.count)}<small>${pct(n.share)}</small></td></tr>`
  return (
    `<table id="metrics"><tr><th scope="col">action</th><th scope="col">precision, current</th><th scope="col">precision, candidate</th><th scope="col">recall, current</th><th scope="col">recall, candidate</th></tr>${rows}</table>` +
    `<p class="meta">Precision: of the labelled answers given the action, the share that are fraud. Recall: of the fraud, the share given the action.</p>` +
    `<table id="good-held"><tr><th scope="col">good customers</th><th scope="col">current</th><th scope="col">candidate</th></tr>${held('blocked', m.current.goodBlocked, m.candidate.goodBlocked)}${held('sent to review', m.current.goodReview, m.candidate.goodReview)}</table>`
  )
}

/** The review queue: answers with action review under each policy. */
export function reviewQueueHtml(r: BacktestReport): string {
  const q = r.reviewQueue
  return `<p class="meta" id="review-queue">Review queue (answers with action review): <strong>${fmtInt(q.current)}</strong> now → <strong>${fmtInt(q.candidate)}</strong> with the candidate (${q.change > 0 ? '+' : ''}${fmtInt(q.change)}${q.ratio === null ? '' : `, ×${q.ratio.toFixed(2)}`}).</p>`
}

/** Stacked bars of candidate scores per 5-point bin, by label, with the thresholds as dashed lines. */
function histogramSvg(r: BacktestReport, policy: Policy): string {
  const W = 720
  const H = 280
  const left = 48
  const bottom = 46
  const top = 12
  const plotW = W - left - 12
  const plotH = H - top - bottom
  const groups = (['fraud', 'good', 'unlabelled'] as const).filter((g) => r.histogram[g].some((n) => n > 0))
  const totals = Array.from({ length: HISTOGRAM_BINS }, (_, i) => groups.reduce((n, g) => n + (r.histogram[g][i] ?? 0), 0))
  const max = Math.max(1, ...totals)
  const bw = plotW / HISTOGRAM_BINS
  const y = (n: number) => top + plotH - (n / max) * plotH
  const parts: string[] = []
  for (let i = 0; i < HISTOGRAM_BINS; i++) {
    let base = 0
    for (const g of groups) {
      const n = r.histogram[g][i] ?? 0
      if (n === 0) continue
      const y0 = y(base)
      const y1 = y(base + n)
      const lo = i * 5
      const hi = i === HISTOGRAM_BINS - 1 ? 100 : lo + 4
      parts.push(
        `<rect class="bar ${g}" x="${(left + i * bw + 1).toFixed(1)}" y="${y1.toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${Math.max(0.5, y0 - y1).toFixed(1)}" fill="${COLORS[g]}"><title>${g}, score ${lo}–${hi}: ${fmtInt(n)}</title></rect>`,
      )
      base += n
    }
  }
  const axis: string[] = [`<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="#333"/>`]
  for (let s = 0; s <= 100; s += 10) {
    const x = left + (s / 100) * plotW
    axis.push(`<text x="${x.toFixed(1)}" y="${top + plotH + 16}" text-anchor="middle">${s}</text>`)
  }
  axis.push(`<text x="${left - 6}" y="${top + 8}" text-anchor="end">${fmtInt(max)}</text><text x="${left - 6}" y="${top + plotH}" text-anchor="end">0</text>`)
  const t = policy.thresholds
  const marks = ([['verify', t.medium], ['review', t.high], ['block', t.critical]] as const).map(([name, v]) => {
    const x = left + (v / 100) * plotW
    return `<line class="threshold" x1="${x.toFixed(1)}" y1="${top}" x2="${x.toFixed(1)}" y2="${top + plotH}" stroke="#222" stroke-dasharray="4 3"/><text x="${(x + 3).toFixed(1)}" y="${top + 10}">${name} ${v}</text>`
  })
  const legend = groups
    .map((g, i) => `<rect x="${left + 10 + i * 90}" y="${H - 2 - 10}" width="10" height="10" fill="${COLORS[g]}"/><text x="${left + 24 + i * 90}" y="${H - 3}">${g}</text>`)
    .join('')
  return `<svg id="histogram" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="Candidate scores by label">${parts.join('')}${axis.join('')}${marks.join('')}${legend}</svg>`
}

function sweepTable(id: string, current: number, rows: SweepRow[], pick: (c: ActionCounts) => number, what: string): string {
  const body = rows
    .map((r) => {
      const f = sum(r.fraud)
      const g = sum(r.good)
      return `<tr${r.threshold === current ? ' class="current"' : ''}><td>${r.threshold}${r.threshold === current ? ' ◀' : ''}</td><td>${fmtInt(pick(r.fraud))}<small>${share(pick(r.fraud), f)}</small></td><td>${fmtInt(pick(r.good))}<small>${share(pick(r.good), g)}</small></td></tr>`
    })
    .join('')
  return `<table id="${id}"><tr><th scope="col">threshold</th><th scope="col">fraud ${what}</th><th scope="col">good ${what}</th></tr>${body}</table>`
}

function changesTable(r: BacktestReport, shown: number): string {
  const rows = r.changes
    .slice(0, shown)
    .map(
      (c) =>
        `<tr><td>${escapeHtml(c.input)}</td><td>${c.current.action}${c.current.score === null ? '' : ` ${c.current.score}`}</td><td>${c.candidate.action} ${c.candidate.score}</td>${r.labels ? `<td>${c.label ?? ''}</td>` : ''}<td>${escapeHtml(c.candidate.rule ?? '')}</td><td>${escapeHtml(c.factors.join(', '))}</td></tr>`,
    )
    .join('')
  const more = r.changed > Math.min(shown, r.changes.length) ? `<p>… and ${fmtInt(r.changed - Math.min(shown, r.changes.length))} more (riskcheck policy test --json lists them all).</p>` : ''
  return `<table id="changes"><tr><th scope="col">input</th><th scope="col">current</th><th scope="col">candidate</th>${r.labels ? '<th scope="col">label</th>' : ''}<th scope="col">rule</th><th scope="col">factors</th></tr>${rows}</table>${more}`
}

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2430;margin:2rem auto;max-width:980px;padding:0 1rem}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.15rem;margin:2rem 0 .5rem}
p.meta{color:#4a5568;margin:.2rem 0}code{background:#f1f3f5;padding:0 .25em;border-radius:3px}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d5dae1;padding:.3rem .6rem;text-align:right;vertical-align:top}
th{background:#f6f8fa;text-align:left}td small{display:block;color:#5b6677;font-size:.8em}
#changes td{text-align:left;word-break:break-all}tr.current td{font-weight:600;background:#fff7e0}
svg text{font:11px system-ui,sans-serif;fill:#333}.grid{display:flex;gap:2rem;flex-wrap:wrap}
`

/** The report page. `shown` is how many changes it lists. */
export function renderBacktestHtml(report: BacktestReport, heading: ReportHeading, policy: Policy, shown = 100): string {
  const skipped = Object.entries(report.skipped)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k.replace(/_/g, ' ')} ${fmtInt(n)}`)
  const sweeps = report.sweep
    ? `<h2>Threshold trade-off</h2><div class="grid"><section><h3>Block threshold (<code>thresholds.critical</code>)</h3>${sweepTable('sweep-block', report.sweep.block.current, report.sweep.block.rows, (c) => c.block, 'blocked')}</section><section><h3>Review threshold (<code>thresholds.high</code>), review or block</h3>${sweepTable('sweep-review', report.sweep.review.current, report.sweep.review.rows, (c) => c.review + c.block, 'held')}</section></div><p class="meta">Each threshold moved alone (the others pushed along only where their order requires); a context’s own threshold moves by the same amount; hard rules keep their actions. ◀ marks this policy.</p>`
    : ''
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>riskcheck policy backtest — ${escapeHtml(heading.policy)}</title>
<style>${CSS}</style>
</head>
<body>
<h1>Policy backtest</h1>
<p class="meta">Policy <code>${escapeHtml(heading.policy)}</code> (<code>${escapeHtml(heading.version)}</code>) over <code>${escapeHtml(heading.results)}</code>${heading.context ? `, every answer judged in context <code>${escapeHtml(heading.context)}</code>` : ''}.</p>
<p class="meta" id="summary">Read ${fmtInt(report.read)} answers: ${fmtInt(report.scored)} re-scored${skipped.length > 0 ? `, skipped ${skipped.join(', ')}` : ''}. ${fmtInt(report.changed)} change action (${share(report.changed, report.scored)}).</p>
<h2>Transition matrix</h2>
${matrixTable(report)}
${reviewQueueHtml(report)}
${report.labels ? `<h2>Labelled answers</h2>${labelTable(report)}<h2>Precision and recall for fraud</h2>${metricsTable(report)}` : ''}
<h2>Candidate scores${report.labels ? ' by label' : ''}</h2>
${histogramSvg(report, policy)}
${sweeps}
<h2>Changes</h2>
${changesTable(report, shown)}
</body>
</html>
`
}

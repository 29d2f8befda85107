/**
 * The usage page's stacked bar chart (days × lookup types) as inline SVG drawn on the server, and the ticks of its
 * y-axis. The SVG has no viewBox: text is drawn at its CSS size at every width, bars are placed in percent of the
 * chart's width and in pixels of its fixed height (docs/decisions.md, Team dashboard, "charts").
 */
import { html, type Html } from './html.js'

/** The y-axis labels of a chart at most this many ticks apart (plus the 0 tick). */
export const TARGET_TICKS = 4

/**
 * The ticks of an axis from 0 that covers `max`: 0, s, 2s, … up to the first multiple of s at or above `max`, with
 * the step s the smallest of 1, 2, 5 × 10^n (never under 1: the axis counts whole lookups and credits) that needs
 * at most `target` steps. Evenly spaced, ascending, at least two. A `max` that is not a positive number gets [0, 1].
 */
export function niceTicks(max: number, target = TARGET_TICKS): number[] {
  const top = Math.min(max, Number.MAX_SAFE_INTEGER)
  const n = Math.max(1, Math.floor(target))
  if (!(top > 0)) return [0, 1]
  let step = 1
  // compared as step * n >= top (no logarithm, no rounding): exact for safe integers
  for (let p = 1; step * n < top; p *= 10) {
    step = [1, 2, 5].map((m) => m * p).find((s) => s * n >= top) ?? 10 * p
  }
  const count = Math.ceil(top / step)
  return Array.from({ length: count + 1 }, (_, i) => i * step)
}

/** An axis label: the number with thousands separators (`12,500`). */
export const tickLabel = (n: number): string => n.toLocaleString('en-US', { maximumFractionDigits: 0 })

/** Height of a chart, its top margin and its bottom band (day labels), in CSS pixels. */
const H = 200
const TOP = 10
const BOTTOM = 24
/** Day labels on a wide chart, and on a narrow one (the others carry class `wide-only`, hidden by app.css). */
const DAY_LABELS_WIDE = 8
const DAY_LABELS_NARROW = 4

const pct = (v: number) => `${v.toFixed(3)}%`

/** Where day label `i` of `n` goes: centred on its bar, flush with the plot's edge at either end. */
function dayLabelX(i: number, n: number): { x: string; anchor: 'start' | 'middle' | 'end' } {
  const slot = 100 / n
  if (n > 1 && i === 0) return { x: pct(0), anchor: 'start' }
  if (n > 1 && i === n - 1) return { x: pct(100), anchor: 'end' }
  return { x: pct((i + 0.5) * slot), anchor: 'middle' }
}

/**
 * A stacked bar chart of `metric` per day and type: an axis column with the tick labels and the plot (gridlines,
 * bars with a tooltip each, day labels). Classes c0…c6 colour `types` in order (app.css).
 */
export function barChart(
  days: readonly string[],
  rows: ReadonlyArray<{ day: string; type: string; lookups: number; credits: number }>,
  metric: 'lookups' | 'credits',
  label: string,
  types: readonly string[],
): Html {
  const byDay = new Map<string, Map<string, number>>()
  for (const r of rows) {
    const m = byDay.get(r.day) ?? new Map<string, number>()
    m.set(r.type, (m.get(r.type) ?? 0) + r[metric])
    byDay.set(r.day, m)
  }
  const totals = days.map((d) => [...(byDay.get(d)?.values() ?? [])].reduce((a, b) => a + b, 0))
  const ticks = niceTicks(Math.max(0, ...totals))
  const axisMax = ticks[ticks.length - 1]!
  const y = (v: number) => TOP + (H - TOP - BOTTOM) * (1 - v / axisMax)
  const n = Math.max(1, days.length)
  const slot = 100 / n
  const barW = slot * 0.7
  const bars: Html[] = []
  days.forEach((d, i) => {
    let acc = 0
    const m = byDay.get(d)
    types.forEach((t, ti) => {
      const v = m?.get(t) ?? 0
      if (v === 0) return
      const y1 = y(acc + v)
      const y0 = y(acc)
      acc += v
      bars.push(
        html`<rect class="c${ti}" x="${pct(i * slot + (slot - barW) / 2)}" y="${y1.toFixed(1)}" width="${pct(barW)}" height="${Math.max(0.5, y0 - y1).toFixed(1)}"><title>${d} ${t}: ${v} ${metric}</title></rect>`,
      )
    })
  })
  const labels = ticks.map(tickLabel)
  const axisW = 10 + 8 * Math.max(...labels.map((l) => l.length))
  const wideEvery = Math.max(1, Math.ceil(days.length / DAY_LABELS_WIDE))
  const narrowEvery = wideEvery * Math.max(1, Math.ceil(DAY_LABELS_WIDE / DAY_LABELS_NARROW))
  const dayLabels = days.map((d, i) => {
    if (i % wideEvery !== 0) return ''
    const { x, anchor } = dayLabelX(i, n)
    return html`<text class="day${i % narrowEvery === 0 ? '' : ' wide-only'}" x="${x}" y="${H - 7}" text-anchor="${anchor}">${d.slice(5)}</text>`
  })
  const total = totals.reduce((a, b) => a + b, 0)
  return html`<figure class="card chart" data-testid="chart-${metric}"><figcaption><b>${label}</b></figcaption>
<div class="plot-row"><svg class="axis" width="${axisW}" height="${H}" aria-hidden="true" xmlns="http://www.w3.org/2000/svg">
${ticks.map((t, i) => html`<text class="tick" x="${axisW - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${labels[i]}</text>`)}
</svg><svg class="plot" height="${H}" role="img" aria-label="${label}: ${total} in the period" xmlns="http://www.w3.org/2000/svg">
${ticks.map((t) => html`<line x1="0" x2="100%" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}"/>`)}
${bars}
${dayLabels}
</svg></div>
<div class="legend">${types.map((t, ti) => html`<span><i class="c${ti}"></i>${t}</span>`)}</div></figure>`
}

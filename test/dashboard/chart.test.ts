/**
 * The usage charts' y-axis: ticks from 0 in steps of 1, 2 or 5 × 10^n that cover the largest bar, evenly spaced, with
 * distinct labels (a property test over any count and any tick target), and the SVG that draws them at every width
 * (no viewBox, so no text is scaled down on a narrow screen).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { barChart, niceTicks, tickLabel } from '../../src/dashboard/chart.js'

/** Whether `s` is 1, 2 or 5 × 10^n for an n ≥ 0. */
const isNiceStep = (s: number) => /^[125]0*$/.test(String(s))

describe('niceTicks', () => {
  it('the axis of the issue: a largest bar of 3 reads 0, 1, 2, 3 (not 0, 2, 3)', () => {
    expect(niceTicks(3)).toEqual([0, 1, 2, 3])
    expect(niceTicks(5)).toEqual([0, 2, 4, 6])
    expect(niceTicks(12)).toEqual([0, 5, 10, 15])
    expect(niceTicks(8)).toEqual([0, 2, 4, 6, 8])
    expect(niceTicks(9_992)).toEqual([0, 5_000, 10_000])
    expect(niceTicks(1)).toEqual([0, 1])
  })

  it('an empty or unreadable maximum gets the axis 0 to 1', () => {
    for (const max of [0, -3, Number.NaN, Number.NEGATIVE_INFINITY]) expect(niceTicks(max)).toEqual([0, 1])
  })

  it('counts beyond the safe integers stop at the largest safe one (every label still distinct)', () => {
    const ticks = niceTicks(Number.POSITIVE_INFINITY)
    expect(ticks[ticks.length - 1]).toBeGreaterThanOrEqual(Number.MAX_SAFE_INTEGER)
    expect(new Set(ticks.map(tickLabel)).size).toBe(ticks.length)
  })

  it('property: ascending from 0, evenly spaced by a 1/2/5×10^n step, covering the max without a spare step, labels distinct', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 1, max: 1_000 }), fc.double({ min: 0.001, max: 1e6, noNaN: true })),
        fc.integer({ min: 1, max: 10 }),
        (max, target) => {
          const ticks = niceTicks(max, target)
          expect(ticks[0]).toBe(0)
          expect(ticks.length).toBeGreaterThanOrEqual(2)
          expect(ticks.length).toBeLessThanOrEqual(target + 1)
          const step = ticks[1]! - ticks[0]!
          expect(isNiceStep(step)).toBe(true)
          for (let i = 1; i < ticks.length; i++) expect(ticks[i]! - ticks[i - 1]!).toBe(step)
          const top = ticks[ticks.length - 1]!
          expect(top).toBeGreaterThanOrEqual(max)
          expect(top - step).toBeLessThan(max)
          expect(ticks.every(Number.isInteger)).toBe(true)
          const labels = ticks.map(tickLabel)
          expect(new Set(labels).size).toBe(labels.length)
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('property: the step is the smallest nice one that needs at most `target` steps', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), fc.integer({ min: 1, max: 10 }), (max, target) => {
        const ticks = niceTicks(max, target)
        const step = ticks[1]!
        // the nice step below it: 5 → 2, 2 → 1, 1 → 0.5 of the decade (none under 1)
        const smaller = String(step)[0] === '5' ? step * 0.4 : step / 2
        if (smaller >= 1) expect(Math.ceil(max / smaller)).toBeGreaterThan(target)
      }),
      { numRuns: 2000 },
    )
  })
})

describe('barChart', () => {
  const days = Array.from({ length: 31 }, (_, i) => `2026-12-${String(i + 1).padStart(2, '0')}`)
  const types = ['email', 'phone', 'ip']
  const svgOf = (rows: Parameters<typeof barChart>[1]) => barChart(days, rows, 'credits', 'Credits per day by type', types).value

  it('draws one tick label per nice tick, text at its CSS size (no viewBox), bars in percent of the width', () => {
    const out = svgOf([
      { day: '2026-12-02', type: 'ip', lookups: 2, credits: 2 },
      { day: '2026-12-02', type: 'phone', lookups: 1, credits: 1 },
    ])
    expect(out).not.toContain('viewBox')
    expect([...out.matchAll(/<text class="tick"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1])).toEqual(['0', '1', '2', '3'])
    const rects = [...out.matchAll(/<rect [^>]*x="([\d.]+)%"[^>]*width="([\d.]+)%"/g)]
    expect(rects).toHaveLength(2)
    for (const [, x, w] of rects) expect(Number(x) + Number(w)).toBeLessThanOrEqual(100)
    expect(out).toContain('<title>2026-12-02 ip: 2 credits</title>')
  })

  it('gridlines evenly spaced: the same number of pixels between every two ticks', () => {
    const out = svgOf([{ day: '2026-12-05', type: 'email', lookups: 9_992, credits: 9_992 }])
    const ys = [...out.matchAll(/<line [^>]*y1="([\d.]+)"/g)].map((m) => Number(m[1]))
    expect(ys.length).toBe(3)
    const gaps = ys.slice(1).map((y, i) => Math.abs(y - ys[i]!))
    expect(Math.max(...gaps) - Math.min(...gaps)).toBeLessThan(0.11)
    expect([...out.matchAll(/<text class="tick"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1])).toEqual(['0', '5,000', '10,000'])
  })

  it('labels at most 8 days, 4 of them also on a narrow screen (the others are wide-only)', () => {
    const out = svgOf([])
    const all = [...out.matchAll(/<text class="day( wide-only)?"/g)]
    expect(all.length).toBeLessThanOrEqual(8)
    expect(all.filter((m) => !m[1]).length).toBeLessThanOrEqual(4)
    expect(all.filter((m) => !m[1]).length).toBeGreaterThanOrEqual(2)
  })
})

import { describe, expect, it } from 'vitest'
import { buildLanes } from './schedule.js'

function lanesOf(q: ReturnType<typeof buildLanes>): number[][] {
  const out: number[][] = []
  for (let l = q.next(); l; l = q.next()) out.push(Array.from(q.order.subarray(l.start, l.end)))
  return out
}

describe('buildLanes', () => {
  it('without grouping, every item is its own lane in input order', () => {
    expect(lanesOf(buildLanes(4, null, 2))).toEqual([[0], [1], [2], [3]])
  })

  it('groups items (first-seen group order, input order inside) and splits each group into at most `width` lanes', () => {
    const groups = ['a', 'b', 'a', 'c', 'a', 'b', 'a', null, 'a']
    const q = buildLanes(groups.length, (i) => groups[i] ?? null, 2)
    expect(lanesOf(q)).toEqual([[0, 2, 4], [6, 8], [1], [5], [3], [7]])
    expect(Array.from(q.order).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
  })

  it('width 1 makes one sequential lane per group', () => {
    const groups = ['x', 'y', 'x', 'y']
    expect(lanesOf(buildLanes(4, (i) => groups[i]!, 1))).toEqual([[0, 2], [1, 3]])
  })
})

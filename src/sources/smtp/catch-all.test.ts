import { describe, expect, it } from 'vitest'
import { createCatchAllMemo } from './catch-all.js'

describe('createCatchAllMemo', () => {
  it('one probe per domain: concurrent callers share the running probe, later ones the remembered answer', async () => {
    let t = 0
    let hits = 0
    let probes = 0
    const memo = createCatchAllMemo({ ttlMs: 100, now: () => t, onHit: () => hits++ })
    let finish!: (v: boolean) => void
    const run = () => {
      probes++
      return new Promise<boolean>((r) => (finish = r))
    }
    const first = memo.probe('a.test', run)
    const second = memo.probe('a.test', run)
    finish(true)
    expect(await first).toEqual({ value: true, failed: false })
    expect(await second).toEqual({ value: true, failed: false })
    expect(await memo.probe('a.test', run)).toEqual({ value: true, failed: false })
    expect({ probes, hits }).toEqual({ probes: 1, hits: 2 })
    t = 100 // expired by the injected clock
    expect(memo.known('a.test')).toBeUndefined()
  })

  it('a failed probe: its owner learns it failed, waiters get null, nothing is remembered', async () => {
    const memo = createCatchAllMemo({ ttlMs: 100, now: () => 0 })
    let fail!: (e: Error) => void
    const mine = memo.probe('b.test', () => new Promise<boolean>((_, reject) => (fail = reject)))
    const other = memo.probe('b.test', async () => true)
    fail(new Error('no reply'))
    expect(await mine).toEqual({ value: null, failed: true })
    expect(await other).toEqual({ value: null, failed: false })
    expect(memo.known('b.test')).toBeUndefined()
  })

  it('a rejected address proves "not catch-all" without overriding a live answer', () => {
    const memo = createCatchAllMemo({ ttlMs: 100, now: () => 0 })
    memo.rememberNotCatchAll('c.test')
    expect(memo.known('c.test')).toBe(false)
  })
})

/**
 * Reloads of lists and outcomes that overlap a loader's first load: a load that finishes is put in force unless a
 * newer one already is, lookups never spin on a load that finished, and a reload without an argument calls the
 * loader given to createRiskcheck. Loaders are promises resolved by hand (no sleeps); each test names what it caught.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { CheckOutcome } from '../src/checks/types.js'
import type { ListDefinition } from '../src/lists/types.js'
import type { OutcomeEntry } from '../src/outcomes/file.js'
import type { OutcomesHolder } from '../src/outcomes/holder.js'
import type { LabelSets } from '../src/outcomes/rules.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { answerWithLists } from '../src/signals.js'
import { gate, type Gate } from './gate.js'

const NOW = new Date('2026-11-22T12:00:00Z')
const FRAUD: OutcomeEntry[] = [{ input: '8.8.8.8', type: 'ip', outcome: 'fraud' }]
const block = (name: string): ListDefinition[] => [{ id: name, name, kind: 'block', itemType: 'ip', items: ['8.8.8.8'] }]

/** A loader whose n-th call answers when `calls[n]` is resolved by hand. */
function handLoader<T>() {
  const calls: Gate<T>[] = []
  const loader = () => {
    const g = gate<T>()
    calls.push(g)
    return g.promise
  }
  return { calls, loader }
}
/** Turns of the event loop until `done()` (a bounded number: fails rather than waits). */
async function turnsUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setImmediate(r))
}

const instances: Riskcheck[] = []
const make = (options: Parameters<typeof createRiskcheck>[0]) => {
  const rc = createRiskcheck({ offline: true, now: () => NOW, ...options })
  instances.push(rc)
  return rc
}
afterAll(async () => {
  for (const rc of instances) await rc.close()
})

describe('outcomes: a reload during the first load', () => {
  // Before the fix: the first load, finishing after the reload started, was never put in force (summary null) and a
  // lookup spun in a microtask loop until the heap ran out. The summary is asserted first, so the old code fails here.
  it('a first load that finishes while a reload runs is in force; the reload, newer, replaces it', async () => {
    const { calls, loader } = handLoader<OutcomeEntry[]>()
    const rc = make({ outcomes: loader })
    const reload = rc.reloadOutcomes()
    expect(calls).toHaveLength(2)
    calls[0]!.resolve(FRAUD)
    await turnsUntil(() => rc.outcomesSummary() !== null)
    expect(rc.outcomesSummary()).toEqual({ entries: 1, ignored: 0, bounced: 0, fraud: 1 })
    expect((await rc.ip('8.8.8.8')).risk.factors).toContain('reported_fraud_before')
    calls[1]!.resolve([])
    expect(await reload).toEqual({ entries: 0, ignored: 0, bounced: 0, fraud: 0 })
    expect((await rc.ip('8.8.8.8')).risk.factors).not.toContain('reported_fraud_before')
  })

  // Before the fix: as above, with a reload that failed (the reviewer's race2).
  it('a failed reload does not keep a first load that finishes later out of force', async () => {
    const { calls, loader } = handLoader<OutcomeEntry[]>()
    const rc = make({ outcomes: loader })
    const reload = rc.reloadOutcomes()
    calls[1]!.reject(new Error('db hiccup'))
    await expect(reload).rejects.toThrow('db hiccup')
    calls[0]!.resolve(FRAUD)
    await turnsUntil(() => rc.outcomesSummary() !== null)
    expect(rc.outcomesSummary()).toMatchObject({ fraud: 1 })
    expect((await rc.ip('8.8.8.8')).risk.factors).toContain('reported_fraud_before')
  })

  // Before the fix: a lookup waiting for the first load kept waiting (here forever) after a reload was in force.
  it('a reload that finishes first is in force, releases waiting lookups, and the older first load does not replace it', { timeout: 10_000 }, async () => {
    const { calls, loader } = handLoader<OutcomeEntry[]>()
    const rc = make({ outcomes: loader })
    const early = rc.ip('8.8.8.8')
    const reload = rc.reloadOutcomes()
    calls[1]!.resolve(FRAUD)
    await reload
    expect((await early).risk.factors).toContain('reported_fraud_before')
    calls[0]!.resolve([])
    await turnsUntil(() => false)
    expect(rc.outcomesSummary()).toMatchObject({ entries: 1, fraud: 1 })
    expect((await rc.ip('8.8.8.8')).risk.factors).toContain('reported_fraud_before')
  })

  it('a failed first load with nothing in force fails waiting lookups; a reload then works', async () => {
    const { calls, loader } = handLoader<OutcomeEntry[]>()
    const rc = make({ outcomes: loader })
    const early = rc.ip('8.8.8.8')
    calls[0]!.reject(new Error('file gone'))
    await expect(early).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' })
    const reload = rc.reloadOutcomes()
    calls[1]!.resolve(FRAUD)
    await reload
    expect((await rc.ip('8.8.8.8')).risk.factors).toContain('reported_fraud_before')
  })
})

describe('answerWithLists', () => {
  // Before the fix it asked the outcomes again after their promise resolved: a holder still answering a promise made
  // it recurse without end (here cut off at 50 asks, so the old code rejects instead of hanging).
  it('goes on once the outcomes promise resolves, asking once', async () => {
    let asks = 0
    const sets = {} as LabelSets
    const outcomes = {
      current() {
        if (++asks > 50) throw new Error('spins: asked for the outcomes 50 times')
        return Promise.resolve(sets)
      },
    } as unknown as OutcomesHolder
    const outcome = { details: {}, factors: [], reasons: {} } as unknown as CheckOutcome<Record<string, unknown>>
    const answered = await answerWithLists({ lists: null, velocity: null, outcomes }, 'ip', outcome, NOW.getTime())
    expect(asks).toBe(1)
    expect(answered.details).toEqual({ lists: [], velocity: null })
  })
})

describe('lists: a reload during the first load', () => {
  // Before the fix: listsSummary() answered [] while the first load's lists were in force (the reviewer's race).
  it('a failed reload does not keep a first load that finishes later out of force', async () => {
    const { calls, loader } = handLoader<ListDefinition[]>()
    const rc = make({ lists: loader })
    const reload = rc.reloadLists()
    calls[1]!.reject(new Error('db hiccup'))
    await expect(reload).rejects.toThrow('db hiccup')
    calls[0]!.resolve(block('Block1'))
    await turnsUntil(() => rc.listsSummary().length > 0)
    expect(rc.listsSummary().map((l) => l.name)).toEqual(['Block1'])
    expect((await rc.ip('8.8.8.8')).details.lists.map((m) => m.list_id)).toEqual(['Block1'])
  })

  // Before the fix: the same, with a reload still running; then the reload, newer, replaces the first lists.
  it('a first load that finishes while a reload runs is in force until the reload finishes', async () => {
    const { calls, loader } = handLoader<ListDefinition[]>()
    const rc = make({ lists: loader })
    const reload = rc.reloadLists()
    calls[0]!.resolve(block('Block1'))
    await turnsUntil(() => rc.listsSummary().length > 0)
    expect(rc.listsSummary().map((l) => l.name)).toEqual(['Block1'])
    calls[1]!.resolve(block('Block2'))
    await reload
    expect(rc.listsSummary().map((l) => l.name)).toEqual(['Block2'])
  })

  // Before the fix: a lookup waiting for the first load kept waiting (here forever) after a reload was in force.
  it('a reload that finishes first releases waiting lookups; the older first load does not replace it', { timeout: 10_000 }, async () => {
    const { calls, loader } = handLoader<ListDefinition[]>()
    const rc = make({ lists: loader })
    const early = rc.ip('8.8.8.8')
    const reload = rc.reloadLists()
    calls[1]!.resolve(block('Block2'))
    await reload
    expect((await early).details.lists.map((m) => m.list_id)).toEqual(['Block2'])
    calls[0]!.resolve(block('Block1'))
    await turnsUntil(() => false)
    expect(rc.listsSummary().map((l) => l.name)).toEqual(['Block2'])
  })
})

describe('a reload without an argument calls the loader given to createRiskcheck', () => {
  // Before the fix: after reloadLists(next), reloadLists() compiled `next` again and the loader was never called.
  it('lists: also after reloadLists(next) replaced them', async () => {
    let calls = 0
    const rc = make({ lists: async () => (calls++, block('FromLoader')) })
    await rc.reloadLists()
    expect(calls).toBe(2)
    await rc.reloadLists(block('Given'))
    expect((await rc.reloadLists()).map((l) => l.name)).toEqual(['FromLoader'])
    expect(calls).toBe(3)
  })

  // Before the fix: the same for outcomes.
  it('outcomes: also after reloadOutcomes(next) replaced them', async () => {
    let calls = 0
    const rc = make({ outcomes: async () => (calls++, FRAUD) })
    await rc.reloadOutcomes([])
    expect(await rc.reloadOutcomes()).toMatchObject({ fraud: 1 })
    expect(calls).toBe(2)
  })

  // Unchanged: an instance given no loader reloads the source of what is in force.
  it('without a loader at createRiskcheck, the loader last put in force is called again', async () => {
    let calls = 0
    const rc = make({ lists: block('Given') })
    await rc.reloadLists(async () => (calls++, block('Later')))
    expect((await rc.reloadLists()).map((l) => l.name)).toEqual(['Later'])
    expect(calls).toBe(2)
  })
})

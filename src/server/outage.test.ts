import { describe, expect, it } from 'vitest'
import { createAvailability, markSentIn } from './outage.js'

describe('createAvailability', () => {
  const setup = () => {
    let answers = false
    const changes: string[] = []
    const a = createAvailability({
      dependency: 'database',
      intervalMs: 60_000,
      probe: async () => {
        if (!answers) throw new Error('Query read timeout')
      },
    })
    a.onChange((c) => changes.push(c.state))
    return { a, changes, answer: (yes: boolean) => void (answers = yes) }
  }

  it('a failure starts an outage, a probe that answers ends it; each change counts a generation', async () => {
    const { a, changes, answer } = setup()
    expect(a.generation).toBe(0)
    a.failed(markSentIn(new Error('Query read timeout'), a.generation))
    expect(a.down).toBe(true)
    expect(a.generation).toBe(1)
    expect(await a.check()).toMatchObject({ ok: false })
    answer(true)
    expect(await a.check()).toEqual({ ok: true })
    expect([a.down, a.generation, changes]).toEqual([false, 2, ['down', 'up']])
    a.close()
  })

  it('a call sent before the last recovery that fails after it is stale: no second outage', async () => {
    const { a, changes, answer } = setup()
    const sentBefore = a.generation // a call sent while up, lost in the outage that follows
    a.failed(markSentIn(new Error('Query read timeout'), a.generation))
    const sentDuring = a.generation // one sent while down (past the gate)
    answer(true)
    await a.check()
    a.failed(markSentIn(new Error('Query read timeout'), sentBefore))
    a.failed(markSentIn(new Error('Query read timeout'), sentDuring))
    expect([a.down, changes]).toEqual([false, ['down', 'up']])
    // a call sent since, or a failure that names no call (a connection cut), is news
    a.failed(markSentIn(new Error('Connection terminated unexpectedly'), a.generation))
    expect(a.down).toBe(true)
    await a.check()
    a.failed(new Error('Connection terminated unexpectedly'))
    expect(changes).toEqual(['down', 'up', 'down', 'up', 'down'])
    a.close()
  })

  it('while down, every failure is counted, whenever its call was sent', async () => {
    const { a, changes, answer } = setup()
    a.failed(markSentIn(new Error('Query read timeout'), 0))
    a.failed(markSentIn(new Error('Query read timeout'), 0))
    a.failed(new Error('Query read timeout'))
    answer(true)
    const up: number[] = []
    a.onChange((c) => void (c.state === 'up' && up.push(c.failures)))
    await a.check()
    expect([changes, up]).toEqual([['down', 'up'], [3]])
    a.close()
  })
})

describe('markSentIn', () => {
  it('a failure reported again without its generation is judged by the one it was marked with', async () => {
    const a = createAvailability({ dependency: 'database', intervalMs: 60_000, probe: async () => undefined })
    const lost = markSentIn(new Error('Query read timeout'), a.generation)
    a.failed(markSentIn(new Error('Query read timeout'), a.generation))
    await a.check()
    a.failed(lost) // e.g. the request's error handler reporting what the pool reported
    expect(a.down).toBe(false)
    a.failed(markSentIn(new Error('Query read timeout'), a.generation))
    expect(a.down).toBe(true)
    a.close()
  })
})

import { describe, expect, it } from 'vitest'
import { batchWriter } from './batch-writer.js'

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('batchWriter', () => {
  it('writes what one turn added as one batch, the next turn as another', async () => {
    const batches: number[][] = []
    const w = batchWriter<number>(async (b) => void batches.push(b), 100)
    w.add(1)
    w.add(2)
    await turn()
    w.add(3)
    await turn()
    expect(batches).toEqual([[1, 2], [3]])
  })

  it('writes at once when max items wait', async () => {
    const batches: number[][] = []
    const w = batchWriter<number>(async (b) => void batches.push(b), 3)
    for (let i = 0; i < 7; i++) w.add(i)
    expect(batches).toEqual([])
    await Promise.resolve()
    await w.flush()
    expect(batches).toEqual([[0, 1, 2], [3, 4, 5], [6]])
  })

  it('writes batches one after the other; flush resolves once every earlier batch is written', async () => {
    const order: string[] = []
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const w = batchWriter<string>(async (b) => {
      order.push(`start ${b.join()}`)
      if (b[0] === 'a') await gate
      order.push(`end ${b.join()}`)
    }, 100)
    w.add('a')
    const first = w.flush()
    w.add('b')
    const second = w.flush()
    await turn()
    expect(order).toEqual(['start a'])
    release()
    await second
    expect(order).toEqual(['start a', 'end a', 'start b', 'end b'])
    await first
    // nothing waiting: a flush is the batch in flight (here none)
    await w.flush()
    expect(order).toHaveLength(4)
  })
})

import { describe, expect, it } from 'vitest'
import { Semaphore } from './semaphore.js'

describe('Semaphore', () => {
  it('admits `size` holders and hands slots to waiters in FIFO order', async () => {
    const s = new Semaphore(2)
    expect(s.acquire()).toBeUndefined()
    expect(s.acquire()).toBeUndefined()
    expect(s.inUse).toBe(2)
    const order: number[] = []
    const w1 = (s.acquire() as Promise<void>).then(() => order.push(1))
    const w2 = (s.acquire() as Promise<void>).then(() => order.push(2))
    expect(s.waiting).toBe(2)
    s.release()
    await w1
    expect(order).toEqual([1])
    s.release()
    await w2
    expect(order).toEqual([1, 2])
    s.release()
    s.release()
    expect(s.inUse).toBe(0)
  })

  it('wakeAll wakes every waiter; their releases balance the count', async () => {
    const s = new Semaphore(1)
    s.acquire()
    const woken = [s.acquire(), s.acquire(), s.acquire()] as Array<Promise<void>>
    s.wakeAll()
    await Promise.all(woken)
    expect(s.waiting).toBe(0)
    expect(s.inUse).toBe(4)
    for (let i = 0; i < 4; i++) s.release()
    expect(s.inUse).toBe(0)
    expect(s.acquire()).toBeUndefined()
  })

  it('acquireUnless: a waiter whose signal aborts leaves the queue; the slot goes to the next one', async () => {
    const s = new Semaphore(1)
    const first = new AbortController()
    expect(s.acquireUnless(first.signal)).toBe(true)
    const late = new AbortController()
    const gaveUp = s.acquireUnless(late.signal) as Promise<boolean>
    const next = s.acquireUnless(new AbortController().signal) as Promise<boolean>
    expect(s.waiting).toBe(2)
    late.abort()
    expect(await gaveUp).toBe(false)
    expect(s.waiting).toBe(1)
    s.release()
    expect(await next).toBe(true)
    expect(s.inUse).toBe(1)
    s.release()
    expect(s.inUse).toBe(0)
    // already aborted: no slot taken
    const aborted = new AbortController()
    aborted.abort()
    expect(s.acquireUnless(aborted.signal)).toBe(false)
    expect(s.inUse).toBe(0)
  })

  it('acquireUnless: a slot handed over before the abort is kept (the caller releases it)', async () => {
    const s = new Semaphore(1)
    s.acquire()
    const ac = new AbortController()
    const got = s.acquireUnless(ac.signal) as Promise<boolean>
    s.release() // handed to the waiter
    ac.abort() // same turn: too late to give up
    expect(await got).toBe(true)
    expect(s.inUse).toBe(1)
    s.release()
    expect(s.inUse).toBe(0)
  })

  it('wakeAll also wakes acquireUnless waiters, holding a slot each', async () => {
    const s = new Semaphore(1)
    s.acquire()
    const w = s.acquireUnless(new AbortController().signal) as Promise<boolean>
    s.wakeAll()
    expect(await w).toBe(true)
    expect(s.inUse).toBe(2)
  })

  it('refuses a size below 1', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError)
    expect(() => new Semaphore(1.5)).toThrow(RangeError)
  })
})

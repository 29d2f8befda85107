import { mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DataLockedError, withDataLock } from './lock.js'

const root = mkdtempSync(join(tmpdir(), 'riskcheck-lock-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('the data directory lock', () => {
  it('a second holder is refused while the first runs; the lock is released afterwards', async () => {
    const dir = join(root, 'a')
    let release!: () => void
    let entered!: () => void
    const held = new Promise<void>((r) => (entered = r))
    const first = withDataLock(dir, () => {
      entered()
      return new Promise<string>((r) => (release = () => r('first')))
    })
    await held
    await expect(withDataLock(dir, async () => 'second')).rejects.toBeInstanceOf(DataLockedError)
    release()
    expect(await first).toBe('first')
    expect(await withDataLock(dir, async () => 'third')).toBe('third')
  })

  it('waits for the holder when asked to', async () => {
    const dir = join(root, 'b')
    const order: string[] = []
    let entered!: () => void
    const held = new Promise<void>((r) => (entered = r))
    const first = withDataLock(dir, async () => {
      entered()
      // Held past the waiter's first try (it retries every 500 ms).
      await new Promise((r) => setTimeout(r, 700))
      order.push('first')
    })
    await held
    await withDataLock(dir, async () => void order.push('second'), { waitMs: 10_000 })
    await first
    expect(order).toEqual(['first', 'second'])
  })

  it('a lock left by a crashed process (not refreshed) is stale and taken over', async () => {
    const dir = join(root, 'c')
    mkdirSync(join(dir, 'update.lock'), { recursive: true })
    // Last refreshed long ago: far beyond any stale limit.
    const old = new Date('2001-01-01T00:00:00Z')
    utimesSync(join(dir, 'update.lock'), old, old)
    expect(await withDataLock(dir, async () => 'taken over', { staleMs: 2000 })).toBe('taken over')
  })
})

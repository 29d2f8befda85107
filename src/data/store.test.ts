import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { isSetId, listSets, newSetId, pointerStamp, pruneSets, readPointer, switchPointer } from './store.js'

const root = mkdtempSync(join(tmpdir(), 'riskcheck-store-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

function fakeSet(dir: string, id: string) {
  mkdirSync(join(dir, 'sets', id), { recursive: true })
  writeFileSync(join(dir, 'sets', id, 'manifest.json'), '{}')
}

describe('the data directory store', () => {
  it('set ids sort by creation, even when the clock does not move forward', () => {
    const dir = join(root, 'ids')
    const now = new Date('2026-11-23T06:12:00.500Z')
    const a = newSetId(dir, now)
    expect(isSetId(a)).toBe(true)
    expect(a.startsWith('20261123T061200Z-')).toBe(true)
    fakeSet(dir, a)
    const b = newSetId(dir, now) // same clock: one second later
    expect(b.startsWith('20261123T061201Z-')).toBe(true)
    fakeSet(dir, b)
    const c = newSetId(dir, new Date('2026-11-22T00:00:00Z')) // a clock set back
    expect(c > b).toBe(true)
    expect(listSets(dir)).toEqual([a, b])
  })

  it('the pointer: none, a set, garbage; its stamp changes on every switch', () => {
    const dir = join(root, 'ptr')
    mkdirSync(dir, { recursive: true })
    expect(readPointer(dir)).toBeNull()
    expect(pointerStamp(dir)).toBeNull()
    const a = newSetId(dir, new Date('2026-11-23T00:00:00Z'))
    fakeSet(dir, a)
    switchPointer(dir, a)
    expect(readPointer(dir)).toBe(a)
    const s1 = pointerStamp(dir)
    switchPointer(dir, a)
    expect(pointerStamp(dir)).not.toBe(s1) // a new file (inode) even for the same id
    expect(() => switchPointer(dir, '20261123T000000Z-ffffff')).toThrow(/no set/)
    expect(() => switchPointer(dir, '../x')).toThrow(/not a set id/)
    writeFileSync(join(dir, 'current'), 'sets/../../x')
    expect(() => readPointer(dir)).toThrow(/does not name a data set/)
  })

  it('prune keeps the newest sets and the one in force, and removes crash leftovers', () => {
    const dir = join(root, 'prune')
    const ids = [0, 1, 2, 3, 4].map((i) => {
      const id = newSetId(dir, new Date(Date.UTC(2026, 10, 23, 0, i)))
      fakeSet(dir, id)
      return id
    })
    switchPointer(dir, ids[1] as string) // rolled back to an old one
    mkdirSync(join(dir, 'staging', 'x'), { recursive: true })
    writeFileSync(join(dir, 'current.123.abc.tmp'), 'x')
    expect(pruneSets(dir, 2)).toEqual([ids[0], ids[2]])
    expect(listSets(dir)).toEqual([ids[1], ids[3], ids[4]])
    expect(existsSync(join(dir, 'staging'))).toBe(false)
    expect(existsSync(join(dir, 'current.123.abc.tmp'))).toBe(false)
  })
})

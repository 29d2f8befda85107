/**
 * The SQLite velocity store keeps what its connection last read of a key (src/server/store/sqlite/velocity.ts): its
 * counts must stay those of the rows in the file — two connections on one file hitting the same keys in turn, with
 * retries, windows rolling over and the clock going back; a hit whose transaction is rolled back leaves nothing
 * behind — and a warm hit is one INSERT and one PRAGMA read, counted.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { groupCommit } from '../src/server/store/sqlite/group-commit.js'
import { createSqliteStore } from '../src/server/store/sqlite/store.js'
import { createSqliteVelocityStore } from '../src/server/store/sqlite/velocity.js'
import { DAY_MS, HOUR_MS } from '../src/velocity/store.js'

const dir = mkdtempSync(join(tmpdir(), 'rc-velocity-known-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/**
 * The counts the rows give: every check of a key, a retry under its id within the day counted once. Rows older than
 * the day at the latest time seen may be deleted, so after the clock went back a day count lies between the count
 * without them (`dayLeast`) and with them (`day`); the hour is exact.
 */
function model() {
  const rows = new Map<string, Array<{ at: number; id: string | null }>>()
  let latest = -Infinity
  return (keys: readonly string[], now: number, id: string | null) => {
    latest = Math.max(latest, now)
    return keys.map((key) => {
      const r = rows.get(key) ?? []
      rows.set(key, r)
      const again = id !== null && r.some((x) => x.id === id && x.at > now - DAY_MS)
      if (!again) r.push({ at: Math.max(now, r.at(-1)?.at ?? now), id })
      const since = (t: number) => r.filter((x) => x.at > t).length
      return { hour: since(now - HOUR_MS), day: since(now - DAY_MS), dayLeast: since(latest - DAY_MS) }
    })
  }
}

/** A tiny seeded generator (the same run every time). */
const rng = (seed: number) => () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)

describe('SQLite velocity: what a connection knows of a key', () => {
  it('two connections on one file, in turn and with group commits: the counts of the rows, every hit', async () => {
    const file = join(dir, 'two.sqlite')
    const a = createSqliteStore(file)
    const b = createSqliteStore(file)
    const va = createSqliteVelocityStore(a.db, groupCommit(a.db))
    const vb = createSqliteVelocityStore(b.db)
    const expected = model()
    const next = rng(7)
    const keys = ['li:a', 'ln:a', 'li:b', 'ld:c']
    let now = Date.UTC(2026, 0, 1)
    for (let i = 0; i < 600; i++) {
      // mostly forward by up to 20 minutes, now and then back by up to 40 (another clock)
      now += next() < 0.1 ? -Math.floor(next() * 40 * 60_000) : Math.floor(next() * 20 * 60_000)
      const ks = keys.filter(() => next() < 0.6)
      if (ks.length === 0) continue
      const id = next() < 0.2 ? `c${Math.floor(next() * 5)}` : null
      const store = next() < 0.7 ? va : vb
      const got = await store.hit(ks, now, id ?? undefined)
      expected(ks, now, id).forEach((want, j) => {
        expect(got[j]!.hour, `hit ${i}, ${ks[j]}`).toBe(want.hour)
        expect(got[j]!.day, `hit ${i}, ${ks[j]}`).toBeLessThanOrEqual(want.day)
        expect(got[j]!.day, `hit ${i}, ${ks[j]}`).toBeGreaterThanOrEqual(want.dayLeast)
      })
    }
    a.close()
    b.close()
  })

  it('a hit rolled back with its group is forgotten: the next one counts the rows there are', async () => {
    const s = createSqliteStore(join(dir, 'rollback.sqlite'))
    const group = groupCommit(s.db)
    const v = createSqliteVelocityStore(s.db, group)
    const now = Date.UTC(2026, 0, 1)
    expect(await v.hit(['k'], now)).toEqual([{ hour: 1, day: 1 }])
    expect(await v.hit(['k'], now + 1)).toEqual([{ hour: 2, day: 2 }])
    // the hit runs, then a write of its group loses the whole transaction (as a full disk does)
    const hit = v.hit(['k'], now + 2)
    const lost = group(() => {
      s.db.exec('ROLLBACK')
      throw new Error('the disk is full')
    })
    await expect(hit).rejects.toThrow('the disk is full')
    await expect(lost).rejects.toThrow('the disk is full')
    expect(await v.hit(['k'], now + 3)).toEqual([{ hour: 3, day: 3 }])
    s.close()
  })

  it('a first hit of two keys reads that they have no rows, then one INSERT; a warm hit is one INSERT and one PRAGMA read; a purge by another store on the connection is seen', async () => {
    const s = createSqliteStore(join(dir, 'count.sqlite'))
    const v = createSqliteVelocityStore(s.db, groupCommit(s.db))
    const now = Date.UTC(2026, 0, 1)
    const ran: string[] = []
    const prepare = s.db.prepare.bind(s.db)
    const Stmt = Object.getPrototypeOf(prepare('SELECT 1'))
    const methods = ['run', 'get', 'all'] as const
    const saved = methods.map((m) => Stmt[m])
    methods.forEach((m, i) => (Stmt[m] = function (this: { source: string }, ...args: unknown[]) {
      ran.push(this.source.split(' ').slice(0, 2).join(' '))
      return saved[i].apply(this, args)
    }))
    const statements = () => ran.splice(0).filter((r) => !/^(BEGIN|COMMIT)/.test(r))
    try {
      expect(await v.hit(['i', 'n'], now)).toEqual([{ hour: 1, day: 1 }, { hour: 1, day: 1 }])
      expect(statements()).toEqual(['PRAGMA data_version', 'SELECT seq,', 'SELECT seq,', 'INSERT INTO'])
      expect(await v.hit(['i', 'n'], now + 1000)).toEqual([{ hour: 2, day: 2 }, { hour: 2, day: 2 }])
      expect(statements()).toEqual(['PRAGMA data_version', 'INSERT INTO'])
    } finally {
      methods.forEach((m, i) => (Stmt[m] = saved[i]))
    }
    // a day later, another store on the same connection sweeps the old rows: this one's marks go with them
    const later = now + DAY_MS + HOUR_MS
    expect(createSqliteVelocityStore(s.db).purge(later)).toBe(4)
    expect(await v.hit(['i'], later)).toEqual([{ hour: 1, day: 1 }])
    s.close()
  })
})

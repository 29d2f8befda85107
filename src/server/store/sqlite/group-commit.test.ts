import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createSqliteStore } from './store.js'
import { groupCommit } from './group-commit.js'

const dirs: string[] = []
const tempDb = () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-group-'))
  dirs.push(dir)
  return join(dir, 'g.sqlite')
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('SQLite group commit', () => {
  it('writes of one turn share one transaction; a throwing write rolls back alone; every promise settles after the commit', async () => {
    const path = tempDb()
    const db = new Database(path)
    db.pragma('journal_mode = WAL')
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)')
    const other = new Database(path, { readonly: true })
    const visible = () => (other.prepare('SELECT n FROM t ORDER BY n').all() as Array<{ n: number }>).map((r) => r.n)
    const duringLast: number[][] = []
    const insert = db.transaction((n: number, fail: boolean) => {
      db.prepare('INSERT INTO t (n) VALUES (?)').run(n)
      // what another connection sees while the group runs: nothing of it (one transaction, not yet committed)
      if (n === 3) duringLast.push(visible())
      if (fail) throw new Error(`write ${n} failed`)
      return n
    })
    const group = groupCommit(db)
    const seen: number[][] = []
    const results = await Promise.allSettled(
      [1, 2, 3].map((n) =>
        group(() => insert(n, n === 2)).then((v) => {
          seen.push(visible())
          return v
        }),
      ),
    )
    expect(duringLast).toEqual([[]])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('write 2 failed')
    expect(visible()).toEqual([1, 3])
    // each caller saw its write committed (visible to another connection) by the time its promise resolved
    for (const v of seen) expect(v).toEqual([1, 3])
    other.close()
    db.close()
  })

  it('a full database (SQLITE_FULL rolls the whole transaction back): every write of the group fails, none is written', async () => {
    const db = new Database(tempDb())
    db.pragma('journal_mode = WAL')
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, b BLOB)')
    // the file may grow by two pages: the second write needs far more
    db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 2}`)
    const insert = db.transaction((n: number, bytes: number) => db.prepare('INSERT INTO t (n, b) VALUES (?, ?)').run(n, Buffer.alloc(bytes)).changes)
    const group = groupCommit(db)
    const results = await Promise.allSettled([group(() => insert(1, 10)), group(() => insert(2, 100_000)), group(() => insert(3, 10))])
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect((results[1] as PromiseRejectedResult).reason.code).toBe('SQLITE_FULL')
    expect(db.prepare('SELECT n FROM t').all()).toEqual([])
    expect(db.inTransaction).toBe(false)
    // room again: the group commits as usual
    db.pragma('max_page_count = 1000000')
    expect(await Promise.all([group(() => insert(4, 10)), group(() => insert(5, 10))])).toEqual([1, 1])
    db.close()
  })

  it('200 concurrent grouped reservations against 50 credits: exactly 50 granted, balance 0', async () => {
    const store = createSqliteStore(tempDb())
    const T = Date.UTC(2026, 0, 1)
    const org = store.createOrg({ name: 'A', planId: 'free' }, T)
    store.setOrgPlan(org.id, { planId: 'free', monthlyCredits: 50 }, T)
    const granted = await Promise.all(Array.from({ length: 200 }, () => store.grouped!.reserveCredits(org.id, 1, T)))
    expect(granted.filter((r) => r !== null)).toHaveLength(50)
    expect(store.balance(org.id, T)).toBe(0)
    expect(granted.filter((r) => r !== null).map((r) => r!.balanceAfter).sort((a, b) => a! - b!)).toEqual(Array.from({ length: 50 }, (_, i) => i))
    store.close()
  })
})

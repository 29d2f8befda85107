import Database from 'better-sqlite3'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createCheckpointer, type Checkpointer } from './checkpointer.js'
import { groupCommit } from './group-commit.js'
import { createSqliteStore } from './store.js'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** A WAL database file with one table, SQLite's own checkpoints off, and the group commit told of each commit. */
function open(cp: (path: string) => Checkpointer | null) {
  const dir = mkdtempSync(join(tmpdir(), 'rc-ckpt-'))
  dirs.push(dir)
  const path = join(dir, 'c.sqlite')
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('wal_autocheckpoint = 0')
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)')
  const checkpointer = cp(path)
  const group = groupCommit(db, checkpointer ? () => checkpointer.afterCommit() : undefined)
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)')
  /** `n` commits of one row each (a commit per turn of the event loop). */
  const commits = async (n: number) => {
    for (let i = 0; i < n; i++) await group(() => insert.run('x'.repeat(2000)))
  }
  const walSize = () => statSync(`${path}-wal`).size
  return { db, path, checkpointer, commits, walSize }
}

/** Waits (up to 30 s) until `done` holds: the worker answers in its own time. */
const until = (done: () => boolean) =>
  vi.waitFor(
    () => {
      if (!done()) throw new Error('not yet')
    },
    { timeout: 30_000, interval: 10 },
  )

/** Waits until the worker has run `n` checkpoints or failed. */
async function checkpointsReach(c: Checkpointer, n: number): Promise<void> {
  await until(() => c.stats.checkpoints >= n || c.stats.failure !== null)
  expect(c.stats.failure).toBeNull()
  expect(c.stats.checkpoints).toBeGreaterThanOrEqual(n)
}

describe('SQLite checkpoints in a worker thread', () => {
  it('keeps the WAL short: the worker copies it back and the next commit starts it over', async () => {
    const without = open(() => null)
    await without.commits(400)
    const grown = without.walSize()

    const w = open((path) => createCheckpointer(path, { everyCommits: 20 }))
    const c = w.checkpointer!
    for (let round = 0; round < 20; round++) {
      await w.commits(20)
      await checkpointsReach(c, round + 1)
    }
    // 400 commits of a 2 kB row: without checkpoints the WAL holds them all; with one every 20 commits, about 20
    expect(grown).toBeGreaterThan(400 * 2000)
    expect(w.walSize()).toBeLessThan(grown / 5)
    expect((w.db.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n).toBe(400)
    c.close()
    w.db.close()
    without.db.close()
  })

  it("does not change the connection's data version (its caches stay valid) and asks nothing while one runs", async () => {
    const w = open((path) => createCheckpointer(path, { everyCommits: 5 }))
    const c = w.checkpointer!
    await w.commits(5)
    const version = w.db.pragma('data_version', { simple: true })
    await checkpointsReach(c, 1)
    expect(w.db.pragma('data_version', { simple: true })).toBe(version)
    c.close()
    await w.commits(50) // closed: no worker asked, nothing thrown
    expect(c.stats.checkpoints).toBe(1)
    w.db.close()
  })

  it('its worker never keeps the process alive: a store left open does not hold the process at exit', async () => {
    const ports = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort').length
    const before = ports()
    const w = open((path) => createCheckpointer(path, { everyCommits: 5 }))
    const c = w.checkpointer!
    await w.commits(5)
    await checkpointsReach(c, 1)
    // the worker runs and answered (its 'message' listener is on), and holds nothing the event loop waits for
    expect(ports()).toBe(before)
    c.close()
    w.db.close()
  })

  it('a worker that cannot open the file is reported and not asked again; the commits go on', async () => {
    const c = createCheckpointer(join(tmpdir(), 'rc-ckpt-missing', 'none.sqlite'), { everyCommits: 1 })
    c.afterCommit()
    await until(() => c.stats.failure !== null)
    expect(c.stats.failure).toMatch(/unable to open|directory does not exist|no such file/i)
    c.afterCommit()
    expect(c.stats.checkpoints).toBe(0)
    c.close()
  })

  it('the store runs them for a file, and a file closed and opened again holds every write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rc-ckpt-store-'))
    dirs.push(dir)
    const path = join(dir, 's.sqlite')
    const store = createSqliteStore(path)
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(10000)
    const now = Date.now()
    const org = store.createOrg({ name: 'A', planId: 'starter' }, now)
    // one every 128 commits of the group (the org's creation is not one), when the one before has ended
    for (let k = 1; k <= 2; k++) {
      for (let i = 0; i < 128; i++) await store.groupWrite(() => store.db.prepare("INSERT INTO meta (key, value) VALUES (?, 'v')").run(`ck_${k}_${i}`))
      await until(() => (store.checkpointStats()?.checkpoints ?? 0) >= k)
      expect(store.checkpointStats()).toEqual({ checkpoints: k, failure: null })
    }
    // a large commit outside the group asks at once, whatever the count
    store.afterLargeCommit()
    await until(() => (store.checkpointStats()?.checkpoints ?? 0) >= 3)
    expect(store.checkpointStats()).toEqual({ checkpoints: 3, failure: null })
    store.close()
    const again = createSqliteStore(path)
    expect(again.getOrg(org.id, now)?.name).toBe('A')
    expect((again.db.prepare("SELECT COUNT(*) AS n FROM meta WHERE key LIKE 'ck!_%' ESCAPE '!'").get() as { n: number }).n).toBe(256)
    again.close()
    const memory = createSqliteStore(':memory:')
    expect(memory.checkpointStats()).toBeNull() // no worker in memory
    memory.afterLargeCommit()
    expect(memory.checkpointStats()).toBeNull()
    expect(memory.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000)
    memory.close()
  })
})

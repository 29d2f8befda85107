/**
 * The one SQLite migration runner on databases the earlier runners wrote: the service's (`user_version` counted the
 * migrations run) and the dashboard's (a ledger row per version). Nothing already applied runs again.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { nodeArgs } from '../../../../test/child-process.js'
import { createSqliteTeamStore, DASHBOARD_MIGRATIONS, migrateDashboard } from './dashboard.js'
import { migrateSqlite } from './migrate.js'
import { MIGRATIONS } from './migrations.js'
import { createSqliteStore } from './store.js'

const dir = mkdtempSync(join(tmpdir(), 'rc-migrate-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The service's runner before this one: `user_version` = how many of the list have run. */
function oldServiceRunner(db: Database.Database, count: number) {
  for (let i = db.pragma('user_version', { simple: true }) as number; i < count; i++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[i]!.sql)
      db.pragma(`user_version = ${i + 1}`)
    }).immediate()
  }
}

/** The dashboard's runner before this one: its own ledger table, one row per version. */
function oldDashboardRunner(db: Database.Database, upTo: number) {
  db.exec('CREATE TABLE IF NOT EXISTS dashboard_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT')
  for (const m of DASHBOARD_MIGRATIONS.filter((x) => x.version <= upTo)) {
    db.transaction(() => {
      db.exec(m.sql)
      db.prepare('INSERT INTO dashboard_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, 1)
    }).immediate()
  }
}

describe('the SQLite migration runner', () => {
  it('takes a service file the earlier runner left at version 3 forward to the last, keeping its rows', () => {
    const file = join(dir, 'service-v3.sqlite')
    const old = new Database(file)
    oldServiceRunner(old, 3)
    old.prepare("INSERT INTO meta (key, value) VALUES ('kept', 'yes')").run()
    old.close()
    // 001 re-run would fail (its tables exist): opening proves only 004 and 005 ran
    const store = createSqliteStore(file)
    expect(store.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length)
    expect(store.db.prepare("SELECT value FROM meta WHERE key = 'kept'").pluck().get()).toBe('yes')
    expect(store.probe!()).toEqual({ schemaVersion: MIGRATIONS.length, expectedVersion: MIGRATIONS.length })
    store.close()
  })

  it('opens a service file the earlier runner brought up to date without running anything', () => {
    const file = join(dir, 'service-current.sqlite')
    const old = new Database(file)
    oldServiceRunner(old, MIGRATIONS.length)
    old.close()
    const db = new Database(file)
    expect(migrateSqlite(db, MIGRATIONS, { pragma: 'user_version' })).toEqual([])
    db.close()
    createSqliteStore(file).close()
  })

  it("takes a dashboard ledger the earlier runner left at version 1 forward, in the service's file", () => {
    const file = join(dir, 'dashboard-v1.sqlite')
    const store = createSqliteStore(file)
    oldDashboardRunner(store.db, 1)
    const later = DASHBOARD_MIGRATIONS.filter((m) => m.version > 1).map((m) => m.version)
    expect(migrateDashboard(store.db, 7)).toEqual(later)
    expect(migrateDashboard(store.db, 8)).toEqual([])
    expect(store.db.prepare('SELECT version, applied_at FROM dashboard_migrations ORDER BY version').all()).toEqual([
      { version: 1, applied_at: 1 },
      ...later.map((version) => ({ version, applied_at: 7 })),
    ])
    // the service's ledger is untouched by the dashboard's
    expect(store.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length)
    expect(createSqliteTeamStore(store.db).reserveMail([{ key: 'k', limit: 1, windowMs: 10 }], 1)).toEqual({ ok: true, nextAt: 11 })
    store.close()
  })

  it('refuses a file a newer riskcheck wrote, and applies lists in version order', () => {
    const db = new Database(':memory:')
    db.pragma(`user_version = ${Math.max(...MIGRATIONS.map((m) => m.version)) + 1}`)
    expect(() => migrateSqlite(db, MIGRATIONS, { pragma: 'user_version' })).toThrow(/newer/)
    const fresh = new Database(':memory:')
    const list = [
      { version: 2, name: 'second', sql: 'ALTER TABLE t ADD COLUMN b INTEGER' },
      { version: 1, name: 'first', sql: 'CREATE TABLE t (a INTEGER)' },
    ]
    expect(migrateSqlite(fresh, list, { table: 'some_ledger' })).toEqual([1, 2])
    expect(migrateSqlite(fresh, list, { table: 'some_ledger' })).toEqual([])
    db.close()
    fresh.close()
  })
})

describe('processes opening one new file at once', () => {
  /** Starts `count` processes that open `file` together (each waits for a line on stdin); their `ran` lists. */
  async function openTogether(file: string, count: number): Promise<number[][]> {
    const children = Array.from({ length: count }, () => spawn(process.execPath, [...nodeArgs('test/children/open-store.ts'), file], { stdio: ['pipe', 'pipe', 'pipe'] }))
    const outputs = children.map((child) => {
      let out = ''
      let err = ''
      child.stdout!.on('data', (d) => (out += d))
      child.stderr!.on('data', (d) => (err += d))
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', () => out.startsWith('ready\n') && resolve())
        child.on('close', (code) => reject(new Error(`exited ${code} before ready: ${err}`)))
      })
      const done = new Promise<string>((resolve) => child.on('close', (code) => resolve(code === 0 ? out : `exit ${code}: ${err}`)))
      return { child, ready, done }
    })
    await Promise.all(outputs.map((o) => o.ready))
    for (const o of outputs) o.child.stdin!.end('go\n')
    const results = await Promise.all(outputs.map((o) => o.done))
    return results.map((r) => {
      const line = r.split('\n').find((l) => l.startsWith('{'))
      if (!line) throw new Error(r)
      return (JSON.parse(line) as { ran: number[] }).ran
    })
  }

  it('each migration is applied by exactly one of them, and every one opens the file', async () => {
    // before the ledger was read under the write lock, a process that read it stale ran a migration again
    // ("duplicate column name: totp_secret") and could not start
    for (let round = 0; round < 3; round++) {
      const file = join(dir, `together-${round}.sqlite`)
      const ran = await openTogether(file, 4)
      expect(ran.flat().sort((a, b) => a - b)).toEqual(DASHBOARD_MIGRATIONS.map((m) => m.version))
      const db = new Database(file)
      expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length)
      expect(db.prepare('SELECT COUNT(*) FROM dashboard_migrations').pluck().get()).toBe(DASHBOARD_MIGRATIONS.length)
      db.close()
    }
  }, 120_000)
})

/** What only the SQLite TeamStore has to show (its contract runs from test/store-contract/contracts.test.ts). */
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { createSqliteTeamStore, DASHBOARD_MIGRATIONS, migrateDashboard } from './dashboard.js'

describe('TeamStore on SQLite', () => {
  it('keeps its own migration ledger: applied once, recorded with the version', () => {
    const db = new Database(':memory:')
    expect(migrateDashboard(db, 5)).toEqual(DASHBOARD_MIGRATIONS.map((m) => m.version))
    expect(migrateDashboard(db, 6)).toEqual([])
    expect(db.prepare('SELECT version, applied_at FROM dashboard_migrations').all()).toEqual(DASHBOARD_MIGRATIONS.map((m) => ({ version: m.version, applied_at: 5 })))
    db.close()
  })

  it('a version 1 database migrates to the last version, keeping its tokens and sign-in failures (the tokens table is rebuilt for the new kinds)', () => {
    const db = new Database(':memory:')
    db.exec('CREATE TABLE dashboard_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT')
    db.exec(DASHBOARD_MIGRATIONS[0]!.sql)
    db.prepare('INSERT INTO dashboard_migrations VALUES (1, ?, 1)').run(DASHBOARD_MIGRATIONS[0]!.name)
    db.prepare("INSERT INTO dashboard_tokens VALUES ('h', 'invite', 'u', 'org_a', 'a@x.test', 'admin', 1, 100)").run()
    db.prepare("INSERT INTO dashboard_login_failures VALUES ('k', 5)").run()
    const store = createSqliteTeamStore(db)
    expect(store.listInvites('org_a', 2)).toMatchObject([{ hash: 'h', email: 'a@x.test', role: 'admin' }])
    expect(store.loginFailures('k', 0)).toBe(1)
    store.createToken({ hash: 'r', kind: 'reset', userId: 'u', orgId: null, email: 'a@x.test', role: null, createdAt: 1, expiresAt: 100 })
    expect(() => db.prepare("INSERT INTO dashboard_tokens VALUES ('z', 'nope', 'u', NULL, 'a', NULL, 1, 2)").run()).toThrow(/CHECK/)
    // migration 3: the mail log
    expect(db.prepare('SELECT version FROM dashboard_migrations ORDER BY version').all()).toEqual(DASHBOARD_MIGRATIONS.map((x) => ({ version: x.version })))
    expect(store.reserveMail([{ key: 'verify:account:u', limit: 1, windowMs: 60_000 }], 10)).toEqual({ ok: true, nextAt: 60_010 })
    db.close()
  })

  it('an account whose membership cannot be written leaves no user behind', () => {
    const db = new Database(':memory:')
    const store = createSqliteTeamStore(db)
    db.exec("CREATE TRIGGER refuse BEFORE INSERT ON dashboard_members BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
    expect(() => store.createAccount({ id: 'u1', email: 'a@x.test', passwordHash: 'h' }, { orgId: 'o', role: 'owner' }, 1)).toThrow(/injected failure/)
    expect(store.getUserByEmail('a@x.test')).toBeNull()
    db.exec('DROP TRIGGER refuse')
    expect((store.createAccount({ id: 'u2', email: 'a@x.test', passwordHash: 'h' }, { orgId: 'o', role: 'owner' }, 2) as { id: string } | null)?.id).toBe('u2')
    db.close()
  })
})

import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { teamStoreContract } from './contract.js'
import { createMemoryTeamStore } from './memory.js'
import { createSqliteTeamStore, DASHBOARD_MIGRATIONS, migrateDashboard } from './sqlite.js'

describe('TeamStore in memory', () => {
  teamStoreContract(async () => ({ store: createMemoryTeamStore(), done: () => undefined }))
})

describe('TeamStore on SQLite', () => {
  teamStoreContract(async () => {
    const db = new Database(':memory:')
    return { store: createSqliteTeamStore(db), done: () => void db.close() }
  })

  it('keeps its own migration ledger: applied once, recorded with the version', () => {
    const db = new Database(':memory:')
    expect(migrateDashboard(db, 5)).toEqual(DASHBOARD_MIGRATIONS.map((m) => m.version))
    expect(migrateDashboard(db, 6)).toEqual([])
    expect(db.prepare('SELECT version, applied_at FROM dashboard_migrations').all()).toEqual(DASHBOARD_MIGRATIONS.map((m) => ({ version: m.version, applied_at: 5 })))
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

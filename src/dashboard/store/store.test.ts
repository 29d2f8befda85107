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
})

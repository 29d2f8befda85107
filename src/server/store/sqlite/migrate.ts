/**
 * The one SQLite migration runner, for the service's list (ledger: `PRAGMA user_version`, the highest version applied)
 * and the dashboard's (ledger: the `dashboard_migrations` table, one row per version). Each migration runs once, in
 * an IMMEDIATE transaction with its ledger entry, in `version` order.
 */
import type Database from 'better-sqlite3'
import type { Migration } from '../common/migration.js'

/** Where a list of migrations records what has run. */
export type SqliteLedger = { pragma: 'user_version' } | { table: string }

/**
 * Applies the migrations of `migrations` that `ledger` does not hold yet; returns their versions. A `user_version`
 * ledger ahead of the list (a newer riskcheck wrote the file) is refused: `newer` gives the message.
 */
export function migrateSqlite(
  db: Database.Database,
  migrations: readonly Migration[],
  ledger: SqliteLedger,
  options: { nowMs?: number; newer?: (version: number, expected: number) => string } = {},
): number[] {
  const sorted = [...migrations].sort((a, b) => a.version - b.version)
  const latest = sorted.at(-1)?.version ?? 0
  let applied: (m: Migration) => boolean
  let insert: Database.Statement | undefined
  if ('pragma' in ledger) {
    const version = db.pragma('user_version', { simple: true }) as number
    if (version > latest) throw new Error(options.newer?.(version, latest) ?? `SQLite schema version ${version} is newer than this code's ${latest}`)
    applied = (m) => m.version <= version
  } else {
    if (!/^[a-z_]+$/.test(ledger.table)) throw new TypeError(`bad ledger table name ${ledger.table}`)
    db.exec(`CREATE TABLE IF NOT EXISTS ${ledger.table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`)
    const done = new Set((db.prepare(`SELECT version FROM ${ledger.table}`).all() as Array<{ version: number }>).map((r) => r.version))
    insert = db.prepare(`INSERT INTO ${ledger.table} (version, name, applied_at) VALUES (?, ?, ?)`)
    applied = (m) => done.has(m.version)
  }
  const at = options.nowMs ?? Date.now()
  const ran: number[] = []
  for (const m of sorted) {
    if (applied(m)) continue
    db.transaction(() => {
      db.exec(m.sql)
      if (insert) insert.run(m.version, m.name, at)
      else db.pragma(`user_version = ${m.version}`)
    }).immediate()
    ran.push(m.version)
  }
  return ran
}

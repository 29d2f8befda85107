/**
 * The one SQLite migration runner, for the service's list (ledger: `PRAGMA user_version`, the highest version applied)
 * and the dashboard's (ledger: the `dashboard_migrations` table, one row per version). Each migration runs once, in
 * an IMMEDIATE transaction with its ledger entry, in `version` order; the ledger is read inside that transaction, so
 * processes opening one file at once each apply a migration only if no other has.
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
  let record: (m: Migration, at: number) => void
  if ('pragma' in ledger) {
    const version = () => db.pragma('user_version', { simple: true }) as number
    const now = version()
    if (now > latest) throw new Error(options.newer?.(now, latest) ?? `SQLite schema version ${now} is newer than this code's ${latest}`)
    applied = (m) => m.version <= version()
    record = (m) => db.pragma(`user_version = ${m.version}`)
  } else {
    if (!/^[a-z_]+$/.test(ledger.table)) throw new TypeError(`bad ledger table name ${ledger.table}`)
    db.exec(`CREATE TABLE IF NOT EXISTS ${ledger.table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`)
    const has = db.prepare(`SELECT 1 FROM ${ledger.table} WHERE version = ?`).pluck()
    const insert = db.prepare(`INSERT INTO ${ledger.table} (version, name, applied_at) VALUES (?, ?, ?)`)
    applied = (m) => has.get(m.version) !== undefined
    record = (m, at) => insert.run(m.version, m.name, at)
  }
  const at = options.nowMs ?? Date.now()
  const ran: number[] = []
  for (const m of sorted) {
    // applied stays applied: an up-to-date file opens without taking the write lock once per migration
    if (applied(m)) continue
    // read again under the write lock: another process may have applied `m` since
    const didRun = db.transaction(() => {
      if (applied(m)) return false
      db.exec(m.sql)
      record(m, at)
      return true
    }).immediate()
    if (didRun) ran.push(m.version)
  }
  return ran
}

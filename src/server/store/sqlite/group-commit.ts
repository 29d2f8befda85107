/**
 * Group commit for the SQLite store: one IMMEDIATE transaction (one fsync of the WAL) for all the credit writes of
 * one turn of the event loop, instead of one each.
 */
import type Database from 'better-sqlite3'

/**
 * Group commit: the writes queued in one turn of the event loop run in one IMMEDIATE transaction, each in a savepoint
 * of its own, so a write that throws rolls back alone — unless SQLite rolled the whole transaction back (a full disk,
 * an I/O error): then every write of the group fails, none half-written. Every promise settles after the commit — an
 * answer never goes out before its credits are written. Under load, one commit serves many requests; alone, a write
 * waits for nothing but the current turn to end. `afterCommit` is told of each commit.
 */
export function groupCommit(db: Database.Database, afterCommit?: () => void): <T>(write: () => T) => Promise<T> {
  type Item = { write: () => unknown; resolve: (v: any) => void; reject: (e: unknown) => void; ok?: boolean; value?: unknown }
  let queue: Item[] = []
  // one transaction function for every group (making one per commit costs as much as a short write)
  const commit = db.transaction((items: Item[]) => {
    for (const it of items) {
      try {
        it.value = it.write()
        it.ok = true
      } catch (e) {
        it.value = e
        it.ok = false
        // A full disk or an I/O error may roll the whole transaction back, not only the write's savepoint: the
        // writes after it would then commit one by one outside it. Every write of the group fails instead.
        if (!db.inTransaction) throw e
      }
    }
  })
  const flush = () => {
    const items = queue
    queue = []
    try {
      commit.immediate(items)
    } catch (e) {
      for (const it of items) it.reject(e)
      return
    }
    afterCommit?.()
    for (const it of items) (it.ok ? it.resolve : it.reject)(it.value)
  }
  return <T>(write: () => T) =>
    new Promise<T>((resolve, reject) => {
      if (queue.push({ write, resolve, reject }) === 1) setImmediate(flush)
    })
}

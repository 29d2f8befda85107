/**
 * The event outbox of the SQLite store: credit events are written by the credit transactions themselves (so an
 * event exists exactly when its balance change committed), and read in order by the webhooks module.
 */
import type Database from 'better-sqlite3'
import { buildEvent, type PendingEvent } from '../../../accounts/ledger.js'
import type { Store, Synchronous } from '../contracts/store.js'
import { outboxWriter } from './outbox.js'
import { toEvent, type EventRow } from './rows.js'

/** The outbox: `emit` (called inside a credit transaction) and the store's `listEvents`. */
export interface SqliteEvents extends Pick<Synchronous<Store>, 'listEvents'> {
  emit(orgId: string, events: readonly PendingEvent[], nowMs: number): void
}

export function createSqliteEvents(db: Database.Database): SqliteEvents {
  const insert = outboxWriter(db)
  const seqOf = db.prepare('SELECT seq FROM events WHERE id = ?')
  const ofOrg = db.prepare('SELECT * FROM events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?')
  const ofAll = db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?')
  return {
    emit(orgId, events, nowMs) {
      for (const e of events) insert(buildEvent(orgId, e, nowMs))
    },
    listEvents({ orgId, afterId, limit = 100 }) {
      const after = afterId ? ((seqOf.get(afterId) as { seq: number } | undefined)?.seq ?? 0) : 0
      const rows = (orgId ? ofOrg.all(orgId, after, limit) : ofAll.all(after, limit)) as EventRow[]
      return rows.map(toEvent)
    },
  }
}

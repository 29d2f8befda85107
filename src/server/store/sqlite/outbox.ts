/**
 * The event outbox of the SQLite file: the `events` table, the pump's cursor in `meta`. The pump itself
 * (../common/outbox-pump.ts) fans each new event out exactly once per endpoint (docs/decisions.md, "Storage engines").
 */
import type Database from 'better-sqlite3'
import type { EventPayload } from '../../../schema.js'
import type { DeliveryCrashHook } from '../../../webhooks/queue.js'
import type { DeliveryStore } from '../contracts/deliveries.js'
import { pumpEvents, type OutboxSource } from '../common/outbox-pump.js'

/** The key of the pump's cursor (the seq of the last event fanned out) in the `meta` table. */
export const OUTBOX_CURSOR_KEY = 'webhook_outbox_seq'
const CURSOR_KEY = OUTBOX_CURSOR_KEY

/** The one statement writing the outbox (`events` table), prepared once: a repeated event id is ignored. */
export function outboxWriter(db: Database.Database): (event: EventPayload) => void {
  const insert = db.prepare('INSERT OR IGNORE INTO events (id, org_id, type, created, payload) VALUES (?, ?, ?, ?, ?)')
  return (event) => void insert.run(event.id, event.org_id, event.type, event.created, JSON.stringify(event))
}

/** Writes an event payload into the outbox (`events` table). The pump delivers it. */
export function insertOutboxEvent(db: Database.Database, event: EventPayload): void {
  outboxWriter(db)(event)
}

/** The outbox of the server's SQLite file: the `events` table, the cursor in `meta`. */
export function sqliteOutbox(db: Database.Database): OutboxSource {
  const read = db.prepare('SELECT value FROM meta WHERE key = ?')
  const list = db.prepare('SELECT seq, payload FROM events WHERE seq > ? ORDER BY seq LIMIT ?')
  const save = db.prepare(
    'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE CAST(value AS INTEGER) < CAST(excluded.value AS INTEGER)',
  )
  return {
    after(limit) {
      const cursorRow = read.get(CURSOR_KEY) as { value: string } | undefined
      return list.all(cursorRow ? Number(cursorRow.value) : 0, limit) as Array<{ seq: number; payload: string }>
    },
    advance(seq) {
      save.run(CURSOR_KEY, String(seq))
    },
  }
}

/** {@link pumpEvents} over the server's SQLite file. */
export function pumpOutbox(db: Database.Database, deliveries: DeliveryStore, now: () => Date, limit = 500, crashHook?: DeliveryCrashHook): Promise<number> {
  return pumpEvents(sqliteOutbox(db), deliveries, now, limit, crashHook)
}

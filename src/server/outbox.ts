/**
 * The event outbox → webhook delivery queue. Every event of the server is first written to the `events` table (the
 * ledger writes credits.low / credits.depleted / credits.added in the same transaction as the balance change; the
 * bulk service writes bulk.completed; `riskcheck admin webhook ping` writes ping), then {@link pumpOutbox} fans each
 * new event out to the endpoints subscribed to it (`enqueueEvent` of the webhooks module) and advances a cursor kept
 * in the `meta` table. Fan-out is idempotent (one first delivery per event and endpoint), so a pump repeated after a
 * crash, or run by two processes on one database, never sends an event twice.
 */
import type Database from 'better-sqlite3'
import type { EventPayload } from '../schema.js'
import { enqueueEvent, type DeliveryCrashHook, type DeliveryStore } from '../webhooks/queue.js'
import type { Awaitable } from './store/contracts/service-storage.js'

/** The key of the pump's cursor (the seq of the last event fanned out) in the `meta` table. */
export const OUTBOX_CURSOR_KEY = 'webhook_outbox_seq'
const CURSOR_KEY = OUTBOX_CURSOR_KEY

/** Writes an event payload into the outbox (`events` table). The pump delivers it. */
export function insertOutboxEvent(db: Database.Database, event: EventPayload): void {
  db.prepare('INSERT OR IGNORE INTO events (id, org_id, type, created, payload) VALUES (?, ?, ?, ?, ?)').run(
    event.id,
    event.org_id,
    event.type,
    event.created,
    JSON.stringify(event),
  )
}

/**
 * Where the pump reads the outbox: the events after its cursor, oldest first, and the cursor's move past one.
 * Moving the cursor never moves it back (two pumps on one database may race).
 */
export interface OutboxSource {
  after(limit: number): Awaitable<Array<{ seq: number; payload: string }>>
  advance(seq: number): Awaitable<void>
}

/**
 * Fans out the outbox events of `source` written since the last pump (up to `limit`, oldest first) to `deliveries`.
 * Returns how many events were taken. A ping goes to the endpoint named in its data only (skipped when that
 * endpoint is gone). The cursor moves past each event once its deliveries are written, so a crash repeats at most
 * the event in hand, whose fan-out is idempotent. `crashHook`: crash tests only.
 */
export async function pumpEvents(
  source: OutboxSource,
  deliveries: DeliveryStore,
  now: () => Date,
  limit = 500,
  crashHook?: DeliveryCrashHook,
): Promise<number> {
  const rows = await source.after(limit)
  for (const row of rows) {
    let event: EventPayload | null = null
    try {
      event = JSON.parse(row.payload) as EventPayload
    } catch {
      event = null
    }
    if (event) {
      const endpointId = event.type === 'ping' && typeof event.data.endpoint_id === 'string' ? event.data.endpoint_id : undefined
      try {
        await enqueueEvent({ store: deliveries, now, event, ...(endpointId ? { endpointId } : {}) })
      } catch (e) {
        // A ping to an endpoint deleted meanwhile: nothing to deliver. Anything else (a store failure) stops here and
        // the event is taken again by the next pump.
        if (!(e instanceof TypeError)) throw e
      }
    }
    crashHook?.('pump.fanned-out')
    await source.advance(row.seq)
    crashHook?.('pump.advanced')
  }
  return rows.length
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

/**
 * The outbox pump every engine runs: every event is first written to the outbox (the ledger's credit events in the
 * transaction of the balance change, bulk.completed, pings), then fanned out to the endpoints subscribed to it. Fan-out
 * is idempotent (one first delivery per event and endpoint), so a pump repeated after a crash, or run by two
 * processes on one database, never sends an event twice.
 */
import type { Awaitable } from '../../../awaitable.js'
import type { EventPayload } from '../../../schema.js'
import { enqueueEvent, type DeliveryCrashHook } from '../../../webhooks/queue.js'
import type { DeliveryStore } from '../contracts/deliveries.js'

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

/** The `events` outbox on PostgreSQL: the one statement that writes into it, used by credits, bulk jobs and webhooks. */
import type { EventPayload } from '../../../schema.js'
import type { Queryable } from './client.js'

/** Writes into the outbox the events `rows` gives as (id, org_id, type, created, payload); a repeated id is ignored. */
export const insertEvents = (rows: string): string => `INSERT INTO events (id, org_id, type, created, payload) ${rows} ON CONFLICT (id) DO NOTHING`

/** Writes one event into the outbox; a repeated id is ignored. */
export async function insertEvent(q: Queryable, event: EventPayload): Promise<void> {
  await q.query(insertEvents('VALUES ($1, $2, $3, $4, $5)'), [event.id, event.org_id, event.type, event.created, JSON.stringify(event)])
}

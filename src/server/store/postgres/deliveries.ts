/**
 * Webhooks on PostgreSQL: the {@link DeliveryServiceStorage} of servers whose store is PostgreSQL, over the webhook
 * tables and the core store's `events` outbox (docs/decisions.md "PostgreSQL store" → webhooks, the outbox pump).
 */
import type pg from 'pg'
import type { EventPayload } from '../../../schema.js'
import type { DeliveryRecord } from '../../../webhooks/queue.js'
import { pumpEvents } from '../common/outbox-pump.js'
import { disabledEndpointNotice, endpointLimitError, newEndpointId } from '../common/endpoints.js'
import { insertEvent } from './events.js'
import { inTransaction, num, type Num, type Queryable } from './client.js'
import type { DeliveryServiceStorage, EndpointDeliveryStore, OperatorNotice, StoredEndpoint } from '../contracts/service-storage.js'
import { dateOrNull, toAttempt, toDelivery, toEndpoint, type AttemptRow, type DeliveryRow, type EndpointRow } from '../common/record-rows.js'
const ms = (d: Date | null): number | null => (d === null ? null : d.getTime())

const DELIVERY_COLUMNS =
  'id, event_id, endpoint_id, org_id, status, attempts, next_attempt_at, lease_until, created_at, last_attempt_at, last_status, last_error, resend_of'

type Complete = Parameters<EndpointDeliveryStore['completeDelivery']>

/** A delivery's outcome, its attempt, the endpoint's last success and an auto-disable with its notice, on `q`'s transaction. */
async function completeOn(q: Queryable, id: Complete[0], u: Complete[1], a: Complete[2]): Promise<{ endpointDisabled: boolean }> {
    const done = await q.query<{ endpoint_id: string }>(
      `UPDATE webhook_deliveries SET status = $2, attempts = $3, next_attempt_at = $4, last_attempt_at = $5, last_status = $6,
         last_error = $7, lease_until = NULL WHERE id = $1 RETURNING endpoint_id`,
      [id, u.status, u.attempts, ms(u.nextAttemptAt), ms(u.lastAttemptAt), u.lastStatus, u.lastError],
    )
    if (a) {
      await q.query(
        `INSERT INTO webhook_attempts (delivery_id, attempt, event_id, endpoint_id, at, ok, status, duration_ms, response_body, error, error_detail)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (delivery_id, attempt) DO UPDATE SET event_id = excluded.event_id, endpoint_id = excluded.endpoint_id, at = excluded.at,
           ok = excluded.ok, status = excluded.status, duration_ms = excluded.duration_ms, response_body = excluded.response_body,
           error = excluded.error, error_detail = excluded.error_detail`,
        [a.deliveryId, a.attempt, a.eventId, a.endpointId, a.at.getTime(), a.ok, a.status, Math.max(0, Math.round(a.durationMs)), a.responseBody, a.error, a.errorDetail],
      )
    }
    const endpointId = done.rows[0]?.endpoint_id
    if (endpointId === undefined) return { endpointDisabled: false }
    if (u.endpointSuccessAt) {
      await q.query('UPDATE webhook_endpoints SET last_success_at = $1 WHERE id = $2 AND (last_success_at IS NULL OR last_success_at < $1)', [
        u.endpointSuccessAt.getTime(),
        endpointId,
      ])
    }
    if (!u.disableEndpoint) return { endpointDisabled: false }
    const disabled = (
      await q.query<EndpointRow>(`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $1 WHERE id = $2 AND status = 'enabled' RETURNING *`, [
        u.disableEndpoint.reason,
        endpointId,
      ])
    ).rows[0]
    if (!disabled) return { endpointDisabled: false }
    const n = disabledEndpointNotice(toEndpoint(disabled), u.disableEndpoint.at)
    await q.query('INSERT INTO operator_notices (at, org_id, subject, kind, message) VALUES ($1, $2, $3, $4, $5)', [n.at, n.orgId, n.subject, n.kind, n.message])
    return { endpointDisabled: true }
}

type EndpointAdmin = Pick<
  EndpointDeliveryStore,
  'createEndpoint' | 'listOrgEndpoints' | 'countEndpoints' | 'getStoredEndpoint' | 'rotateSecret' | 'deleteEndpoint' | 'enableEndpoint' | 'addNotice' | 'listNotices' | 'listAttempts'
>

/** Endpoint management, operator notices and the attempt log on `pool`. */
function endpointAdmin(pool: pg.Pool): EndpointAdmin {
  /** The org condition of an endpoint change, as the next parameter after `used` ones. */
  const orgFilter = (orgId?: string, used = 1) => (orgId === undefined ? { sql: '', values: [] } : { sql: ` AND org_id = $${used + 1}`, values: [orgId] })
  return {
    createEndpoint: (input, nowMs, maxPerOrg) =>
      inTransaction(pool, async (c) => {
        if (maxPerOrg !== undefined) {
          // one creation of the org at a time: a count read under READ COMMITTED does not see a concurrent insert
          await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`webhook_endpoints:${input.orgId}`])
          const n = num((await c.query<{ n: string }>('SELECT count(*) AS n FROM webhook_endpoints WHERE org_id = $1', [input.orgId])).rows[0]!.n)
          if (n >= maxPerOrg) throw endpointLimitError(maxPerOrg)
        }
        const { rows } = await c.query<EndpointRow>(
          `INSERT INTO webhook_endpoints (id, org_id, url, description, events, format, secret, status, disabled_reason, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'enabled', NULL, $8) RETURNING *`,
          [newEndpointId(), input.orgId, input.url, input.description, JSON.stringify(input.events), input.format, input.secret, nowMs],
        )
        return toEndpoint(rows[0]!)
      }),
    listOrgEndpoints: async (orgId) =>
      (await pool.query<EndpointRow>('SELECT * FROM webhook_endpoints WHERE org_id = $1 ORDER BY created_at, id', [orgId])).rows.map(toEndpoint),
    async countEndpoints(orgId) {
      return num((await pool.query<{ n: string }>('SELECT count(*) AS n FROM webhook_endpoints WHERE org_id = $1', [orgId])).rows[0]!.n)
    },
    async getStoredEndpoint(id) {
      const r = (await pool.query<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = $1', [id])).rows[0]
      return r ? toEndpoint(r) : null
    },
    async rotateSecret(id, secret, orgId) {
      const f = orgFilter(orgId, 2)
      const r = (await pool.query<EndpointRow>(`UPDATE webhook_endpoints SET secret = $2 WHERE id = $1${f.sql} RETURNING *`, [id, secret, ...f.values])).rows[0]
      return r ? toEndpoint(r) : null
    },
    async deleteEndpoint(id, orgId) {
      const f = orgFilter(orgId)
      const r = await pool.query(`DELETE FROM webhook_endpoints WHERE id = $1${f.sql}`, [id, ...f.values])
      return r.rowCount === 1
    },
    async enableEndpoint(id, nowMs) {
      const r = (
        await pool.query<EndpointRow>(`UPDATE webhook_endpoints SET status = 'enabled', disabled_reason = NULL, enabled_at = $1 WHERE id = $2 RETURNING *`, [nowMs, id])
      ).rows[0]
      return r ? toEndpoint(r) : null
    },
    async addNotice(n) {
      await pool.query('INSERT INTO operator_notices (at, org_id, subject, kind, message) VALUES ($1, $2, $3, $4, $5)', [n.at, n.orgId, n.subject, n.kind, n.message])
    },
    async listNotices(limit = 100) {
      const { rows } = await pool.query<{ id: Num; at: Num; org_id: string | null; subject: string; kind: string; message: string }>(
        'SELECT id, at, org_id, subject, kind, message FROM operator_notices ORDER BY id DESC LIMIT $1',
        [limit],
      )
      return rows.map((r): OperatorNotice => ({ id: num(r.id), at: num(r.at), orgId: r.org_id, subject: r.subject, kind: r.kind, message: r.message }))
    },
    async listAttempts(endpointId, limit = 100) {
      const { rows } = await pool.query<AttemptRow>('SELECT * FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY at DESC, attempt DESC LIMIT $2', [endpointId, limit])
      return rows.map(toAttempt)
    },
  }
}

/** The delivery store and endpoint management on `pool`. `now` stamps stored events. */
export function createPostgresDeliveryStore(pool: pg.Pool, now: () => number = Date.now): EndpointDeliveryStore {
  const admin = endpointAdmin(pool)
  return {
    ...admin,
    async insertEvent(event: EventPayload) {
      await pool.query('INSERT INTO webhook_events (id, org_id, type, created, payload, stored_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING', [
        event.id,
        event.org_id,
        event.type,
        event.created,
        JSON.stringify(event),
        now(),
      ])
    },
    async getEvent(id) {
      const r = (await pool.query<{ payload: string }>('SELECT payload FROM webhook_events WHERE id = $1', [id])).rows[0]
      return r ? (JSON.parse(r.payload) as EventPayload) : null
    },
    listEndpoints: admin.listOrgEndpoints,
    getEndpoint: admin.getStoredEndpoint,
    async insertDeliveries(list) {
      if (list.length === 0) return
      const col = <T>(f: (d: DeliveryRecord) => T) => list.map(f)
      await pool.query(
        `INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS})
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::bigint[], $8::bigint[], $9::bigint[],
           $10::bigint[], $11::int[], $12::text[], $13::text[])
         ON CONFLICT DO NOTHING`,
        [
          col((d) => d.id),
          col((d) => d.eventId),
          col((d) => d.endpointId),
          col((d) => d.orgId),
          col((d) => d.status),
          col((d) => d.attempts),
          col((d) => ms(d.nextAttemptAt)),
          col((d) => ms(d.leaseUntil)),
          col((d) => d.createdAt.getTime()),
          col((d) => ms(d.lastAttemptAt)),
          col((d) => d.lastStatus),
          col((d) => d.lastError),
          col((d) => d.resendOf),
        ],
      )
    },
    async leaseDue(at, limit, until) {
      const { rows } = await pool.query<DeliveryRow & { prev_lease: Num | null }>(
        `UPDATE webhook_deliveries d SET lease_until = $3
         FROM (SELECT id, lease_until AS prev_lease FROM webhook_deliveries
               WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
               ORDER BY next_attempt_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED) due
         WHERE d.id = due.id
         RETURNING d.*, due.prev_lease`,
        [at.getTime(), limit, until.getTime()],
      )
      return rows
        .map((r) => ({ ...toDelivery(r), leaseUntil: dateOrNull(r.prev_lease) }))
        .sort((a, b) => (a.nextAttemptAt?.getTime() ?? 0) - (b.nextAttemptAt?.getTime() ?? 0))
    },
    completeDelivery: (id, u, a) => inTransaction(pool, (q) => completeOn(q, id, u, a)),
    async getDelivery(id) {
      const r = (await pool.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $1`, [id])).rows[0]
      return r ? toDelivery(r) : null
    },
    async listDeliveries(filter) {
      const { rows } = await pool.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1 AND created_at >= $2 ORDER BY created_at, seq`,
        [filter.endpointId, filter.since?.getTime() ?? Number.MIN_SAFE_INTEGER],
      )
      return rows.map(toDelivery)
    },
    pruneBefore: (cutoff) =>
      inTransaction(pool, async (q) => {
        const at = cutoff.getTime()
        const attempts = (await q.query('DELETE FROM webhook_attempts WHERE at < $1', [at])).rowCount ?? 0
        const deliveries = (await q.query(`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < $1`, [at])).rowCount ?? 0
        const events =
          (await q.query('DELETE FROM webhook_events e WHERE stored_at < $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)', [at]))
            .rowCount ?? 0
        return { attempts, deliveries, events }
      }),
  }
}

/** Options of {@link createPostgresDeliveryStorage}. */
export interface PostgresDeliveryStorageOptions {
  /** The core store's pool (its schema holds `events`). */
  pool: pg.Pool
  /** Stamps stored events (default the system clock). */
  now?: () => number
}

/** The webhook service's storage on PostgreSQL. */
export function createPostgresDeliveryStorage(options: PostgresDeliveryStorageOptions): DeliveryServiceStorage {
  const { pool } = options
  const deliveries = createPostgresDeliveryStore(pool, options.now)
  return {
    deliveries,
    insertEvent: (event) => insertEvent(pool, event),
    pumpOutbox: (clock, limit = 500, crashHook) =>
      inTransaction(pool, async (client) => {
        let taken: number[] = []
        const count = await pumpEvents(
          {
            async after(n) {
              const { rows } = await client.query<{ seq: string; payload: string }>(
                'SELECT seq, payload FROM events WHERE pumped_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED',
                [n],
              )
              return rows.map((r) => ({ seq: num(r.seq), payload: r.payload }))
            },
            advance(seq) {
              taken.push(seq)
            },
          },
          deliveries,
          clock,
          limit,
          crashHook,
        )
        if (taken.length > 0) await client.query('UPDATE events SET pumped_at = $1 WHERE seq = ANY($2::bigint[])', [clock().getTime(), taken])
        taken = []
        return count
      }),
    async pendingCount() {
      return num((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`)).rows[0]!.n)
    },
  }
}

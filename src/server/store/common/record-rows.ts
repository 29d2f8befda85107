/**
 * Rows that the SQLite and the PostgreSQL stores read the same way, and their conversion to records: API keys,
 * webhook endpoints, deliveries and delivery attempts. Times are unix ms — a number from SQLite, a BIGINT string from
 * `pg` (the values here never exceed 2^53, so `Number` is exact); a flag is 0/1 in SQLite and a boolean in PostgreSQL.
 */
import type { ApiKeyRecord } from '../../../accounts/types.js'
import type { Scope } from '../../../schema.js'
import type { WebhookFormat } from '../../../webhooks/format.js'
import type { DeliveryAttemptRecord, DeliveryRecord } from '../../../webhooks/queue.js'
import type { StoredEndpoint } from '../contracts/service-storage.js'

/** An INTEGER (SQLite) or BIGINT (PostgreSQL, as a string) column. */
type Ms = number | string

const time = (v: Ms): number => Number(v)
const timeOrNull = (v: Ms | null): number | null => (v === null ? null : Number(v))
/** A time column that may be null, as a Date. */
export const dateOrNull = (v: Ms | null): Date | null => (v === null ? null : new Date(Number(v)))
const date = dateOrNull

export interface KeyRow {
  id: string
  org_id: string
  name: string
  mode: string
  scopes: string
  hash: string
  last4: string
  created_at: Ms
  revoked_at: Ms | null
  last_used_at: Ms | null
}

export function toKey(r: KeyRow): ApiKeyRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    name: r.name,
    mode: r.mode as 'live' | 'test',
    scopes: r.scopes === '' ? [] : (r.scopes.split(' ') as Scope[]),
    hash: r.hash,
    last4: r.last4,
    createdAt: time(r.created_at),
    revokedAt: timeOrNull(r.revoked_at),
    lastUsedAt: timeOrNull(r.last_used_at),
  }
}

export interface EndpointRow {
  id: string
  org_id: string
  url: string
  description: string | null
  events: string
  format: string
  secret: string
  status: string
  disabled_reason: string | null
  created_at: Ms
  enabled_at: Ms | null
  last_success_at: Ms | null
}

export function toEndpoint(r: EndpointRow): StoredEndpoint {
  return {
    id: r.id,
    orgId: r.org_id,
    url: r.url,
    description: r.description,
    format: r.format as WebhookFormat,
    secret: r.secret,
    events: JSON.parse(r.events) as string[],
    status: r.status as 'enabled' | 'disabled',
    disabledReason: r.disabled_reason,
    createdAt: new Date(time(r.created_at)),
    enabledAt: date(r.enabled_at),
    lastSuccessAt: date(r.last_success_at),
  }
}

export interface DeliveryRow {
  id: string
  event_id: string
  endpoint_id: string
  org_id: string
  status: string
  attempts: number
  next_attempt_at: Ms | null
  lease_until: Ms | null
  created_at: Ms
  last_attempt_at: Ms | null
  last_status: number | null
  last_error: string | null
  resend_of: string | null
}

export function toDelivery(r: DeliveryRow): DeliveryRecord {
  return {
    id: r.id,
    eventId: r.event_id,
    endpointId: r.endpoint_id,
    orgId: r.org_id,
    status: r.status as DeliveryRecord['status'],
    attempts: r.attempts,
    nextAttemptAt: date(r.next_attempt_at),
    leaseUntil: date(r.lease_until),
    createdAt: new Date(time(r.created_at)),
    lastAttemptAt: date(r.last_attempt_at),
    lastStatus: r.last_status,
    lastError: r.last_error,
    resendOf: r.resend_of,
  }
}

export interface AttemptRow {
  delivery_id: string
  attempt: number
  event_id: string
  endpoint_id: string
  at: Ms
  ok: number | boolean
  status: number | null
  duration_ms: number
  response_body: string
  error: string | null
  error_detail: string | null
}

export function toAttempt(r: AttemptRow): DeliveryAttemptRecord {
  return {
    deliveryId: r.delivery_id,
    eventId: r.event_id,
    endpointId: r.endpoint_id,
    attempt: r.attempt,
    at: new Date(time(r.at)),
    ok: r.ok === true || r.ok === 1,
    status: r.status,
    durationMs: r.duration_ms,
    responseBody: r.response_body,
    error: r.error,
    errorDetail: r.error_detail,
  }
}

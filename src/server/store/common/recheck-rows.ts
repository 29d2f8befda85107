/** How a pending email recheck is stored, by SQLite and PostgreSQL alike (the `email_rechecks` table). */
import type { RecheckTarget, StoredRecheck } from '../contracts/rechecks.js'

/** A stored row, as both databases return it (BIGINT columns may come back as strings). */
export interface RecheckRow {
  id: string
  org_id: string
  mode: string
  request_id: string | null
  bulk_job_id: string | null
  row_index: number | null
  address: string
  answered_at: number | string
  due_at: number | string
  attempt: number
  max_attempts: number
}

/** The id of a target's recheck: one pending recheck per answer. */
export function recheckIdOf(target: RecheckTarget): string {
  return target.kind === 'request' ? `req:${target.requestId}` : `bulk:${target.jobId}:${target.rowIndex}`
}

/** The columns of a recheck, in the order of {@link RECHECK_COLUMNS}. */
export function recheckValues(r: StoredRecheck): unknown[] {
  const t = r.target
  return [
    r.id,
    r.orgId,
    r.mode,
    t.kind === 'request' ? t.requestId : null,
    t.kind === 'bulk' ? t.jobId : null,
    t.kind === 'bulk' ? t.rowIndex : null,
    r.address,
    r.answeredAt,
    r.dueAt,
    r.attempt,
    r.maxAttempts,
  ]
}

export const RECHECK_COLUMNS = 'id, org_id, mode, request_id, bulk_job_id, row_index, address, answered_at, due_at, attempt, max_attempts'

/** A recheck from its stored row. */
export function toRecheck(r: RecheckRow): StoredRecheck {
  const target: RecheckTarget =
    r.bulk_job_id !== null ? { kind: 'bulk', jobId: r.bulk_job_id, rowIndex: Number(r.row_index) } : { kind: 'request', requestId: r.request_id ?? '' }
  return {
    id: r.id,
    orgId: r.org_id,
    mode: r.mode === 'test' ? 'test' : 'live',
    target,
    address: r.address,
    answeredAt: Number(r.answered_at),
    dueAt: Number(r.due_at),
    attempt: Number(r.attempt),
    maxAttempts: Number(r.max_attempts),
  }
}

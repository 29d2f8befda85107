/** Rows of the `outcomes` table as both engines return them, and their records. */
import type { OutcomeKind, OutcomeMode, OutcomeRecord } from '../contracts/outcomes.js'

/** A row of `outcomes` (both engines name the columns alike). */
export interface OutcomeRow {
  seq: number | string
  id: string
  org_id: string
  mode: string
  request_id: string | null
  subject: string
  outcome: string
  note: string | null
  email_hash: string | null
  phone_hash: string | null
  ip_hash: string | null
  created_at: number | string
  superseded_at: number | string | null
}

/** The record of a row. */
export const toOutcome = (r: OutcomeRow): OutcomeRecord => ({
  id: r.id,
  seq: Number(r.seq),
  orgId: r.org_id,
  mode: r.mode as OutcomeMode,
  requestId: r.request_id,
  subject: r.subject,
  outcome: r.outcome as OutcomeKind,
  note: r.note,
  email: r.email_hash,
  phone: r.phone_hash,
  ip: r.ip_hash,
  createdAt: Number(r.created_at),
  supersededAt: r.superseded_at === null ? null : Number(r.superseded_at),
})

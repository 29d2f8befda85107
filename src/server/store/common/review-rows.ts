/** Rows of the `reviews` table as both engines return them, and their records. */
import type { LookupType } from '../../../schema.js'
import type { NewReview, ReviewDecision, ReviewMode, ReviewRecord } from '../contracts/reviews.js'

/** A row of `reviews` (both engines name the columns alike). */
export interface ReviewRow {
  seq: number | string
  id: string
  org_id: string
  mode: string
  request_id: string
  type: string
  input: string
  score: number | string
  factors: string
  factor_codes: string
  action: string
  created_at: number | string
  decision: string | null
  decided_by: string | null
  decided_at: number | string | null
  note: string | null
  list_id: string | null
  outcome_id: string | null
  completed_at: number | string | null
  phone_e164: string | null
}

const numOrNull = (v: number | string | null) => (v === null ? null : Number(v))

/** The record of a row. */
export const toReview = (r: ReviewRow): ReviewRecord => ({
  seq: Number(r.seq),
  id: r.id,
  orgId: r.org_id,
  mode: r.mode as ReviewMode,
  requestId: r.request_id,
  type: r.type as LookupType,
  input: r.input,
  score: Number(r.score),
  factors: JSON.parse(r.factors) as ReviewRecord['factors'],
  action: r.action,
  createdAt: Number(r.created_at),
  decision: r.decision as ReviewDecision | null,
  decidedBy: r.decided_by,
  decidedAt: numOrNull(r.decided_at),
  note: r.note,
  listId: r.list_id,
  outcomeId: r.outcome_id,
  completedAt: numOrNull(r.completed_at),
  phoneE164: r.phone_e164 ?? null,
})

/** The column values of a new entry, in the order of {@link REVIEW_COLUMNS}. */
export const reviewValues = (r: NewReview): unknown[] => [
  r.id,
  r.orgId,
  r.mode,
  r.requestId,
  r.type,
  r.input,
  r.score,
  JSON.stringify(r.factors),
  // ' code1 code2 ': a factor filter is a substring test for ' code ' (codes are [a-z0-9_], never a space)
  ` ${r.factors.map((f) => f.code).join(' ')} `,
  r.action,
  r.createdAt,
  r.phoneE164,
]

/**
 * An entry kept at the retention cutoff `param` (a placeholder): its retention runs from its decision, or while it is
 * pending from its answer — the complement of what the purge deletes, so an entry past it reads as purged.
 */
export const keptSince = (param: string) => `COALESCE(decided_at, created_at) >= ${param}`

/** The columns a new entry fills. */
export const REVIEW_COLUMNS = 'id, org_id, mode, request_id, type, input, score, factors, factor_codes, action, created_at, phone_e164'

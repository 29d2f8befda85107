/** How a bulk row is stored, by SQLite and PostgreSQL alike: its state as a code, its result as one compact JSON cell. */
import type { DetailsCodec } from '../../../bulk/codec.js'
import type { BulkRowRecord, BulkRowState } from '../../../bulk/types.js'
import type { Action, BulkJob } from '../../../schema.js'

/** How a row state is stored (SQLite and PostgreSQL alike). */
export const STATE_CODE: Record<BulkRowState, number> = { pending: 0, done: 1, error: 2 }
/** The row state of each stored code. */
export const STATES: readonly BulkRowState[] = ['pending', 'done', 'error']

/**
 * Serialized result of a row: [status, reason, risk_score, credits_used, cache_hit, error, details (packed) or 0,
 * factors]. Rows written before factors were kept have 7 cells: their factors read as null.
 */
type ResultCell = [string | null, string | null, number | null, number, 0 | 1, string | null, unknown[] | Record<string, unknown> | 0, (string[] | null)?]

/** A stored row, as both databases return it. */
export interface RowRow {
  idx: number
  state: number
  retryable: number
  action: string | null
  input: string
  result: string | null
}

/** The result column of a finished row. */
export function packResult(codec: DetailsCodec, row: BulkRowRecord): string {
  let details: ResultCell[6] = 0
  for (const _ in row.details) {
    details = codec.pack(row.details)
    break
  }
  const cell: ResultCell = [row.status, row.reason, row.risk_score, row.credits_used, row.cache_hit ? 1 : 0, row.error, details, row.factors]
  return JSON.stringify(cell)
}

/** A row record from its stored columns. */
export function unpackRow(codec: DetailsCodec, r: RowRow): BulkRowRecord {
  const c = (r.result === null ? [null, null, null, 0, 0, null, 0] : JSON.parse(r.result)) as ResultCell
  return {
    index: r.idx,
    input: r.input,
    state: STATES[r.state] ?? 'pending',
    retryable: r.retryable === 1,
    action: r.action as Action | null,
    status: c[0],
    reason: c[1],
    risk_score: c[2],
    credits_used: c[3],
    cache_hit: c[4] === 1,
    error: c[5],
    factors: c[7] ?? null,
    details: c[6] === 0 ? {} : codec.unpack(c[6]),
  }
}

/** Moves one row's count in `job.results` from its old action to its new one (a row rechecked in place). */
export function moveActionCount(job: BulkJob, from: string | null, to: Action | null): void {
  const results = job.results as Record<string, number>
  if (from !== null && typeof results[from] === 'number' && results[from]! > 0) results[from]!--
  if (to !== null) results[to] = (results[to] ?? 0) + 1
}

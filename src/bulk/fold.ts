/**
 * Folding: turns a job's raw inputs into its rows. Each input goes through its check's `prepare` (the same
 * normalization as a single lookup) and is folded by its fold key (the check's `foldKey` of the cache key, by default
 * the cache key). The email lookup folds the whole address lower-cased: `Jane@Example.com` and `jane@example.com `
 * are one row and one credit. Blank inputs are dropped (counted as skipped); an input the check cannot look up
 * (prepare throws INVALID_INPUT, or it is over its type's length limit: docs/decisions.md, "HTTP API" → "bulk input
 * length") becomes a free error row, folded with its exact repeats.
 */
import { INPUT_LIMITS, overInputLimit } from '../checks/input-limits.js'
import type { CheckContext, CheckDefinition } from '../checks/types.js'
import { isRiskcheckError } from '../errors.js'
import type { BulkType } from '../schema.js'
import type { BulkJobOptions, BulkRowRecord } from './types.js'

/** A row that will be looked up: its index and its prepared input. */
export interface WorkItem {
  index: number
  /** The input as given. */
  raw: string
  /** The prepared input. */
  input: unknown
  cacheKey: string
}

/** What folding produced. The rows are {@link foldedRows}: `work` and `errorRows` merged by index. */
export interface FoldedInputs {
  /** The rows to look up (pending), with their prepared inputs, in input order. */
  work: WorkItem[]
  /** The rows of inputs that cannot be looked up, in input order. */
  errorRows: BulkRowRecord[]
  /** Inputs given (blank and duplicate ones included). */
  totalRows: number
  /** Rows (unique non-blank inputs, error rows included). */
  uniqueInputs: number
  /** Inputs folded away: blank inputs and repeats of an earlier input. */
  skipped: number
  /** Error rows. */
  errors: number
}

/** The lookup options a job passes to every row of its type. */
export function lookupOptionsFor(type: BulkType, options: BulkJobOptions): Record<string, unknown> {
  if ((type === 'phone' || type === 'phone_type') && options.country !== null) return { country: options.country }
  if (type === 'email' && options.smtp !== null) return { smtp: options.smtp }
  return {}
}

/** A row not looked up yet. */
export function pendingRow(index: number, input: string): BulkRowRecord {
  return {
    index,
    input,
    state: 'pending',
    retryable: false,
    action: null,
    status: null,
    reason: null,
    risk_score: null,
    credits_used: 0,
    cache_hit: false,
    error: null,
    factors: null,
    details: {},
  }
}

/** A row that could not be checked; `retryable` when the reason was temporary. */
export function errorRow(index: number, input: string, error: string, retryable: boolean): BulkRowRecord {
  return { ...pendingRow(index, input), state: 'error', error, retryable }
}

/** The `error` text of a row whose lookup threw something other than a RiskcheckError. */
export const INTERNAL_ROW_ERROR = 'INTERNAL_ERROR: The input could not be checked (internal error); retry the job later.'

/**
 * The row's `error` text for a thrown error: `CODE: message` for a RiskcheckError (its message is meant for callers);
 * a fixed {@link INTERNAL_ROW_ERROR} for anything else, whose message may carry internals (host names, addresses,
 * library details) that rows served by the API must not show — the same rule as the server's 500 answers.
 */
export function errorText(e: unknown): string {
  if (isRiskcheckError(e)) return `${e.code}: ${e.message}`
  return INTERNAL_ROW_ERROR
}

/**
 * The error row text of an input longer than `type` takes, `length` characters long, and the stored input: its first
 * characters up to the limit (a surrogate pair kept whole) and `…`.
 */
function overLimitRow(type: BulkType, raw: string, length: number): { input: string; error: string } {
  const max = INPUT_LIMITS[type]
  const end = raw.charCodeAt(max - 1) >= 0xd800 && raw.charCodeAt(max - 1) <= 0xdbff ? max - 1 : max
  const error = `INVALID_INPUT: Inputs of type ${type} are at most ${max.toLocaleString('en-US')} characters (this one has ${length.toLocaleString('en-US')}).`
  return { input: `${raw.slice(0, end)}…`, error }
}

/**
 * Folds `inputs` for the check `def`. Yields to the event loop every `yieldEvery` inputs so a server stays
 * responsive while 100,000 inputs are prepared.
 *
 * @example
 * const f = await foldInputs(CHECKS.phone, ['+1 415 555 0100', '+14155550100', ''], { country: null, smtp: null }, ctx)
 * f.uniqueInputs // 1 — f.skipped // 2
 */
export async function foldInputs(
  def: CheckDefinition<unknown, object, unknown>,
  inputs: readonly string[],
  options: BulkJobOptions,
  ctx: CheckContext,
  yieldEvery = 2_000,
): Promise<FoldedInputs> {
  const type = def.type as BulkType
  const opts = lookupOptionsFor(type, options)
  // Keys of the rows so far: fold keys of looked-up inputs, and (separately) the trimmed text of unusable ones.
  const seen = new Set<string>()
  const seenErrors = new Set<string>()
  const errorRows: BulkRowRecord[] = []
  const work: WorkItem[] = []
  let unique = 0
  let skipped = 0
  let errors = 0
  for (let n = 0; n < inputs.length; n++) {
    if (n > 0 && n % yieldEvery === 0) await new Promise<void>((r) => setImmediate(r))
    const raw = inputs[n] as string
    const trimmed = raw.trim()
    if (trimmed === '') {
      skipped++
      continue
    }
    const over = overInputLimit(type, raw)
    let prepared: { input: unknown; cacheKey: string } | null = null
    let failure: unknown = null
    if (over === null) {
      try {
        prepared = def.prepare(raw, opts, ctx)
      } catch (e) {
        failure = e
      }
    }
    const key = prepared ? (def.foldKey ? def.foldKey(prepared.cacheKey) : prepared.cacheKey) : trimmed
    const keys = prepared ? seen : seenErrors
    if (keys.has(key)) {
      skipped++
      continue
    }
    keys.add(key)
    const index = unique++
    if (prepared) work.push({ index, raw, input: prepared.input, cacheKey: prepared.cacheKey })
    else {
      const cut = over === null ? null : overLimitRow(type, raw, over)
      errorRows.push(cut ? errorRow(index, cut.input, cut.error, false) : errorRow(index, raw, errorText(failure), false))
      errors++
    }
  }
  return { work, errorRows, totalRows: inputs.length, uniqueInputs: unique, skipped, errors }
}

/** All rows of a fold in index order (pending rows made on the fly, so 100,000 row objects never exist at once). */
export function* foldedRows(f: Pick<FoldedInputs, 'work' | 'errorRows'>): Generator<BulkRowRecord> {
  let e = 0
  for (const w of f.work) {
    while (e < f.errorRows.length && (f.errorRows[e] as BulkRowRecord).index < w.index) yield f.errorRows[e++] as BulkRowRecord
    yield pendingRow(w.index, w.raw)
  }
  while (e < f.errorRows.length) yield f.errorRows[e++] as BulkRowRecord
}

/**
 * Stored answers: what a backtest needs of one past answer (input, factors, action, context), read from any shape
 * riskcheck writes — a lookup result or its HTTP envelope, a bulk row or results page, an array of these, or a
 * {@link StoredAnswer} itself. Anything else is skipped with a reason, never thrown on.
 */
import { ACTIONS, CONTEXTS, LOOKUP_TYPES, VELOCITY_KINDS, type Action, type CheckContextName, type LookupType, type Velocity } from '../schema.js'

/** One past answer, reduced to what re-scoring needs. */
export interface StoredAnswer {
  /** The input as a string (a combined check: its parts joined with ` · `). */
  input: string
  /** The lookup type, when known. */
  type?: LookupType | null
  /** The action it got (null when not recorded: pass `baseline` to the backtest to compute it). */
  action?: Action | null
  /** The score it got, when recorded. */
  score?: number | null
  /** The fired factor codes. */
  factors: readonly string[]
  /** The context it was judged in (combined checks). */
  context?: CheckContextName | null
  /** Other names labels may use for it: the request id, the email, IP and phone of a combined check. */
  keys?: readonly string[]
  /**
   * The velocity counts it had (`details.velocity`): a backtest then derives the velocity factors from them under the
   * candidate policy's thresholds, instead of taking the recorded ones.
   */
  velocity?: Velocity | null
}

/** Why an item was not re-scored. */
export type SkipReason = 'error' | 'no_factors' | 'no_action' | 'not_a_result'

/** The skip reasons, in report order. */
export const SKIP_REASONS: readonly SkipReason[] = ['error', 'no_factors', 'no_action', 'not_a_result']

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null)
const ACTION_SET = new Set<unknown>(ACTIONS)
const CONTEXT_SET = new Set<unknown>(CONTEXTS)
const TYPE_SET = new Set<unknown>(LOOKUP_TYPES)
const actionOf = (v: unknown): Action | null => (ACTION_SET.has(v) ? (v as Action) : null)
const contextOf = (v: unknown): CheckContextName | null => (CONTEXT_SET.has(v) ? (v as CheckContextName) : null)
const typeOf = (v: unknown): LookupType | null => (TYPE_SET.has(v) ? (v as LookupType) : null)
const numberOf = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** The factor codes of a list (the list itself when it holds only strings, as it does when riskcheck wrote it). */
function factorsOf(v: unknown): readonly string[] | null {
  if (!Array.isArray(v)) return null
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== 'string') return v.filter((f): f is string => typeof f === 'string')
  return v as string[]
}

/**
 * The items inside a value: the rows of an array or a results page, the result of an envelope, else the value.
 *
 * @example
 * [...expandResults({ success: true, data: [row1, row2], next_cursor: null })] // [row1, row2]
 */
export function* expandResults(value: unknown): Generator<unknown> {
  if (Array.isArray(value)) {
    for (const v of value) yield* expandResults(v)
    return
  }
  if (isObject(value) && 'data' in value && !('request' in value) && !('input' in value)) {
    yield* expandResults(value.data)
    return
  }
  yield value
}

/** Velocity counts as riskcheck writes them (`details.velocity`), or null. */
function velocityOf(v: unknown): Velocity | null {
  if (!isObject(v)) return null
  const out = {} as Record<string, { hour: number; day: number } | null>
  for (const k of VELOCITY_KINDS) {
    const c = v[k]
    if (c === null || c === undefined) out[k] = null
    else if (isObject(c) && typeof c.hour === 'number' && typeof c.day === 'number') out[k] = { hour: c.hour, day: c.day }
    else return null
  }
  return out as Velocity
}

/** The part inputs of a combined check's input object. */
function checkParts(input: Record<string, unknown>): string[] {
  const out: string[] = []
  for (const k of ['email', 'ip', 'phone']) {
    const v = input[k]
    if (typeof v === 'string' && v.trim() !== '') out.push(v)
  }
  return out
}

function fromLookupResult(r: Record<string, unknown>): StoredAnswer | SkipReason {
  const request = r.request as Record<string, unknown>
  const risk = isObject(r.risk) ? r.risk : null
  const factors = factorsOf(risk?.factors)
  if (!factors) return 'no_factors'
  const type = typeOf(request.type)
  const keys: string[] = []
  let input: string
  const raw = request.input
  if (isObject(raw)) {
    const parts = checkParts(raw)
    keys.push(...parts)
    input = parts.join(' · ')
  } else input = typeof raw === 'string' ? raw : raw === undefined ? '' : JSON.stringify(raw)
  const id = str(request.id)
  if (id) keys.push(id)
  const details = isObject(r.details) ? r.details : null
  const answer: StoredAnswer = {
    input,
    type,
    action: actionOf(isObject(r.recommendation) ? r.recommendation.action : undefined),
    score: numberOf(risk?.score),
    factors,
    context: type === 'check' ? contextOf(details?.context) : null,
    keys,
  }
  const velocity = velocityOf(details?.velocity)
  if (velocity) answer.velocity = velocity
  return answer
}

/**
 * The stored answer in `value` (one result, row or answer; see {@link expandResults} for containers), or why it
 * cannot be re-scored: `error` (a row or line that records an error), `no_factors` (written without factors, e.g.
 * a results.csv of an older riskcheck), `not_a_result` (not a shape riskcheck writes).
 */
export function toStoredAnswer(value: unknown): StoredAnswer | SkipReason {
  if (!isObject(value)) return 'not_a_result'
  if (isObject(value.request)) return fromLookupResult(value)
  if (typeof value.input !== 'string') return 'not_a_result'
  // A bulk row, a CLI error line ({ input, error }) or a stored answer.
  if (value.error !== null && value.error !== undefined) return 'error'
  const factors = factorsOf(value.factors)
  if (!factors) return 'no_factors'
  const answer: StoredAnswer = {
    input: value.input,
    type: typeOf(value.type),
    action: actionOf(value.action),
    score: numberOf(value.risk_score ?? value.score),
    factors,
    context: contextOf(value.context),
  }
  if (Array.isArray(value.keys)) answer.keys = value.keys.filter((k): k is string => typeof k === 'string')
  const velocity = velocityOf(value.velocity ?? (isObject(value.details) ? value.details.velocity : undefined))
  if (velocity) answer.velocity = velocity
  return answer
}

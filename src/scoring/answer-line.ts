/**
 * Parsing one JSON line of a stored answer without its `details` (most of a line's bytes): when the line is in the key
 * order riskcheck writes, the details are cut out unparsed and the rest parsed; anything else is parsed whole. Why the
 * cut is safe: docs/decisions.md, "Per-org policies" → "answer lines without details".
 */

const DETAILS = ',"details":'
const VELOCITY_COUNTS = '"velocity":{'
const RECOMMENDATION = ',"recommendation":'
const CONTEXT_KEY = '"context":'
const CONTEXT_VALUES = new Map<string, string | null>([
  ['"signup"', 'signup'],
  ['"lead"', 'lead'],
  ['"checkout"', 'checkout'],
  ['null', null],
])

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/** The lookup result inside a value (itself, or the `data` of an HTTP envelope). */
function resultOf(v: unknown): Record<string, unknown> | null {
  if (!isObject(v)) return null
  if (isObject(v.request) && isObject(v.risk)) return v
  return isObject(v.data) && isObject(v.data.request) && isObject(v.data.risk) ? v.data : null
}

/**
 * The value of one JSON line of a results file — without `details` when the line is in riskcheck's key order (a
 * combined check keeps `details.context`). Throws like `JSON.parse` for a line that is not JSON.
 *
 * @example
 * parseAnswerLine('{"input":"a@b.example","action":"approve",…,"factors":[],"details":{…}}') // no details key
 */
export function parseAnswerLine(line: string): unknown {
  const d = line.indexOf(DETAILS)
  // Velocity counts are re-scored too (src/scoring/velocity.ts): a line that has some is parsed whole.
  if (d > 0 && line.indexOf(VELOCITY_COUNTS, d) < 0) {
    const r = line.indexOf(RECOMMENDATION, d)
    try {
      if (r > 0) {
        const v = JSON.parse(line.slice(0, d) + line.slice(r)) as unknown
        const result = resultOf(v)
        if (result && isObject(result.recommendation)) {
          if ((result.request as Record<string, unknown>).type !== 'check') return v
          // The details of a combined check end with its context: `…,"context":"signup"}`.
          const at = line.lastIndexOf(CONTEXT_KEY, r)
          const context = at > d && line.charCodeAt(r - 1) === 125 ? CONTEXT_VALUES.get(line.slice(at + CONTEXT_KEY.length, r - 1)) : undefined
          if (context !== undefined) {
            result.details = { context }
            return v
          }
        }
      } else if (line.endsWith('}}')) {
        const v = JSON.parse(`${line.slice(0, d)}}`) as unknown
        // A bulk row has every field before its details (the last key).
        if (isObject(v) && typeof v.input === 'string' && 'action' in v && 'error' in v && 'factors' in v) return v
      }
    } catch {
      // not in that shape: parse it whole
    }
  }
  return JSON.parse(line)
}

/**
 * Whole numbers in a query string (`limit`, `min_score`), one rule on every route — and so in the dashboard, which
 * checks its queries with the routes' schemas: plain decimal digits, no sign, no leading zero (`0` alone where the
 * range starts at 0), within the route's range. A query value is text, so the rule is a pattern of the route's
 * schema; a value that fails it is a 400 INVALID_REQUEST saying the range in words (./envelope.ts).
 */
import { Type, type TString } from '@sinclair/typebox'

// Literals (so the regex check of the source tree sees them): one for each range a route uses.
const RANGES: ReadonlyArray<{ min: number; max: number; re: RegExp }> = [
  { min: 0, max: 100, re: /^(100|[1-9]?[0-9])$/ },
  { min: 1, max: 100, re: /^(100|[1-9][0-9]?)$/ },
  { min: 1, max: 1000, re: /^(1000|[1-9][0-9]{0,2})$/ },
]

/** The schema of a whole-number query parameter from `min` to `max` (a range of {@link RANGES}; another throws). */
export function QueryInteger(min: number, max: number, description: string): TString {
  const range = RANGES.find((r) => r.min === min && r.max === max)
  if (!range) throw new Error(`no whole-number pattern for ${min} to ${max}: add its literal to RANGES`)
  return Type.String({ pattern: range.re.source, description })
}

/** The end of the message for a value failing `pattern` — "must be a whole number from 1 to 100" — or undefined. */
export function queryIntegerMessage(pattern: unknown): string | undefined {
  const range = RANGES.find((r) => r.re.source === pattern)
  return range && `must be a whole number from ${range.min} to ${range.max}`
}

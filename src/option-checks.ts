/**
 * The checks every option reader shares — `createRiskcheck` (./settings.ts), the bulk engine, the DNS and SMTP sources
 * and `createServer` — so a number option is validated, and its mistake worded, the same way everywhere:
 * "riskcheck: option `dns.timeoutMs` must be a whole number from 1 to 120000".
 *
 * This module imports nothing, so every layer can use it without an import loop.
 */

/** Bounds of a number option. */
export interface NumberBounds {
  /** Smallest allowed value (default 1). */
  min?: number
  /** Largest allowed value (default: none). */
  max?: number
  /** Whole numbers only (default true). */
  integer?: boolean
}

/** Throws the TypeError of a bad option: "<prefix>: option `<name>` <why>". */
export function badOption(name: string, why: string, prefix = 'riskcheck'): never {
  throw new TypeError(`${prefix}: option \`${name}\` ${why}`)
}

/** How a number option's bounds read in a message: "a whole number from 1 to 10", "a number ≥ 0". */
export function describeBounds(bounds: NumberBounds = {}): string {
  const { min = 1, max, integer = true } = bounds
  const what = integer ? 'a whole number' : 'a number'
  return max === undefined || max >= Number.MAX_SAFE_INTEGER ? `${what} ≥ ${min}` : `${what} from ${min} to ${max}`
}

/** Whether `value` is a number within `bounds`. */
export function withinBounds(value: unknown, bounds: NumberBounds = {}): value is number {
  const { min = 1, max = Number.MAX_SAFE_INTEGER, integer = true } = bounds
  return typeof value === 'number' && Number.isFinite(value) && (!integer || Number.isSafeInteger(value)) && value >= min && value <= max
}

/**
 * A number option: `fallback` when undefined, the value when within `bounds`, a TypeError naming the option
 * otherwise.
 */
export function numberOption(name: string, value: unknown, fallback: number, bounds: NumberBounds = {}, prefix = 'riskcheck'): number {
  if (value === undefined) return fallback
  if (!withinBounds(value, bounds)) badOption(name, `must be ${describeBounds(bounds)}`, prefix)
  return value
}

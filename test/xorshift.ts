/**
 * Deterministic random numbers for tests and benchmarks: xorshift32 (Marsaglia), the same run for the same seed.
 */

/**
 * A generator of unsigned 32-bit numbers from `seed` (0 is taken as 1: xorshift never leaves 0).
 *
 * @example
 * const next = xorshift(42)
 * const unit = () => next() / 2 ** 32 // a number in [0, 1)
 */
export function xorshift(seed: number): () => number {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s
  }
}

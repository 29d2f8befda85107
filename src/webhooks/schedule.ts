/**
 * The delivery retry schedule and the auto-disable rule (pure; the clock is passed in). Why these delays and this
 * window: docs/decisions.md, "Webhooks" → "retries" and "auto-disable".
 */

const MIN = 60_000
const HOUR = 60 * MIN

/** Delay before each retry, after the previous attempt: 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 3 h, 4 h, 6 h, 7 h. */
export const RETRY_DELAYS_MS: readonly number[] = Object.freeze([
  1 * MIN,
  5 * MIN,
  15 * MIN,
  30 * MIN,
  1 * HOUR,
  2 * HOUR,
  3 * HOUR,
  4 * HOUR,
  6 * HOUR,
  7 * HOUR,
])

/** Attempts per delivery: the first plus one per retry delay (11). */
export const MAX_DELIVERY_ATTEMPTS = RETRY_DELAYS_MS.length + 1

/** Sum of the retry delays: 23 h 51 min. */
export const RETRY_SPAN_MS = RETRY_DELAYS_MS.reduce((a, b) => a + b, 0)

/** How long an endpoint must have had no success before a final failure disables it ("a day" = the retry span). */
export const FAILING_WINDOW_MS = RETRY_SPAN_MS

/** How long delivery logs (attempts) are kept: 30 days. */
export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * HOUR

/** Options of {@link nextAttemptAt}. */
export interface RetryJitterOptions {
  /** spread each delay by up to ± this fraction (e.g. 0.2); default 0 */
  jitterRatio?: number
  /** random source in [0, 1) for the jitter (default Math.random) */
  random?: () => number
  /** the retry delays (default {@link RETRY_DELAYS_MS}; tests scale them down) */
  delaysMs?: readonly number[]
}

/**
 * When the next attempt of a delivery is due, given how many attempts have been made and when the last one ended;
 * null when the schedule is exhausted (after {@link MAX_DELIVERY_ATTEMPTS}).
 * `attemptsMade` 0 → `from` (send now); 1 → +1 min; 2 → +5 min; … 10 → +7 h; 11 → null.
 *
 * @example
 * nextAttemptAt(1, new Date('2026-01-01T00:00:00Z')) // 2026-01-01T00:01:00Z
 * nextAttemptAt(11, new Date())                      // null
 */
export function nextAttemptAt(attemptsMade: number, from: Date, options: RetryJitterOptions = {}): Date | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 0) throw new TypeError('attemptsMade must be a non-negative integer')
  if (attemptsMade === 0) return new Date(from.getTime())
  const delay = (options.delaysMs ?? RETRY_DELAYS_MS)[attemptsMade - 1]
  if (delay === undefined) return null
  const ratio = options.jitterRatio ?? 0
  let jittered = delay
  if (ratio > 0) {
    const r = (options.random ?? Math.random)()
    jittered = Math.round(delay * (1 + ratio * (2 * r - 1)))
  }
  return new Date(from.getTime() + jittered)
}

/** Inputs of {@link shouldDisable}. */
export interface DisableCheck {
  /** the attempt that just finished failed and was the delivery's last (no retry left) */
  lastAttemptFailedFinal: boolean
  /** the endpoint's most recent successful delivery, or null if none ever */
  lastSuccessAt: Date | null
  /** when the endpoint was created */
  endpointCreatedAt: Date
  /** when an operator last re-enabled the endpoint, if ever (starts a fresh window) */
  enabledAt?: Date | null
  now: Date
}

/**
 * The auto-disable rule: true when the last retry of a delivery failed and nothing has succeeded for the endpoint
 * for {@link FAILING_WINDOW_MS} (counted from the latest of: last success, creation, re-enabling).
 *
 * @example
 * shouldDisable({ lastAttemptFailedFinal: true, lastSuccessAt: null, endpointCreatedAt: dayAgo, now }) // true
 */
export function shouldDisable(input: DisableCheck): boolean {
  if (!input.lastAttemptFailedFinal) return false
  let since = input.endpointCreatedAt.getTime()
  if (input.lastSuccessAt) since = Math.max(since, input.lastSuccessAt.getTime())
  if (input.enabledAt) since = Math.max(since, input.enabledAt.getTime())
  return input.now.getTime() - since >= FAILING_WINDOW_MS
}

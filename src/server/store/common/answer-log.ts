/** The bounds of the per-org answer log (docs/decisions.md, "Per-org policies"). */

/** How long an answer stays in the log: 7 days (the window `admin policy set` backtests over). */
export const ANSWER_LOG_TTL_MS = 7 * 24 * 60 * 60 * 1000

/** Most answers kept per org (the newest); a backtest covers at most these. */
export const MAX_ANSWERS_PER_ORG = 100_000

/** The bounds of the per-org answer log (docs/decisions.md, "Per-org policies") and how its velocity counts are stored. */
import { VELOCITY_KINDS, type Velocity, type VelocityKind } from '../../../schema.js'

/** How long an answer stays in the log: 7 days (the window `admin policy set` backtests over). */
export const ANSWER_LOG_TTL_MS = 7 * 24 * 60 * 60 * 1000

/** Most answers kept per org (the newest); a backtest covers at most these. */
export const MAX_ANSWERS_PER_ORG = 100_000

/**
 * The velocity counts of a logged answer as stored (column `velocity`): for each kind in VELOCITY_KINDS order its
 * `hour,day`, or `-` when it had none, separated by spaces (`1,1 2,2 - 1,1 -`). Numbers only: never a value or hash.
 * Null when the answer had no counts (velocity off, the store failed, a lookup that does not count).
 */
export function encodeVelocity(v: Velocity | null | undefined): string | null {
  if (!v) return null
  return VELOCITY_KINDS.map((k) => {
    const c = v[k]
    return c ? `${c.hour},${c.day}` : '-'
  }).join(' ')
}

/** The counts of {@link encodeVelocity}'s text, or null (none stored, or not of that form). */
export function decodeVelocity(text: string | null | undefined): Velocity | null {
  if (typeof text !== 'string') return null
  const parts = text.split(' ')
  if (parts.length !== VELOCITY_KINDS.length) return null
  const out = {} as Record<VelocityKind, { hour: number; day: number } | null>
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] as string
    const kind = VELOCITY_KINDS[i] as VelocityKind
    if (p === '-') {
      out[kind] = null
      continue
    }
    const [hour, day] = p.split(',').map(Number)
    if (!Number.isSafeInteger(hour) || !Number.isSafeInteger(day)) return null
    out[kind] = { hour: hour as number, day: day as number }
  }
  return out as Velocity
}

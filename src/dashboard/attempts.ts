/**
 * How the dashboard counts sign-in attempts (docs/dashboard.md): before a password or a second-factor code is
 * checked, under the person's key (`email:…`, `mfa:<user>`) with the configured limit and under the client's
 * (`ip:…`) with ten times it, in a sliding window; the store makes the count atomic.
 */
import { randomToken, type Dash } from './context.js'
import type { TeamStore } from '../server/store/contracts/team-store.js'

/** `takeAttempt` and `retryAfter` of the {@link Dash} for `teams`, with the limits of DashboardOptions. */
export function attemptCounter(
  teams: TeamStore,
  nowMs: () => number,
  options: { loginAttempts?: number; loginWindowMs?: number },
): Pick<Dash, 'takeAttempt' | 'retryAfter'> {
  const limit = options.loginAttempts ?? 5
  const windowMs = options.loginWindowMs ?? 15 * 60_000
  return {
    async takeAttempt(keys) {
      const attempt = randomToken()
      const t = nowMs()
      const limited = keys.map((key) => ({ key, limit: key.startsWith('ip:') ? limit * 10 : limit }))
      return (await teams.takeLoginAttempt(attempt, limited, t, t - windowMs)) ? attempt : null
    },
    retryAfter: Math.ceil(windowMs / 1000),
  }
}

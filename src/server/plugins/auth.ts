/**
 * Authentication of the routes with a scope (every /v1 route but the public ones): the API key of the Authorization
 * header (a failure counted against the client address), the key's own rate limit, the scope, the org's scoring
 * policy of this request, and the key's last use (recorded at most once a minute). The caller is kept in
 * `parts.states` for the handlers.
 */
import { RiskcheckError } from '../../errors.js'
import { authenticate, authorize, type RequestAuth } from '../auth.js'
import { resolveOrgScoring } from '../org-answer.js'
import { sentHeader } from '../request-guards.js'
import type { RouteConfig } from './context.js'
import { applyLimit, hitAnonymous } from './rate-limits.js'
import { rootPlugin } from './root-plugin.js'

/** The onRequest hook of the routes with a scope (after ./rate-limits.ts's). */
export const authPlugin = rootPlugin('riskcheck-auth', (app, parts) => {
  const { store, settings, limiter, orgPolicies, orgLists, states, nowMs, deps } = parts
  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config as RouteConfig | undefined
    const scope = config?.scope
    if (config?.probe || !scope) return
    let auth: RequestAuth
    try {
      auth = await authenticate(store, sentHeader(request, 'authorization'), await parts.secret, settings.testRate)
    } catch (e) {
      // Failed authentications count against the client address (slows key guessing); a key that could not be read
      // (the database is down) is no failed authentication.
      if (e instanceof RiskcheckError && e.code === 'UNAUTHORIZED') applyLimit(reply, await hitAnonymous(parts, request))
      throw e
    }
    applyLimit(reply, await limiter.hit(`key:${auth.key.id}`, auth.ratePerSecond, 'key'))
    authorize(auth, scope)
    // The org's policy of this request (a change by `riskcheck admin policy` applies from here) and the org's lists
    // of a lookup (compiled once per version: docs/decisions.md "Lists in the service"); ../org-answer.ts.
    const org = await resolveOrgScoring({ orgPolicies, orgLists }, auth, auth, scope === 'lookup')
    auth.policyVersion = org.policy.version
    auth.policy = org.policy.policy
    if (scope === 'lookup') auth.lists = org.lists
    states.set(request, { auth })
    // Last use is recorded at most once a minute per key (no write on every request).
    const t = nowMs()
    if (auth.key.lastUsedAt === null || t - auth.key.lastUsedAt >= 60_000 || t < auth.key.lastUsedAt) {
      // a record of use, not a condition of the answer: a database that cannot be written now does not refuse a read
      await Promise.resolve(store.touchKey(auth.key.id, t)).catch((e: unknown) => {
        if (!deps.note(e)) throw e
      })
    }
  })
})

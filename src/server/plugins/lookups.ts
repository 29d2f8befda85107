/**
 * What route handlers (../routes/) and the dashboard see of the server: the {@link ServerContext}. Its heart is the
 * lookup environment of a caller — test mode for test keys, the org's ledger for live keys (a hold of this instance's
 * lease, settled with the answer of a keyed request: ./idempotency.ts) — and the listeners of answered lookups.
 */
import { createOrgLedger } from '../../accounts/ledger.js'
import { PRODUCTS } from '../../accounts/plans.js'
import { buildOpenApi } from '../openapi.js'
import { orgSignals } from '../org-answer.js'
import { outcomeStoreOf } from '../store/open-storage.js'
import { ROUTES } from '../routes/index.js'
import type { LookupListener, ServerContext } from '../routes/types.js'
import type { ServerParts } from './context.js'
import { readinessOf } from './health-metrics.js'
import { settleWithAnswer } from './idempotency.js'

/** The context of the server's route handlers, built once. */
export function serverContextOf(parts: Omit<ServerParts, 'ctx'>): ServerContext {
  const { store, rc, nowMs, lease, states, testEnv, velocity, orgLists, outcomes, reviews, orgPolicies, bulk, webhooks, rechecks, settings, options, live } = parts
  const leases = store.leases
  const outcomeStore = outcomeStoreOf(store)
  const lookupListeners: LookupListener[] = []
  const metrics = parts.metrics
  if (metrics)
    lookupListeners.push((auth, result, billed) => {
      metrics.lookup(result.request.type, result.metadata.cache_hit, auth.mode)
      if (auth.mode === 'live') metrics.billed(billed)
    })
  let openapiDoc: Record<string, unknown> | undefined
  return {
    store,
    riskcheck: rc,
    plans: settings.configuredPlans ?? [],
    products: options.products ?? PRODUCTS,
    nowMs,
    lookupEnv(auth, request) {
      const policy = auth.policy ?? rc.env.policy
      // the org's lists (../org-lists.ts), then its velocity counter (../velocity.ts): ../org-answer.ts
      const idem = request ? states.get(request)?.idem : undefined
      const signals = orgSignals({ orgLists, velocity, baseSignals: rc.env.signals }, auth.orgId, auth.lists, idem)
      if (auth.mode === 'test') return { env: policy === testEnv.policy && !velocity && !auth.lists ? testEnv : { ...testEnv, policy, signals }, ledger: null }
      const held = leases && lease && request ? { credits: leases, hold: lease.hold(), unsettled: lease.unsettled } : undefined
      const own = createOrgLedger(store, auth.orgId, nowMs, auth.credits, held)
      const ledger = held && idem && !idem.done ? settleWithAnswer(own, idem) : own
      // The store's own cache is written with the request's settlement (one write); a cache of the caller's is not.
      const cache = rc.env.cache === store.resultCache ? ledger.deferWrites(store.resultCache) : rc.env.cache
      return { env: { ...rc.env, ledger, policy, cache, signals }, ledger }
    },
    orgPolicyStore: parts.storage.orgPolicies,
    ...(outcomeStore ? { outcomeStore } : {}),
    recordAnswer(auth, result) {
      if (auth.mode === 'live') orgPolicies.record(auth.orgId, result)
    },
    afterSettlement(request, settled, refused) {
      const idem = states.get(request)?.idem
      if (idem?.settle && !idem.done) idem.after = { settled, refused }
      else settled()
    },
    openapi: () => (openapiDoc ??= buildOpenApi(ROUTES, settings.publicUrl ? { serverUrl: settings.publicUrl } : {})),
    readiness: readinessOf(parts),
    ...(bulk ? { bulk } : {}),
    ...(webhooks ? { webhooks } : {}),
    ...(rechecks ? { rechecks } : {}),
    ...(orgLists.store ? { lists: orgLists.store } : {}),
    outcomes,
    reviews,
    allowLoopbackWebhooks: options.unsafeAllowLoopbackWebhooks === true,
    observeLookup(auth, result, billed) {
      for (const listener of lookupListeners) {
        try {
          listener(auth, result, billed)
        } catch (err) {
          live.app?.log.warn({ err }, 'lookup listener failed')
        }
      }
    },
    onLookup: (listener) => void lookupListeners.push(listener),
    noteOutage: parts.deps.note,
  }
}

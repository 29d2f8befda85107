/**
 * Health and metrics: the readiness checks of GET /readyz (the store's, Redis's, the application's own; the probes
 * themselves are routes of ../routes/meta.ts) and, with `metrics: true`, the Prometheus count and duration of every
 * answered request by method, route and status.
 */
import { readiness, storeChecks, type Readiness } from '../health.js'
import { redisReadyCheck } from '../queue/redis-health.js'
import type { ServerParts } from './context.js'
import { rootPlugin } from './root-plugin.js'

/** GET /readyz's checks, run on each call (`draining` once the server closes). */
export function readinessOf(parts: Omit<ServerParts, 'ctx'>): () => Promise<Readiness> {
  const { store, deps, redis, options, rc, live } = parts
  const checks = [...storeChecks(store, deps.database), ...(redis ? [redisReadyCheck(redis)] : []), ...(options.readinessChecks ?? [])]
  return () => readiness(checks, rc.dataStatus(), { draining: live.closing })
}

/** Request metrics, when the server collects metrics. */
export const metricsPlugin = rootPlugin('riskcheck-metrics', (app, { metrics }) => {
  if (!metrics) return
  app.addHook('onResponse', async (request, reply) => {
    metrics.request(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
  })
})

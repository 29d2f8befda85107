/**
 * The server's life outside requests: at start (onReady) the plans, org policies, the instance lease and the webhook
 * pump; the periodic sweep of expired cache entries, idempotency records, answer logs and bulk jobs; the drain
 * (preClose: new requests refused, idle connections closed); and the shutdown, in an order where each part still has
 * what it needs (Fastify runs onClose hooks last-registered first, so it is one hook).
 */
import { dataNotice } from '../../data/status.js'
import type { ServerParts } from './context.js'
import { rootPlugin } from './root-plugin.js'

/** Deletes what has expired every `purgeEvery` ms (none when 0). */
function startSweeps(parts: ServerParts): NodeJS.Timeout | undefined {
  const { settings, store, nowMs, orgPolicies, outcomes, reviews, bulk, velocity } = parts
  if (settings.purgeEvery <= 0) return undefined
  const timer = setInterval(() => {
    const log = parts.backgroundLog()
    Promise.resolve(store.purgeExpired(nowMs())).catch((e: unknown) => log?.warn({ err: e }, 'purge failed'))
    orgPolicies.purge(nowMs()).catch((e: unknown) => log?.warn({ err: e }, 'answer log purge failed'))
    outcomes.purge(nowMs()).catch((e: unknown) => log?.warn({ err: e }, 'outcome purge failed'))
    reviews.purge(nowMs()).catch((e: unknown) => log?.warn({ err: e }, 'review purge failed'))
    bulk?.sweep().catch((e: unknown) => log?.warn({ err: e }, 'bulk sweep failed'))
    // counts of values not checked again would otherwise stay in the file until later hits swept them
    velocity?.purge(nowMs()).catch((e: unknown) => log?.warn({ err: e }, 'velocity purge failed'))
  }, settings.purgeEvery)
  timer.unref()
  return timer
}

/** Start, sweeps, drain and shutdown. */
export const lifecyclePlugin = rootPlugin('riskcheck-lifecycle', (app, parts) => {
  const { settings, store, ctx, orgPolicies, outcomes, lease, webhooks, rc, live } = parts
  app.addHook('onReady', async () => {
    if (settings.configuredPlans) await store.upsertPlans(settings.configuredPlans)
    ctx.plans = settings.configuredPlans ?? (await store.listPlans())
    await orgPolicies.preload()
    await lease?.start()
    webhooks?.start()
    parts.rechecks?.start()
    // Stale open data (docs/data.md) is said once, at start, with the command that fixes it: a
    // notice while the bundled snapshot answers (it ages by design), a warning when an installed set went stale.
    const notice = dataNotice(rc.dataStatus())
    if (notice) app.log[notice.level]({ data_status: 'stale' }, notice.message)
  })

  const purgeTimer = startSweeps(parts)

  // While draining, connections that go idle after their last in-flight response are closed (Node closes the idle
  // ones only once, when closing starts; a kept-alive one would otherwise hold the drain up for its keep-alive time).
  // A request already pipelined on a busy connection still gets its 503 MAINTENANCE first.
  let idleCloser: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    live.closing = true
    idleCloser = setInterval(() => app.server.closeIdleConnections(), 50)
    idleCloser.unref()
  })
  app.addHook('onClose', async () => {
    if (idleCloser) clearInterval(idleCloser)
    if (purgeTimer) clearInterval(purgeTimer)
    await shutDown(parts)
  })
})

/** Stops every part, in order: the pumps and workers, Redis, the org policies' writes, the dashboard, riskcheck, the lease, the store. */
async function shutDown(parts: ServerParts): Promise<void> {
  const { webhooks, bulkQueue, bulk, redis, orgPolicies, outcomes, reviews, live, rc, lease, deps, ownStore, store, rechecks } = parts
  await rechecks?.stop()
  await webhooks?.stop()
  // The bulk worker's jobs stop with the engines (what is done is written) and give their messages back.
  if (bulkQueue) await bulkQueue.close({ stopping: bulk?.close() })
  else await bulk?.close()
  if (redis) await redis.quit().catch(() => redis.disconnect())
  await orgPolicies.flush()
  await outcomes.flush()
  await reviews.flush()
  await live.dashboard?.close()
  await rc.close()
  await lease?.stop().catch((err: unknown) => live.app?.log.warn({ err }, 'giving the instance lease up failed'))
  deps.close()
  if (ownStore) await store.close()
}

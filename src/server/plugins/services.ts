/**
 * Builds the {@link ServerParts} of one server from its options, before the Fastify instance exists: the checked
 * settings, the store (./storage.ts), the riskcheck instance, the instance lease, Redis, the dependency watch, the rate
 * limiter, org policies, metrics, bulk jobs and webhooks, and the {@link ServerContext} route handlers get. A bad
 * option is a TypeError thrown from here, so from createServer itself.
 */
import type { FastifyRequest } from 'fastify'
import { ioredis } from '../lazy-packages.js'
import { TEST_KEY_RATE_PER_SECOND, validatePlans } from '../../accounts/plans.js'
import { UNMETERED } from '../../credits.js'
import type { LookupEnv } from '../../lookup.js'
import { numberOption } from '../../option-checks.js'
import type { RiskcheckOptions } from '../../options.js'
import { createRiskcheck, type Riskcheck } from '../../riskcheck.js'
import type { ServerOptions } from '../app.js'
import { watchDependencies } from '../dependencies.js'
import { docsBase } from '../error-docs.js'
import { createInstanceLease } from '../instance-lease.js'
import { createServerMetrics } from '../metrics.js'
import { MAX_COMPILED_ITEMS, MAX_COMPILED_ITEMS_LIMIT } from '../compiled-lists-bound.js'
import { createOrgLists } from '../org-lists.js'
import { createOutcomeService, DEFAULT_OUTCOME_RETENTION_DAYS } from '../outcomes.js'
import { outcomeStoreOf, reviewStoreOf } from '../store/open-storage.js'
import { createReviewService } from '../reviews.js'
import { createOrgPolicies } from '../org-policies.js'
import { parsePublicUrl } from '../public-url.js'
import { createMethodTable } from '../request-guards.js'
import type { Store } from '../store/contracts/store.js'
import { createServerVelocity, serverVelocityOption } from '../velocity.js'
import { startServerBulk } from './bulk.js'
import type { LiveState, RequestState, ServerParts, ServerSettings } from './context.js'
import { serverContextOf } from './lookups.js'
import { createServerRateLimiter } from './rate-limits.js'
import { openStore, serverStorageOf } from './storage.js'
import { createServerWebhooks } from './webhooks.js'
import { createServerRechecks } from './rechecks.js'
import type { RecheckService } from '../recheck-service.js'

/** The validated `publicUrl` (canonical, no trailing slash), or undefined; a TypeError for a bad one. */
function publicUrlOption(options: ServerOptions): string | undefined {
  if (options.dashboard && 'publicUrl' in options.dashboard) {
    throw new TypeError('riskcheck server: dashboard.publicUrl is now the server\'s publicUrl (createServer({ publicUrl })): one setting for the OpenAPI document and the links in mails')
  }
  if (options.publicUrl === undefined) return undefined
  if (typeof options.publicUrl !== 'string') throw new TypeError('riskcheck server: publicUrl must be a string')
  try {
    return parsePublicUrl(options.publicUrl)
  } catch (e) {
    throw new TypeError(`riskcheck server: publicUrl ${(e as Error).message}`)
  }
}

/** The options with their defaults; a TypeError for a bad one. */
export function serverSettings(options: ServerOptions, live: LiveState): ServerSettings {
  const bodyLimit = numberOption('bodyLimit', options.bodyLimit, 64 * 1024, {}, 'riskcheck server')
  const testRate = numberOption('testKeyRatePerSecond', options.testKeyRatePerSecond, TEST_KEY_RATE_PER_SECOND, {}, 'riskcheck server')
  const anonRate = numberOption('anonymousRatePerSecond', options.anonymousRatePerSecond, 20, {}, 'riskcheck server')
  const purgeEvery = numberOption('purgeIntervalMs', options.purgeIntervalMs, 10 * 60 * 1000, { min: 0 }, 'riskcheck server')
  const leaseMs = numberOption('instanceLeaseMs', options.instanceLeaseMs, 10_000, { min: 30 }, 'riskcheck server')
  const webhookEvery = numberOption('webhookIntervalMs', options.webhookIntervalMs, 1000, { min: 0 }, 'riskcheck server')
  const publicUrl = publicUrlOption(options)
  const velocityOption = serverVelocityOption(options.velocity, options.riskcheck?.velocity)
  const outcomeDays = numberOption('outcomeRetentionDays', options.outcomeRetentionDays, DEFAULT_OUTCOME_RETENTION_DAYS, { min: 1 }, 'riskcheck server')
  const listsCompiledItems = numberOption('listsCompiledItems', options.listsCompiledItems, MAX_COMPILED_ITEMS, { max: MAX_COMPILED_ITEMS_LIMIT }, 'riskcheck server')
  const requestTimeout = numberOption('requestTimeoutMs', options.requestTimeoutMs, 60_000, {}, 'riskcheck server')
  const configuredPlans = options.plans ? validatePlans(options.plans) : undefined
  const listening = () => (live.app?.server.listening ? live.app.server.address() : null)
  const docsUrl = docsBase({ docsUrl: options.docsUrl, publicUrl }, listening)
  return { bodyLimit, requestTimeout, testRate, anonRate, purgeEvery, leaseMs, webhookEvery, publicUrl, configuredPlans, docsUrl, velocityOption, outcomeDays, listsCompiledItems }
}

/** The one riskcheck instance behind every lookup; the store is closed when it cannot be made. */
function openRiskcheck(options: ServerOptions, store: Store, ownStore: boolean, live: LiveState): Riskcheck {
  try {
    const rcOptions: RiskcheckOptions = { ...options.riskcheck }
    if (rcOptions.cache === undefined) rcOptions.cache = store.resultCache
    // Warnings about this host's network (a broken resolver, a blocked port 25) go to the server's log, once each.
    if (rcOptions.onWarning === undefined) rcOptions.onWarning = (w) => live.app?.log.warn({ warning: w.code }, w.message)
    return createRiskcheck(rcOptions)
  } catch (e) {
    if (ownStore) void store.close()
    throw e
  }
}

/** Every part of a server for `options`; throws a TypeError for bad options (nothing is left open then). */
export function buildServerParts(options: ServerOptions): ServerParts {
  const live: LiveState = { app: undefined, closing: false, dashboard: undefined, quietLog: undefined }
  const settings = serverSettings(options, live)
  let serverClock: () => number = Date.now
  const opened = openStore(options, () => serverClock())
  const { store, ownStore } = opened
  const rc = openRiskcheck(options, store, ownStore, live)
  const clock = rc.env.ctx.now
  const nowMs = () => clock().getTime()
  const backgroundLog = () => (live.quietLog ??= live.app ? deps.quiet(live.app.log) : undefined)
  const leases = store.leases
  const lease = leases ? createInstanceLease(leases, { nowMs, leaseMs: settings.leaseMs, log: () => backgroundLog() }) : undefined
  const redis = options.queue ? new (ioredis().Redis)(options.queue.redisUrl, { maxRetriesPerRequest: 1 }) : undefined
  serverClock = nowMs
  const storage = serverStorageOf(opened, options, nowMs)
  // The database's and Redis's outages: one log line at the start and one at the end of each (../dependencies.ts).
  const deps = watchDependencies({ store, sqlite: storage.sqlite, redis, log: () => live.app?.log })
  // once the database answers again, the lease is renewed at once: the holds of requests it failed are released
  deps.database.onChange((c) => {
    if (c.state === 'up') void lease?.renew()
  })
  const limiter = createServerRateLimiter(options, redis, deps, live)
  const secret = Promise.resolve(store.keyHashSecret())
  secret.catch(() => undefined)
  const velocity = createServerVelocity({
    option: settings.velocityOption,
    redis,
    redisPrefix: options.queue?.prefix ?? 'riskcheck',
    sqlite: storage.sqlite?.store.db,
    sqliteGroup: storage.sqlite ? (write) => storage.sqlite!.store.groupWrite(write) : undefined,
    keyHashSecret: secret,
  })
  const testEnv: LookupEnv = { ...rc.env, ctx: { ...rc.env.ctx, mode: 'test' }, ledger: UNMETERED }
  // Per-org policies (org policy > serve --policy > built-in default) and the answer log their backtests read.
  const orgPolicies = createOrgPolicies({
    store: storage.orgPolicies,
    service: rc.env.policy,
    nowMs,
    warn: (fields, message) => backgroundLog()?.warn(fields, message),
  })
  const service = storage.service
  const metrics = options.metrics
    ? createServerMetrics(service ? { bulkQueueDepth: () => service.bulk.unfinishedCount(), webhookBacklog: () => service.webhooks.pendingCount() } : {})
    : undefined
  const orgLists = createOrgLists(store, nowMs, (message) => backgroundLog()?.warn(message), settings.listsCompiledItems)
  // Outcomes (POST /v1/outcomes) and the labels they add to later answers (../outcomes.ts)
  const outcomes = createOutcomeService({ store: outcomeStoreOf(store), nowMs, retentionDays: settings.outcomeDays, warn: (fields, message) => backgroundLog()?.warn(fields, message) })
  let jobs: Pick<ServerParts, 'bulk' | 'bulkQueue' | 'webhooks' | 'rechecks'> = { bulk: undefined, bulkQueue: undefined, webhooks: undefined, rechecks: undefined }
  if (service) {
    try {
      const webhooks = createServerWebhooks({ options, service, nowMs, settings, backgroundLog, metrics })
      let rechecks: RecheckService | undefined
      const bulkParts = startServerBulk({ options, service, rc, testEnv, nowMs, redis, orgPolicies, orgLists, backgroundLog, rechecks: () => rechecks })
      const org = { orgPolicies, orgLists, outcomes, velocity, baseSignals: rc.env.signals }
      rechecks = createServerRechecks({ options, service, rc, nowMs, org, bulk: bulkParts.bulk, backgroundLog })
      jobs = { webhooks, ...bulkParts, rechecks }
    } catch (e) {
      void rc.close()
      if (ownStore) void store.close()
      throw e
    }
  }
  const states = new WeakMap<FastifyRequest, RequestState>()
  // The review queue (answers whose action is review) and its decisions (../reviews.ts)
  const reviews = createReviewService({
    store: reviewStoreOf(store),
    outcomes,
    lists: orgLists.store,
    nowMs,
    retentionDays: settings.outcomeDays,
    warn: (fields, message) => backgroundLog()?.warn(fields, message),
  })
  const base = { options, settings, store, ownStore, storage, rc, nowMs, lease, redis, deps, limiter, secret, velocity, orgLists, outcomes, reviews, orgPolicies, metrics, ...jobs }
  const rest = { testEnv, states, methods: createMethodTable(), live, backgroundLog }
  return { ...base, ...rest, ctx: serverContextOf({ ...base, ...rest }) }
}

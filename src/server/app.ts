/**
 * `createServer(options)`: the documented HTTP API as a Fastify instance over one riskcheck instance and a store.
 *
 * Request path: onRequest (shutdown check → authentication → rate limit → suspension → scope) → body parsing and
 * schema validation → preHandler (Idempotency-Key) → handler (the library's lookup with the caller's environment) →
 * serialization by the response schema → onSend (idempotent answer stored). Every failure on the way becomes the
 * error envelope with a request id, including malformed HTTP caught on the socket, malformed or too deeply nested
 * JSON, bodies that are not JSON or are compressed, unknown paths, wrong methods and oversized requests
 * (./request-guards.ts). Logs never carry keys or secrets (./log-redaction.ts).
 */
import { Type } from '@sinclair/typebox'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import { UNMETERED } from '../credits.js'
import { dataNotice } from '../data/status.js'
import { RiskcheckError } from '../errors.js'
import type { LookupEnv } from '../lookup.js'
import type { RiskcheckOptions } from '../options.js'
import { newRequestId } from '../result.js'
import { createOutcomeService, DEFAULT_OUTCOME_RETENTION_DAYS } from './outcomes.js'
import { outcomeStoreOf } from './store/outcome-storage.js'
import { createRiskcheck, type Riskcheck } from '../riskcheck.js'
import { ErrorEnvelopeSchema, type BulkJob, type Scope } from '../schema.js'
import { authenticate, authorize, type RequestAuth } from './auth.js'
import { errorEnvelope, mapError } from './envelope.js'
import { docsBase } from './error-docs.js'
import { redactingLoggerOptions } from './log-redaction.js'
import {
  createClientErrorHandler,
  createMethodTable,
  MAX_HEADER_BYTES,
  methodNotAllowed,
  refuseEncodedBody,
  registerJsonBodyParser,
} from './request-guards.js'
import { bodyFingerprint, IDEMPOTENCY_TTL_MS, inProgressConflict, isReplayable, parseIdempotencyKey } from './idempotency.js'
import { createOrgLedger, type OrgLedger } from '../accounts/ledger.js'
import type { RequestClose } from '../accounts/types.js'
import { createInstanceLease, type InstanceLease } from './instance-lease.js'
import type { DeliverFunction } from '../webhooks/queue.js'
import { createBulkService, type BulkService } from './bulk-service.js'
import { buildOpenApi } from './openapi.js'
import { PRODUCTS, TEST_KEY_RATE_PER_SECOND, validatePlans, type Plan, type Product } from '../accounts/plans.js'
import { createRateLimiter, rateLimitHeaders, type RateLimiter, type RateLimitState } from './rate-limit.js'
import { ROUTES } from './routes/index.js'
import { EmptyBody, type NamedSchema, type RouteDef, type LookupListener, type ServerContext } from './routes/types.js'
import { createOrgPolicies } from './org-policies.js'
import type { MemoryStore } from './store/memory.js'
import { createMemoryOrgPolicyStore, createSqliteOrgPolicyStore, type OrgPolicyStore } from './store/org-policy-store.js'
import { createSqliteStore, type SqliteStore } from './store/sqlite.js'
import { serviceStorageOf } from './store/pick-storage.js'
import type { Store } from './store/types.js'
import type { BulkOwner } from './store/bulk-store.js'
import { createWebhookService, type WebhookService } from './webhook-service.js'
import { registerDashboard, type Dashboard, type DashboardOptions } from '../dashboard/index.js'
import { createSqliteTeamStore } from '../dashboard/store/sqlite.js'
import { parsePublicUrl } from './public-url.js'
import { readiness, storeChecks, type ReadinessCheck } from './health.js'
import { createServerMetrics, type ServerMetrics } from './metrics.js'
import { bulkJobLogLine, createBulkQueue, type BulkQueue } from './queue/bulk-queue.js'
import { createRedisRateLimiter } from './queue/redis-rate-limit.js'
import { redisReadyCheck } from './queue/redis-health.js'
import { Redis } from 'ioredis'
import { numberOption } from '../option-checks.js'
import { watchDependencies } from './dependencies.js'
import { markDependency } from './outage.js'

/** The Redis side of a server (`ServerOptions.queue`). */
export interface ServerQueueOptions {
  redisUrl: string
  /** Key prefix of the rate limits and BullMQ queues (default `riskcheck`); instances of one service share it. */
  prefix?: string
  /** Run the bulk and delivery workers here (default true). */
  workers?: boolean
  /** BullMQ worker tuning: the job lock and stalled-job check of `--queue-lock-timeout` (default BullMQ's 30 s). */
  worker?: { lockDuration?: number; stalledInterval?: number }
  /** Scaled webhook retry delays (tests). */
  retryDelaysMs?: readonly number[]
}

/** Options of {@link createServer}. All optional. */
export interface ServerOptions {
  /**
   * A SQLite file path (default `./riskcheck.sqlite`; `:memory:` for a throw-away store) or a {@link Store}, e.g.
   * `createMemoryStore()` in an application's unit tests or `createPostgresStore(…)`.
   */
  db?: string | Store
  /**
   * Options of the one riskcheck instance behind every lookup (DNS, SMTP, RDAP, IP data, offline, clock …). Unless
   * `cache` is given, the result cache is the store's persistent one (7 days).
   */
  riskcheck?: RiskcheckOptions
  /** The plan catalogue (default: the store's, seeded with the default plans of docs/service.md). Replaces the stored plans. */
  plans?: Plan[]
  /** Products listed by GET /v1/pricing (default: every lookup with its credit cost). */
  products?: Product[]
  /** Requests a second of a test key (default 10). */
  testKeyRatePerSecond?: number
  /** Requests a second of one client address without a valid key (public routes, failed auth); default 20. */
  anonymousRatePerSecond?: number
  /** Clock of the rate limiter in unix ms (default `Date.now`); billing and results use the riskcheck clock. */
  rateLimitNow?: () => number
  /** The rate limiter (default: in memory, per process; with `queue`, the shared Redis one). */
  rateLimiter?: RateLimiter
  /**
   * `--redis-url` (docs/service.md "Scaling out"): rate limits counted in Redis, bulk jobs and webhook deliveries distributed
   * by BullMQ; this process runs workers unless `workers` is false (`serve --no-workers`).
   */
  queue?: ServerQueueOptions
  /** Largest request body in bytes (default 64 KiB). Larger → 413 INPUT_LIMIT_EXCEEDED. */
  bodyLimit?: number
  /**
   * Base of `docs_url` in errors: an absolute http(s) URL of your error documentation, the code's anchor appended
   * (`…#rate_limited`). Default: this server's own reference `GET /docs/errors` under `publicUrl`, else under the
   * address it listens on (`serve --docs-url`, `RISKCHECK_DOCS_URL`).
   */
  docsUrl?: string
  /**
   * Where the server is reached from outside (`serve --public-url`): `https://host[:port]` with an optional path
   * prefix, no credentials, query or fragment. It is `servers[0].url` of the OpenAPI document (default `/`) and the
   * base of every link in the dashboard's mails (default: the address the server listens on; never a request's
   * Host header). A TypeError when it is not such a URL.
   */
  publicUrl?: string
  /**
   * Fastify logger option (default off). Whatever is configured, query values, Authorization headers and anything
   * shaped like an API key or a webhook secret are redacted from every line.
   */
  logger?: FastifyServerOptions['logger']
  /** Time a client has to send a whole request (headers and body), in ms (default 60,000); slower → 408. */
  requestTimeoutMs?: number
  /** Fastify trustProxy (client addresses from X-Forwarded-For behind a proxy); default false. */
  trustProxy?: FastifyServerOptions['trustProxy']
  /** How often expired cache entries and idempotency records are deleted, in ms (default 10 minutes; 0 = never). */
  purgeIntervalMs?: number
  /**
   * Length of this instance's lease in ms (default 10,000; renewed every third of it), on a store with instance
   * leases (SQLite, PostgreSQL): how long after a crash its requests' credit holds are refunded and their
   * Idempotency-Keys can be taken over (docs/deployment.md "When an instance dies").
   */
  instanceLeaseMs?: number
  /**
   * Maintenance switch, asked on every request: while it returns true every request gets 503 MAINTENANCE with
   * Retry-After (e.g. during a database migration). Shutting down has the same effect for requests that arrive
   * while in-flight ones finish.
   */
  maintenance?: () => boolean
  /**
   * Lets webhook endpoints and deliveries use loopback addresses (`http://127.0.0.1:…`). For tests and local
   * development only (`riskcheck serve --unsafe-allow-loopback-webhooks`); production never sets it.
   */
  unsafeAllowLoopbackWebhooks?: boolean
  /** How often the webhook outbox is fanned out and due deliveries are sent, in ms (default 1000; 0 = never). */
  webhookIntervalMs?: number
  /** Replaces the webhook HTTP sender (tests). */
  webhookDeliver?: DeliverFunction
  /** Webhook deliveries sent at the same time (default 8). */
  webhookConcurrency?: number
  /** Lookups in flight per org's bulk engine (default 32). */
  bulkConcurrency?: number
  /**
   * Where per-org scoring policies and answer logs are kept (`riskcheck admin policy …`). Default: the SQLite
   * store's tables when `db` is SQLite, the memory store's own when it is one (`createMemoryStore`), else in memory
   * (lost on exit).
   */
  orgPolicies?: OrgPolicyStore
  /** How long outcomes and the input hashes of answered requests are kept, in days (default 180; `serve --outcome-retention-days`). */
  outcomeRetentionDays?: number
  /**
   * Readiness checks GET /readyz runs besides the store's own (`database`, `migrations`): e.g. a queue or cache the
   * embedding application depends on. Each has a time limit of 2 s.
   */
  readinessChecks?: ReadinessCheck[]
  /** The team dashboard at /dashboard (docs/dashboard.md): its options, or false for none. Default: on. */
  dashboard?: DashboardOptions | false
  /**
   * Collects Prometheus metrics (`app.metrics`; `riskcheck serve --metrics-port N` serves them on their own port).
   * Default off.
   */
  metrics?: boolean
}

/** The server: a Fastify instance plus its store and riskcheck instance. */
export type RiskcheckServer = FastifyInstance & {
  readonly store: Store
  readonly riskcheck: Riskcheck
  /** Bulk jobs (undefined when `db` is a store of your own without bulk storage: SQLite, PostgreSQL and memory have it). */
  readonly bulk: BulkService | undefined
  /** Webhook endpoints, outbox and delivery worker (undefined when `db` is a store of your own without delivery storage). */
  readonly webhooks: WebhookService | undefined
  /** The dashboard at /dashboard (undefined when `dashboard: false`). */
  readonly dashboard: Dashboard | undefined
  /** Prometheus metrics (undefined unless `metrics: true`). */
  readonly metrics: ServerMetrics | undefined
}

interface IdemState {
  scope: string
  key: string
  done: boolean
  /** The request's settlement, waiting for its answer to be stored with it (a keyed lookup on held credits). */
  settle?: (idempotent: NonNullable<RequestClose['idempotent']>) => Promise<boolean>
}

interface RequestState {
  auth?: RequestAuth
  idem?: IdemState
}

/**
 * The ledger of a keyed request whose settlement waits for the answer: `settle` (called by the route as the lookup
 * ends) is run by the onSend hook with the serialized answer, so the charge and the answer to replay are one write
 * and a retry after a crash either finds both or neither.
 */
function settleWithAnswer(ledger: OrgLedger, idem: IdemState): OrgLedger {
  return {
    get charged() {
      return ledger.charged
    },
    holdsCredits: ledger.holdsCredits,
    reserve: (amount) => ledger.reserve(amount),
    refund: (amount) => ledger.refund(amount),
    balance: () => ledger.balance(),
    deferWrites: (cache) => ledger.deferWrites(cache),
    async settle(lookups) {
      if (idem.done) return ledger.settle(lookups)
      idem.settle = (idempotent) => ledger.settle(lookups, idempotent)
      return false
    },
  }
}

interface RouteConfig {
  scope?: Scope | null
  /** GET /healthz, GET /readyz: no key, no rate limit, answered while draining */
  probe?: boolean
}

const isNamed = (r: NamedSchema | RouteDef['response']): r is NamedSchema =>
  typeof (r as NamedSchema).name === 'string' && typeof (r as NamedSchema).schema === 'object'


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

/**
 * Creates the API server. Throws a TypeError for bad options. Call `await app.listen({ port })` (or use
 * `app.inject()` in tests); `await app.close()` finishes in-flight requests, then closes the riskcheck instance and
 * the store it opened.
 *
 * @example
 * import { createServer } from 'riskcheck/server'
 * const app = createServer({ db: './riskcheck.sqlite', riskcheck: { dns: { servers: ['1.1.1.1'] } } })
 * await app.listen({ host: '127.0.0.1', port: 8080 })
 */
export function createServer(options: ServerOptions = {}): RiskcheckServer {
  const bodyLimit = numberOption('bodyLimit', options.bodyLimit, 64 * 1024, {}, 'riskcheck server')
  const testRate = numberOption('testKeyRatePerSecond', options.testKeyRatePerSecond, TEST_KEY_RATE_PER_SECOND, {}, 'riskcheck server')
  const anonRate = numberOption('anonymousRatePerSecond', options.anonymousRatePerSecond, 20, {}, 'riskcheck server')
  const purgeEvery = numberOption('purgeIntervalMs', options.purgeIntervalMs, 10 * 60 * 1000, { min: 0 }, 'riskcheck server')
  const leaseMs = numberOption('instanceLeaseMs', options.instanceLeaseMs, 10_000, { min: 30 }, 'riskcheck server')
  const webhookEvery = numberOption('webhookIntervalMs', options.webhookIntervalMs, 1000, { min: 0 }, 'riskcheck server')
  const publicUrl = publicUrlOption(options)
  const outcomeDays = numberOption('outcomeRetentionDays', options.outcomeRetentionDays, DEFAULT_OUTCOME_RETENTION_DAYS, { min: 1 }, 'riskcheck server')
  const requestTimeout = numberOption('requestTimeoutMs', options.requestTimeoutMs, 60_000, {}, 'riskcheck server')
  const configuredPlans = options.plans ? validatePlans(options.plans) : undefined
  const docsUrl = docsBase({ docsUrl: options.docsUrl, publicUrl }, () => (appRef?.server.listening ? appRef.server.address() : null))

  const ownStore = typeof options.db !== 'object'
  const store: Store = typeof options.db === 'object' ? options.db : createSqliteStore(options.db ?? './riskcheck.sqlite')
  let rc: Riskcheck
  let appRef: FastifyInstance | undefined
  try {
    const rcOptions: RiskcheckOptions = { ...options.riskcheck }
    if (rcOptions.cache === undefined) rcOptions.cache = store.resultCache
    // Warnings about this host's network (a broken resolver, a blocked port 25) go to the server's log, once each.
    if (rcOptions.onWarning === undefined) rcOptions.onWarning = (w) => appRef?.log.warn({ warning: w.code }, w.message)
    rc = createRiskcheck(rcOptions)
  } catch (e) {
    if (ownStore) void store.close()
    throw e
  }

  const clock = rc.env.ctx.now
  const nowMs = () => clock().getTime()
  // This instance's lease: the owner of its requests' credit holds and Idempotency-Keys (./instance-lease.ts).
  const leases = store.leases
  const lease: InstanceLease | undefined = leases ? createInstanceLease(leases, { nowMs, leaseMs, log: () => backgroundLog() }) : undefined
  const q = options.queue
  const qPrefix = q?.prefix ?? 'riskcheck'
  const redis = q ? new Redis(q.redisUrl, { maxRetriesPerRequest: 1 }) : undefined
  const sqlite = (store as Partial<SqliteStore>).db ? (store as SqliteStore) : undefined
  // The database's and Redis's outages: one log line at the start and one at the end of each (./dependencies.ts).
  const deps = watchDependencies({ store, sqlite, redis, log: () => appRef?.log })
  // once the database answers again, the lease is renewed at once: the holds of requests it failed are released
  deps.database.onChange((c) => {
    if (c.state === 'up') void lease?.renew()
  })
  const localLimiter = () => createRateLimiter(options.rateLimitNow ? { now: options.rateLimitNow } : {})
  const limiter: RateLimiter =
    options.rateLimiter ??
    (redis
      ? createRedisRateLimiter({
          redis,
          prefix: `${qPrefix}:`,
          // while Redis is down each instance counts alone
          fallback: localLimiter(),
          onError: (err) => deps.note(markDependency(err, 'redis')) || appRef?.log.warn({ err }, 'rate limiter: Redis failed; counted by this instance'),
        })
      : localLimiter())
  const secret = Promise.resolve(store.keyHashSecret())
  secret.catch(() => undefined)
  const states = new WeakMap<FastifyRequest, RequestState>()
  const testEnv: LookupEnv = { ...rc.env, ctx: { ...rc.env.ctx, mode: 'test' }, ledger: UNMETERED }
  let closing = false
  let openapiDoc: Record<string, unknown> | undefined

  let dashboard: Dashboard | undefined
  let quietLog: FastifyBaseLogger | undefined
  /** The server's logger for background work: a failure that is an outage leaves it to the outage's own line. */
  const backgroundLog = () => (quietLog ??= appRef ? deps.quiet(appRef.log) : undefined)
  // Bulk jobs and webhooks keep their tables next to the store's (SQLite migration 002, or the PostgreSQL pool's).
  const serviceStorage = serviceStorageOf(store, nowMs)
  // Per-org policies (org policy > serve --policy > built-in default) and the answer log their backtests read.
  const orgPolicies = createOrgPolicies({
    store: options.orgPolicies ?? (sqlite ? createSqliteOrgPolicyStore(sqlite.db, { groupWrite: (write) => sqlite.groupWrite(write) }) : ((store as Partial<MemoryStore>).orgPolicies ?? createMemoryOrgPolicyStore())),
    service: rc.env.policy,
    nowMs,
    warn: (fields, message) => backgroundLog()?.warn(fields, message),
  })
  // Outcomes (POST /v1/outcomes) and the labels they add to later answers (./outcomes.ts)
  const outcomes = createOutcomeService({ store: outcomeStoreOf(store), nowMs, retentionDays: outcomeDays, warn: (fields, message) => backgroundLog()?.warn(fields, message) })
  let bulk: BulkService | undefined
  let bulkQueue: BulkQueue | undefined
  let webhooks: WebhookService | undefined
  const metrics = options.metrics
    ? createServerMetrics(
        serviceStorage
          ? { bulkQueueDepth: () => serviceStorage.bulk.unfinishedCount(), webhookBacklog: () => serviceStorage.webhooks.pendingCount() }
          : {},
      )
    : undefined
  if (serviceStorage) {
    try {
      webhooks = createWebhookService({
        storage: serviceStorage.webhooks,
        nowMs,
        allowLoopback: options.unsafeAllowLoopbackWebhooks === true,
        intervalMs: webhookEvery,
        log: backgroundLog,
        ...(options.webhookDeliver ? { deliver: options.webhookDeliver } : {}),
        ...(options.webhookConcurrency ? { concurrency: options.webhookConcurrency } : {}),
        ...(metrics ? { onAttempt: (ok: boolean) => metrics.delivery(ok ? 'succeeded' : 'failed') } : {}),
        ...(q
          ? {
              queue: {
                redisUrl: q.redisUrl,
                prefix: qPrefix,
                workers: q.workers !== false,
                ...(q.worker ? { worker: q.worker } : {}),
                ...(q.retryDelaysMs ? { retryDelaysMs: q.retryDelaysMs } : {}),
              },
            }
          : {}),
      })
      if (q) {
        bulkQueue = createBulkQueue({
          redisUrl: q.redisUrl,
          prefix: qPrefix,
          runJob: (owner, id, onStart) => (bulk as BulkService).runJob(owner, id, onStart),
          cancelLocal: (owner, id) => (bulk as BulkService).cancelLocal(owner, id),
          releaseLocal: (owner, id) => (bulk as BulkService).releaseLocal(owner, id),
          onError: (err) => backgroundLog()?.error({ err }, 'bulk queue error'),
          onJob: (event) => {
            const line = bulkJobLogLine(event)
            backgroundLog()?.info(line.fields, line.message)
          },
          ...(q.worker ? { worker: q.worker } : {}),
        })
      }
      const bq = bulkQueue
      bulk = createBulkService({
        ...(bq
          ? {
              dispatch: (owner: BulkOwner, job: Pick<BulkJob, 'id'>) => {
                const sent = bq.dispatch(owner, job)
                if (redis?.status === 'ready') return sent
                // Redis is down: the job is stored and charged; its message waits in the connection's queue and is
                // added once Redis is back (or by the next worker's start), so the request is not held meanwhile
                sent.catch((err: unknown) => backgroundLog()?.error({ err }, 'bulk queue error'))
              },
              cancelRemote: bq.cancelRemote,
            }
          : {}),
        storage: serviceStorage.bulk,
        liveEnv: rc.env,
        testEnv,
        nowMs,
        policyOf: (orgId) => orgPolicies.current(orgId),
        ...(options.bulkConcurrency ? { concurrency: options.bulkConcurrency } : {}),
      })
      if (bq && q?.workers !== false) {
        bq.startWorker()
        // Unfinished jobs get their message again (a no-op when it is queued): a lost message loses no job.
        bulk
          .unfinished()
          .then((list) => Promise.all(list.map((u) => bq.dispatch(u.owner, { id: u.id }))))
          .catch((err: unknown) => backgroundLog()?.error({ err }, 'bulk queue error'))
      }
    } catch (e) {
      void rc.close()
      if (ownStore) void store.close()
      throw e
    }
  }

  const readinessChecks = [...storeChecks(store, deps.database), ...(redis ? [redisReadyCheck(redis)] : []), ...(options.readinessChecks ?? [])]
  const lookupListeners: LookupListener[] = []
  if (metrics)
    lookupListeners.push((auth, result, billed) => {
      metrics.lookup(result.request.type, result.metadata.cache_hit, auth.mode)
      if (auth.mode === 'live') metrics.billed(billed)
    })
  const ctx: ServerContext = {
    store,
    riskcheck: rc,
    plans: configuredPlans ?? [],
    products: options.products ?? PRODUCTS,
    nowMs,
    lookupEnv(auth, request) {
      const policy = auth.policy ?? rc.env.policy
      if (auth.mode === 'test') return { env: policy === testEnv.policy ? testEnv : { ...testEnv, policy }, ledger: null }
      const held = leases && lease && request ? { credits: leases, hold: lease.hold(), unsettled: lease.unsettled } : undefined
      const idem = request ? states.get(request)?.idem : undefined
      const own = createOrgLedger(store, auth.orgId, nowMs, auth.credits, held)
      const ledger = held && idem && !idem.done ? settleWithAnswer(own, idem) : own
      // The store's own cache is written with the request's settlement (one write); a cache of the caller's is not.
      const cache = rc.env.cache === store.resultCache ? ledger.deferWrites(store.resultCache) : rc.env.cache
      return { env: { ...rc.env, ledger, policy, cache }, ledger }
    },
    outcomes,
    recordAnswer(auth, result) {
      if (auth.mode === 'live') orgPolicies.record(auth.orgId, result)
    },
    openapi: () => (openapiDoc ??= buildOpenApi(ROUTES, publicUrl ? { serverUrl: publicUrl } : {})),
    readiness: () => readiness(readinessChecks, rc.dataStatus(), { draining: closing }),
    ...(bulk ? { bulk } : {}),
    ...(webhooks ? { webhooks } : {}),
    allowLoopbackWebhooks: options.unsafeAllowLoopbackWebhooks === true,
    observeLookup(auth, result, billed) {
      for (const listener of lookupListeners) {
        try {
          listener(auth, result, billed)
        } catch (err) {
          appRef?.log.warn({ err }, 'lookup listener failed')
        }
      }
    },
    onLookup: (listener) => void lookupListeners.push(listener),
    noteOutage: deps.note,
  }

  const app = Fastify({
    logger: redactingLoggerOptions(options.logger),
    bodyLimit,
    requestTimeout,
    http: {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: Math.min(60_000, requestTimeout),
      // How often Node looks for requests past their time (its default, 30 s, would let a short limit run long).
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(requestTimeout / 2))),
    },
    clientErrorHandler: createClientErrorHandler(docsUrl, () => appRef?.log),
    genReqId: () => newRequestId(),
    return503OnClosing: false,
    trustProxy: options.trustProxy ?? false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
    frameworkErrors(error, request, reply) {
      // an HTML page with the dashboard's headers for its paths (say, an id too long to route)
      if (dashboard && /^\/dashboard(\/|\?|$)/.test(request.url)) return void dashboard.sendError(error, request, reply as FastifyReply)
      const m = mapError(error)
      void (reply as FastifyReply).header('Cache-Control', 'no-store').code(m.status).send(errorEnvelope(m.code, m.message, request.id, docsUrl()))
    },
  })

  appRef = app
  registerJsonBodyParser(app)
  const sendError = (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const m = mapError(error)
    if (m.outage) {
      // the outage's own line says it once; each request answered 503 meanwhile is counted for its last line
      deps.note(error)
      ;(m.outage === 'database' ? deps.database : deps.redis)?.refused()
    }
    if (m.internal) request.log.error({ err: error }, 'internal error')
    if (m.headers) void reply.headers(m.headers)
    return reply.code(m.status).send(errorEnvelope(m.code, m.message, request.id, docsUrl()))
  }
  app.setErrorHandler((error, request, reply) => sendError(error, request, reply))

  const applyLimit = (reply: FastifyReply, state: RateLimitState) => {
    void reply.headers(rateLimitHeaders(state))
    if (!state.allowed) {
      throw new RiskcheckError('RATE_LIMITED', `Too many requests: at most ${state.limit} in any second. Retry after ${state.resetSeconds} s.`)
    }
  }

  app.addHook('onRequest', async (request, reply) => {
    void reply.header('Cache-Control', 'no-store')
    const config = request.routeOptions.config as RouteConfig | undefined
    // probes answer whatever the load (no rate limit) and while draining (/readyz then says `draining`)
    if (config?.probe) return
    const scope = config?.scope
    if (closing || options.maintenance?.()) {
      void reply.headers(rateLimitHeaders(await limiter.hit(`ip:${request.ip}`, anonRate, 'ip')))
      if (closing) void reply.header('Connection', 'close')
      throw new RiskcheckError(
        'MAINTENANCE',
        closing ? 'The server is shutting down; retry shortly.' : 'The service is down for maintenance; retry shortly.',
      )
    }
    if (!scope) {
      applyLimit(reply, await limiter.hit(`ip:${request.ip}`, anonRate, 'ip'))
      return
    }
    let auth: RequestAuth
    try {
      auth = await authenticate(store, request.headers.authorization, await secret, testRate)
    } catch (e) {
      // Failed authentications count against the client address (slows key guessing); a key that could not be read
      // (the database is down) is no failed authentication.
      if (e instanceof RiskcheckError && e.code === 'UNAUTHORIZED') applyLimit(reply, await limiter.hit(`ip:${request.ip}`, anonRate, 'ip'))
      throw e
    }
    applyLimit(reply, await limiter.hit(`key:${auth.key.id}`, auth.ratePerSecond, 'key'))
    authorize(auth, scope)
    // The org's policy of this request (a change by `riskcheck admin policy` applies from here).
    const resolved = await orgPolicies.resolve(auth.orgId, auth.policyVersion)
    auth.policyVersion = resolved.version
    auth.policy = resolved.policy
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

  const idempotency = async (request: FastifyRequest, reply: FastifyReply) => {
    const key = parseIdempotencyKey(request.headers['idempotency-key'])
    const state = states.get(request)
    if (key === undefined || !state?.auth) return
    const path = request.url.split('?')[0] ?? request.url
    const scope = `${state.auth.key.id} ${request.method} ${path}`
    const begin = await store.beginIdempotent(scope, key, bodyFingerprint(request.body), nowMs(), IDEMPOTENCY_TTL_MS, lease?.id)
    switch (begin.state) {
      case 'new':
        state.idem = { scope, key, done: false }
        return
      case 'mismatch':
        throw new RiskcheckError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key was already used with another request body.')
      case 'in_progress':
        throw inProgressConflict(begin.retryAfterMs)
      case 'replay':
        void reply.code(begin.status).header('Idempotent-Replayed', 'true').type('application/json; charset=utf-8')
        return reply.send(begin.body)
    }
  }

  const finishIdempotent = async (request: FastifyRequest, status: number, payload: unknown) => {
    const idem = states.get(request)?.idem
    if (!idem || idem.done) return
    idem.done = true
    const replay = typeof payload === 'string' && isReplayable(status)
    // The settlement and the answer to replay in one write. A failure there answers its error instead: the request is
    // not charged (the lease's next renewal releases its hold) and its key is freed once the database is back.
    if (idem.settle && lease) {
      const owner = lease.id
      try {
        await idem.settle({ scope: idem.scope, key: idem.key, owner, ...(replay ? { status, body: payload } : {}) })
      } catch (e) {
        if (deps.note(e)) deps.database.afterRecovery(async () => store.abandonIdempotent(idem.scope, idem.key, owner))
        throw e
      }
      return
    }
    const write = () =>
      typeof payload === 'string' && replay
        ? store.completeIdempotent(idem.scope, idem.key, status, payload)
        : store.abandonIdempotent(idem.scope, idem.key)
    try {
      await write()
    } catch (e) {
      // The answer goes out all the same (it may be paid for); its record is written once the database is back.
      if (!deps.note(e)) throw e
      deps.database.afterRecovery(async () => write())
    }
  }
  app.addHook('onSend', async (request, reply, payload) => {
    try {
      await finishIdempotent(request, reply.statusCode, payload)
      return payload
    } catch (error) {
      // The settlement (with the answer to replay) was not written: the request is answered its error, uncharged
      // (its hold is released by the lease), and its key is freed for the retry — now, or once the database is back.
      const idem = states.get(request)?.idem
      if (idem) releaseKey(idem.scope, idem.key, lease?.id)
      const m = mapError(error)
      if (m.outage) {
        deps.note(error)
        ;(m.outage === 'database' ? deps.database : deps.redis)?.refused()
      }
      if (m.internal) request.log.error({ err: error }, 'internal error')
      void reply.code(m.status).headers(m.headers ?? {}).type('application/json; charset=utf-8')
      return JSON.stringify(errorEnvelope(m.code, m.message, request.id, docsUrl()))
    }
  })
  /** Frees this instance's in-progress Idempotency-Key (a stored answer is never touched), after the outage if any. */
  const releaseKey = (scope: string, key: string, owner: string | undefined) => {
    const write = async () => {
      await store.abandonIdempotent(scope, key, owner)
    }
    write().catch((e: unknown) => {
      if (deps.note(e)) deps.database.afterRecovery(write)
      else app.log.warn({ err: e }, 'freeing an Idempotency-Key failed')
    })
  }
  app.addHook('onResponse', async (request, reply) => {
    metrics?.request(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
    return finishIdempotent(request, 500, undefined)
  })
  app.addHook('onRequestAbort', async (request) => finishIdempotent(request, 500, undefined))

  const methods = createMethodTable()
  for (const route of ROUTES) {
    const config: RouteConfig = { scope: route.scope, ...(route.probe ? { probe: true } : {}) }
    const payload = isNamed(route.response) ? route.response.schema : route.response
    const success = route.envelope === false ? payload : Type.Object({ success: Type.Literal(true), data: payload })
    app.route({
      method: route.method,
      url: route.url,
      ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
      config,
      schema: {
        ...(route.body ? { body: route.body } : {}),
        ...(route.query ? { querystring: route.query } : {}),
        ...(route.params ? { params: route.params } : {}),
        response: { [route.status]: success, ...(route.probe ? { 503: success } : {}), '4xx': ErrorEnvelopeSchema, '5xx': ErrorEnvelopeSchema },
      },
      // Before the body is read: a compressed body is refused, whatever its size.
      preParsing: async (request: FastifyRequest) => refuseEncodedBody(request),
      // A route that takes no fields accepts no body at all as well as `{}`.
      ...(route.body === EmptyBody
        ? {
            preValidation: async (request: FastifyRequest) => {
              if (request.body === undefined) request.body = {}
            },
          }
        : {}),
      ...(route.method === 'POST' ? { preHandler: idempotency } : {}),
      handler: async (request, reply) => {
        void reply.code(route.status) // a handler may answer another status (GET /readyz: 503)
        const data = await route.handler({
          body: request.body,
          query: request.query,
          params: request.params,
          auth: states.get(request)?.auth,
          request,
          reply,
          ctx,
        })
        return route.envelope === false ? data : { success: true, data }
      },
    })
    methods.add(route.url, route.method)
  }

  dashboard =
    options.dashboard === false
      ? undefined
      : registerDashboard(app, ctx, {
          ...options.dashboard,
          ...(publicUrl ? { publicUrl } : {}),
          ...(sqlite ? { defaultTeamStore: () => createSqliteTeamStore(sqlite.db) } : {}),
        })

  app.setNotFoundHandler((request, reply) => {
    const path = (request.url.split('?')[0] ?? '/').slice(0, 2048)
    const allowed = methods.allowed(path)
    if (allowed) return sendError(methodNotAllowed(request.method, path, allowed), request, reply)
    return sendError(new RiskcheckError('NOT_FOUND', `No such endpoint: ${request.method} ${path}.`), request, reply)
  })

  app.addHook('onReady', async () => {
    if (configuredPlans) await store.upsertPlans(configuredPlans)
    ctx.plans = configuredPlans ?? (await store.listPlans())
    await orgPolicies.preload()
    await outcomes.preload()
    await lease?.start()
    webhooks?.start()
    // Stale open data (docs/data.md) is said once, at start, with the command that fixes it: a
    // notice while the bundled snapshot answers (it ages by design), a warning when an installed set went stale.
    const notice = dataNotice(rc.dataStatus())
    if (notice) app.log[notice.level]({ data_status: 'stale' }, notice.message)
  })

  let purgeTimer: NodeJS.Timeout | undefined
  if (purgeEvery > 0) {
    purgeTimer = setInterval(() => {
      const log = backgroundLog()
      Promise.resolve(store.purgeExpired(nowMs())).catch((e: unknown) => log?.warn({ err: e }, 'purge failed'))
      orgPolicies.purge(nowMs()).catch((e: unknown) => log?.warn({ err: e }, 'answer log purge failed'))
      outcomes.purge(nowMs()).catch((e: unknown) => log?.warn({ err: e }, 'outcome purge failed'))
      bulk?.sweep().catch((e: unknown) => log?.warn({ err: e }, 'bulk sweep failed'))
    }, purgeEvery)
    purgeTimer.unref()
  }

  // While draining, connections that go idle after their last in-flight response are closed (Node closes the idle
  // ones only once, when closing starts; a kept-alive one would otherwise hold the drain up for its keep-alive time).
  // A request already pipelined on a busy connection still gets its 503 MAINTENANCE first.
  let idleCloser: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    closing = true
    idleCloser = setInterval(() => app.server.closeIdleConnections(), 50)
    idleCloser.unref()
  })
  app.addHook('onClose', async () => {
    if (idleCloser) clearInterval(idleCloser)
    if (purgeTimer) clearInterval(purgeTimer)
    await webhooks?.stop()
    // The bulk worker's jobs stop with the engines (what is done is written) and give their messages back.
    if (bulkQueue) await bulkQueue.close({ stopping: bulk?.close() })
    else await bulk?.close()
    if (redis) await redis.quit().catch(() => redis.disconnect())
    await orgPolicies.flush()
    await outcomes.flush()
    await dashboard?.close()
    await rc.close()
    await lease?.stop().catch((err: unknown) => app.log.warn({ err }, 'giving the instance lease up failed'))
    deps.close()
    if (ownStore) await store.close()
  })

  app.decorate('store', { getter: () => store })
  app.decorate('riskcheck', { getter: () => rc })
  app.decorate('bulk', { getter: () => bulk })
  app.decorate('webhooks', { getter: () => webhooks })
  app.decorate('dashboard', { getter: () => dashboard })
  app.decorate('metrics', { getter: () => metrics })
  return app as unknown as RiskcheckServer
}


/**
 * `createServer(options)`: the documented HTTP API as a Fastify instance over one riskcheck instance and a store,
 * registered as one plugin per concern (./plugins/) over the parts built once by ./plugins/services.ts. The request
 * path and its failures: docs/decisions.md, "HTTP API".
 */
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { Plan, Product } from '../accounts/plans.js'
import type { Dashboard, DashboardOptions } from '../dashboard/index.js'
import type { RiskcheckOptions } from '../options.js'
import type { Riskcheck } from '../riskcheck.js'
import type { DeliverFunction } from '../webhooks/queue.js'
import type { BulkService } from './bulk-service.js'
import type { ReadinessCheck } from './health.js'
import type { ServerMetrics } from './metrics.js'
import type { RateLimiter } from './rate-limit.js'
import type { OrgPolicyStore } from './store/contracts/org-policies.js'
import type { ServiceStorage } from './store/contracts/service-storage.js'
import type { Store } from './store/contracts/store.js'
import type { WebhookService } from './webhook-service.js'
import type { RecheckOptions, RecheckService } from './recheck-service.js'
import type { ServerVelocityOptions } from './velocity.js'
import { authPlugin } from './plugins/auth.js'
import type { ServerParts } from './plugins/context.js'
import { mountDashboard } from './plugins/dashboard.js'
import { envelopePlugin } from './plugins/envelope.js'
import { metricsPlugin } from './plugins/health-metrics.js'
import { idempotencyPlugin } from './plugins/idempotency.js'
import { createFastify } from './plugins/instance.js'
import { lifecyclePlugin } from './plugins/lifecycle.js'
import { rateLimitPlugin } from './plugins/rate-limits.js'
import { routesPlugin } from './plugins/routes.js'
import { buildServerParts } from './plugins/services.js'

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
   * A SQLite file path (default `./riskcheck.sqlite`; `:memory:` for a throw-away store), the storage `openStorage`
   * opened, or a {@link Store}, e.g. `createMemoryStore()` in an application's unit tests or `createPostgresStore(…)`.
   */
  db?: string | Store | ServiceStorage
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
  /**
   * Velocity per org (docs/lists-and-velocity.md "Velocity in the service"): on by default, counted in Redis with
   * `queue`, else in the SQLite file (a store of your own: this process's memory). false: off.
   */
  velocity?: boolean | ServerVelocityOptions
  /** How long outcomes and the input hashes of answered requests are kept, in days (default 180; `serve --outcome-retention-days`). */
  outcomeRetentionDays?: number
  /**
   * Most allow/block list items this instance keeps compiled, all orgs together (default 4,000,000, about 100 bytes
   * each; `serve --lists-compiled-items`); the least recently used org's lists are dropped first, and compiled again
   * on its next request.
   */
  listsCompiledItems?: number
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
  /**
   * Rechecks of email answers a mail server deferred (4xx, greylisting; docs/rechecks.md): attempts `delaysMs` after
   * the answer (default 5, 15 and 60 minutes), an `email.rechecked` webhook with the new verdict. false: off
   * (`serve --no-recheck`). Needs the engine's storage (SQLite, PostgreSQL).
   */
  recheck?: RecheckOptions | false
  /** Lookups in flight per org's bulk engine (default 32). */
  bulkConcurrency?: number
  /**
   * Where per-org scoring policies and answer logs are kept (`riskcheck admin policy …`). Default: the tables of the
   * engine `db` is (SQLite, the memory store, PostgreSQL opened by `openStorage`), else in memory (lost on exit).
   */
  orgPolicies?: OrgPolicyStore
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
  /** Rechecks of deferred email answers (undefined when off or without the engine's storage). */
  readonly rechecks: RecheckService | undefined
}

/**
 * Creates the API server. Throws a TypeError for bad options. Call `await app.listen({ port })` (or use
 * `app.inject()` in tests); `await app.close()` finishes in-flight requests, then closes the riskcheck instance and
 * the store it opened.
 *
 * The plugins load in this order when the server starts (ready, listen or inject); each one's hooks belong to the
 * root instance, so they apply to every route, and run in this order within their lifecycle stage.
 *
 * @example
 * import { createServer } from 'riskcheck/server'
 * const app = createServer({ db: './riskcheck.sqlite', riskcheck: { dns: { servers: ['1.1.1.1'] } } })
 * await app.listen({ host: '127.0.0.1', port: 8080 })
 */
export function createServer(options: ServerOptions = {}): RiskcheckServer {
  const parts = buildServerParts(options) // options, store, riskcheck, lease, Redis, limiter, bulk jobs, webhooks
  const app = createFastify(parts) // transport limits, logger, request ids, malformed HTTP
  void app.register(envelopePlugin, parts) // error envelope, 404 and 405, JSON bodies
  void app.register(rateLimitPlugin, parts) // no-store, drain and maintenance, limits per client address
  void app.register(authPlugin, parts) // API keys, limits per key, scopes, org policies
  void app.register(metricsPlugin, parts) // request metrics
  void app.register(idempotencyPlugin, parts) // Idempotency-Key: answers stored with their settlement, replayed
  void app.register(routesPlugin, parts) // lookups, bulk jobs, webhook endpoints, account, health and meta
  parts.live.dashboard = mountDashboard(app, parts) // /dashboard, an encapsulated plugin of its own
  void app.register(lifecyclePlugin, parts) // start, sweeps, drain, ordered shutdown
  return exposeParts(app, parts)
}

/** The server object: the Fastify instance with its store, riskcheck instance and services as read-only properties. */
function exposeParts(app: FastifyInstance, parts: ServerParts): RiskcheckServer {
  app.decorate('store', { getter: () => parts.store })
  app.decorate('riskcheck', { getter: () => parts.rc })
  app.decorate('bulk', { getter: () => parts.bulk })
  app.decorate('webhooks', { getter: () => parts.webhooks })
  app.decorate('dashboard', { getter: () => parts.live.dashboard })
  app.decorate('metrics', { getter: () => parts.metrics })
  app.decorate('rechecks', { getter: () => parts.rechecks })
  return app as unknown as RiskcheckServer
}

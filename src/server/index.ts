/**
 * `riskcheck/server`: the documented HTTP API (single lookups, bulk jobs, webhook endpoints, account, pricing,
 * OpenAPI) over the library, with API keys and scopes, credits and plans, rate limits, idempotency and the error
 * envelope, on SQLite by default (or PostgreSQL, `createPostgresStore`, for several instances; or in memory,
 * `createMemoryStore`, for an application's unit tests); bulk jobs resume after a restart and webhook deliveries
 * retry from the database; per-org scoring policies (`riskcheck admin policy`) with the answer log their backtests
 * read.
 *
 * @example
 * import { createServer } from 'riskcheck/server'
 * const app = createServer({ db: './riskcheck.sqlite' })
 * await app.listen({ host: '127.0.0.1', port: 8080 })
 */
import { missingServerPackages, ServerPackagesMissingError } from './packages.js'

// BullMQ, ioredis, pg and nodemailer load at first use (./lazy-packages.ts): a missing one is said here, at import, as
// a missing Fastify is, not at the first Redis or PostgreSQL connection
const missing = missingServerPackages()
if (missing.length > 0) throw new ServerPackagesMissingError(missing)

export { createServer, type RiskcheckServer, type ServerOptions, type ServerQueueOptions } from './app.js'
export { readiness, storeChecks, CHECK_TIMEOUT_MS, type ReadinessCheck, type CheckOutcome, type CheckReport, type Readiness } from './health.js'
export { createServerMetrics, type ServerMetrics } from './metrics.js'
export { createSqliteStore, type SqliteStore, type SqliteStoreOptions } from './store/sqlite/store.js'
export { createMemoryStore, type MemoryStore, type MemoryStoreOptions } from './store/sqlite/memory.js'
export { openStorage, type MemoryChoice, type PostgresChoice, type SqliteChoice, type StorageChoice } from './store/open-storage.js'
export type { PostgresServiceStorage, ServiceStorage, SqliteServiceStorage, StorageEngine } from './store/contracts/service-storage.js'
export { createPostgresStore, type PostgresStore, type PostgresStoreOptions, type Promised } from './store/postgres/store.js'
export {
  migratePostgres,
  postgresSchemaStatus,
  POSTGRES_MIGRATIONS,
  type PostgresMigrateOptions,
  type PostgresMigration,
} from './store/postgres/migrations.js'
export type {
  ApiKeyRecord,
  AuthRecord,
  Awaitable,
  CreditReason,
  CreditReservation,
  HeldCredits,
  HoldRef,
  OrgRecord,
  PlanChange,
  RequestClose,
  StoredEvent,
} from '../accounts/types.js'
export type { IdempotencyBegin, InstanceLeases, LeaseRenewal, Store, StoreProbe, Synchronous } from './store/contracts/store.js'
export { IDEMPOTENCY_STALE_MS, INSTANCE_LEASE_MS } from './store/common/lease-times.js'
export { MIGRATIONS, type Migration } from './store/sqlite/migrations.js'
export {
  DEFAULT_PLANS,
  DEFAULT_PLAN_ID,
  PRODUCTS,
  TEST_KEY_RATE_PER_SECOND,
  pricingOf,
  validatePlans,
  type Plan,
  type Product,
} from '../accounts/plans.js'
export {
  DEFAULT_SCOPES,
  generateApiKey,
  hashApiKey,
  issueApiKey,
  parseApiKey,
  parseScopes,
  verifyApiKey,
  type IssueKeyOptions,
} from '../accounts/keys.js'
export {
  alertLevelOf,
  buildEvent,
  createOrgLedger,
  dueAlerts,
  periodAt,
  planChangeOf,
  refundSplit,
  renewal,
  reserveSplit,
  type CreditState,
  type HeldOptions,
  type OrgLedger,
  type PlanChangeResult,
  type Renewal,
} from '../accounts/ledger.js'
export { createRateLimiter, rateLimitHeaders, type MemoryRateLimiter, type RateLimiter, type RateLimitState } from './rate-limit.js'
export { createRedisRateLimiter, type RedisRateLimiter, type RedisRateLimiterOptions } from './queue/redis-rate-limit.js'
export { resolveDeployment, type Deployment, type DeploymentResult, type DeploymentSettings } from './queue/deployment.js'
export { createDeliveryQueue, DELIVERY_QUEUE_NAME, type DeliveryQueue, type DeliveryQueueOptions } from './queue/delivery-queue.js'
export { createBulkQueue, BULK_QUEUE_NAME, type BulkQueue, type BulkQueueOptions } from './queue/bulk-queue.js'
export { redisReadyCheck } from './queue/redis-health.js'
export { IDEMPOTENCY_TTL_MS, bodyFingerprint, parseIdempotencyKey } from './idempotency.js'
export { buildOpenApi, routeErrorCodes } from './openapi.js'
export { errorEnvelope, mapError } from './envelope.js'
export { ERROR_DOCS_PATH } from './error-docs.js'
export { ROUTES } from './routes/index.js'
export { createBulkService, type BulkService, type BulkServiceOptions } from './bulk-service.js'
export { createWebhookService, webhookOperator, type WebhookService, type WebhookServiceOptions } from './webhook-service.js'
export { insertOutboxEvent, pumpOutbox } from './store/sqlite/outbox.js'
export { createSqliteBulkStore, createBulkLedger, sweepExpiredBulkJobs, type BulkOwner } from './store/sqlite/bulk.js'
export { createSqliteDeliveryStore, type SqliteDeliveryStore, type StoredEndpoint, type OperatorNotice } from './store/sqlite/deliveries.js'
export { MAX_WEBHOOK_ENDPOINTS } from './routes/webhooks.js'
export { defineRoute, type RouteDef, type ServerContext, type HandlerArgs, type NamedSchema } from './routes/types.js'
export {
  ANSWER_LOG_TTL_MS,
  MAX_ANSWERS_PER_ORG,
  createSqliteOrgPolicyStore,
  type LoggedAnswer,
  type OrgPolicyRecord,
  type OrgPolicyStore,
  type OrgPolicyStoreOptions,
} from './store/sqlite/org-policies.js'
export { createMemoryOrgPolicyStore } from './store/sqlite/memory.js'
export { createPostgresOrgPolicyStore, ORG_POLICY_POSTGRES_SCHEMA, type PgQueryable } from './store/postgres/org-policies.js'
export { createOrgPolicies, loggedAnswerOf, type OrgPolicies, type OrgPoliciesOptions, type ResolvedPolicy } from './org-policies.js'

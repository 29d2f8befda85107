/**
 * The parts of one server, built once by ./services.ts before the Fastify instance and handed to every plugin
 * createServer (../app.ts) registers, as its options: nothing a plugin uses is a global or a hidden decoration. Contracts only; the reasoning is
 * in docs/decisions.md, "HTTP API".
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import type { Plan } from '../../accounts/plans.js'
import type { RequestClose } from '../../accounts/types.js'
import type { Dashboard } from '../../dashboard/index.js'
import type { LookupEnv } from '../../lookup.js'
import type { Riskcheck } from '../../riskcheck.js'
import type { Scope } from '../../schema.js'
import type { ServerOptions } from '../app.js'
import type { RequestAuth } from '../auth.js'
import type { BulkService } from '../bulk-service.js'
import type { ServerDependencies } from '../dependencies.js'
import type { InstanceLease } from '../instance-lease.js'
import type { ServerMetrics } from '../metrics.js'
import type { OrgPolicies } from '../org-policies.js'
import type { BulkQueue } from '../queue/bulk-queue.js'
import type { RateLimiter } from '../rate-limit.js'
import type { ServerContext } from '../routes/types.js'
import type { Store } from '../store/contracts/store.js'
import type { OrgLists } from '../org-lists.js'
import type { OutcomeService } from '../outcomes.js'
import type { ReviewService } from '../reviews.js'
import type { ServerVelocity, ServerVelocityOptions } from '../velocity.js'
import type { WebhookService } from '../webhook-service.js'
import type { RecheckService } from '../recheck-service.js'
import type { ServerStorage } from './storage.js'

/** The options of createServer, checked and with their defaults. */
export interface ServerSettings {
  bodyLimit: number
  requestTimeout: number
  testRate: number
  anonRate: number
  purgeEvery: number
  leaseMs: number
  webhookEvery: number
  /** The validated public URL (canonical, no trailing slash). */
  publicUrl: string | undefined
  configuredPlans: Plan[] | undefined
  /** Base of `docs_url` in error envelopes (asked per error: it may be the listen address). */
  docsUrl: () => string
  /** The checked velocity option; null: off. */
  velocityOption: ServerVelocityOptions | null
  /** How long outcomes and answered requests' input hashes are kept, in days. */
  outcomeDays: number
  /** Most list items the instance keeps compiled, all orgs together. */
  listsCompiledItems: number
}

/** An Idempotency-Key taken by a request (./idempotency.ts). */
export interface IdemState {
  scope: string
  key: string
  done: boolean
  /** The request's settlement, waiting for its answer to be stored with it (a keyed lookup on held credits). */
  settle?: (idempotent: NonNullable<RequestClose['idempotent']>) => Promise<boolean>
  /** What to do once that settlement is written, or refused (ServerContext.afterSettlement). */
  after?: { settled(): void; refused(): void }
}

/** What the hooks learn of a request on its way (the caller, its Idempotency-Key). */
export interface RequestState {
  auth?: RequestAuth
  idem?: IdemState
}

/** `config` of every API route (./routes.ts). */
export interface RouteConfig {
  scope?: Scope | null
  /** GET /healthz, GET /readyz: no key, no rate limit, answered while draining */
  probe?: boolean
}

/** What changes while the server runs, shared by reference between the plugins. */
export interface LiveState {
  /** The Fastify instance, once created (loggers and the listen address are asked through it). */
  app: FastifyInstance | undefined
  /** Set by preClose: new requests get 503 MAINTENANCE and /readyz says `draining`. */
  closing: boolean
  dashboard: Dashboard | undefined
  quietLog: FastifyBaseLogger | undefined
}

/** The 405 table: the methods each registered path answers (../request-guards.ts). */
export interface MethodTable {
  add(url: string, method: string): void
  allowed(path: string): string[] | undefined
}

/** Everything the plugins of one server share. */
export interface ServerParts {
  options: ServerOptions
  settings: ServerSettings
  store: Store
  /** The store was opened here (from a path), so closing the server closes it. */
  ownStore: boolean
  storage: ServerStorage
  rc: Riskcheck
  /** The server clock (unix ms): the riskcheck instance's. */
  nowMs: () => number
  /** This instance's lease: the owner of its requests' credit holds and Idempotency-Keys (../instance-lease.ts). */
  lease: InstanceLease | undefined
  redis: Redis | undefined
  deps: ServerDependencies
  limiter: RateLimiter
  /** The key-hash secret of the store, read once. */
  secret: Promise<string>
  /** Velocity per org, or undefined when off (../velocity.ts). */
  velocity: ServerVelocity | null
  /** Outcomes: recording, listing, and the labels they add to answers (../outcomes.ts). */
  outcomes: OutcomeService
  /** The review queue of answers whose action is review (../reviews.ts). */
  reviews: ReviewService
  /** The orgs' lists, compiled per version (../org-lists.ts). */
  orgLists: OrgLists
  /** The environment of test keys' lookups: test mode, no ledger. */
  testEnv: LookupEnv
  orgPolicies: OrgPolicies
  metrics: ServerMetrics | undefined
  bulk: BulkService | undefined
  bulkQueue: BulkQueue | undefined
  webhooks: WebhookService | undefined
  /** Rechecks of deferred email answers (../recheck-service.ts), or undefined when off. */
  rechecks: RecheckService | undefined
  /** What route handlers and the dashboard get. */
  ctx: ServerContext
  states: WeakMap<FastifyRequest, RequestState>
  methods: MethodTable
  live: LiveState
  /** The server's logger for background work: a failure that is an outage leaves it to the outage's own line. */
  backgroundLog(): FastifyBaseLogger | undefined
}

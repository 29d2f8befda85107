/**
 * A route of the API, declared once: the app registers it with Fastify (validation and serialization from the same
 * TypeBox schemas) and the OpenAPI document is generated from the same declaration, so the two cannot drift.
 * A new group of routes (bulk jobs, webhook endpoints) is one module exporting `RouteDef`s, listed in ./index.ts.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox'
import type { RecheckService } from '../recheck-service.js'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ErrorCode } from '../../errors.js'
import type { LookupEnv } from '../../lookup.js'
import type { Riskcheck } from '../../riskcheck.js'
import type { LookupResult, Scope } from '../../schema.js'
import type { RequestAuth } from '../auth.js'
import type { BulkService } from '../bulk-service.js'
import type { OutcomeService } from '../outcomes.js'
import type { ReviewService } from '../reviews.js'
import type { OrgPolicyStore } from '../store/contracts/org-policies.js'
import type { OutcomeStore } from '../store/contracts/outcomes.js'
import type { OrgLedger } from '../../accounts/ledger.js'
import type { Plan, Product } from '../../accounts/plans.js'
import type { Readiness } from '../health.js'
import type { ListsStore } from '../store/contracts/lists.js'
import type { Store } from '../store/contracts/store.js'
import type { WebhookService } from '../webhook-service.js'

/** What route handlers get besides the request: the shared services of the server. */
export interface ServerContext {
  store: Store
  riskcheck: Riskcheck
  plans: readonly Plan[]
  products: readonly Product[]
  /** The server clock (unix ms) — the riskcheck instance's clock. */
  nowMs(): number
  /**
   * The lookup environment of a caller: test keys get test mode and no ledger; live keys the org's ledger (its
   * credits a hold of this instance for `request`, when the store keeps holds). Call `settle` when the request ends.
   */
  lookupEnv(auth: RequestAuth, request?: FastifyRequest): { env: LookupEnv; ledger: OrgLedger | null }
  /** Outcomes: recording, listing, and the labels they add to answers (../outcomes.ts). */
  outcomes: OutcomeService
  /** The review queue: answers whose action is review, and their decisions (../reviews.ts). */
  reviews: ReviewService
  /** The per-org policies and answer logs (the dashboard's Policy page reads, backtests and sets them). */
  orgPolicyStore: OrgPolicyStore
  /** The outcome storage (absent for a store of your own): the labels of the Policy page's backtest. */
  outcomeStore?: OutcomeStore
  /** Logs an answer of a live key into its org's answer log (what `admin policy set` backtests; never throws). */
  recordAnswer(auth: RequestAuth, result: LookupResult<unknown>): void
  /**
   * Runs `settled` once the request's settlement is written — now, or, for a keyed request whose settlement waits for
   * its answer to be stored with it (../plugins/idempotency.ts), then — and `refused` if that write is refused.
   */
  afterSettlement(request: FastifyRequest, settled: () => void, refused: () => void): void
  /** The OpenAPI document (built once). */
  openapi(): Record<string, unknown>
  /** Runs the readiness checks (GET /readyz). */
  readiness(): Promise<Readiness>
  /** Bulk jobs (absent when the store has no bulk storage: ../store/open-storage.ts). */
  bulk?: BulkService
  /** Rechecks of deferred email answers (undefined when off, or without service storage). */
  rechecks?: RecheckService
  /** Webhook endpoints and deliveries (absent when the store has no delivery storage). */
  webhooks?: WebhookService
  /** The org lists storage (absent when the store has none: the lists routes answer 503). */
  lists?: ListsStore
  /** Webhook URLs on loopback accepted (tests and local development only). */
  allowLoopbackWebhooks?: boolean
  /** Tells every {@link LookupListener} of an answered single lookup and the credits it billed. */
  observeLookup(auth: RequestAuth, result: LookupResult<unknown>, billed: number): void
  /** Adds a listener of answered lookups (metrics, the dashboard's usage tally). */
  onLookup(listener: LookupListener): void
  /**
   * Reports `err` when it is an outage of the database or Redis (../outage.ts): true, and the caller logs nothing
   * (the outage has its own line); false for any other error.
   */
  noteOutage(err: unknown): boolean
}

/** Hears of every answered single lookup; runs on the request's path, so it must be quick and must not throw. */
export type LookupListener = (auth: RequestAuth, result: LookupResult<unknown>, billed: number) => void

/**
 * The body of a POST route that takes no fields: `{}` or no body at all. Every POST route declares a body, so a body
 * is always validated (and bounded) before anything reads it.
 */
export const EmptyBody = Type.Object({}, { additionalProperties: false, description: 'No fields: send `{}` or no body.' })

/** A component name for the OpenAPI document, with its schema. */
export interface NamedSchema {
  name: string
  schema: TSchema
}

/** Arguments of a route handler. */
export interface HandlerArgs<B, Q, P> {
  body: B
  query: Q
  params: P
  /** The caller (routes with a scope), else undefined. */
  auth: RequestAuth | undefined
  request: FastifyRequest
  reply: FastifyReply
  ctx: ServerContext
}

/** A route declaration. */
export interface RouteDef<B extends TSchema = TSchema, Q extends TSchema = TSchema, P extends TSchema = TSchema> {
  method: 'GET' | 'POST' | 'DELETE'
  /** Fastify path (`/v1/bulk/jobs/:id`); the OpenAPI path uses `{id}`. */
  url: string
  operationId: string
  summary: string
  description?: string
  tags: string[]
  /** The scope a key needs; null = public (no Authorization). */
  scope: Scope | null
  /** Success status (docs/api.md "Conventions": 200 reads and lookups, 201 created, 202 accepted jobs). */
  status: 200 | 201 | 202
  /**
   * A probe for load balancers and orchestrators (GET /healthz, GET /readyz): outside /v1, no key, no rate limit,
   * answered while the server drains; its success schema also describes its 503 answer (not ready).
   */
  probe?: boolean
  /** false: the payload is sent as is (GET /v1/pricing, GET /v1/openapi.json); default true: `{ success, data }`. */
  envelope?: boolean
  /** The JSON body; every POST route has one ({@link EmptyBody} when it takes no fields). */
  body?: B
  query?: Q
  params?: P
  /** The payload (the envelope's `data`, or the whole body without envelope), named for the OpenAPI components. */
  response: NamedSchema | TSchema
  /** Error codes the route can answer with beyond the common ones (documented in OpenAPI). */
  errors: ErrorCode[]
  /** Media type of the success body when it is not JSON (e.g. `text/csv`; the handler returns a stream or text). */
  contentType?: string
  /** Largest request body in bytes (default: the server's bodyLimit). */
  bodyLimit?: number
  handler(args: HandlerArgs<Static<B>, Static<Q>, Static<P>>): Promise<unknown> | unknown
}

/** Declares a route with its handler typed from its schemas. */
export function defineRoute<B extends TSchema = TSchema, Q extends TSchema = TSchema, P extends TSchema = TSchema>(
  def: RouteDef<B, Q, P>,
): RouteDef {
  return def as unknown as RouteDef
}

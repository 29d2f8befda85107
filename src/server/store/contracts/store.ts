/**
 * The server's storage contract. The HTTP layer only talks to a {@link Store}; SQLite (../sqlite/store.ts, also on
 * `:memory:`) and PostgreSQL (several server instances) implement it.
 *
 * Every implementation follows the rules of the account store (../../../accounts/types.ts: atomic credit changes, credit
 * events in the same transaction, lazy period roll-over, times given by the caller).
 *
 * Methods may be synchronous (SQLite) or return promises (a networked database); callers always `await`.
 */
import type { AccountStore, Awaitable, HeldCredits } from '../../../accounts/types.js'
import type { ResultCache } from '../../../cache.js'

/** A store type whose methods answer synchronously (SQLite through better-sqlite3, on a file or `:memory:`). */
export type Synchronous<S> = {
  [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => R extends Promise<infer U> ? U : R : S[K]
}

/** The storage engines: SQLite on a file, SQLite on `:memory:`, PostgreSQL. */
export type StorageEngine = 'sqlite' | 'memory' | 'postgres'

/** Outcome of starting an idempotent request. */
export type IdempotencyBegin =
  | { state: 'new' }
  | { state: 'replay'; status: number; body: string }
  | { state: 'mismatch' }
  /** Still running: `retryAfterMs`, when known, is what is left of its owner's lease (the earliest a takeover can be). */
  | { state: 'in_progress'; retryAfterMs?: number }

/**
 * The server's store: the accounts (orgs, keys, plans, credits and their events, ../../../accounts/types.ts), the
 * idempotency records and the result cache. The HTTP layer depends only on this interface.
 */
export interface Store extends AccountStore {
  // idempotency
  /**
   * Starts an idempotent request, or tells how to answer a repeat. Records expire `ttlMs` after creation. `owner`
   * (an instance id of {@link InstanceLeases}) is recorded with a new record; a record still in progress is taken over
   * as soon as its owner's lease has ended (without an owner: after {@link IDEMPOTENCY_STALE_MS}).
   */
  beginIdempotent(scope: string, key: string, fingerprint: string, nowMs: number, ttlMs: number, owner?: string): Awaitable<IdempotencyBegin>
  /** Stores the response of a started idempotent request. */
  completeIdempotent(scope: string, key: string, status: number, body: string): Awaitable<void>
  /**
   * Forgets a started idempotent request (its response is not to be replayed); given `owner`, only while that instance
   * owns it (a record another instance took over is left alone).
   */
  abandonIdempotent(scope: string, key: string, owner?: string): Awaitable<void>

  /**
   * Optional: instance leases and request holds, so that a request whose process died is neither kept in progress
   * nor charged (SQLite and PostgreSQL have them; without them the server bills as before and takes a dead request's
   * Idempotency-Key over after {@link IDEMPOTENCY_STALE_MS}).
   */
  readonly leases?: InstanceLeases

  /** Which engine this store is (set by each engine's constructor): how the server finds the engine's other stores. */
  readonly engine?: StorageEngine

  /** The persistent result cache of lookups. */
  readonly resultCache: ResultCache

  /** Deletes expired cache entries and idempotency records. Returns how many rows went. */
  purgeExpired(nowMs: number): Awaitable<number>
  /**
   * A readiness probe (GET /readyz): one real round trip to the database and the schema version it holds against
   * the one this code expects. Throws when the database cannot be reached. Optional for stores that have no schema.
   */
  probe?(): Awaitable<StoreProbe>
  close(): Awaitable<void>
}

/** What {@link Store.probe} found. */
export interface StoreProbe {
  /** The schema version the database holds. */
  schemaVersion: number
  /** The schema version this code expects (its migrations). */
  expectedVersion: number
}

/** What a lease renewal found. */
export interface LeaseRenewal {
  /** False when the lease had ended before this renewal (the instance was taken for dead; its holds may be gone). */
  held: boolean
  /** True when another instance's lease has ended and its holds wait for {@link InstanceLeases.releaseExpired}. */
  expired: boolean
}

/**
 * Instance leases and request holds (docs/decisions.md "Instance leases"). Every server instance holds a lease it
 * renews every third of {@link INSTANCE_LEASE_MS}; a billed request's credits are a hold of its instance until its settlement
 * closes it. When an instance stops renewing, any live instance releases its holds (refunds them, exactly once) and
 * a retry may take its in-progress Idempotency-Keys over.
 */
export interface InstanceLeases extends HeldCredits {
  /** Takes or renews the instance's lease until `nowMs + leaseMs`. */
  renewLease(instanceId: string, nowMs: number, leaseMs: number): Awaitable<LeaseRenewal>
  /**
   * Ends the leases that ran out by `nowMs` (or, given `instanceId`, that instance's: a clean stop) and refunds their
   * holds, each once however many instances sweep at the same time. Returns the number of holds released.
   */
  releaseExpired(nowMs: number, instanceId?: string): Awaitable<number>
  /** Refunds the holds named (requests that ended without a settlement), those still open. Returns how many. */
  releaseHolds(holdIds: readonly string[], nowMs: number): Awaitable<number>
}

/**
 * The server's storage contract. The HTTP layer only talks to a {@link Store}; the embedded default is SQLite
 * (./sqlite.ts), and a PostgreSQL store (several server instances) implements the same interface.
 *
 * Every implementation follows the rules of the account store (../../accounts/types.ts: atomic credit changes, credit
 * events in the same transaction, lazy period roll-over, times given by the caller).
 *
 * Methods may be synchronous (SQLite) or return promises (a networked database); callers always `await`.
 */
import type { AccountStore, Awaitable } from '../../accounts/types.js'
import type { ResultCache } from '../../cache.js'

/**
 * An idempotent request still "in progress" after this long was interrupted (its process stopped), and a retry may
 * take the record over; 2 minutes, longer than any request runs.
 */
export const IDEMPOTENCY_STALE_MS = 2 * 60 * 1000

/** A store type whose methods answer synchronously (SQLite through better-sqlite3, the in-memory store). */
export type Synchronous<S> = {
  [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => R extends Promise<infer U> ? U : R : S[K]
}

/** Outcome of starting an idempotent request. */
export type IdempotencyBegin =
  | { state: 'new' }
  | { state: 'replay'; status: number; body: string }
  | { state: 'mismatch' }
  | { state: 'in_progress' }

/**
 * The server's store: the accounts (orgs, keys, plans, credits and their events, ../../accounts/types.ts), the
 * idempotency records and the result cache. The HTTP layer depends only on this interface.
 */
export interface Store extends AccountStore {
  // idempotency
  /** Starts an idempotent request, or tells how to answer a repeat. Records expire `ttlMs` after creation. */
  beginIdempotent(scope: string, key: string, fingerprint: string, nowMs: number, ttlMs: number): Awaitable<IdempotencyBegin>
  /** Stores the response of a started idempotent request. */
  completeIdempotent(scope: string, key: string, status: number, body: string): Awaitable<void>
  /** Forgets a started idempotent request (its response is not to be replayed). */
  abandonIdempotent(scope: string, key: string): Awaitable<void>

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

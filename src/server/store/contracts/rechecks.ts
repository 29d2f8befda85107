/**
 * The storage contract of email rechecks: answers a mail server deferred (4xx, greylisting), checked again later by
 * whichever instance takes them first (docs/rechecks.md; the reasoning: docs/decisions.md "Rechecks of deferred
 * email answers").
 */
import type { Awaitable } from '../../../awaitable.js'
import type { EventPayload } from '../../../schema.js'

/** Where the answer being rechecked went: a single lookup (its request id) or one row of a bulk job. */
export type RecheckTarget = { kind: 'request'; requestId: string } | { kind: 'bulk'; jobId: string; rowIndex: number }

/** A pending recheck as stored. */
export interface StoredRecheck {
  id: string
  orgId: string
  mode: 'live' | 'test'
  target: RecheckTarget
  /** The address to check again (normalised). */
  address: string
  /** When the deferred answer was given (unix ms): the delays count from here. */
  answeredAt: number
  /** When the next attempt is due (unix ms). */
  dueAt: number
  /** Attempts made so far (0 before the first). */
  attempt: number
  /** How many attempts this recheck gets (a bulk job's second pass: one). */
  maxAttempts: number
}

/** The table of pending rechecks (one row per deferred answer, deleted when done). */
export interface RecheckStore {
  /** Adds pending rechecks; one whose target already has a pending recheck is ignored (a repeated schedule). */
  schedule(rechecks: readonly StoredRecheck[]): Awaitable<void>
  /**
   * Takes up to `limit` rechecks due at `nowMs` for this instance: each is claimed until `nowMs + leaseMs` (a claim
   * that runs out, because its instance died, makes the recheck due again). Exactly one caller gets each: SQLite in
   * one write transaction, PostgreSQL with `FOR UPDATE SKIP LOCKED`.
   */
  claimDue(nowMs: number, limit: number, leaseMs: number): Awaitable<StoredRecheck[]>
  /** Sets the next attempt of a claimed recheck (its claim released). */
  reschedule(id: string, attempt: number, dueAt: number): Awaitable<void>
  /**
   * Deletes a recheck that is done, and writes its event into the outbox in the same transaction (when given): a
   * recheck is announced once, or (when the deletion fails) attempted again.
   */
  complete(id: string, event: EventPayload | null): Awaitable<void>
  /** Pending rechecks of a bulk job (its second pass is over when none is left). */
  pendingForJob(jobId: string): Awaitable<number>
  /** Deletes the pending rechecks of a request of the org (its settlement was refused); answers how many. */
  cancelForRequest(orgId: string, requestId: string): Awaitable<number>
  /** Every pending recheck (operators, tests). */
  count(): Awaitable<number>
}

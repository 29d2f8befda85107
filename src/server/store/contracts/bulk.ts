/** The bulk service's storage contract: per-owner job stores, the persistent credit ledger, the outbox write. */
import type { Awaitable } from '../../../awaitable.js'
import type { BulkStore } from '../../../bulk/types.js'
import type { CreditLedger } from '../../../credits.js'
import type { BulkJob, EventPayload } from '../../../schema.js'

/** Who owns the jobs of one bulk store view: an org, in one key mode (test jobs are never billed). */
export interface BulkOwner {
  orgId: string
  mode: 'live' | 'test'
}

/** The storage of the bulk service. */
export interface BulkServiceStorage {
  /**
   * The job store of one owner: sees (lists, resumes, sweeps) only that owner's jobs. It implements
   * `insertJobCharged` and `finishJob`, whose transactions run the {@link ledger}'s `reserveFor` and `settleFor`;
   * `onFinished` runs in `finishJob`'s transaction too (`tx`, as for the ledger), once per job, after the final
   * status is written. A synchronous store needs a synchronous `onFinished`.
   */
  jobStore(owner: BulkOwner, onFinished?: (job: BulkJob, tx: unknown) => Awaitable<void>): BulkStore
  /**
   * The credit ledger of an org's live bulk engine: reservations are kept per job in the database (they survive a
   * restart, so a resumed job refunds exactly what it did not use) and taken from / given back to the org's
   * buckets (subscription first; purchased first when given back).
   */
  ledger(orgId: string, nowMs: () => number): CreditLedger
  /**
   * Counts `lookups` into the org's usage and writes the credit alerts its balance calls for (the core store's
   * settlement), inside the transaction `tx` of `onFinished` when given.
   */
  settleCredits(orgId: string, lookups: number, nowMs: number, tx?: unknown): Awaitable<void>
  /** Writes an event (bulk.completed) into the outbox, inside `tx` when given; a repeated id is ignored. */
  insertEvent(event: EventPayload, tx?: unknown): Awaitable<void>
  /** Owners with queued or running jobs: the engines to start (or the jobs to queue again) at start. */
  ownersWithUnfinishedJobs(): Awaitable<BulkOwner[]>
  /** Deletes every job (any owner) whose results expired (`expires_at <= nowMs`), with its rows. Returns the ids. */
  sweepExpired(nowMs: number): Awaitable<string[]>
  /** Jobs queued or running, all owners (the queue depth of GET /metrics). */
  unfinishedCount(): Awaitable<number>
}

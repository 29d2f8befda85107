/** How long idempotency records and instance leases hold before another request or instance may take over. */

/**
 * An idempotent request still "in progress" after this long was interrupted (its process stopped), and a retry may
 * take the record over; 2 minutes, longer than any request runs. For records of a store without instance leases
 * (and records written before them); a record owned by an instance is taken over once that instance's lease ends.
 */
export const IDEMPOTENCY_STALE_MS = 2 * 60 * 1000

/**
 * How long an instance's lease runs without a renewal: 10 s; a server renews it (and sweeps the holds of instances
 * whose lease lapsed) every third of that (docs/decisions.md "Instance leases").
 */
export const INSTANCE_LEASE_MS = 10_000

/**
 * Credits: the library's view of a balance. A lookup reserves its maximum cost before it runs and refunds what it
 * did not use (free answers, cache hits), so a balance never goes below zero even with concurrent lookups.
 * The HTTP server supplies a persistent ledger; in-process users may pass `credits: 1000` for an in-memory one, or
 * nothing (unmetered: `credits_remaining` is null).
 */

/** A credit ledger. Methods may be sync or async. */
export interface CreditLedger {
  /** Takes `amount` credits if available; false (and nothing taken) when the balance is short. */
  reserve(amount: number): boolean | Promise<boolean>
  /** Gives back `amount` previously reserved credits. */
  refund(amount: number): void | Promise<void>
  /** The balance now, or null when unmetered. */
  balance(): number | null | Promise<number | null>
  /**
   * True when the balance last known covers `amount` many times over, so a reservation of it is all but sure: the
   * pipeline then starts the check while an asynchronous reservation is on its way (the answer still waits for it, and
   * a refused one discards the check's outcome). Absent or false: the check starts once the reservation succeeded.
   */
  covers?(amount: number): boolean
  /**
   * A ledger that keeps reservations per bulk job in the job store's database (the server's): takes `amount` for
   * `jobId` inside the transaction `tx` in which the job store inserts the job (see `BulkStore.insertJobCharged`;
   * `tx` is that store's own transaction handle — nothing for SQLite, whose transactions belong to the connection;
   * the transaction's client for PostgreSQL). A synchronous store needs a synchronous answer.
   */
  reserveFor?(jobId: string, amount: number, tx?: unknown): boolean | Promise<boolean>
  /**
   * Closes `jobId`'s reservation: gives back `unused` of it (the rest is spent) and forgets it, inside the transaction
   * `tx` in which the job store writes the job's final status (`BulkStore.finishJob`). A second call finds nothing to
   * close and gives back nothing.
   */
  settleFor?(jobId: string, unused: number, tx?: unknown): void | Promise<void>
}

/** An in-memory ledger starting at `initial` credits. */
export function createMemoryLedger(initial: number): CreditLedger & { add(amount: number): void } {
  let balance = initial
  return {
    reserve(amount) {
      if (amount > balance) return false
      balance -= amount
      return true
    },
    refund(amount) {
      balance += amount
    },
    balance() {
      return balance
    },
    add(amount) {
      balance += amount
    },
  }
}

/** The unmetered ledger: every reservation succeeds and the balance is null. */
export const UNMETERED: CreditLedger = {
  reserve: () => true,
  refund: () => undefined,
  balance: () => null,
}

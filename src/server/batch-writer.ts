/**
 * Writes queued in batches: what is added in one event-loop turn (or up to `max` items) is written together, and
 * batches one after the other — so `flush()` resolves once everything added before it is written. The answer log
 * (./org-policies.ts) and the review queue (./reviews.ts) write through one.
 */

/** A queue written in batches (see the file header). */
export interface BatchWriter<T> {
  /** Queues an item; it is written at the end of the turn, or at once when `max` are waiting. */
  add(item: T): void
  /** Writes what waits; resolves once every batch so far is written (or failed: `write` reports its own errors). */
  flush(): Promise<void>
}

/** A {@link BatchWriter} over `write`, which must not reject (it logs what it could not write). */
export function batchWriter<T>(write: (batch: T[]) => Promise<void>, max: number): BatchWriter<T> {
  let pending: T[] = []
  let soon: NodeJS.Immediate | null = null
  let written: Promise<void> = Promise.resolve()
  const flush = (): Promise<void> => {
    if (soon) clearImmediate(soon)
    soon = null
    const batch = pending
    pending = []
    if (batch.length > 0) written = written.then(() => write(batch))
    return written
  }
  return {
    add(item) {
      if (pending.push(item) >= max) void flush()
      else soon ??= setImmediate(() => void flush())
    },
    flush,
  }
}

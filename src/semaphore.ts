/**
 * A counting semaphore with FIFO waiters — the one bound on "at most N at once" used by the DNS source (questions in
 * flight; a question whose time runs out while it waits leaves the queue) and the bulk engine (lookups in flight
 * across all jobs).
 */
export class Semaphore {
  private available: number
  private readonly waiters: Array<() => void> = []

  /** `size`: slots, at least 1. */
  constructor(readonly size: number) {
    if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`Semaphore size must be a whole number ≥ 1 (got ${size})`)
    this.available = size
  }

  /** Takes a slot: at once (returns nothing) when one is free, else resolves when one is handed over. */
  acquire(): Promise<void> | void {
    if (this.available > 0) {
      this.available--
      return
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve))
  }

  /**
   * Takes a slot unless `signal` aborts first (e.g. the caller's time ran out while it waited): true at once or
   * later holding a slot, false without one (the caller left the queue). A slot handed over in the same turn as the
   * abort is kept — the caller sees `true` and `signal.aborted`, and releases it.
   */
  acquireUnless(signal: AbortSignal): Promise<boolean> | boolean {
    if (signal.aborted) return false
    if (this.available > 0) {
      this.available--
      return true
    }
    return new Promise<boolean>((resolve) => {
      const waiter = () => {
        signal.removeEventListener('abort', giveUp)
        resolve(true)
      }
      const giveUp = () => {
        const i = this.waiters.indexOf(waiter)
        if (i < 0) return // already handed a slot
        this.waiters.splice(i, 1)
        resolve(false)
      }
      signal.addEventListener('abort', giveUp, { once: true })
      this.waiters.push(waiter)
    })
  }

  /** Frees a slot (hands it to the longest waiter). Call once per acquire. */
  release(): void {
    const next = this.waiters.shift()
    if (next) next()
    else this.available++
  }

  /**
   * Wakes every waiter at once, each as if handed a slot (their `release()` calls then balance the count): for
   * shutting down, where waiters must see the closed state instead of waiting for slots that never free.
   */
  wakeAll(): void {
    while (this.waiters.length > 0) {
      this.available--
      this.release()
    }
  }

  /** Slots in use. */
  get inUse(): number {
    return this.size - this.available
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.waiters.length
  }
}

/**
 * The cross-process lock of a data directory: one `riskcheck data update` (CLI, cron job or a server's scheduled
 * refresh) at a time. `proper-lockfile` makes `DIR/update.lock` with an atomic mkdir and refreshes its mtime while
 * held; a lock not refreshed for 30 s (its holder crashed or hung) is stale and taken over. A holder that loses its
 * lock (taken over, or its refresh failed) finds out before it installs anything.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import lockfile from 'proper-lockfile'

/** The lock is held by another process. */
export class DataLockedError extends Error {
  constructor(dir: string) {
    super(`another "riskcheck data update" is running on ${dir} (lock ${join(dir, 'update.lock')}); try again when it is done`)
    this.name = 'DataLockedError'
  }
}

/** What the locked function can ask. */
export interface HeldLock {
  /** throws when the lock was lost (taken over as stale, or its refresh failed) */
  assertHeld(): void
}

/** Lock timing (tests shorten it). */
export interface LockOptions {
  /** wait up to this long for a held lock (default 0: fail at once) */
  waitMs?: number
  /** a lock not refreshed for this long is stale (default 30000, at least 2000) */
  staleMs?: number
}

/**
 * Runs `fn` holding the data directory's lock; rejects with {@link DataLockedError} when another process holds it
 * (after waiting up to `waitMs`). The directory is created when missing.
 */
export async function withDataLock<T>(dir: string, fn: (lock: HeldLock) => Promise<T>, options: LockOptions = {}): Promise<T> {
  mkdirSync(dir, { recursive: true })
  const stale = Math.max(2000, options.staleMs ?? 30_000)
  const waitMs = Math.max(0, options.waitMs ?? 0)
  let lost: Error | null = null
  let release: () => Promise<void>
  try {
    release = await lockfile.lock(dir, {
      lockfilePath: join(dir, 'update.lock'),
      stale,
      update: Math.floor(stale / 3),
      realpath: false,
      retries: waitMs > 0 ? { retries: Math.ceil(waitMs / 500), minTimeout: 500, maxTimeout: 500, factor: 1 } : 0,
      onCompromised: (e) => {
        lost = e
      },
    })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOCKED') throw new DataLockedError(dir)
    throw e
  }
  try {
    return await fn({
      assertHeld() {
        if (lost) throw new Error(`lost the lock of ${dir}: ${(lost as Error).message}`)
      },
    })
  } finally {
    await release().catch(() => undefined)
  }
}

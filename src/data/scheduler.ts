/**
 * Scheduled data updates inside a long-running process (`riskcheck serve --refresh-data 6h`): runs the update every
 * `everyMs` (one at a time; the next run is scheduled when one ends), and at once when the data in use is stale at
 * start. The cross-process lock keeps a cron job and the server from updating the same directory at once (the one
 * that finds the lock held skips its turn).
 */
import type { UpdateResult } from './update.js'

/** Options of {@link startDataRefresh}. */
export interface DataRefreshOptions {
  everyMs: number
  /** runs one update */
  update: () => Promise<UpdateResult>
  /** run the first update now rather than after `everyMs` */
  runAtStart?: boolean
  /** an update finished (installed, refused sources, or nothing) */
  onResult?: (result: UpdateResult) => void | Promise<void>
  /** an update could not run (lock held, directory not writable …) */
  onError?: (error: Error) => void
}

/** A running schedule. */
export interface DataRefreshSchedule {
  /** runs an update now (waits for a running one instead of starting a second) */
  runNow(): Promise<UpdateResult | null>
  /** stops the schedule and waits for a running update to end */
  stop(): Promise<void>
}

/** Starts the schedule. */
export function startDataRefresh(options: DataRefreshOptions): DataRefreshSchedule {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<UpdateResult | null> | undefined
  let stopped = false
  const schedule = (ms: number) => {
    if (stopped) return
    timer = setTimeout(() => void runNow(), ms)
    timer.unref()
  }
  const runNow = (): Promise<UpdateResult | null> => {
    if (running) return running
    if (stopped) return Promise.resolve(null)
    if (timer) clearTimeout(timer)
    running = (async () => {
      try {
        const r = await options.update()
        await options.onResult?.(r)
        return r
      } catch (e) {
        options.onError?.(e instanceof Error ? e : new Error(String(e)))
        return null
      } finally {
        running = undefined
        schedule(options.everyMs)
      }
    })()
    return running
  }
  if (options.runAtStart) setImmediate(() => void runNow())
  else schedule(options.everyMs)
  return {
    runNow,
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running
    },
  }
}

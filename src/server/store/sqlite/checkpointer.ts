/**
 * WAL checkpoints off the event loop: a worker thread with a connection of its own copies the WAL back into the
 * database file, so no request waits on a checkpoint's writes and fsync (docs/decisions.md, "Storage engines" →
 * "SQLite checkpoints").
 */
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/** The worker: opens the file and runs a PASSIVE checkpoint (never waits for a reader or a writer) per message. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.path, { fileMustExist: true })
db.pragma('synchronous = NORMAL')
parentPort.on('message', (m) => {
  if (m === 'close') {
    db.close()
    parentPort.close()
    return
  }
  try {
    db.pragma('wal_checkpoint(PASSIVE)')
    parentPort.postMessage({ ok: true })
  } catch (e) {
    parentPort.postMessage({ ok: false, error: String(e && e.message || e) })
  }
})
`

/** Options of {@link createCheckpointer}. */
export interface CheckpointerOptions {
  /**
   * Commits of the hot path between two checkpoints (default 128: a group commit writes about 8 pages, so about the
   * 1,000 pages after which SQLite checkpoints by itself). A checkpoint still running is not asked again.
   */
  everyCommits?: number
}

/** Checkpoints of one database file, run by a worker thread started at the first one needed. */
export interface Checkpointer {
  /** Called after each commit of the hot path: every `everyCommits`, asks the worker for a checkpoint. */
  afterCommit(): void
  /** Called after a commit that wrote many pages (a large list emptied a step): asks for a checkpoint now. */
  afterLargeCommit(): void
  /** Stops the worker (its connection closes in its own thread). */
  close(): void
  /** Checkpoints the worker ran, and the last failure's message (a failed worker is not asked again). */
  readonly stats: { checkpoints: number; failure: string | null }
}

/**
 * The checkpointer of the database at `path` (a file in WAL mode). The caller's connection keeps SQLite's own
 * checkpoint as a safety net, at a threshold well above (for a failed worker, or writes outside the hot path).
 */
export function createCheckpointer(path: string, options: CheckpointerOptions = {}): Checkpointer {
  const everyCommits = options.everyCommits ?? 128
  const stats = { checkpoints: 0, failure: null as string | null }
  let worker: Worker | null = null
  let commits = 0
  let asked = false
  let closed = false

  const start = (): Worker => {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driver: createRequire(import.meta.url).resolve('better-sqlite3') } })
    w.on('message', (m: { ok: boolean; error?: string }) => {
      asked = false
      if (m.ok) stats.checkpoints++
      else stats.failure = m.error ?? 'checkpoint failed'
    })
    w.on('error', (e) => {
      stats.failure = e.message
      worker = null
    })
    // never keeps the process alive; after the listeners, as adding a 'message' listener refs the worker's port again
    w.unref()
    return w
  }

  return {
    stats,
    afterCommit() {
      // commits are counted while no checkpoint is running
      if (closed || asked || stats.failure !== null || ++commits % everyCommits !== 0) return
      ask()
    },
    afterLargeCommit: () => ask(),
    close() {
      if (closed) return
      closed = true
      worker?.postMessage('close')
      worker = null
    },
  }

  /** Asks the worker for a checkpoint, unless one is running (or the worker failed). */
  function ask(): void {
    if (closed || asked || stats.failure !== null) return
    try {
      worker ??= start()
      asked = true
      worker.postMessage('checkpoint')
    } catch (e) {
      // no worker (threads exhausted): SQLite's own checkpoint goes on at its threshold
      stats.failure = (e as Error).message
    }
  }
}

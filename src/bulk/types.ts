/**
 * Types of the bulk engine: the job and row records kept by a {@link BulkStore}, the engine's options and its API.
 *
 * A bulk job is one lookup type run over up to 100,000 inputs. Duplicates (after the check's normalization) and blank
 * inputs are folded; every unique input becomes one row, in input order. The store keeps the documented job object (docs/api.md "BulkJob")
 * (status, counts, dates) plus what the engine needs to resume it after a restart: the credits reserved, the
 * lookup options, and each row's state.
 */
import type { Action, BulkJob, BulkResultRow, BulkResultsPage, BulkType } from '../schema.js'

/**
 * The results CSV as a byte stream. At run time it is a Node.js `Readable`: read it with `for await` (chunks are
 * bytes), `pipe` it to a file or an HTTP response, or `destroy` it to stop reading. It is typed by what it offers so
 * that riskcheck's public types need no `@types/node` (docs/decisions.md, "Installing").
 */
export interface CsvStream extends AsyncIterable<Uint8Array> {
  /** Writes every chunk to `destination` (then ends it, unless `end: false`); returns `destination`. */
  pipe<T extends CsvStreamDestination>(destination: T, options?: { end?: boolean }): T
  /** Stops the stream (no more store pages are read). */
  destroy(error?: Error): this
}

/** Where a {@link CsvStream} can be piped: a Node.js writable stream (a file, an HTTP response, a socket …). */
export interface CsvStreamDestination {
  write(chunk: Uint8Array): boolean
  end(): unknown
  on(event: string, listener: (...args: any[]) => void): unknown
  once(event: string, listener: (...args: any[]) => void): unknown
  emit(event: string, ...args: any[]): boolean
  removeListener(event: string, listener: (...args: any[]) => void): unknown
}

import type { Awaitable as MaybePromise } from '../awaitable.js'

/** A value or a promise of it (the name the bulk module has always exported). */
export type { MaybePromise }

/** Lookup options of a job, applied to every row. */
export interface BulkJobOptions {
  /** Default country (ISO 3166 alpha-2, upper case) for phone numbers without `+`; null when not given. */
  country: string | null
  /** false skips the SMTP mailbox check of email rows; null = the instance default. */
  smtp: boolean | null
  /**
   * Email jobs: rows a mail server deferred are checked again before the job completes (status `rechecking` in
   * between; docs/rechecks.md). Absent in jobs stored before it existed: false.
   */
  recheckDeferred?: boolean
}

/** A job as a store keeps it. */
export interface BulkJobRecord {
  /** The documented bulk job object (status, counts, dates). */
  job: BulkJob
  /** Creation order, assigned by the store on insert (strictly increasing); the job list is newest (highest) first. */
  seq: number
  /** Credits reserved when the job started; what was not used is refunded when the job ends. */
  reserved: number
  options: BulkJobOptions
}

/**
 * State of one row: `pending` (not checked yet; stays pending in a cancelled job for the inputs never reached),
 * `done` (has a result), `error` (could not be checked: invalid input, or the lookup threw).
 */
export type BulkRowState = 'pending' | 'done' | 'error'

/** One row (one unique input) as a store keeps it: the documented row fields plus its state. */
export interface BulkRowRecord extends BulkResultRow {
  /** Position among the job's rows (0-based, input order of the first occurrence). */
  index: number
  state: BulkRowState
  /** Failed for a temporary reason (a source did not answer, or the lookup threw): a retry job takes it. */
  retryable: boolean
}

/** Query of {@link BulkStore.listRows}. */
export interface BulkRowQuery {
  /** First row index to consider. */
  fromIndex: number
  /** Row indexes at or beyond this are not returned (null: no bound). Used for jobs still running. */
  toIndex: number | null
  /** Only rows with this action. */
  action: Action | null
  /** At most this many rows. */
  limit: number
}

/**
 * Where bulk jobs live. The default is in memory ({@link createMemoryBulkStore}); the HTTP server supplies a
 * persistent one (SQLite). A persistent store lets the engine resume running jobs after a restart: it keeps each
 * row's state, and {@link commitRows} writes rows and the job's counters together (atomically, for a database), so
 * the counters always describe the rows written.
 *
 * One engine per store: two engines resuming the same store would run its jobs twice.
 */
export interface BulkStore {
  /** True when jobs survive the process (the engine then leaves running jobs to be resumed on close). */
  readonly persistent: boolean
  /**
   * Inserts a job and all its rows (`job.unique_inputs` of them, indexes 0 to n − 1, in index order: pending, or
   * `error` for invalid inputs); assigns and returns `seq`. `rows` may be a generator: read it once.
   */
  insertJob(record: Omit<BulkJobRecord, 'seq'>, rows: Iterable<BulkRowRecord>): MaybePromise<BulkJobRecord>
  /** The job, or undefined when unknown (or deleted). */
  getJob(id: string): MaybePromise<BulkJobRecord | undefined>
  /** Jobs newest first (seq descending), those with `seq < beforeSeq` when given. */
  listJobs(query: { beforeSeq: number | null; limit: number }): MaybePromise<BulkJobRecord[]>
  /** Jobs whose status is `queued` or `running` (to resume after a restart). */
  listUnfinishedJobs(): MaybePromise<BulkJobRecord[]>
  /** Replaces the job object (status, counts, dates). */
  updateJob(id: string, job: BulkJob): MaybePromise<void>
  /**
   * Optional, for stores whose database also holds the credit ledger (the server's SQLite and PostgreSQL stores):
   * `insertJob` with `charge` (the job's reservation) run in the same transaction — null, and nothing written, when
   * `charge` says the balance is short. `charge` gets the store's transaction handle (see `CreditLedger.reserveFor`);
   * a synchronous store calls it synchronously and needs a synchronous answer.
   */
  insertJobCharged?(
    record: Omit<BulkJobRecord, 'seq'>,
    rows: Iterable<BulkRowRecord>,
    charge: (tx: unknown) => MaybePromise<boolean>,
  ): MaybePromise<BulkJobRecord | null>
  /**
   * Optional: the final `updateJob` with `settle` (closing the reservation, with {@link insertJobCharged}) in the same
   * transaction, once: nothing at all when the stored job is final already (settling again would refund twice). A
   * store may add its own writes of a finished job there.
   */
  finishJob?(id: string, job: BulkJob, settle: (tx: unknown) => MaybePromise<void>): MaybePromise<void>
  /**
   * Optional: replaces the result of a finished row (a recheck's newer answer, docs/rechecks.md) and moves the job's
   * count of actions from the row's old action to its new one, together. False when the job or row is gone.
   */
  replaceRow?(id: string, row: BulkRowRecord): MaybePromise<boolean>
  /** Writes row results (state, result fields) and replaces the job object, together. */
  commitRows(id: string, rows: readonly BulkRowRecord[], job: BulkJob): MaybePromise<void>
  /** Rows still pending, in index order (to resume). */
  pendingRows(id: string): MaybePromise<Array<{ index: number; input: string }>>
  /**
   * The lowest index of a pending row, null when none: how far results of a job run by another process (a worker of
   * `--redis-url`) can be shown. Without it such a job shows its rows once it has finished.
   */
  firstPendingIndex?(id: string): MaybePromise<number | null>
  /** Rows in state `done` or `error`, in index order, matching the query. */
  listRows(id: string, query: BulkRowQuery): MaybePromise<BulkRowRecord[]>
  /** Inputs of the rows marked retryable, in index order. */
  listRetryableInputs(id: string): MaybePromise<string[]>
  /** Deletes the jobs (and rows) whose `expires_at` is at or before `nowMs`; returns their ids. */
  deleteExpired(nowMs: number): MaybePromise<string[]>
  /** Releases resources (optional). */
  close?(): MaybePromise<void>
}

/** Options of the bulk engine (`RiskcheckOptions.bulk`). */
export interface BulkOptions {
  /** Where jobs and rows are kept (default: in memory). */
  store?: BulkStore
  /** Lookups running at once over all jobs (default 32, 1 to 1024). */
  concurrency?: number
  /** Called once when a job completes or fails (not when cancelled); the server sends `bulk.completed`. */
  onCompleted?: (job: BulkJob) => void
  /** Rechecks of deferred email rows (the server's); without it no row is rechecked and `recheck_deferred` is refused. */
  rechecks?: BulkRechecks
  /** Most inputs of one job (default and maximum 100,000). */
  maxInputs?: number
  /** Resume the store's queued/running jobs when the engine starts (default true; false with `dispatch`). */
  resume?: boolean
  /**
   * Jobs run elsewhere (the BullMQ bulk queue of `--redis-url`, `src/server/queue/bulk-queue.ts`): `create` stores
   * the job, reserves its credits and hands it here instead of running it; a worker runs it with `runJob`.
   */
  dispatch?: (job: BulkJob) => MaybePromise<void>
  /**
   * Cancels a job this engine does not run (with `dispatch`): true when it was taken off the queue before any worker
   * started it (the engine then cancels it in the store), false when a worker runs it and was asked to cancel it
   * (the engine then waits for the store to show the job finished).
   */
  cancelRemote?: (id: string) => Promise<boolean>
  /**
   * The job list's cursor (default: this engine's own, a creation `seq`). The server gives a page cursor of the org and
   * key mode (its src/server/page-cursor.ts), so another owner's cursor is refused; `seqOf` throws INVALID_REQUEST for
   * a cursor `encode` did not write.
   */
  listCursor?: BulkListCursor
}

/** A job-list cursor as {@link BulkOptions.listCursor} writes and reads it: the creation `seq` to continue below. */
export interface BulkListCursor {
  encode(seq: number): string
  seqOf(cursor: string): number
}

/** Parameters of {@link BulkEngine.create} (the POST /v1/bulk/jobs body of docs/api.md). */
export interface BulkCreateParams {
  type: BulkType
  /** 1 to 100,000 strings. */
  inputs: readonly string[]
  /** At most 200 characters (default: `<type> bulk job`). */
  name?: string | null
  /** ISO 3166 alpha-2 default country for phone numbers without `+`. */
  country?: string | null
  /** false skips mailbox (SMTP) checks of emails. */
  smtp?: boolean | null
  /** Email jobs: check deferred rows again before completing (needs a server with rechecks on). */
  recheck_deferred?: boolean | null
}

/**
 * Rechecks of rows a mail server deferred (the server's, docs/rechecks.md): the engine hands them over before their
 * rows are written, and a job created with `recheck_deferred` waits (status `rechecking`) while any is pending.
 */
export interface BulkRechecks {
  /** Schedules rechecks of deferred rows (`secondPass`: the job waits for them, one attempt each). */
  schedule(job: BulkJob, rows: ReadonlyArray<{ index: number; address: string }>, secondPass: boolean): MaybePromise<void>
  /** Rechecks of the job still pending. */
  pending(jobId: string): MaybePromise<number>
}

/** A page of jobs, newest first. */
export interface BulkJobPage {
  data: BulkJob[]
  next_cursor: string | null
}

/** The bulk engine (`rc.bulk`). Every method rejects with a RiskcheckError for request errors. */
export interface BulkEngine {
  /**
   * Folds, reserves credits and queues a job; resolves to the job object (status `queued`).
   * Rejects: INVALID_REQUEST / MISSING_FIELD (bad parameters), INVALID_INPUT (no inputs), INPUT_LIMIT_EXCEEDED (too many inputs),
   * INSUFFICIENT_CREDITS (nothing starts).
   */
  create(params: BulkCreateParams): Promise<BulkJob>
  /** The job with its live counts. NOT_FOUND when unknown or expired. */
  get(id: string): Promise<BulkJob>
  /** Jobs newest first: `limit` 1–100 (default 20), `cursor` from the previous page. */
  list(query?: { limit?: number; cursor?: string | null }): Promise<BulkJobPage>
  /** Stops a queued/running job: inputs not reached are not charged; rows done stay. A finished job is returned as is. */
  cancel(id: string): Promise<BulkJob>
  /** A new job of the finished job's rows that failed for temporary reasons. INVALID_REQUEST when there are none. */
  retry(id: string): Promise<BulkJob>
  /**
   * Rows in input order, `limit` 1–1000 (default 100), optionally only one `action`. While the job runs, rows are
   * returned up to the first row not finished yet and `next_cursor` points there; null means no more rows will come.
   */
  results(id: string, query?: { cursor?: string | null; limit?: number; action?: Action | null }): Promise<BulkResultsPage>
  /** The results as CSV text (header + one line per row), streamed from the store. */
  resultsCsv(id: string): Promise<CsvStream>
  /** Resolves with the job once it is completed, cancelled or failed. */
  waitFor(id: string): Promise<BulkJob>
  /**
   * Runs (or resumes, from its pending rows) a queued or running job of the store here and resolves with it when it
   * ends or the engine closes; null when there is no such unfinished job. Used by the workers of `--redis-url`.
   * `onStart` gets the job as stored when it starts here (not when it runs here already, nor when there is none).
   */
  runJob(id: string, onStart?: (job: BulkJob) => void): Promise<BulkJob | null>
  /** Cancels the job if this engine runs it (a worker asked by `cancelRemote`); false when it does not. */
  cancelLocal(id: string): Promise<boolean>
  /** Stops running the job here without finishing it (what is done is written; another worker resumes it). */
  releaseLocal(id: string): Promise<boolean>
  /**
   * Completes a job waiting in `rechecking` once none of its rechecks is pending (settles it and sends
   * bulk.completed, once); null when it is not waiting or still has pending rechecks.
   */
  finishRechecked(id: string): Promise<BulkJob | null>
  /**
   * Stops work and timers. With a persistent store running jobs stay `running` and resume when an engine starts on
   * the store again; with the in-memory store they are cancelled (unused credits refunded).
   */
  close(): Promise<void>
}

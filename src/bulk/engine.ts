/**
 * The bulk engine: create → fold → reserve credits → run rows (bounded concurrency, emails grouped by domain) → refund
 * what was not used → completed. Jobs and rows live in a {@link BulkStore}, results are paged from it. Billing:
 * docs/decisions.md, "Billing and caching" → "bulk credits". This module takes the check table as a parameter;
 * `./index.ts` binds the registry's checks.
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { CheckDefinition } from '../checks/types.js'
import { isDeferredEmailOutcome } from '../checks/email/index.js'
import { foreignCursor, isRiskcheckError, missingField, RiskcheckError, type ErrorCode } from '../errors.js'
import { runCheck, type LookupEnv } from '../lookup.js'
import { ACTIONS, BULK_TYPES, FINAL_BULK_STATUSES, type Action, type BulkJob, type BulkResultRow, type BulkResultsPage, type BulkType } from '../schema.js'
import { MAX_CREDITS } from '../billing.js'
import type { CreditLedger } from '../credits.js'
import { createResultsCsv } from './csv.js'
import { decodeListCursor, decodeResultsCursor, encodeListCursor, encodeResultsCursor } from './cursor.js'
import { errorRow, errorText, foldedRows, foldInputs, lookupOptionsFor, type FoldedInputs, type WorkItem } from './fold.js'
import { createMemoryBulkStore } from './memory-store.js'
import { buildLanes, Semaphore } from './schedule.js'
import { DEFAULT_BULK_CONCURRENCY, MAX_BULK_INPUTS } from './limits.js'
import { readSetting } from '../settings.js'
import type {
  BulkCreateParams,
  BulkEngine,
  BulkJobOptions,
  BulkJobPage,
  BulkJobRecord,
  BulkListCursor,
  BulkOptions,
  BulkRechecks,
  BulkRowRecord,
  BulkStore,
  CsvStream,
} from './types.js'

/** The check of each bulk type. */
export type BulkChecks = Readonly<Partial<Record<BulkType, CheckDefinition<any, any, any>>>>

export { DEFAULT_BULK_CONCURRENCY, MAX_BULK_INPUTS }
/** Results are deleted this long after the job was created. */
export const BULK_RETENTION_MS = 7 * 24 * 60 * 60 * 1000
/** Longest job name. */
export const MAX_JOB_NAME = 200

const FLUSH_ROWS = 500
/** Longest stretch of work (ms) before the event loop gets a turn. */
const YIELD_EVERY_MS = 10
const FLUSH_MS = 200
const SWEEP_EVERY_MS = 60_000
const SWEEP_TIMER_MS = 60 * 60 * 1000
/** A cancel of a job a worker runs: how long the API waits for the worker to write it (60 × 250 ms). */
const REMOTE_CANCEL_POLLS = 60
const REMOTE_CANCEL_POLL_MS = 250
const TEMPORARY_CODES: readonly ErrorCode[] = ['UPSTREAM_UNAVAILABLE', 'INTERNAL_ERROR', 'RATE_LIMITED', 'MAINTENANCE']
const CREATE_FIELDS = ['type', 'inputs', 'name', 'country', 'smtp', 'recheck_deferred']

const copyJob = (job: BulkJob): BulkJob => ({ ...job, results: { ...job.results } })
const isFinal = (job: BulkJob) => FINAL_BULK_STATUSES.has(job.status)
const notFound = (id: unknown) =>
  new RiskcheckError('NOT_FOUND', `No bulk job ${typeof id === 'string' ? JSON.stringify(id.slice(0, 64)) : ''} (unknown, or its results expired).`, { field: 'id' })
const invalid = (message: string, field?: string) => new RiskcheckError('INVALID_REQUEST', message, field === undefined ? {} : { field })

/** True when a thrown error is temporary (worth a retry job): anything but a documented request error. */
function isTemporary(e: unknown): boolean {
  return !isRiskcheckError(e) || TEMPORARY_CODES.includes(e.code)
}

function publicRow(r: BulkRowRecord): BulkResultRow {
  return {
    input: r.input,
    action: r.action,
    status: r.status,
    reason: r.reason,
    risk_score: r.risk_score,
    credits_used: r.credits_used,
    cache_hit: r.cache_hit,
    error: r.error,
    factors: r.factors,
    details: r.details,
  }
}

function validateOptions(options: BulkOptions): { concurrency: number; maxInputs: number } {
  if (options === null || typeof options !== 'object') throw new TypeError('riskcheck: option `bulk` must be an object')
  const s = options.store as unknown as Record<string, unknown> | undefined
  if (s !== undefined) {
    for (const m of ['insertJob', 'getJob', 'listJobs', 'listUnfinishedJobs', 'updateJob', 'commitRows', 'pendingRows', 'listRows', 'listRetryableInputs', 'deleteExpired']) {
      if (s === null || typeof s[m] !== 'function') throw new TypeError(`riskcheck: option \`bulk.store\` must implement ${m}()`)
    }
  }
  if (options.onCompleted !== undefined && typeof options.onCompleted !== 'function') {
    throw new TypeError('riskcheck: option `bulk.onCompleted` must be a function')
  }
  return {
    concurrency: readSetting<number>('bulk.concurrency', options.concurrency),
    maxInputs: readSetting<number>('bulk.maxInputs', options.maxInputs),
  }
}

function validateCreate(params: unknown, maxInputs: number) {
  if (params === null || typeof params !== 'object' || Array.isArray(params)) {
    throw invalid('The bulk job must be an object with type and inputs.')
  }
  const p = params as Record<string, unknown>
  for (const k of Object.keys(p)) if (!CREATE_FIELDS.includes(k)) throw invalid(`Unknown field \`${k}\`.`, k)
  if (p.type === undefined || p.type === null) throw missingField('`type` is required.', 'type')
  if (!BULK_TYPES.includes(p.type as BulkType)) throw invalid(`\`type\` must be one of ${BULK_TYPES.join(', ')}.`, 'type')
  if (p.inputs === undefined || p.inputs === null) throw missingField('`inputs` is required.', 'inputs')
  if (!Array.isArray(p.inputs)) throw invalid('`inputs` must be an array of strings.', 'inputs')
  if (p.inputs.length === 0) throw new RiskcheckError('INVALID_INPUT', '`inputs` is empty: a bulk job takes at least one input.', { field: 'inputs' })
  if (p.inputs.length > maxInputs) {
    throw new RiskcheckError('INPUT_LIMIT_EXCEEDED', `A bulk job takes 1 to ${maxInputs.toLocaleString('en-US')} inputs (got ${p.inputs.length}).`, { field: 'inputs' })
  }
  for (let i = 0; i < p.inputs.length; i++) {
    if (typeof p.inputs[i] !== 'string') throw invalid(`\`inputs[${i}]\` must be a string.`, 'inputs')
  }
  const name = p.name ?? null
  if (name !== null && (typeof name !== 'string' || name.length > MAX_JOB_NAME)) {
    throw invalid(`\`name\` must be a string of at most ${MAX_JOB_NAME} characters.`, 'name')
  }
  const country = p.country ?? null
  if (country !== null && (typeof country !== 'string' || !/^[A-Za-z]{2}$/.test(country))) {
    throw invalid('`country` must be exactly 2 letters (ISO 3166 alpha-2).', 'country')
  }
  const smtp = p.smtp ?? null
  if (smtp !== null && typeof smtp !== 'boolean') throw invalid('`smtp` must be a boolean.', 'smtp')
  const recheck = p.recheck_deferred ?? null
  if (recheck !== null && typeof recheck !== 'boolean') throw invalid('`recheck_deferred` must be a boolean.', 'recheck_deferred')
  if (recheck === true && p.type !== 'email') throw invalid('`recheck_deferred` applies to email jobs only.', 'recheck_deferred')
  const options: BulkJobOptions = { country: country === null ? null : (country as string).toUpperCase(), smtp: smtp as boolean | null }
  if (recheck === true) options.recheckDeferred = true
  return { type: p.type as BulkType, inputs: p.inputs as string[], name: name as string | null, options }
}

function intParam(name: string, v: unknown, def: number, max: number): number {
  if (v === undefined || v === null) return def
  const n = typeof v === 'string' && /^\d{1,7}$/.test(v) ? Number(v) : v
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > max) throw invalid(`\`${name}\` must be an integer from 1 to ${max}.`, name)
  return n
}

/** The domain of an email input (its text after the last `@`), for grouping; null when there is none. */
function emailDomain(input: string): string | null {
  const at = input.lastIndexOf('@')
  if (at < 0) return null
  const d = input.slice(at + 1).trim().toLowerCase()
  return d === '' ? null : d
}

interface EngineCore {
  /** Gives the event loop a turn when the workers have run for a while without one (offline lookups never wait). */
  pause(): Promise<void> | undefined
  env: LookupEnv
  store: BulkStore
  sem: Semaphore
  concurrency: number
  runners: Map<string, JobRunner>
  onCompleted: ((job: BulkJob) => void) | undefined
  rechecks: BulkRechecks | undefined
}

type Stop = 'cancel' | 'close' | 'fail'

/** Runs one job in this process and keeps its live counters. */
class JobRunner {
  readonly id: string
  readonly job: BulkJob
  private stop: Stop | null = null
  private finalizing: Promise<BulkJob> | null = null
  private buffer: BulkRowRecord[] = []
  /** Cache writes of answers whose rows are not saved yet (row index → write), done once the row is committed. */
  private readonly cacheWrites = new Map<number, () => Promise<void>>()
  /** Rows a mail server deferred, not handed to the rechecks yet (row index → address). */
  private readonly deferred = new Map<number, string>()
  private chain: Promise<void> = Promise.resolve()
  private timer: NodeJS.Timeout | undefined
  private finished: Uint8Array
  private mark = 0
  private resolveDone!: (job: BulkJob) => void
  /** Resolves with the final job. */
  readonly done: Promise<BulkJob>

  constructor(
    private readonly core: EngineCore,
    private readonly record: BulkJobRecord,
    private readonly def: CheckDefinition<unknown, object, unknown>,
  ) {
    this.id = record.job.id
    this.job = copyJob(record.job)
    this.finished = new Uint8Array(record.job.unique_inputs).fill(1)
    this.done = new Promise((r) => (this.resolveDone = r))
  }

  /** Rows `[0, watermark)` are all finished and written: what results() may show while the job runs. */
  get watermark(): number {
    return this.mark
  }

  /** Runs the job: `work` for a job just created, or null to load its pending rows from the store (resume). */
  async run(work: WorkItem[] | null): Promise<void> {
    const { store, env } = this.core
    try {
      const opts = lookupOptionsFor(this.job.type, this.record.options)
      let items: Array<WorkItem | undefined>
      if (work) {
        items = work
        for (const w of work) this.finished[w.index] = 0
      } else {
        const pending = await store.pendingRows(this.id)
        items = []
        for (const { index, input } of pending) {
          this.finished[index] = 0
          try {
            const p = this.def.prepare(input, opts, env.ctx)
            items.push({ index, raw: input, input: p.input, cacheKey: p.cacheKey })
          } catch (e) {
            this.recordRow(errorRow(index, input, errorText(e), false))
          }
        }
      }
      this.advance()
      if (this.stop) return
      if (this.job.status === 'queued') {
        this.job.status = 'running'
        await store.updateJob(this.id, copyJob(this.job))
      }
      const groupOf = this.groupFn(items)
      const lanes = buildLanes(items.length, groupOf.fn, groupOf.width)
      const worker = async () => {
        for (let lane = lanes.next(); lane; lane = lanes.next()) {
          for (let p = lane.start; p < lane.end; p++) {
            if (this.stop) return
            const pos = lanes.order[p] as number
            const item = items[pos]
            items[pos] = undefined // release the prepared input as soon as it is taken
            if (!item) continue
            const slot = this.core.sem.acquire()
            if (slot) await slot // a free slot is taken synchronously: no extra turn per row
            let row: BulkRowRecord
            try {
              if (this.stop) return
              row = await this.runRow(item, opts)
            } finally {
              this.core.sem.release()
            }
            if (this.stop) return // a late answer after cancel/close: not recorded, not charged
            this.recordRow(row)
            const paused = this.core.pause()
            if (paused) await paused
          }
        }
      }
      await Promise.all(Array.from({ length: Math.min(this.core.concurrency, Math.max(1, items.length)) }, worker))
      if (this.stop) return
      await this.flush()
      if (this.stop) return
      if (await this.waitForRechecks()) return
      await this.finalize('completed')
    } catch (e) {
      if (!this.stop) await this.fail(e)
    }
  }

  /**
   * A job created with `recheck_deferred` whose rechecks are pending waits in `rechecking` (the service completes it
   * with finishRechecked when the last one is done). True when it waits. The count is asked again after the status is
   * written, so a last recheck done meanwhile (which saw the job still running) cannot leave it waiting for ever.
   */
  private async waitForRechecks(): Promise<boolean> {
    const rechecks = this.core.rechecks
    if (!rechecks || this.record.options.recheckDeferred !== true) return false
    if ((await rechecks.pending(this.id)) === 0) return false
    this.job.status = 'rechecking'
    await this.core.store.updateJob(this.id, copyJob(this.job))
    if ((await rechecks.pending(this.id)) === 0) return false
    this.core.runners.delete(this.id)
    this.resolveDone(copyJob(this.job))
    return true
  }

  private groupFn(items: Array<WorkItem | undefined>): { fn: ((i: number) => string | null) | null; width: number } {
    if (this.job.type !== 'email') return { fn: null, width: 1 }
    const o = this.core.env.ctx.options
    const smtpOn = this.core.env.ctx.mode === 'live' && !this.core.env.ctx.offline && o.smtp.enabled && this.record.options.smtp !== false
    return {
      fn: (i) => {
        const it = items[i]
        return it ? emailDomain(it.raw) : null
      },
      width: smtpOn ? Math.max(1, o.smtp.maxConnectionsPerHost) : this.core.concurrency,
    }
  }

  private async runRow(item: WorkItem, opts: object): Promise<BulkRowRecord> {
    try {
      // the answer goes into the cache only once its row (and so its charge) is saved: see flush()
      const deferCacheWrite = (write: () => Promise<void>) => this.cacheWrites.set(item.index, write)
      const r = await runCheck(this.core.env, this.def, item.input, item.cacheKey, opts, { prepaid: true, deferCacheWrite })
      const a = r.assessment
      if (this.core.rechecks && isDeferredEmailOutcome(r.outcome)) {
        const address = (r.outcome.details as { normalized?: unknown }).normalized
        if (typeof address === 'string') this.deferred.set(item.index, address)
      }
      return {
        index: item.index,
        input: item.raw,
        state: 'done',
        retryable: r.outcome.partial,
        action: a.action,
        status: a.status,
        reason: a.reason,
        risk_score: a.score,
        credits_used: r.creditsUsed,
        cache_hit: r.cacheHit,
        error: null,
        factors: a.factors,
        details: r.outcome.details as Record<string, unknown>,
      }
    } catch (e) {
      return errorRow(item.index, item.raw, errorText(e), isTemporary(e))
    }
  }

  /** Counts a finished row and queues it for writing. */
  private recordRow(row: BulkRowRecord): void {
    if (this.finalizing) return
    const j = this.job
    j.processed++
    j.credits_used += row.credits_used
    if (row.state === 'error') j.results.errors++
    else if (row.action) j.results[row.action]++
    if (row.cache_hit) j.results.cache_hits++
    this.buffer.push(row)
    if (this.buffer.length >= FLUSH_ROWS) void this.flush()
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS)
      this.timer.unref?.()
    }
  }

  /** Writes the buffered rows and the counters (serialized); never rejects (a store failure fails the job). */
  private flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    const rows = this.buffer
    this.buffer = []
    if (this.finalizing) return this.chain // the job is over: nothing more is written
    const snapshot = copyJob(this.job)
    this.chain = this.chain.then(async () => {
      if (rows.length === 0) return
      try {
        await this.scheduleRechecks(rows)
        await this.core.store.commitRows(this.id, rows, snapshot)
      } catch (e) {
        void this.fail(e)
        return
      }
      for (const r of rows) {
        this.finished[r.index] = 1
        const write = this.cacheWrites.get(r.index)
        if (write) {
          this.cacheWrites.delete(r.index)
          void write()
        }
      }
      this.advance()
    })
    return this.chain
  }

  /** Hands the deferred rows among `rows` to the rechecks, before the rows are written (a crash then rechecks twice, never not at all). */
  private async scheduleRechecks(rows: readonly BulkRowRecord[]): Promise<void> {
    const rechecks = this.core.rechecks
    if (!rechecks || this.deferred.size === 0) return
    const due: Array<{ index: number; address: string }> = []
    for (const r of rows) {
      const address = this.deferred.get(r.index)
      if (address === undefined) continue
      this.deferred.delete(r.index)
      due.push({ index: r.index, address })
    }
    if (due.length > 0) await rechecks.schedule(copyJob(this.job), due, this.record.options.recheckDeferred === true)
  }

  private advance(): void {
    const f = this.finished
    while (this.mark < f.length && f[this.mark] === 1) this.mark++
  }

  private finalize(status: 'completed' | 'cancelled' | 'failed'): Promise<BulkJob> {
    if (this.finalizing) return this.finalizing
    this.finalizing = (async () => {
      if (this.timer) clearTimeout(this.timer)
      const { env, store } = this.core
      this.job.status = status
      this.job.completed_at = env.ctx.now().toISOString()
      try {
        await settleJob(store, env.ledger, this.id, this.record.reserved, copyJob(this.job))
      } catch {
        // the job is over either way; a store that cannot write now will show the last committed state
      }
      this.core.runners.delete(this.id)
      const final = copyJob(this.job)
      this.resolveDone(final)
      if (status !== 'cancelled' && this.core.onCompleted) {
        try {
          const r = this.core.onCompleted(copyJob(final)) as unknown
          if (r instanceof Promise) r.catch(() => undefined)
        } catch {
          // a failing callback must not break the engine
        }
      }
      return final
    })()
    return this.finalizing
  }

  private async fail(_e: unknown): Promise<void> {
    if (this.stop && this.stop !== 'fail') return
    this.stop = 'fail'
    await this.finalize('failed')
  }

  /** Stops the job: rows done so far are written and charged, inputs not reached are refunded. */
  async cancel(): Promise<BulkJob> {
    if (this.finalizing) return this.finalizing
    this.stop = 'cancel'
    await this.flush()
    return this.finalize('cancelled')
  }

  /** Stops work for engine shutdown: writes what is done; cancels the job unless the store will resume it. */
  async close(): Promise<void> {
    if (this.finalizing) {
      await this.finalizing
      return
    }
    this.stop = 'close'
    await this.flush()
    if (this.core.store.persistent) {
      this.core.runners.delete(this.id)
      if (this.timer) clearTimeout(this.timer)
      this.resolveDone(copyJob(this.job))
      return
    }
    await this.finalize('cancelled')
  }
}

/**
 * Writes a job's final state and gives back what it reserved and did not use. Where the job store and the ledger share
 * a database, both happen in one transaction and close the job's reservation, so a crash between them — and the
 * resumed job finishing again — cannot refund twice; elsewhere (in memory) they are two steps.
 */
async function settleJob(store: BulkStore, ledger: CreditLedger, id: string, reserved: number, final: BulkJob): Promise<void> {
  const unused = Math.max(0, reserved - final.credits_used)
  if (store.finishJob && ledger.settleFor) {
    const settleFor = ledger.settleFor.bind(ledger)
    await store.finishJob(id, final, (tx) => settleFor(id, unused, tx))
    return
  }
  if (unused > 0) await ledger.refund(unused)
  if (store.finishJob) await store.finishJob(id, final, () => undefined)
  else await store.updateJob(id, final)
}

/** What the operations of one engine share: its checks, environment, options, store, runners and sweep state. */
interface EngineScope {
  readonly checks: BulkChecks
  readonly env: LookupEnv
  readonly options: BulkOptions
  readonly core: EngineCore
  readonly store: BulkStore
  readonly maxInputs: number
  readonly nowMs: () => number
  closed: boolean
  lastSweep: number
  /** Settles when the unfinished jobs of the store were resumed (at once when the engine does not resume). */
  ready: Promise<void>
}

/**
 * Creates a bulk engine over `checks` (one check definition per bulk type). Prefer `createBulkEngine` from
 * `./index.ts`, which binds the registry's checks; this form lets tests and embedders supply their own.
 * Throws a TypeError for bad options.
 */
export function createBulkEngineFor(checks: BulkChecks, env: LookupEnv, options: BulkOptions = {}): BulkEngine {
  const { concurrency, maxInputs } = validateOptions(options)
  const owned = options.store === undefined
  const store = options.store ?? createMemoryBulkStore()
  const core = createEngineCore(env, store, concurrency, options.onCompleted, options.rechecks)
  const scope: EngineScope = {
    checks,
    env,
    options,
    core,
    store,
    maxInputs,
    nowMs: () => env.ctx.now().getTime(),
    closed: false,
    lastSweep: Number.NEGATIVE_INFINITY,
    ready: Promise.resolve(),
  }
  const timer = setInterval(() => void sweepJobs(scope).catch(() => undefined), SWEEP_TIMER_MS)
  timer.unref?.()
  if (options.resume !== false && !options.dispatch) scope.ready = resumeJobs(scope)
  const enter = () => enterEngine(scope)

  return {
    async create(params: BulkCreateParams) {
      await enter()
      const p = validateCreate(params, maxInputs)
      if (p.options.recheckDeferred && !options.rechecks) throw invalid('`recheck_deferred` needs rechecks, which are off here.', 'recheck_deferred')
      return createJob(scope, p.type, p.inputs, p.name, p.options)
    },
    async get(id) {
      await enter()
      return (await loadJob(scope, id)).job
    },
    async list(query = {}) {
      await enter()
      return listJobPage(scope, query)
    },
    async cancel(id) {
      await enter()
      return cancelJob(scope, id)
    },
    async retry(id) {
      await enter()
      return retryJob(scope, id)
    },
    async results(id, query = {}) {
      await enter()
      return jobResults(scope, id, query)
    },
    async resultsCsv(id) {
      await enter()
      return jobResultsCsv(scope, id)
    },
    async waitFor(id) {
      await enter()
      const { job, runner } = await loadJob(scope, id)
      return runner ? runner.done : job
    },
    async runJob(id, onStart) {
      await enter()
      return runStoredJob(scope, id, onStart)
    },
    async cancelLocal(id) {
      const runner = core.runners.get(id)
      if (!runner) return false
      await runner.cancel()
      return true
    },
    async releaseLocal(id) {
      const runner = core.runners.get(id)
      if (!runner) return false
      await runner.close()
      return true
    },
    finishRechecked: (id) => finishRecheckedJob(scope, id),
    async close() {
      if (scope.closed) return
      scope.closed = true
      clearInterval(timer)
      await scope.ready
      await Promise.all([...core.runners.values()].map((r) => r.close()))
      if (owned) await store.close?.()
    },
  }
}

/** The part of an engine its job runners share, with the pause that gives the event loop a turn now and then. */
function createEngineCore(env: LookupEnv, store: BulkStore, concurrency: number, onCompleted: BulkOptions['onCompleted'], rechecks: BulkRechecks | undefined): EngineCore {
  let turnStarted = performance.now()
  let turn: Promise<void> | null = null
  return {
    pause() {
      if (turn) return turn
      if (performance.now() - turnStarted < YIELD_EVERY_MS) return undefined
      turn = new Promise<void>((resolve) =>
        setImmediate(() => {
          turn = null
          turnStarted = performance.now()
          resolve()
        }),
      )
      return turn
    },
    env,
    store,
    sem: new Semaphore(concurrency),
    concurrency,
    runners: new Map(),
    onCompleted,
    rechecks,
  }
}

function checkOf(scope: EngineScope, type: BulkType): CheckDefinition<unknown, object, unknown> {
  const def = scope.checks[type]
  if (!def) throw invalid(`Bulk jobs of type ${type} are not available.`, 'type')
  return def as CheckDefinition<unknown, object, unknown>
}

function startRunner(scope: EngineScope, record: BulkJobRecord, work: WorkItem[] | null): JobRunner {
  const runner = new JobRunner(scope.core, record, checkOf(scope, record.job.type))
  scope.core.runners.set(record.job.id, runner)
  setImmediate(() => void runner.run(work))
  return runner
}

/** Cancels the expired jobs running here and deletes the expired ones from the store. */
async function sweepJobs(scope: EngineScope): Promise<void> {
  const now = scope.nowMs()
  scope.lastSweep = now
  for (const r of [...scope.core.runners.values()]) if (Date.parse(r.job.expires_at) <= now) await r.cancel()
  await scope.store.deleteExpired(now)
}

/** Starts a runner for each unfinished, unexpired job of the store. */
async function resumeJobs(scope: EngineScope): Promise<void> {
  try {
    for (const rec of await scope.store.listUnfinishedJobs()) {
      if (Date.parse(rec.job.expires_at) > scope.nowMs() && scope.checks[rec.job.type]) startRunner(scope, rec, null)
    }
  } catch {
    // a store that cannot list now: its jobs stay as they are and resume with the next engine
  }
}

/** The start of every operation: refused once closed, after the resume, with a sweep at most once a minute. */
async function enterEngine(scope: EngineScope): Promise<void> {
  if (scope.closed) throw new Error('riskcheck: the bulk engine is closed')
  await scope.ready
  if (scope.nowMs() - scope.lastSweep >= SWEEP_EVERY_MS) await sweepJobs(scope)
}

/** How far the rows of an unfinished job run elsewhere are written (rows below the first pending one). */
async function remoteWatermark(scope: EngineScope, job: BulkJob): Promise<number> {
  if (!scope.store.firstPendingIndex) return 0
  return (await scope.store.firstPendingIndex(job.id)) ?? job.unique_inputs
}

/** The job (live when running here); NOT_FOUND when unknown or expired. */
async function loadJob(scope: EngineScope, id: unknown): Promise<{ record: BulkJobRecord; job: BulkJob; runner: JobRunner | undefined }> {
  if (typeof id !== 'string' || id.length === 0 || id.length > 100) throw notFound(id)
  const record = await scope.store.getJob(id)
  if (!record) throw notFound(id)
  if (Date.parse(record.job.expires_at) <= scope.nowMs()) {
    await sweepJobs(scope)
    throw notFound(id)
  }
  const runner = scope.core.runners.get(id)
  return { record, job: runner ? copyJob(runner.job) : record.job, runner }
}

/** A new queued job for folded inputs. */
function newJob(type: BulkType, folded: FoldedInputs, name: string | null, created: Date): BulkJob {
  return {
    id: `bulk_${randomBytes(12).toString('hex')}`,
    name: name ?? `${type} bulk job`,
    type,
    status: 'queued',
    total_rows: folded.totalRows,
    unique_inputs: folded.uniqueInputs,
    processed: folded.errors,
    credits_used: 0,
    results: { approve: 0, verify: 0, review: 0, block: 0, errors: folded.errors, skipped: folded.skipped, cache_hits: 0 },
    created_at: created.toISOString(),
    completed_at: null,
    expires_at: new Date(created.getTime() + BULK_RETENTION_MS).toISOString(),
  }
}

/**
 * Reserves a job's credits and stores it with its rows. Where the job store and the ledger share a database, the
 * reservation belongs to the job and is taken in the transaction that inserts it: a crash in between can neither keep
 * the credits without the job nor the reverse. Elsewhere the credits are reserved first and given back if the insert
 * fails.
 */
async function storeNewJob(scope: EngineScope, type: BulkType, folded: FoldedInputs, name: string | null, jobOptions: BulkJobOptions): Promise<BulkJobRecord> {
  const { env, store } = scope
  const reserved = env.ctx.mode === 'test' ? 0 : folded.work.length * MAX_CREDITS[type]
  const short = () =>
    new RiskcheckError(
      'INSUFFICIENT_CREDITS',
      `This job needs ${reserved.toLocaleString('en-US')} credits (one per unique input); the balance is short. Nothing was started.`,
    )
  const { reserveFor } = env.ledger
  const atomic = reserved > 0 && store.insertJobCharged !== undefined && reserveFor !== undefined
  if (reserved > 0 && !atomic && !(await env.ledger.reserve(reserved))) throw short()
  try {
    const job = newJob(type, folded, name, env.ctx.now())
    if (scope.closed) throw new Error('riskcheck: the bulk engine is closed')
    if (!atomic) return await store.insertJob({ job, reserved, options: jobOptions }, foldedRows(folded))
    const charged = await store.insertJobCharged!({ job, reserved, options: jobOptions }, foldedRows(folded), (tx) => reserveFor!(job.id, reserved, tx))
    if (!charged) throw short()
    return charged
  } catch (e) {
    if (reserved > 0 && !atomic) await env.ledger.refund(reserved)
    throw e
  }
}

async function createJob(scope: EngineScope, type: BulkType, inputs: readonly string[], name: string | null, jobOptions: BulkJobOptions): Promise<BulkJob> {
  const folded = await foldInputs(checkOf(scope, type), inputs, jobOptions, scope.env.ctx)
  // blank lines only: as empty as no inputs (before: a job of 0 rows, completed at once)
  if (folded.uniqueInputs === 0) throw new RiskcheckError('INVALID_INPUT', '`inputs` holds only blank lines: a bulk job takes at least one input.', { field: 'inputs' })
  if (scope.closed) throw new Error('riskcheck: the bulk engine is closed')
  const record = await storeNewJob(scope, type, folded, name, jobOptions)
  if (scope.options.dispatch) {
    // Run by a worker (which loads the pending rows from the store): the job is stored and its credits reserved.
    await scope.options.dispatch(copyJob(record.job))
    return copyJob(record.job)
  }
  startRunner(scope, record, folded.work)
  return copyJob(record.job)
}

/** The job-list cursor of an engine without `listCursor` (one owner: the library's own engine). */
const DEFAULT_LIST_CURSOR: BulkListCursor = { encode: encodeListCursor, seqOf: decodeListCursor }

async function listJobPage(scope: EngineScope, query: { limit?: number; cursor?: string | null }): Promise<BulkJobPage> {
  if (query === null || typeof query !== 'object') throw invalid('The list query must be an object.')
  const limit = intParam('limit', query.limit, 20, 100)
  const codec = scope.options.listCursor ?? DEFAULT_LIST_CURSOR
  const cursor: unknown = query.cursor
  if (cursor !== undefined && cursor !== null && typeof cursor !== 'string') throw foreignCursor()
  const beforeSeq = typeof cursor === 'string' ? codec.seqOf(cursor) : null
  await sweepJobs(scope)
  const records = await scope.store.listJobs({ beforeSeq, limit: limit + 1 })
  const page = records.slice(0, limit)
  const data = page.map((r) => {
    const live = scope.core.runners.get(r.job.id)
    return live ? copyJob(live.job) : r.job
  })
  const last = page[page.length - 1]
  return { data, next_cursor: records.length > limit && last ? codec.encode(last.seq) : null }
}

async function cancelJob(scope: EngineScope, id: string): Promise<BulkJob> {
  const { record, job, runner } = await loadJob(scope, id)
  if (runner) return runner.cancel()
  if (isFinal(job)) return job
  if (job.status !== 'rechecking' && scope.options.cancelRemote && !(await scope.options.cancelRemote(job.id))) {
    // A worker runs it and was asked to stop: it writes the cancelled job (and refunds) itself.
    for (let i = 0; i < REMOTE_CANCEL_POLLS; i++) {
      await new Promise((r) => setTimeout(r, REMOTE_CANCEL_POLL_MS))
      const now = await scope.store.getJob(job.id)
      if (!now || isFinal(now.job)) return now ? now.job : job
    }
    throw new Error(`riskcheck: bulk job ${job.id} did not stop within ${(REMOTE_CANCEL_POLLS * REMOTE_CANCEL_POLL_MS) / 1000} s`)
  }
  // queued/running in the store but not run by this engine (e.g. resume disabled): stop it here
  const cancelled: BulkJob = { ...copyJob(job), status: 'cancelled', completed_at: scope.env.ctx.now().toISOString() }
  await settleJob(scope.store, scope.env.ledger, job.id, record.reserved, cancelled)
  return cancelled
}

async function retryJob(scope: EngineScope, id: string): Promise<BulkJob> {
  const { record, job } = await loadJob(scope, id)
  if (!isFinal(job)) throw invalid('Only a completed, cancelled or failed job can be retried.', 'id')
  const inputs = await scope.store.listRetryableInputs(job.id)
  if (inputs.length === 0) throw invalid('The job has no rows that failed for temporary reasons; nothing to retry.', 'id')
  const name = `Retry of ${job.name}`.slice(0, MAX_JOB_NAME)
  return createJob(scope, job.type, inputs, name, record.options)
}

async function jobResults(scope: EngineScope, id: string, query: { cursor?: string | null; limit?: number; action?: Action | null }): Promise<BulkResultsPage> {
  if (query === null || typeof query !== 'object') throw invalid('The results query must be an object.')
  const limit = intParam('limit', query.limit, 100, 1000)
  const action = query.action ?? null
  if (action !== null && !ACTIONS.includes(action)) throw invalid(`\`action\` must be one of ${ACTIONS.join(', ')}.`, 'action')
  const { job, runner } = await loadJob(scope, id)
  const from = query.cursor === undefined || query.cursor === null ? 0 : decodeResultsCursor(query.cursor, job.id, action)
  const final = isFinal(job)
  const toIndex = final ? null : runner ? runner.watermark : await remoteWatermark(scope, job)
  const rows = await scope.store.listRows(job.id, { fromIndex: from, toIndex, action, limit: limit + 1 })
  const data = rows.slice(0, limit)
  const last = data[data.length - 1]
  let next: string | null = null
  if (rows.length > limit && last) next = encodeResultsCursor(job.id, last.index + 1, action)
  else if (!final) next = encodeResultsCursor(job.id, Math.max(from, toIndex ?? 0), action)
  return { data: data.map(publicRow), next_cursor: next }
}

async function jobResultsCsv(scope: EngineScope, id: string): Promise<CsvStream> {
  const { job, runner } = await loadJob(scope, id)
  const toIndex = isFinal(job) ? null : runner ? runner.watermark : await remoteWatermark(scope, job)
  const store = scope.store
  async function* pages() {
    const PAGE = 250
    for (let from = 0; ; ) {
      await new Promise<void>((resolve) => setImmediate(resolve)) // one page per event-loop turn
      const page = await store.listRows(job.id, { fromIndex: from, toIndex, action: null, limit: PAGE })
      if (page.length > 0) yield page
      const last = page[page.length - 1]
      if (page.length < PAGE || !last) return
      from = last.index + 1
    }
  }
  // a Readable: CsvStream is the part of it the public types promise (Node's own pipe type needs @types/node)
  return createResultsCsv(job.type, pages()) as CsvStream
}

/** Runs a stored job here (a worker's part); null when it is unknown, finished, expired or of a type not available. */
async function runStoredJob(scope: EngineScope, id: string, onStart?: (job: BulkJob) => void): Promise<BulkJob | null> {
  const running = scope.core.runners.get(id)
  if (running) return running.done
  const record = await scope.store.getJob(id)
  if (record?.job.status === 'rechecking') return record.job // its rechecks complete it (finishRechecked)
  if (!record || isFinal(record.job) || Date.parse(record.job.expires_at) <= scope.nowMs() || !scope.checks[record.job.type]) return null
  onStart?.(record.job)
  return startRunner(scope, record, null).done
}

/** {@link BulkEngine.finishRechecked}: a job waiting in `rechecking` with no recheck pending is completed, once. */
async function finishRecheckedJob(scope: EngineScope, id: string): Promise<BulkJob | null> {
  const record = await scope.store.getJob(id)
  if (!record || record.job.status !== 'rechecking') return null
  if (scope.core.rechecks && (await scope.core.rechecks.pending(id)) > 0) return null
  const final: BulkJob = { ...copyJob(record.job), status: 'completed', completed_at: scope.env.ctx.now().toISOString() }
  await settleJob(scope.store, scope.env.ledger, id, record.reserved, final)
  const stored = await scope.store.getJob(id)
  if (scope.core.onCompleted && stored && stored.job.status === 'completed' && stored.job.completed_at === final.completed_at) {
    try {
      scope.core.onCompleted(copyJob(final))
    } catch {
      // a failing callback must not break the engine
    }
  }
  return stored?.job ?? final
}

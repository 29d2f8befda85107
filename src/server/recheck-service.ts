/**
 * Rechecks of email answers a mail server deferred (docs/rechecks.md): scheduled when such an answer is given (a
 * single lookup, a combined check's email, a bulk row), kept in the store's `email_rechecks` table, taken when due by
 * exactly one instance, and checked again free of charge. A definite answer (or the last attempt) updates the result
 * cache and a bulk row in place and sends `email.rechecked`. The reasoning: docs/decisions.md "Rechecks of deferred
 * email answers".
 */
import { emailCheck, isDeferredEmailOutcome } from '../checks/email/index.js'
import { UNMETERED } from '../credits.js'
import { runCheck, type LookupEnv, type LookupRun } from '../lookup.js'
import type { BulkRowRecord, BulkStore } from '../bulk/types.js'
import type { EmailData, EmailRecheckedData } from '../schema.js'
import { buildEmailRecheckedEvent } from '../webhooks/events.js'
import { recheckIdOf } from './store/common/recheck-rows.js'
import type { BulkOwner } from './store/contracts/bulk.js'
import type { RecheckStore, RecheckTarget, StoredRecheck } from './store/contracts/rechecks.js'

/** The default delays of the attempts, from the deferred answer: 5, 15 and 60 minutes. */
export const DEFAULT_RECHECK_DELAYS_MS: readonly number[] = [5 * 60_000, 15 * 60_000, 60 * 60_000]

/** `createServer({ recheck })`: the delays of the attempts, or false for no rechecks. */
export interface RecheckOptions {
  /** Delays of the attempts from the deferred answer, in ms, ascending (default 5, 15 and 60 minutes). */
  delaysMs?: readonly number[]
  /** How often due rechecks are looked for, in ms (default 10,000; 0 = never: call `runOnce`). */
  intervalMs?: number
  /** How long a taken recheck is this instance's before another may take it (default 5 minutes). */
  claimMs?: number
  /** Rechecks run at once (default 4). */
  concurrency?: number
}

/** What the service needs of the server. */
export interface RecheckServiceDeps {
  store: RecheckStore
  /** The live lookup environment (its ledger is replaced: a recheck is never charged). */
  liveEnv: LookupEnv
  /**
   * What an answer of the org is scored with now — its policy, its lists and (`labels`: a request's answer, not a
   * bulk row's) its outcome labels — as a lookup of the org would have them (./org-answer.ts).
   */
  orgEnv(owner: BulkOwner, labels: boolean): Promise<Pick<LookupEnv, 'policy' | 'signals' | 'answerLabels'>>
  /** The job store of a bulk owner (rows updated in place). */
  jobStore(owner: BulkOwner): BulkStore
  /** Completes a bulk job waiting in `rechecking` once none of its rechecks is pending. */
  finishRechecked(owner: BulkOwner, jobId: string): Promise<unknown>
  nowMs(): number
  /** Called after events were written (the server wakes the webhook pump). */
  onEvents?: () => void
  warn(fields: object, message: string): void
}

/** The running service. */
export interface RecheckService {
  readonly delaysMs: readonly number[]
  /** Schedules the recheck of a deferred answer (its first attempt `delaysMs[0]` after `answeredAt`). */
  schedule(owner: BulkOwner, target: RecheckTarget, address: string, answeredAt: number, attempts?: number): Promise<void>
  /** Cancels the pending rechecks of a request whose settlement was refused (its answer was never given). */
  cancelForRequest(owner: BulkOwner, requestId: string): Promise<void>
  /** Schedules several bulk rows of one job at once. */
  scheduleRows(owner: BulkOwner, jobId: string, rows: ReadonlyArray<{ index: number; address: string }>, answeredAt: number, secondPass: boolean): Promise<void>
  /** Takes the due rechecks and runs them; resolves with how many were attempted. */
  runOnce(): Promise<number>
  start(): void
  stop(): Promise<void>
}

/** The checked options; a TypeError for bad ones. */
export function recheckSettings(option: RecheckOptions | false | undefined): Required<RecheckOptions> | null {
  if (option === false) return null
  const o = option ?? {}
  const delays = o.delaysMs ?? DEFAULT_RECHECK_DELAYS_MS
  if (!Array.isArray(delays) || delays.length === 0 || delays.length > 10 || delays.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    throw new TypeError('riskcheck server: recheck.delaysMs must be 1 to 10 non-negative integers (ms)')
  }
  for (let i = 1; i < delays.length; i++) if (delays[i]! < delays[i - 1]!) throw new TypeError('riskcheck server: recheck.delaysMs must be ascending')
  const int = (name: string, v: number | undefined, def: number, min: number) => {
    if (v === undefined) return def
    if (!Number.isSafeInteger(v) || v < min) throw new TypeError(`riskcheck server: recheck.${name} must be an integer >= ${min}`)
    return v
  }
  return {
    delaysMs: [...delays],
    intervalMs: int('intervalMs', o.intervalMs, 10_000, 0),
    claimMs: int('claimMs', o.claimMs, 5 * 60_000, 1000),
    concurrency: int('concurrency', o.concurrency, 4, 1),
  }
}

/** Creates the service (call `start()` for its timer). */
export function createRecheckService(deps: RecheckServiceDeps, settings: Required<RecheckOptions>): RecheckService {
  const { store, nowMs } = deps
  const delays = settings.delaysMs
  const row = (owner: BulkOwner, target: RecheckTarget, address: string, answeredAt: number, attempts: number): StoredRecheck => ({
    id: recheckIdOf(target),
    orgId: owner.orgId,
    mode: owner.mode,
    target,
    address,
    answeredAt,
    dueAt: answeredAt + delays[0]!,
    attempt: 0,
    maxAttempts: attempts,
  })

  const attempt = (r: StoredRecheck) => runAttempt(deps, delays, r)

  let running: Promise<number> | null = null
  const round = async (): Promise<number> => {
    let total = 0
    for (;;) {
      const due = await store.claimDue(nowMs(), settings.concurrency, settings.claimMs)
      if (due.length === 0) return total
      await Promise.all(due.map((r) => attempt(r).catch((err: unknown) => deps.warn({ err, recheck: r.id }, 'email recheck failed'))))
      total += due.length
      deps.onEvents?.()
    }
  }
  const runOnce = () => {
    running ??= round().finally(() => {
      running = null
    })
    return running
  }

  let timer: NodeJS.Timeout | null = null
  let stopped = true
  const tick = () => {
    if (stopped) return
    timer = setTimeout(() => {
      timer = null
      runOnce()
        .catch((err: unknown) => deps.warn({ err }, 'email recheck round failed'))
        .finally(tick)
    }, settings.intervalMs)
    timer.unref?.()
  }

  return {
    delaysMs: delays,
    async schedule(owner, target, address, answeredAt, attempts = delays.length) {
      await store.schedule([row(owner, target, address, answeredAt, attempts)])
    },
    async cancelForRequest(owner, requestId) {
      await store.cancelForRequest(owner.orgId, requestId)
    },
    async scheduleRows(owner, jobId, rows, answeredAt, secondPass) {
      const n = secondPass ? 1 : delays.length
      await store.schedule(rows.map((r) => row(owner, { kind: 'bulk', jobId, rowIndex: r.index }, r.address, answeredAt, n)))
    },
    runOnce,
    start() {
      if (!stopped || settings.intervalMs <= 0) return
      stopped = false
      tick()
    },
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = null
      if (running) await running.catch(() => undefined)
    },
  }
}

/** One attempt: the address checked again; then the next attempt scheduled, or the answer delivered. */
async function runAttempt(deps: RecheckServiceDeps, delays: readonly number[], r: StoredRecheck): Promise<void> {
  const owner: BulkOwner = { orgId: r.orgId, mode: r.mode }
  // scored as the org's answers are now (policy, lists, outcome labels); bulk rows carry no labels, as in their job
  const env: LookupEnv = { ...deps.liveEnv, ledger: UNMETERED, ...(await deps.orgEnv(owner, r.target.kind === 'request')) }
  const opts = { smtp: true, bypassCache: true }
  const prepared = emailCheck.prepare(r.address, opts, env.ctx)
  // prepaid: nothing is reserved or charged; the fresh answer goes into the result cache as a lookup's would
  const run = (await runCheck(env, emailCheck, prepared.input, prepared.cacheKey, opts, { prepaid: true })) as LookupRun<EmailData>
  const attempts = r.attempt + 1
  const definite = !isDeferredEmailOutcome(run.outcome) && !run.outcome.partial
  if (!definite && attempts < r.maxAttempts) {
    const next = Math.max(deps.nowMs(), r.answeredAt + (delays[attempts] ?? delays[delays.length - 1]!))
    await deps.store.reschedule(r.id, attempts, next)
    return
  }
  if (r.target.kind === 'bulk') await replaceBulkRow(deps.jobStore(owner), r.target.jobId, r.target.rowIndex, run)
  const a = run.assessment
  const data: EmailRecheckedData = {
    request_id: r.target.kind === 'request' ? r.target.requestId : null,
    bulk_job_id: r.target.kind === 'bulk' ? r.target.jobId : null,
    row_index: r.target.kind === 'bulk' ? r.target.rowIndex : null,
    email: r.address,
    verdict: a.status,
    score: a.score,
    action: a.action,
    reason: a.reason,
    factors: [...a.factors],
    smtp_check: run.outcome.details.smtp_check,
    attempts,
    definite,
  }
  await deps.store.complete(r.id, buildEmailRecheckedEvent({ orgId: r.orgId, now: new Date(deps.nowMs()), data, testMode: r.mode === 'test' }))
  if (r.target.kind === 'bulk') await deps.finishRechecked(owner, r.target.jobId)
}

/** The bulk row of a recheck, rewritten with its new answer (its charge and cache flag as they were). */
async function replaceBulkRow(jobs: BulkStore, jobId: string, index: number, run: LookupRun<EmailData>): Promise<void> {
  if (!jobs.replaceRow) return
  const job = await jobs.getJob(jobId)
  if (!job) return // expired and deleted meanwhile
  const [old] = await jobs.listRows(jobId, { fromIndex: index, toIndex: index + 1, action: null, limit: 1 })
  if (!old || old.index !== index) return
  const a = run.assessment
  const updated: BulkRowRecord = {
    ...old,
    state: 'done',
    retryable: run.outcome.partial,
    action: a.action,
    status: a.status,
    reason: a.reason,
    risk_score: a.score,
    error: null,
    factors: a.factors,
    details: run.outcome.details as unknown as Record<string, unknown>,
  }
  await jobs.replaceRow(jobId, updated)
}

/**
 * Runs one check through the shared pipeline: prepare → (test answer | cache | reserve credits → run → bill) →
 * score → result. The facade binds it to each lookup; the combined check and the bulk engine reuse it.
 */
import { isPromise, LATE, within } from './awaitable.js'
import { performance } from 'node:perf_hooks'
import { creditsFor, MAX_CREDITS } from './billing.js'
import { CACHE_TTL_MS, type CacheEntry, type ResultCache } from './cache.js'
import type { CheckContext, CheckDefinition, CheckOutcome } from './checks/types.js'
import { UNMETERED, type CreditLedger } from './credits.js'
import { RiskcheckError } from './errors.js'
import { buildResult, newRequestId } from './result.js'
import type { CheckContextName, DetailsByType, LookupResult, LookupType, Velocity } from './schema.js'
import { evaluate, type Assessment, type EvaluateOptions } from './scoring/engine.js'
import type { FactorCode } from './scoring/factors.js'
import type { Policy } from './scoring/rules.js'
import { answerWithLists, countVelocity, VELOCITY_TYPES, type Signals } from './signals.js'

/** Everything a lookup needs besides its input. */
export interface LookupEnv {
  ctx: CheckContext
  cache: ResultCache | null
  cacheTtlMs: number
  ledger: CreditLedger
  policy: Policy
  /** Allow/block lists and velocity (both off when absent); applied when an answer is given, after the cache. */
  signals?: Signals
  /**
   * The caller's own labels (the server's outcomes, docs/outcomes.md), asked with each answer after the lists: the
   * factors (and their sentences) it returns are added before scoring. Synchronous and cheap: it runs on every answer.
   */
  answerLabels?: AnswerLabels
  /**
   * Told of every answer's outcome as the check found it (before lists and labels), with whether it came from the
   * cache: the server schedules rechecks of email answers a mail server deferred (docs/rechecks.md). Must not throw.
   */
  onOutcome?: (type: LookupType, outcome: CheckOutcome<unknown>, cacheHit: boolean) => void
}

/** Extra factors of one answer (lookup type, its details at answer time), or null for none. */
export type AnswerLabels = (type: LookupType, details: unknown) => { factors: FactorCode[]; reasons: Partial<Record<FactorCode, string>> } | null

/** The outcome with the labels' factors added (a new outcome when any apply). */
function withLabels<D>(env: LookupEnv, type: LookupType, outcome: CheckOutcome<D>): CheckOutcome<D> {
  const extra = env.answerLabels?.(type, outcome.details)
  if (!extra || extra.factors.length === 0) return outcome
  const labelled = Object.assign({}, outcome)
  labelled.factors = [...outcome.factors, ...extra.factors]
  labelled.reasons = Object.assign({}, outcome.reasons, extra.reasons)
  return labelled
}

/** Options every lookup accepts. */
export interface CommonLookupOptions {
  /** Skip the result cache and run a fresh, billed lookup. */
  bypassCache?: boolean
  /**
   * Your id of this check (a request id, an idempotency key; 1 to 200 characters): velocity counts a check sent again
   * under the same id within 24 hours once, as the service does a request retried with its Idempotency-Key.
   */
  checkId?: string
}

/** Longest {@link CommonLookupOptions.checkId}. */
export const CHECK_ID_MAX = 200

/** The check id of a lookup's or combined check's options, checked (INVALID_REQUEST for a bad one). */
export function checkIdOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || value.length === 0 || value.length > CHECK_ID_MAX)
    throw new RiskcheckError('INVALID_REQUEST', `\`checkId\` must be a string of 1 to ${CHECK_ID_MAX} characters.`)
  return value
}

/** `env` whose velocity counts under `checkId` (a check sent again under it counts once); `env` itself without one. */
// Not merged with the server's onceOf (src/server/velocity.ts): here the id is the caller's own, given to the store as is.
export function withCheckId(env: LookupEnv, checkId: string | undefined): LookupEnv {
  const counter = env.signals?.velocity
  if (checkId === undefined || !counter) return env
  const velocity = { count: (values: Parameters<typeof counter.count>[0], test: boolean, nowMs: number) => counter.count(values, test, nowMs, checkId), close: () => counter.close() }
  return { ...env, signals: { ...env.signals!, velocity } }
}

/** A run's outcome plus how it was obtained; used by the combined check and bulk to aggregate. */
export interface LookupRun<D> {
  outcome: CheckOutcome<D>
  assessment: Assessment
  creditsUsed: number
  cacheHit: boolean
}

/** Options of {@link runCheck} beyond the lookup's own. */
export interface RunCheckOptions {
  /** Scoring context (combined check). */
  context?: CheckContextName | null
  /** Credits are already reserved by the caller (bulk): do not reserve or refund. */
  prepaid?: boolean
  /**
   * Set `abandoned.value = true` when nobody will use this run any more (a combined-check part past its time limit):
   * its late answer then does not fill the cache, so unbilled work never becomes a free cache hit.
   */
  abandoned?: { value: boolean }
  /** The lookup's start (Unix ms) when the caller already read the clock: the cache is asked at that time. */
  nowMs?: number
  /**
   * Hands the cache write of a billed answer to the caller instead of writing it now (bulk jobs write it once the
   * row and its charge are saved: an answer lost in a crash must not come back as a free cache hit).
   */
  deferCacheWrite?: (write: () => Promise<void>) => void
  /**
   * Count this answer's values for velocity (`details.velocity`) before scoring it: single lookups do. Without it
   * the details carry no `velocity` field: the combined check counts once for all its parts, and bulk rows are not
   * traffic.
   */
  countVelocity?: boolean
}

/** Lookups whose answer depends on the updatable open data (src/data): their cache key names the data set. */
const DATA_DEPENDENT: ReadonlySet<string> = new Set(['ip', 'email'])

/**
 * The cache-key scope of a data-dependent lookup: the id of the data set in force (empty for the bundled data), so
 * an answer cached before `riskcheck data update` installed a new set is not served afterwards.
 */
function dataScopeOf(ctx: CheckContext, type: LookupType): string {
  if (!DATA_DEPENDENT.has(type)) return ''
  try {
    const id = ctx.sources.data.current().id
    return id === 'bundled' ? '' : `${id}:`
  } catch {
    return ''
  }
}

/**
 * Bills a completed outcome: 0 in test mode, 0 when no data source was consulted at all (offline, the lookup was
 * skipped entirely: "nothing billed for skipped parts"), else the billing table.
 */
function billedCredits(type: LookupType, outcome: CheckOutcome<unknown>, ctx: CheckContext): number {
  if (ctx.mode === 'test' || type === 'check') return 0
  if (outcome.dataSources.length === 0) return 0
  return creditsFor(type as Exclude<LookupType, 'check'>, outcome.details as DetailsByType[Exclude<LookupType, 'check'>])
}

/**
 * The result-cache key of a lookup: type, the check's key (normalized input + answer-changing lookup options), the
 * instance configuration that changes answers — offline mode and a switched-off RDAP — and, for lookups that read the
 * updatable open data, the data set in force; so an answer of one configuration or data set is never served to
 * another (e.g. through a cache shared by several instances, or after `riskcheck data update`).
 *
 * @example cacheKeyOf('ip', '8.8.8.8', ctx) // 'ip:8.8.8.8'; 'ip:offline:8.8.8.8' offline; 'ip:<set id>:8.8.8.8' from a data directory
 */
export function cacheKeyOf(type: LookupType, checkKey: string, ctx: CheckContext): string {
  const data = dataScopeOf(ctx, type)
  if (ctx.offline) return `${type}:offline:${data}${checkKey}`
  if (ctx.options.rdap?.enabled === false && (type === 'email' || type === 'domain_age')) return `${type}:nordap:${data}${checkKey}`
  return `${type}:${data}${checkKey}`
}

/**
 * The most a lookup of `def` can be billed with `opts`: the billing table's maximum, lowered by the check's
 * `maxCredits` (the email lookup with `smtp: false`, or offline, costs 0). The pipeline still reserves the table's
 * maximum before running (so a depleted balance stops every live lookup, as the service's terms say) and refunds the
 * difference; this is the cap on the bill.
 */
export function maxCreditsOf<O>(def: CheckDefinition<any, O, any>, ctx: CheckContext, opts: O): number {
  if (def.type === 'check') return 0
  const max = MAX_CREDITS[def.type]
  return def.maxCredits ? Math.min(max, def.maxCredits(ctx, opts)) : max
}

/**
 * The result cache a lookup uses (its most credits `max`), if any. Offline, none when a hit could save nothing: the
 * lookup cannot cost anything, or the instance counts no credits (the library without `credits`) — the answer comes
 * from local data in microseconds, less than storing a copy of it and copying it again for the next caller.
 */
function cacheOf(env: LookupEnv, max: number): ResultCache | null {
  return env.cache && !(env.ctx.offline && (max === 0 || env.ledger === UNMETERED)) ? env.cache : null
}


/**
 * Runs a prepared check: cache, credits, run, scoring. Returns the outcome and assessment (not yet a result).
 * Rejects with INSUFFICIENT_CREDITS when the ledger cannot cover the lookup; never for data reasons.
 */
export async function runCheck<In, Opts extends CommonLookupOptions, D>(
  env: LookupEnv,
  def: CheckDefinition<In, Opts, D>,
  input: In,
  cacheKey: string,
  opts: Opts,
  runOptions: RunCheckOptions = {},
): Promise<LookupRun<D>> {
  const { ctx } = env

  if (ctx.mode === 'test') {
    const outcome = await def.test(ctx, input, opts)
    return answer(env, def.type, outcome, runOptions, 0, false, input)
  }

  const max = maxCreditsOf(def, ctx, opts)
  // without a cache to use, no key is built at all
  const cache = cacheOf(env, max)
  const key = cache ? cacheKeyOf(def.type, cacheKey, ctx) : ''
  if (cache && !opts.bypassCache) {
    let hit: CacheEntry | undefined
    try {
      const got = cache.get(key, runOptions.nowMs ?? ctx.now().getTime())
      const answered = isPromise(got) ? await within(got, ctx.options.cacheTimeoutMs) : got
      hit = answered === LATE ? undefined : answered // a cache that does not answer in time is a miss
    } catch {
      hit = undefined // a failing cache (e.g. its server is down) is a miss, not a failed lookup
    }
    if (hit) {
      const cached = hit.outcome as CheckOutcome<D>
      const outcome = def.revive ? def.revive(ctx, cached) : cached
      return answer(env, def.type, outcome, runOptions, 0, true, input)
    }
  }

  const reserve = runOptions.prepaid || def.type === 'check' ? 0 : MAX_CREDITS[def.type]
  const reserved = reserve > 0 ? env.ledger.reserve(reserve) : true
  // the check starts while a reservation that is all but sure is on its way (CreditLedger.covers)
  const early = isPromise(reserved) && env.ledger.covers?.(reserve) ? runEarly(def, ctx, input, opts) : undefined
  if (!(isPromise(reserved) ? await reserved : reserved)) {
    throw new RiskcheckError('INSUFFICIENT_CREDITS', 'Not enough credits for this lookup.')
  }
  let outcome: CheckOutcome<D>
  try {
    const ran = early ?? def.run(ctx, input, opts) // a check may answer synchronously (offline, local data)
    outcome = isPromise(ran) ? await ran : ran
  } catch (e) {
    if (reserve > 0) await env.ledger.refund(reserve)
    throw e
  }
  const credits = Math.min(max, billedCredits(def.type, outcome as CheckOutcome<unknown>, ctx))
  if (reserve > credits) {
    const r = env.ledger.refund(reserve - credits)
    if (isPromise(r)) await r
  }
  // Offline, an answer that cost nothing is not stored: it came from local data in microseconds (less than a cache
  // round trip) and a repeat is free anyway. Billed offline answers are stored, so a repeat is a free cache hit.
  const worthCaching = credits > 0 || !ctx.offline
  if (cache && worthCaching && !outcome.partial && !runOptions.abandoned?.value) {
    const entry = { outcome: outcome as CheckOutcome<unknown>, storedAt: ctx.now().getTime() }
    const write = async () => {
      try {
        const w = cache.set(key, entry, env.cacheTtlMs)
        if (isPromise(w)) await within(w, ctx.options.cacheTimeoutMs) // past it, the answer goes out uncached (or later)
      } catch {
        // not cached this time; the answer itself is good
      }
    }
    if (runOptions.deferCacheWrite) runOptions.deferCacheWrite(write)
    else await write()
  }
  return answer(env, def.type, outcome, runOptions, credits, false, input)
}

/**
 * {@link runCheck} without a promise where none is needed: a lookup that involves no cache ({@link cacheOf}) and no
 * test mode, and whose ledger, check and signals answer synchronously, is answered in the same turn, without the two
 * promise hops of an async pipeline — a few hundred nanoseconds on offline lookups that take a few microseconds.
 * Anything else goes through {@link runCheck}.
 * May throw synchronously (the caller awaits or catches).
 */
export function runCheckNow<In, Opts extends CommonLookupOptions, D>(
  env: LookupEnv,
  def: CheckDefinition<In, Opts, D>,
  input: In,
  cacheKey: string,
  opts: Opts,
  runOptions: RunCheckOptions = {},
): LookupRun<D> | Promise<LookupRun<D>> {
  const { ctx } = env
  const max = maxCreditsOf(def, ctx, opts)
  if (ctx.mode === 'test' || cacheOf(env, max)) return runCheck(env, def, input, cacheKey, opts, runOptions)
  const reserve = runOptions.prepaid || def.type === 'check' ? 0 : MAX_CREDITS[def.type]
  const reserved = reserve > 0 ? env.ledger.reserve(reserve) : true
  if (!isPromise(reserved)) return runReserved(env, def, input, opts, runOptions, max, reserve, reserved)
  const early = env.ledger.covers?.(reserve) ? runEarly(def, ctx, input, opts) : undefined
  return reserved.then((ok) => runReserved(env, def, input, opts, runOptions, max, reserve, ok, early))
}

/**
 * The check started before its reservation answered (see `CreditLedger.covers`): a promise whose rejection is
 * handled here too, so a check that fails after its reservation was refused (its outcome never read) is no
 * unhandled rejection.
 */
function runEarly<In, Opts, D>(def: CheckDefinition<In, Opts, D>, ctx: CheckContext, input: In, opts: Opts): Promise<CheckOutcome<D>> {
  const p = (async () => def.run(ctx, input, opts))()
  p.catch(() => undefined)
  return p
}

/** {@link runCheckNow} once the reservation answered: the check, then the refund and the answer. */
function runReserved<In, Opts extends CommonLookupOptions, D>(
  env: LookupEnv,
  def: CheckDefinition<In, Opts, D>,
  input: In,
  opts: Opts,
  runOptions: RunCheckOptions,
  max: number,
  reserve: number,
  reserved: boolean,
  early?: Promise<CheckOutcome<D>>,
): LookupRun<D> | Promise<LookupRun<D>> {
  if (!reserved) throw new RiskcheckError('INSUFFICIENT_CREDITS', 'Not enough credits for this lookup.')
  let ran: CheckOutcome<D> | Promise<CheckOutcome<D>>
  try {
    ran = early ?? def.run(env.ctx, input, opts) // a check may answer synchronously (offline, local data)
  } catch (e) {
    return refundAndThrow(env, reserve, e)
  }
  if (isPromise(ran)) return ran.then((o) => settleUncached(env, def, o, runOptions, max, reserve, input), (e: unknown) => refundAndThrow(env, reserve, e))
  return settleUncached(env, def, ran, runOptions, max, reserve, input)
}

async function refundAndThrow(env: LookupEnv, reserve: number, e: unknown): Promise<never> {
  if (reserve > 0) await env.ledger.refund(reserve)
  throw e
}

/** The end of {@link runCheckNow}: the unused reservation refunded, then the answer (no cache to write). */
function settleUncached<D>(
  env: LookupEnv,
  def: CheckDefinition<any, any, D>,
  outcome: CheckOutcome<D>,
  runOptions: RunCheckOptions,
  max: number,
  reserve: number,
  input: unknown,
): LookupRun<D> | Promise<LookupRun<D>> {
  const credits = Math.min(max, billedCredits(def.type, outcome as CheckOutcome<unknown>, env.ctx))
  const r = reserve > credits ? env.ledger.refund(reserve - credits) : undefined
  // the outcome is the check's own, made for this call and stored nowhere: it is completed in place
  if (isPromise(r)) return r.then(() => answer(env, def.type, outcome, runOptions, credits, false, input, true))
  return answer(env, def.type, outcome, runOptions, credits, false, input, true)
}

/**
 * The answer of an outcome (fresh, cached or of test mode): the lists matched and, when asked, velocity counted at
 * answer time (./signals.ts), then scored under the environment's policy and the combined check's context.
 */
function answer<D>(
  env: LookupEnv,
  type: LookupType,
  found: CheckOutcome<D>,
  runOptions: RunCheckOptions,
  creditsUsed: number,
  cacheHit: boolean,
  input: unknown,
  own = false,
): LookupRun<D> | Promise<LookupRun<D>> {
  const nowMs = runOptions.nowMs ?? env.ctx.now().getTime()
  const context = runOptions.context ?? null
  env.onOutcome?.(type, found as CheckOutcome<unknown>, cacheHit)
  const listed = answerWithLists(env.signals, type, found, nowMs, runOptions.countVelocity === true, input, own)
  const counting = runOptions.countVelocity === true && env.signals?.velocity != null && VELOCITY_TYPES.has(type)
  if (!counting && !isPromise(listed)) {
    const labelled = withLabels(env, type, listed)
    return { outcome: labelled, assessment: scoreOutcome(env, labelled, context), creditsUsed, cacheHit }
  }
  return (async () => {
    const outcome = withLabels(env, type, isPromise(listed) ? await listed : listed)
    const velocity = counting ? await countVelocity(env.signals, type, outcome, env.ctx.mode === 'test', nowMs) : null
    return { outcome, assessment: scoreOutcome(env, outcome, context, velocity), creditsUsed, cacheHit }
  })()
}

/** The assessment of an outcome under the environment's policy (and the combined check's context). */
export function scoreOutcome(env: LookupEnv, outcome: CheckOutcome<unknown>, context: CheckContextName | null, velocity: Velocity | null = null): Assessment {
  const options: EvaluateOptions = { policy: env.policy, context }
  if (outcome.reasons !== undefined) options.reasons = outcome.reasons
  if (outcome.validReason !== undefined) options.validReason = outcome.validReason
  if (velocity) options.velocity = velocity
  return evaluate(outcome.factors, options)
}

/**
 * The error a lookup rejects with: a RiskcheckError as it is; anything else (a bug, a failing custom ledger) as
 * INTERNAL_ERROR with the original as `cause`, so callers only ever see the documented error type.
 */
export function asRiskcheckError(e: unknown): RiskcheckError {
  if (e instanceof RiskcheckError) return e
  return new RiskcheckError('INTERNAL_ERROR', `Internal error: ${e instanceof Error ? e.message : String(e)}`, { cause: e })
}

/** Runs one lookup end to end and builds its result. */
export async function runLookup<In, Opts extends CommonLookupOptions, D>(
  env: LookupEnv,
  def: CheckDefinition<In, Opts, D>,
  rawInput: unknown,
  opts: Opts | undefined,
): Promise<LookupResult<D>> {
  const t0 = performance.now()
  const startedAt = env.ctx.now()
  const nowMs = startedAt.getTime()
  const options = (opts ?? {}) as Opts
  if (options === null || typeof options !== 'object') {
    throw new RiskcheckError('INVALID_REQUEST', 'Lookup options must be an object.')
  }
  for (const k in options) {
    // as createRiskcheck refuses an unknown option: a misspelt one (`smtpp: false`) would otherwise do nothing
    if (k !== 'bypassCache' && k !== 'checkId' && !def.options?.includes(k)) {
      const known = ['bypassCache', 'checkId', ...(def.options ?? [])].join(', ')
      throw new RiskcheckError('INVALID_REQUEST', `Unknown option \`${k.slice(0, 60)}\` of the ${def.type} lookup (known: ${known}).`)
    }
  }
  if (options.bypassCache !== undefined && typeof options.bypassCache !== 'boolean') {
    // a truthy string such as 'false' bypassed the cache and billed a fresh lookup
    throw new RiskcheckError('INVALID_REQUEST', '`bypassCache` must be a boolean.')
  }
  if (options.checkId !== undefined) env = withCheckId(env, checkIdOf(options.checkId))
  let run: LookupRun<D>
  try {
    const prepared = def.prepare(rawInput, options, env.ctx)
    const ran = runCheckNow(env, def, prepared.input, prepared.cacheKey, options, { nowMs, countVelocity: true })
    run = isPromise(ran) ? await ran : ran
  } catch (e) {
    throw asRiskcheckError(e)
  }
  const balance = env.ctx.mode === 'test' ? null : env.ledger.balance()
  const remaining = isPromise(balance) ? await balance : balance
  return buildResult(run.outcome, run.assessment, {
    type: def.type,
    input: rawInput,
    requestId: newRequestId(),
    startedAt,
    processingMs: performance.now() - t0,
    creditsUsed: run.creditsUsed,
    creditsRemaining: remaining,
    cacheHit: run.cacheHit,
    testMode: env.ctx.mode === 'test',
  })
}

export { CACHE_TTL_MS }

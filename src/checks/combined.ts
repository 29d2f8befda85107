/**
 * The combined check: email, IP and phone in one call. The parts run concurrently, each within its own time limit;
 * their factors plus the cross-signals go through the one scoring policy, adjusted for the context (signup, lead,
 * checkout), into one verdict and one recommendation.
 */
import { performance } from 'node:perf_hooks'
import { RiskcheckError, missingField } from '../errors.js'
import { isPromise } from '../awaitable.js'
import { checkIdOf, runCheck, runCheckNow, scoreOutcome, withCheckId, type LookupEnv, type LookupRun } from '../lookup.js'
import { buildResult, newRequestId } from '../result.js'
import {
  CONTEXTS,
  type CheckContextName,
  type CheckDetails,
  type EmailData,
  type IpData,
  type LookupResult,
  type PhoneData,
} from '../schema.js'
import { evaluate, type Assessment } from '../scoring/engine.js'
import type { FactorCode } from '../scoring/factors.js'
import { velocityValuesOf, type VelocityValues } from '../velocity/counter.js'
import type { ListMatch } from '../lists/types.js'
import { sameCountryArea } from './country-area.js'
import { emailCountry } from './email-country.js'
import { INPUT_LIMITS, overInputLimit } from './input-limits.js'
import { CHECKS } from './registry.js'
import type { CheckDefinition, CheckOutcome, Prepared } from './types.js'

/** The combined check's input (the POST /v1/check body of docs/api.md, camelCased `bypassCache`). */
export interface CheckInput {
  email?: string | null
  ip?: string | null
  phone?: string | null
  /** ISO 3166 alpha-2 default country for a phone number without `+`. */
  country?: string | null
  context?: CheckContextName | null
  bypassCache?: boolean | null
  /** false skips the SMTP mailbox check of the email part. */
  smtp?: boolean | null
  /** Your id of this check: sent again under it within 24 hours, it counts once in velocity (library only). */
  checkId?: string | null
}

/** Field limits of the combined check (docs/api.md, POST /v1/check): those of the single lookups. */
export const CHECK_LIMITS = { email: INPUT_LIMITS.email, ip: INPUT_LIMITS.ip, phone: INPUT_LIMITS.phone } as const

const FIELDS = ['email', 'ip', 'phone', 'country', 'context', 'bypassCache', 'bypass_cache', 'smtp', 'checkId'] as const

function invalidRequest(message: string, field: string): RiskcheckError {
  return new RiskcheckError('INVALID_REQUEST', message, { field })
}

function validate(input: unknown): Required<Pick<CheckInput, 'context'>> & {
  email: string | null
  ip: string | null
  phone: string | null
  country: string | null
  bypassCache: boolean
  smtp: boolean | undefined
  checkId: string | undefined
} {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new RiskcheckError('INVALID_REQUEST', 'The check input must be an object with email, ip and/or phone.')
  }
  const o = input as Record<string, unknown>
  for (const k of Object.keys(o)) {
    if (!(FIELDS as readonly string[]).includes(k)) throw invalidRequest(`Unknown field \`${k}\`.`, k)
  }
  const text = (k: 'email' | 'ip' | 'phone'): string | null => {
    const v = o[k]
    if (v === undefined || v === null) return null
    if (typeof v !== 'string') throw invalidRequest(`\`${k}\` must be a string or null.`, k)
    // counted as the single lookup counts it (a phone number in code points): one limit for both routes
    if (overInputLimit(k, v) !== null) throw invalidRequest(`\`${k}\` must be at most ${CHECK_LIMITS[k]} characters.`, k)
    return v.trim() === '' ? null : v
  }
  const email = text('email')
  const ip = text('ip')
  const phone = text('phone')
  if (email === null && ip === null && phone === null) {
    throw missingField('At least one of email, ip or phone is required.', 'email')
  }
  const country = o.country ?? null
  if (country !== null && (typeof country !== 'string' || !/^[A-Za-z]{2}$/.test(country))) {
    throw invalidRequest('`country` must be exactly 2 letters (ISO 3166 alpha-2).', 'country')
  }
  const context = o.context ?? null
  if (context !== null && !CONTEXTS.includes(context as CheckContextName)) {
    throw invalidRequest(`\`context\` must be one of ${CONTEXTS.join(', ')}.`, 'context')
  }
  const bypass = o.bypassCache ?? o.bypass_cache ?? false
  if (typeof bypass !== 'boolean') throw invalidRequest('`bypassCache` must be a boolean.', 'bypassCache')
  const smtp = o.smtp ?? undefined
  if (smtp !== undefined && typeof smtp !== 'boolean') throw invalidRequest('`smtp` must be a boolean.', 'smtp')
  return {
    email,
    ip,
    phone,
    country: country === null ? null : (country as string).toUpperCase(),
    context: context as CheckContextName | null,
    bypassCache: bypass,
    smtp,
    checkId: checkIdOf(o.checkId),
  }
}

type Part<D> = LookupRun<D> & { timedOut: boolean }

/** The factor of a part that ran out of time: its live source did not answer (the email part's offline answer has its own). */
const TIMED_OUT_FACTOR: Partial<Record<string, FactorCode>> = { ip: 'ip_source_unavailable', phone: 'phone_carrier_unavailable' }

/**
 * Runs one part within `ms`. On time-out the part's answer is its offline answer (local data only), marked partial
 * and not billed; the slow lookup is left to finish in the background, without filling the cache.
 */
async function runPart<In, O extends object, D>(
  env: LookupEnv,
  def: CheckDefinition<In, O, D>,
  prepared: Prepared<In>,
  opts: O,
  context: CheckContextName | null,
  ms: number,
): Promise<Part<D>> {
  const abandoned = { value: false }
  const now = runCheckNow(env, def, prepared.input, prepared.cacheKey, opts, { context, prepaid: true, abandoned })
  // answered in this turn (offline, local data): nothing to time out
  if (!isPromise(now)) return Object.assign(now, { timedOut: false })
  const live = now
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms)
    timer.unref?.()
  })
  try {
    const won = await Promise.race([live, timeout])
    if (won !== 'timeout') return { ...won, timedOut: false }
  } finally {
    clearTimeout(timer)
  }
  abandoned.value = true // its late answer is unbilled, so it must not become a free cache hit either
  live.catch(() => undefined) // the slow part may still fail later; nobody waits for it
  const offlineEnv: LookupEnv = { ...env, cache: null, ctx: { ...env.ctx, offline: true } }
  const fallback = await runCheck(offlineEnv, def, prepared.input, prepared.cacheKey, opts, { context, prepaid: true })
  // the offline answer takes a source it did not ask for one not asked: say that it did not answer in time, as the
  // single lookup says when it fails (its verdict unknown, its confidence lower), not "valid" at full confidence
  const missed = TIMED_OUT_FACTOR[def.type]
  if (missed === undefined || fallback.outcome.factors.includes(missed)) {
    return { outcome: { ...fallback.outcome, partial: true }, assessment: fallback.assessment, creditsUsed: 0, cacheHit: false, timedOut: true }
  }
  const outcome: CheckOutcome<D> = { ...fallback.outcome, factors: [...fallback.outcome.factors, missed], partial: true }
  return { outcome, assessment: scoreOutcome(env, outcome as CheckOutcome<unknown>, context), creditsUsed: 0, cacheHit: false, timedOut: true }
}

/** A part as reported: its details (with its list matches; velocity is counted once, for the whole check), verdict and risk. */
function partView<D extends object>(part: Part<D> | null) {
  if (!part) return null
  const a = part.assessment
  return Object.assign({}, part.outcome.details as D & { lists: ListMatch[] }, {
    verdict: { status: a.status, reason: a.reason },
    risk: { score: a.score, level: a.level, factors: a.factors, confidence: a.confidence },
  })
}

/** The list matches of every part, in part order (most answers match none: no array is made for them). */
function listsOf(parts: ReadonlyArray<Part<unknown>>): ListMatch[] {
  let out: ListMatch[] | null = null
  for (const p of parts) {
    const lists = (p.outcome.details as { lists?: ListMatch[] }).lists
    if (lists && lists.length > 0) (out ??= []).push(...lists)
  }
  return out ?? []
}

/** Country signals and their factors. */
export function crossSignals(
  email: EmailData | null,
  ip: IpData | null,
  phone: PhoneData | null,
): { signals: CheckDetails['signals']; factors: FactorCode[] } {
  const ipCountry = ip?.location.country_code?.toUpperCase() ?? null
  const mailCountry = email && email.syntax_valid ? emailCountry(email.domain) : null
  const phoneCountry = phone && phone.valid && phone.country.code ? phone.country.code.toUpperCase() : null
  const email_ip_country_match = mailCountry && ipCountry ? sameCountryArea(mailCountry, ipCountry) : null
  const phone_ip_country_match = phoneCountry && ipCountry ? sameCountryArea(phoneCountry, ipCountry) : null
  const disposable_and_vpn = Boolean(email?.is_disposable && ip && (ip.flags.is_vpn || ip.flags.is_proxy || ip.flags.is_tor))
  const factors: FactorCode[] = []
  if (email_ip_country_match === false) factors.push('email_ip_country_mismatch')
  if (phone_ip_country_match === false) factors.push('phone_ip_country_mismatch')
  if (disposable_and_vpn) factors.push('disposable_and_vpn')
  return { signals: { email_ip_country_match, phone_ip_country_match, disposable_and_vpn }, factors }
}

/**
 * Velocity of the combined check: the values of every part (with its prepared input) counted once, together (one
 * store round trip). `failed` when the store did not answer (the check is then partial, `velocity: null`).
 */
function countCheckVelocity(
  env: LookupEnv,
  email: Part<EmailData> | null,
  ip: Part<IpData> | null,
  ipInput: unknown,
  phone: Part<PhoneData> | null,
): CheckVelocity | Promise<CheckVelocity> {
  const counter = env.signals?.velocity
  if (!counter) return { counts: null, failed: false }
  const values: VelocityValues = {}
  if (email) velocityValuesOf('email', email.outcome.details, values)
  if (ip) velocityValuesOf('ip', ip.outcome.details, values, ipInput)
  if (phone) velocityValuesOf('phone', phone.outcome.details, values)
  const counts = counter.count(values, env.ctx.mode === 'test', env.ctx.now().getTime())
  // the memory store answers at once: no promise (nor a turn of the event loop) for it
  if (counts === null || typeof (counts as Promise<unknown>).then !== 'function') return { counts: counts as CheckDetails['velocity'], failed: counts === null }
  return (counts as Promise<CheckDetails['velocity']>).then((c) => ({ counts: c, failed: c === null }))
}

interface CheckVelocity {
  counts: CheckDetails['velocity']
  failed: boolean
}

/**
 * Runs the combined check and builds its result. Rejects with MISSING_FIELD when none of email, ip, phone is given,
 * INVALID_REQUEST for a field over its limit, a bad country or context, INVALID_INPUT when the IP is no IP address,
 * INSUFFICIENT_CREDITS when the ledger cannot cover every part.
 */
export async function runCombinedCheck(env: LookupEnv, rawInput: CheckInput): Promise<LookupResult<CheckDetails>> {
  const t0 = performance.now()
  const startedAt = env.ctx.now()
  const input = validate(rawInput)
  env = withCheckId(env, input.checkId)
  const live = env.ctx.mode === 'live'
  const ms = env.ctx.options.partTimeoutMs
  const common = { bypassCache: input.bypassCache }
  const phoneOpts = { ...common, ...(input.country ? { country: input.country } : {}) }
  const emailOpts = { ...common, ...(input.smtp !== undefined ? { smtp: input.smtp } : {}) }

  // Prepare every part before reserving anything: an unusable IP is an error of the whole request, unbilled.
  const emailDef = CHECKS.email as CheckDefinition<any, any, EmailData>
  const ipDef = CHECKS.ip as CheckDefinition<any, any, IpData>
  const phoneDef = CHECKS.phone as CheckDefinition<any, any, PhoneData>
  const emailIn = input.email === null ? null : emailDef.prepare(input.email, emailOpts, env.ctx)
  const ipIn = input.ip === null ? null : ipDef.prepare(input.ip, common, env.ctx)
  const phoneIn = input.phone === null ? null : phoneDef.prepare(input.phone, phoneOpts, env.ctx)
  // One credit per part is reserved; each part is then billed by the table (an email part with `smtp: false` costs 0).
  const parts = [emailIn, ipIn, phoneIn].filter((x) => x !== null).length
  const reserve = live ? parts : 0
  if (reserve > 0 && !(await env.ledger.reserve(reserve))) {
    throw new RiskcheckError('INSUFFICIENT_CREDITS', 'Not enough credits for this check.')
  }
  let email: Part<EmailData> | null = null
  let ip: Part<IpData> | null = null
  let phone: Part<PhoneData> | null = null
  try {
    ;[email, ip, phone] = await Promise.all([
      emailIn === null ? null : runPart(env, emailDef, emailIn, emailOpts, input.context, ms),
      ipIn === null ? null : runPart(env, ipDef, ipIn, common, input.context, ms),
      phoneIn === null ? null : runPart(env, phoneDef, phoneIn, phoneOpts, input.context, ms),
    ])
  } catch (e) {
    if (reserve > 0) await env.ledger.refund(reserve)
    throw e
  }
  const used = [email, ip, phone].reduce((n, p) => n + (p?.creditsUsed ?? 0), 0)
  if (reserve > used) await env.ledger.refund(reserve - used)

  const { signals, factors: signalFactors } = crossSignals(
    email?.outcome.details ?? null,
    ip?.outcome.details ?? null,
    phone?.outcome.details ?? null,
  )
  const all = [email, ip, phone].filter((p): p is Part<any> => p !== null)
  // with the IP part's prepared input: its parsed address is not parsed again
  const counted = countCheckVelocity(env, email, ip, ipIn?.input, phone)
  const velocity = 'then' in counted ? await counted : counted
  const factors = [...all.flatMap((p) => p.outcome.factors), ...signalFactors]
  const assessment: Assessment = evaluate(factors, {
    policy: env.policy,
    context: input.context,
    // each part's sentences by factor: the overall reason is the one of the factor that decides across all parts
    reasons: Object.assign({}, ...all.map((p) => p.outcome.reasons ?? {})) as Partial<Record<FactorCode, string>>,
    validReason: 'No risk factors found in the email, IP or phone.',
    velocity: velocity.counts,
  })
  const details: CheckDetails = {
    email: partView(email),
    ip: partView(ip),
    phone: partView(phone),
    signals,
    lists: listsOf(all),
    velocity: velocity.counts,
    context: input.context, // last: a backtest reading results files finds it at the end of the details
  }
  const outcome: CheckOutcome<CheckDetails> = {
    details,
    factors: assessment.factors,
    partial: velocity.failed || all.some((p) => p.outcome.partial),
    dataSources: all.flatMap((p) => p.outcome.dataSources),
  }
  return buildResult(outcome, assessment, {
    type: 'check',
    input: rawInput,
    requestId: newRequestId(),
    startedAt,
    processingMs: performance.now() - t0,
    creditsUsed: used,
    creditsRemaining: live ? await env.ledger.balance() : null,
    cacheHit: all.length > 0 && all.every((p) => p.cacheHit),
    testMode: !live,
  })
}

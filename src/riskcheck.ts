/**
 * The facade: `createRiskcheck(options)` validates options, builds the context (clock, cache, sources, credits,
 * mode, scoring policy) and returns the lookups. Data flows one way: facade → check → sources.
 */
import { isPromise, within } from './awaitable.js'
import { createMemoryCache, type ResultCache } from './cache.js'
import { readSetting } from './settings.js'
import { CHECKS, type SingleLookupType } from './checks/registry.js'
import type { CheckContext, CheckDefinition } from './checks/types.js'
import { createMemoryLedger, UNMETERED, type CreditLedger } from './credits.js'
import { RiskcheckError } from './errors.js'
import { asRiskcheckError, runLookup, type LookupEnv } from './lookup.js'
import { resolveOptions, type RiskcheckOptions } from './options.js'
import type { DetailsByType, LookupResult } from './schema.js'
import { createPolicy } from './scoring/engine.js'
import type { Policy } from './scoring/rules.js'
import { createSources } from './sources/index.js'
import { runCombinedCheck, type CheckInput } from './checks/combined.js'
import { createBulkEngine, type BulkEngine } from './bulk/index.js'
import type { DataRefresh } from './data/provider.js'
import type { DataStatus } from './data/status.js'
import { createListsHolder } from './lists/holder.js'
import type { ListsOption, ListSummary } from './lists/types.js'
import type { Signals } from './signals.js'
import { createOutcomesHolder, type OutcomesOption, type OutcomesSummary } from './outcomes/holder.js'
import { createVelocityCounter } from './velocity/counter.js'

type Defs = typeof CHECKS
/** Options of the lookup `K` (e.g. `{ smtp?, bypassCache? }` for email). */
export type LookupOptionsOf<K extends SingleLookupType> = Defs[K] extends CheckDefinition<any, infer O, any> ? O : never

/** A riskcheck instance. Every lookup resolves to the documented result object (docs/api.md "Schemas"). */
export interface Riskcheck {
  /** Email address: syntax, MX, SMTP mailbox, disposable/role/free/provider, typo suggestion. */
  email(email: string, options?: LookupOptionsOf<'email'>): Promise<LookupResult<DetailsByType['email']>>
  /** Phone number: numbering plan, line type, carrier, region, time zone (live carrier for US/CA when configured). */
  phone(phone: string, options?: LookupOptionsOf<'phone'>): Promise<LookupResult<DetailsByType['phone']>>
  /** Phone line type from the numbering plan only (never live). */
  phoneType(phone: string, options?: LookupOptionsOf<'phone_type'>): Promise<LookupResult<DetailsByType['phone_type']>>
  /** IP address: location, network, VPN/proxy/Tor/datacenter/cloud/bogon flags, blocklists, reverse DNS. */
  ip(ip: string, options?: LookupOptionsOf<'ip'>): Promise<LookupResult<DetailsByType['ip']>>
  /** Domain registration age from RDAP (input: a domain, URL or email address). */
  domainAge(input: string, options?: LookupOptionsOf<'domain_age'>): Promise<LookupResult<DetailsByType['domain_age']>>
  /** Email authentication (MX, SPF, DMARC, DKIM, BIMI) and a grade (input: a domain, URL or email address). */
  emailAuth(input: string, options?: LookupOptionsOf<'email_auth'>): Promise<LookupResult<DetailsByType['email_auth']>>
  /** Email, IP and phone together, with cross-signals and one recommendation. */
  check(input: CheckInput): Promise<LookupResult<DetailsByType['check']>>
  /** Any single lookup by type (used by the CLI and bulk). */
  lookup<K extends SingleLookupType>(type: K, input: unknown, options?: LookupOptionsOf<K>): Promise<LookupResult<DetailsByType[K]>>
  /** Bulk jobs: up to 100,000 inputs of one type, folded, billed per unique input, paged and exported. */
  readonly bulk: BulkEngine
  /** The scoring policy in force. */
  readonly policy: Policy
  /** The lookup environment (context, cache, credits, policy) — for the bulk engine and the server. */
  readonly env: LookupEnv
  /**
   * Freshness of the open data in use (docs/data.md): the data set, and per source its
   * version, date, age and whether it is older than its documented maximum age.
   */
  dataStatus(): DataStatus
  /**
   * Checks the data directory now (it is also checked every `dataCheckIntervalMs`) and switches to a newly installed
   * data set, loaded completely first; lookups in flight finish on the set they started with.
   */
  reloadData(): Promise<DataRefresh>
  /**
   * Loads the allow/block lists again — the loader given as `lists` is called again, or `next` replaces them — and
   * switches to them once all are compiled (lookups in flight finish on the lists they started with). Rejects with a
   * ListsError (a TypeError naming each unusable value) or the loader's error, and then keeps the lists in force.
   */
  reloadLists(next?: ListsOption): Promise<ListSummary[]>
  /** The allow/block lists in force: id, name, kind, item type and number of items of each. */
  listsSummary(): ListSummary[]
  /**
   * Loads the outcomes again — the loader given as `outcomes` is called again, or `next` replaces them — and switches
   * to them once folded (docs/outcomes.md "In the library"). Rejects with an OutcomesError (a TypeError naming each
   * unusable entry) or the loader's error, and then keeps the outcomes in force.
   */
  reloadOutcomes(next?: OutcomesOption): Promise<OutcomesSummary>
  /** The outcomes in force: entries, ignored ones (by request id), bounced addresses and fraud inputs; null: none. */
  outcomesSummary(): OutcomesSummary | null
  /** Releases sockets, caches and timers. The instance must not be used afterwards. */
  close(): Promise<void>
}

/**
 * Creates a riskcheck instance. Throws a TypeError naming the option when an option is bad (including a user-given
 * MMDB file that is missing or corrupt); lookups never throw for configuration reasons later.
 *
 * @example
 * const rc = createRiskcheck({ dns: { servers: ['1.1.1.1'] }, smtp: { heloName: 'mx.example.org' } })
 * const r = await rc.email('jane@gmial.com')
 * r.details.did_you_mean // 'jane@gmail.com'
 * await rc.close()
 */
export function createRiskcheck(options: RiskcheckOptions = {}): Riskcheck {
  const resolved = resolveOptions(options)
  const policy = createPolicy(options.scoring ?? {})
  const cache: ResultCache | null =
    options.cache === false
      ? null
      : options.cache && typeof (options.cache as ResultCache).get === 'function'
        ? (options.cache as ResultCache)
        : createMemoryCache({ maxEntries: readSetting<number>('cache.maxEntries', (options.cache as { maxEntries?: number } | undefined)?.maxEntries) })
  const ttlSeconds = (options.cache as { ttlSeconds?: number } | undefined)?.ttlSeconds
  const ledger: CreditLedger =
    typeof options.credits === 'number' ? createMemoryLedger(options.credits) : (options.credits ?? UNMETERED)
  const signals = createSignals(options)
  const sources = createSources(resolved)
  try {
    sources.validate()
  } catch (e) {
    throw new TypeError(`riskcheck: ${(e as Error).message}`, { cause: e })
  }
  const ctx: CheckContext = {
    now: resolved.now,
    mode: resolved.mode,
    offline: resolved.offline,
    sources,
    options: resolved,
  }
  const env: LookupEnv = {
    ctx,
    cache,
    cacheTtlMs: readSetting<number>('cache.ttlSeconds', ttlSeconds) * 1000,
    ledger,
    policy,
    signals,
    ...(signals.outcomes ? { answerLabels: signals.outcomes.hook } : {}),
  }
  let bulk: BulkEngine
  try {
    bulk = createBulkEngine(env, options.bulk)
  } catch (e) {
    void sources.close()
    throw e instanceof TypeError ? e : new TypeError(`riskcheck: ${(e as Error).message}`, { cause: e })
  }
  let closed = false
  // a call on a closed instance rejects as the service does while it drains (MAINTENANCE): a RiskcheckError, as every rejection
  const closedError = () => new RiskcheckError('MAINTENANCE', 'riskcheck: this instance is closed.')
  const lookup = <K extends SingleLookupType>(type: K, input: unknown, opts?: LookupOptionsOf<K>) => {
    if (closed) return Promise.reject(closedError())
    // an unknown type (a CLI spelling such as 'domain-age', or 'check') is the caller's error, not an internal one
    if (!Object.hasOwn(CHECKS, type))
      return Promise.reject(new RiskcheckError('INVALID_REQUEST', `Unknown lookup type ${JSON.stringify(String(type)).slice(0, 60)}: one of ${Object.keys(CHECKS).join(', ')}.`))
    const def = CHECKS[type] as unknown as CheckDefinition<unknown, object, DetailsByType[K]>
    // one data set for the whole lookup, even when a newer one is installed meanwhile (the bundled data never
    // changes: nothing to pin, and no closure per lookup)
    if (sources.data.dataDir === null) return runLookup(env, def, input, opts as object | undefined)
    return sources.data.run(() => runLookup(env, def, input, opts as object | undefined))
  }
  return {
    email: (email, o) => lookup('email', email, o),
    phone: (phone, o) => lookup('phone', phone, o),
    phoneType: (phone, o) => lookup('phone_type', phone, o),
    ip: (ip, o) => lookup('ip', ip, o),
    domainAge: (input, o) => lookup('domain_age', input, o),
    emailAuth: (input, o) => lookup('email_auth', input, o),
    check: (input) =>
      closed
        ? Promise.reject(closedError())
        : sources.data.run(() => runCombinedCheck(env, input)).catch((e: unknown) => Promise.reject(asRiskcheckError(e))),
    lookup,
    bulk,
    policy,
    env,
    dataStatus: () => sources.data.status(resolved.now()),
    reloadData: () => sources.data.refresh(),
    reloadLists(next) {
      if (!signals.lists) signals.lists = createListsHolder([])
      return signals.lists.reload(next)
    },
    listsSummary: () => signals.lists?.summary() ?? [],
    reloadOutcomes(next) {
      if (!signals.outcomes) {
        signals.outcomes = createOutcomesHolder([])
        env.answerLabels = signals.outcomes.hook
      }
      return signals.outcomes.reload(next)
    },
    outcomesSummary: () => signals.outcomes?.summary() ?? null,
    async close() {
      if (closed) return
      closed = true
      await bulk.close()
      await sources.close()
      try {
        // a cache of yours that never finishes closing does not hold close() (cacheTimeoutMs, as for get and set)
        const closing = cache?.close?.()
        if (isPromise(closing)) await within(closing, resolved.cacheTimeoutMs)
      } finally {
        await signals.velocity?.close()
      }
    },
  }
}

/** The lists, outcomes and velocity counter of the options (TypeErrors naming a bad option, list value or outcome). */
function createSignals(options: RiskcheckOptions): Signals {
  const velocity = options.velocity
  if (velocity !== undefined && typeof velocity !== 'boolean' && (velocity === null || typeof velocity !== 'object'))
    throw new TypeError('riskcheck: option `velocity` must be true, false or an object (secret, store, timeoutMs)')
  return {
    lists: options.lists === undefined ? null : createListsHolder(options.lists),
    outcomes: options.outcomes === undefined ? null : createOutcomesHolder(options.outcomes),
    velocity: velocity === undefined || velocity === false ? null : createVelocityCounter(velocity === true ? {} : velocity),
  }
}

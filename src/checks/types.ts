/**
 * The check contract. Every lookup is one module exporting a {@link CheckDefinition}; the facade (../riskcheck.ts)
 * runs it, caches it, bills it, scores it and builds the result. Adding a lookup = one file here plus its sources,
 * and one line in ./registry.ts.
 */
import type { LookupType } from '../schema.js'
import type { FactorCode } from '../scoring/factors.js'
import type { DnsSource } from '../sources/dns-types.js'
import type { createSmtpSource } from '../sources/smtp/index.js'
import type { createRdapSource } from '../sources/rdap.js'
import type { createIpSource } from '../sources/ip/index.js'
import type { createPhoneSource } from '../sources/phone/index.js'
import type { ResolvedOptions } from '../options.js'
import type { DataProvider } from '../data/provider.js'

/** The I/O a check may use. Built lazily by the facade: a source is created the first time a check touches it. */
export interface Sources {
  readonly dns: DnsSource
  readonly smtp: ReturnType<typeof createSmtpSource>
  readonly rdap: ReturnType<typeof createRdapSource>
  readonly ip: ReturnType<typeof createIpSource>
  readonly phone: ReturnType<typeof createPhoneSource>
  /** The updatable open data in force (bundled, or a data directory's current set); see src/data/provider.ts. */
  readonly data: DataProvider
}

/** What a check gets from the facade. The one place that reads the clock is `now()`. */
export interface CheckContext {
  now(): Date
  mode: 'live' | 'test'
  /** No network at all: network-only fields are null/unavailable; not asked is not failed, so not partial. */
  offline: boolean
  sources: Sources
  options: ResolvedOptions
}

/** What a check reports: facts (details + factor codes), not scores. */
export interface CheckOutcome<D> {
  /** Exactly the documented details shape (docs/api.md "Schemas") of the lookup. */
  details: D
  /** The facts found, as codes of the vocabulary (../scoring/factors.ts). */
  factors: FactorCode[]
  /**
   * Sentences more specific than a factor's description, by factor (`email_domain_not_found` → "The domain acme.con
   * does not exist."). The verdict reason is the sentence of the factor that decided the verdict (strongest effect,
   * then highest weight), or that factor's description — never the sentence of a weaker factor.
   */
  reasons?: Partial<Record<FactorCode, string>>
  /** The sentence when no risk factor fired (e.g. "The address is deliverable."). */
  validReason?: string
  /**
   * True when a source this configuration asks timed out or failed, so some fields are null/unknown. A source the
   * configuration does not ask (offline, `rdap.enabled: false`, `smtp: false`) never makes an outcome partial.
   * Partial outcomes are not cached.
   */
  partial: boolean
  /** Names of the data sources actually consulted (e.g. 'syntax', 'dns', 'smtp', 'rdap', 'dbip-city-lite'). */
  dataSources: string[]
  /**
   * Private facts kept with a cached answer for `revive` (e.g. the domain's creation date behind an age in days).
   * Never part of the result.
   */
  memo?: Record<string, string | number | boolean | null>
}

/** A prepared input: the value the check runs on and its cache key (normalized input + answer-changing options). */
export interface Prepared<In> {
  input: In
  cacheKey: string
}

/**
 * A flag a lookup adds to the CLI; `option` is the key in the lookup's options object, set to `value` when given
 * (e.g. `--no-smtp` sets `smtp: false`), else to the flag's own value.
 */
export interface CliFlag {
  name: string
  type: 'string' | 'boolean'
  option: string
  value?: string | boolean
  description: string
}

/** A documented test-mode input and what it produces. */
export interface TestInput {
  input: string
  note: string
}

/**
 * One lookup.
 *
 * - `prepare` validates and normalizes the input. It throws a RiskcheckError (INVALID_INPUT) only when the input
 *   cannot be looked up at all; a malformed but judgeable input (a bad email address) is prepared normally and
 *   judged `invalid` by `run`.
 * - `run` does the live (or offline) lookup. It never throws for data reasons: every source failure becomes a
 *   partial outcome.
 * - `test` answers in test mode: deterministic, no network, no credits.
 */
export interface CheckDefinition<In = unknown, Opts = unknown, D = unknown> {
  type: LookupType
  /** The lookup's own option names, beyond every lookup's (`bypassCache`, `checkId`); others are refused. */
  options?: readonly string[]
  prepare(input: unknown, opts: Opts, ctx: CheckContext): Prepared<In>
  run(ctx: CheckContext, input: In, opts: Opts): CheckOutcome<D> | Promise<CheckOutcome<D>>
  test(ctx: CheckContext, input: In, opts: Opts): CheckOutcome<D> | Promise<CheckOutcome<D>>
  /**
   * Optional: brings a cached outcome up to date when it is served from the cache (e.g. recomputes ages from stored
   * dates), so a 7-day cache never reports a stale age.
   */
  revive?(ctx: CheckContext, outcome: CheckOutcome<D>): CheckOutcome<D>
  /**
   * Optional: the key bulk jobs fold repeated inputs by, from the cache key (default: the cache key itself). The email
   * lookup lower-cases the whole address: `Jane@Acme.IO`, `jane@acme.io` and `JANE@acme.io` are one row and one charge.
   */
  foldKey?(cacheKey: string): string
  /**
   * Optional: the most this lookup can be billed with these options, when less than the billing table's maximum (the
   * table's maximum is still reserved before it runs, and the difference refunded). The email lookup with
   * `smtp: false`, or offline, returns 0: only free checks run.
   */
  maxCredits?(ctx: CheckContext, opts: Opts): number
  /** The magic inputs of test mode (documented in docs/test-mode.md). */
  testInputs: TestInput[]
  cli: { command: string; summary: string; flags?: CliFlag[] }
}

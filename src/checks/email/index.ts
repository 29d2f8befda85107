/**
 * The email lookup (`rc.email(address, { smtp })`, `POST /v1/email`, `riskcheck email <address>`).
 *
 * Steps: syntax (./syntax.ts) → lists, provider and typo suggestion (./lists.ts, ./provider.ts, ./typo.ts; no I/O)
 * → DNS through `ctx.sources.dns` (MX with RFC 7505 null MX and the A/AAAA implicit-MX fallback, SPF and DMARC TXT)
 * → the SMTP mailbox check through `ctx.sources.smtp` → the domain age through the domain-age lookup when RDAP is
 * configured. Every network failure is a partial, `unknown` answer — never `invalid`; so is an NXDOMAIN from a resolver
 * that also denies the domain's top-level domain (../../sources/dns-trust.ts).
 */
import { domainToUnicode } from 'node:url'
import { getDomain } from 'tldts'
import { invalidInput, missingField } from '../../errors.js'
import type { EmailData, SmtpCheck } from '../../schema.js'
import type { FactorCode } from '../../scoring/factors.js'
import { isDnsFailure, type DnsAnswer } from '../../sources/dns-types.js'
import { trustNxdomain } from '../../sources/dns-trust.js'
import type { SmtpVerifyResult } from '../../sources/smtp/index.js'
import type { CheckContext, CheckDefinition, CheckOutcome } from '../types.js'
import { BRAND_NEW_DAYS, computeDomainAges, lookupDomainAge, NEWLY_REGISTERED_DAYS, RECENTLY_REGISTERED_DAYS } from '../domain-age.js'
import { describeEmailSyntaxError, parseEmailAddress, SPECIAL_USE_DOMAINS, type ParsedEmail } from './syntax.js'
import { isDisposableDomain, isFreeProviderDomain, isRoleLocalPart, type EmailLists } from './lists.js'
import { detectProvider } from './provider.js'
import { suggestDomain, suggestEmail } from './typo.js'
import type { CommonLookupOptions } from '../../lookup.js'

/** Options of the email lookup. */
export interface EmailOptions extends CommonLookupOptions {
  /** `false` skips the SMTP mailbox check (`smtp_check: 'skipped'`): only the free checks run. Default: on. */
  smtp?: boolean | null
}

/** The prepared input: the syntax verdict of the trimmed address. */
export interface EmailInput {
  parsed: ParsedEmail
}

const SPF_RE = /^v=spf1(?:\s|$)/i
const DMARC_RE = /^v=dmarc1\s*(?:;|$)/i

// ─── the check ────────────────────────────────────────────────────────────────────────────────────────────────────

/**
 * The email lookup's check definition (see the module comment). `prepare` never throws for a bad address — a
 * malformed one (even a non-string) is judged `invalid` — only for a missing input (MISSING_FIELD) or options it
 * cannot use (INVALID_INPUT).
 *
 * @example
 * const outcome = await emailCheck.run(ctx, emailCheck.prepare('jane@gmial.com', {}, ctx).input, {})
 * outcome.details.did_you_mean // 'jane@gmail.com'
 */
export const emailCheck: CheckDefinition<EmailInput, EmailOptions, EmailData> = {
  type: 'email',
  options: ['smtp'],

  prepare(input: unknown, opts: EmailOptions, ctx: CheckContext) {
    if (opts.smtp !== undefined && opts.smtp !== null && typeof opts.smtp !== 'boolean') {
      throw invalidInput('The `smtp` option must be a boolean.', 'smtp')
    }
    if (input === undefined || input === null) throw missingField('The email address is required.', 'email')
    let parsed = parseEmailAddress(input)
    // Test mode: the documented magic addresses live at example.com, a special-use domain live mode rejects.
    if (ctx.mode === 'test' && !parsed.ok && parsed.reason === 'special_use_domain' && SPECIAL_USE_DOMAINS.has(parsed.domain)) {
      parsed = parseEmailAddress(input, { allowSpecialUseDomains: true })
    }
    const smtp = smtpWanted(ctx, opts)
    return { input: { parsed }, cacheKey: `${parsed.ok ? parsed.normalized : `!${parsed.normalized}`}|smtp=${smtp ? 1 : 0}` }
  },

  run(ctx, input, opts) {
    return checkEmail(ctx, input.parsed, smtpWanted(ctx, opts))
  },

  test(ctx, input, opts) {
    return testEmail(ctx, input.parsed, smtpWanted(ctx, opts))
  },

  revive: reviveEmail,

  // Bulk folding ignores the case of the whole address: mailbox names are case-insensitive in practice (RFC 5321
  // allows otherwise, but no mail system a sign-up form meets makes `Jane@` and `jane@` two people).
  foldKey: (cacheKey) => cacheKey.toLowerCase(),

  // `smtp: false` (or `smtp.enabled: false`) skips the mailbox check, and offline it cannot run: only the free checks
  // run, so it costs nothing.
  maxCredits: (ctx, opts) => (!ctx.offline && smtpWanted(ctx, opts) ? 1 : 0),

  testInputs: [
    { input: 'deliverable@example.com', note: 'mailbox exists, no risk factor → valid, approve' },
    { input: 'undeliverable@example.com', note: 'the server says "550 user unknown": email_undeliverable → invalid, block' },
    { input: 'catchall@example.com', note: 'the domain accepts any address: email_catch_all → risky, approve (score 15, medium confidence)' },
    { input: 'role@example.com', note: 'a role account (like info@): email_role_account → risky, approve (score 15)' },
    { input: 'disposable@example.com', note: 'a disposable-mail domain: email_disposable → risky, review (score 70)' },
    { input: 'disposable-catchall@example.com', note: 'disposable and catch-all: risky, block (score 85)' },
    { input: 'typo@example.com', note: 'looks like a typo (did_you_mean typo@gmail.com): email_typo_suspected → risky, verify (score 40)' },
    { input: 'newdomain@example.com', note: 'the domain was registered 3 days ago: domain_newly_registered + domain_brand_new → risky, review (score 70)' },
    { input: 'unknown@example.com', note: 'the server answers "450 greylisted": email_smtp_unknown → unknown, approve (medium confidence)' },
    { input: 'unavailable@example.com', note: 'no mail server reachable on port 25: email_smtp_unavailable, partial → unknown, approve (free of charge)' },
    { input: 'dnsfail@example.com', note: 'DNS times out: email_dns_unavailable, partial → unknown, approve (free of charge)' },
    { input: 'nomx@example.com', note: 'the domain has neither MX nor A/AAAA records: email_no_mx → invalid, block' },
    { input: 'nullmx@example.com', note: 'the domain publishes a null MX (RFC 7505): email_null_mx → invalid, block' },
    { input: 'nodomain@example.com', note: 'the domain does not exist (NXDOMAIN): email_domain_not_found → invalid, block' },
    { input: 'not-an-email', note: 'bad syntax: email_invalid_syntax → invalid, block (no network in live mode either)' },
    { input: 'jane@gmial.com', note: 'any other address: lists, provider and typo run for real, DNS/SMTP answer "deliverable" (here: did_you_mean jane@gmail.com → risky, verify)' },
    { input: 'deliverable@example.com', note: 'with `{ smtp: false }` (CLI `--no-smtp`): the SMTP check is skipped, smtp_check skipped → valid, approve' },
  ],

  cli: {
    command: 'email',
    summary: 'Email address: syntax, MX, SMTP mailbox check, catch-all, disposable/role/free, provider, typo suggestion',
    flags: [{ name: 'no-smtp', type: 'boolean', option: 'smtp', value: false, description: 'skip the SMTP mailbox check (only the free checks run)' }],
  },
}

/** Whether the SMTP mailbox check is wanted for this lookup (the lookup option wins over `smtp.enabled`). */
function smtpWanted(ctx: CheckContext, opts: EmailOptions): boolean {
  if (opts.smtp === false) return false
  if (opts.smtp === true) return true
  return ctx.options.smtp.enabled !== false
}

// ─── live (and offline) lookup ────────────────────────────────────────────────────────────────────────────────────

/** What the DNS step found. */
interface DnsFindings {
  /** 'ok' (mail hosts known), or why not */
  status: 'ok' | 'nxdomain' | 'null_mx' | 'no_mx' | 'unavailable'
  /** mail hosts in preference order (the domain itself for the implicit MX) */
  hosts: string[]
  hasSpf: boolean | null
  hasDmarc: boolean | null
  /** 'unavailable' because the resolver answered NXDOMAIN but could not back it up (../../sources/dns-trust.ts) */
  nxdomainNotTrusted?: boolean
}

/**
 * Runs the email lookup on a parsed address. Never throws: every source failure is a partial outcome. Answers
 * synchronously when no network is involved (bad syntax, offline), so an offline lookup pays for no promise.
 */
export function checkEmail(
  ctx: CheckContext,
  parsed: ParsedEmail,
  smtp: boolean,
): CheckOutcome<EmailData> | Promise<CheckOutcome<EmailData>> {
  if (!parsed.ok) return invalidSyntaxOutcome(parsed)
  const data = dataSetOf(ctx)
  const base = staticFacts(parsed, data === null ? null : data.email)
  const dataSources = data === null ? ['syntax', 'lists'] : ['syntax', 'lists', data.labels.disposable]

  if (ctx.offline) {
    // Not asked is not failed: the answer is complete for this configuration (not partial), and cached as such.
    return assemble(base, {
      dns: { status: 'unavailable', hosts: [], hasSpf: null, hasDmarc: null },
      smtpCheck: 'unavailable',
      catchAll: false,
      ageDays: null,
      partial: false,
      offline: true,
      dataSources,
    })
  }
  return checkEmailOnline(ctx, parsed, base, dataSources, smtp)
}

/** The networked part of {@link checkEmail}: DNS, the mailbox check and the domain age. */
async function checkEmailOnline(
  ctx: CheckContext,
  parsed: Extract<ParsedEmail, { ok: true }>,
  base: EmailData,
  dataSources: string[],
  smtp: boolean,
): Promise<CheckOutcome<EmailData>> {
  const agePromise = domainAgeDays(ctx, parsed.asciiDomain)
  const dns = await lookupMailDns(ctx, parsed.asciiDomain)
  dataSources.push('dns')
  base.provider = safe(() => detectProvider(parsed.asciiDomain, dns.hosts), null) ?? base.provider

  let smtpCheck: SmtpCheck
  let catchAll = false
  let smtpFailed = false
  let smtpDeferred = false
  if (dns.status !== 'ok') smtpCheck = dns.status === 'unavailable' ? 'unavailable' : 'skipped'
  else if (!smtp) smtpCheck = 'skipped'
  else {
    const result = await verifyMailbox(ctx, `${parsed.localPart}@${parsed.asciiDomain}`, dns.hosts)
    dataSources.push('smtp')
    smtpCheck = result.smtp_check
    catchAll = result.catchAll === true
    smtpFailed = isSmtpFailure(result)
    smtpDeferred = isSmtpDeferral(result)
  }

  const age = await agePromise
  if (age.asked) dataSources.push('rdap')
  return assemble(base, {
    dns,
    smtpCheck,
    catchAll,
    ageDays: age.days,
    domainCreated: age.created,
    partial: dns.status === 'unavailable' || smtpFailed || age.partial,
    offline: false,
    dataSources,
    smtpDeferred,
  })
}

/**
 * True when the mail server deferred: a 4xx reply (greylisting, "try again later", a 421) left the mailbox `unknown`.
 * The server rechecks such answers later (docs/rechecks.md); a 5xx block or a time-out is not a deferral.
 */
function isSmtpDeferral(r: SmtpVerifyResult): boolean {
  return r.smtp_check === 'unknown' && r.code !== null && r.code >= 400 && r.code < 500
}

/**
 * True when an email outcome is `unknown` only because the mail server deferred (kept as `smtp_deferred` in the
 * outcome's private memo, so a cached answer says it too).
 */
export function isDeferredEmailOutcome(outcome: CheckOutcome<unknown>): boolean {
  return outcome.memo?.smtp_deferred === true
}

/**
 * True when the SMTP source failed rather than answered: no mail server could be reached (`unavailable`), or the
 * conversation timed out / was dropped before any reply code decided (`unknown` with no code). Such a result is
 * partial: not cached for 7 days, and retried by bulk retry. A definite `unknown` reply (450 greylisting, 554
 * blocked) is an answer, not a failure.
 */
function isSmtpFailure(r: SmtpVerifyResult): boolean {
  return r.smtp_check === 'unavailable' || (r.smtp_check === 'unknown' && r.code === null)
}

/**
 * MX (null MX, implicit MX fallback), SPF and DMARC of an ASCII domain, asked in parallel. An NXDOMAIN is believed
 * only after the resolver has shown that it resolves the domain's top-level domain.
 */
async function lookupMailDns(ctx: CheckContext, domain: string): Promise<DnsFindings> {
  const dns = ctx.sources.dns
  const [mx, txt, dmarc] = await Promise.all([
    guard(() => dns.resolveMx(domain)),
    guard(() => dns.resolveTxt(domain)),
    guard(() => dns.resolveTxt(`_dmarc.${domain}`)),
  ])
  const hasSpf = txtHas(txt, SPF_RE)
  const hasDmarc = txtHas(dmarc, DMARC_RE)

  if (mx.status === 'nxdomain') {
    if ((await trustNxdomain(dns, domain, ctx.options.warn)) !== 'trusted') {
      return { status: 'unavailable', hosts: [], hasSpf: null, hasDmarc: null, nxdomainNotTrusted: true }
    }
    return { status: 'nxdomain', hosts: [], hasSpf: false, hasDmarc: hasDmarc ?? false }
  }
  if (mx.status === 'ok') {
    const hosts = mx.records.filter((r) => r.exchange !== '').map((r) => r.exchange)
    if (hosts.length === 0) return { status: 'null_mx', hosts: [], hasSpf, hasDmarc }
    return { status: 'ok', hosts: [...new Set(hosts)], hasSpf, hasDmarc }
  }
  if (mx.status !== 'nodata') return { status: 'unavailable', hosts: [], hasSpf, hasDmarc }

  // No MX: RFC 5321 §5.1 implicit MX — the domain itself, if it has an address (A first; AAAA only without one,
  // which also leaves the A answer cached for the SMTP connection).
  const a = await guard(() => dns.resolve4(domain))
  if (a.status === 'ok') return { status: 'ok', hosts: [domain], hasSpf, hasDmarc }
  const aaaa = await guard(() => dns.resolve6(domain))
  if (aaaa.status === 'ok') return { status: 'ok', hosts: [domain], hasSpf, hasDmarc }
  if (isDnsFailure(a.status) || isDnsFailure(aaaa.status)) return { status: 'unavailable', hosts: [], hasSpf, hasDmarc }
  return { status: 'no_mx', hosts: [], hasSpf, hasDmarc }
}

/** true/false when the TXT answer is definite, null when DNS failed. */
function txtHas(answer: DnsAnswer<string>, re: RegExp): boolean | null {
  if (answer.status === 'ok') return answer.records.some((r) => re.test(r.slice(0, 32)))
  if (answer.status === 'nxdomain' || answer.status === 'nodata') return false
  return null
}

/** A source call that never rejects (the sources promise that; this guards replaced ones). */
async function guard<T>(call: () => Promise<DnsAnswer<T>>): Promise<DnsAnswer<T>> {
  try {
    return await call()
  } catch (e) {
    return { status: 'error', records: [], error: e instanceof Error ? e.message : String(e) }
  }
}

async function verifyMailbox(ctx: CheckContext, address: string, hosts: string[]): Promise<SmtpVerifyResult> {
  try {
    return await ctx.sources.smtp.verify(address, hosts)
  } catch (e) {
    return { smtp_check: 'unknown', code: null, enhancedCode: null, message: String(e), mxHost: null, catchAll: null }
  }
}

/**
 * The domain-age seam: `domain_age_days` from the domain-age lookup when RDAP is configured (and we are online),
 * else null. Test mode uses the domain-age lookup's deterministic answers.
 */
async function domainAgeDays(
  ctx: CheckContext,
  asciiDomain: string,
): Promise<{ days: number | null; created: string | null; partial: boolean; asked: boolean }> {
  const wanted = ctx.mode === 'test' || (!ctx.offline && isRdapConfigured(ctx))
  if (!wanted) return { days: null, created: null, partial: false, asked: false }
  const registrable = getDomain(asciiDomain, { allowPrivateDomains: false }) ?? asciiDomain
  try {
    const { details, partial } = await lookupDomainAge(ctx, registrable)
    const days = Number.isInteger(details.age_days) ? details.age_days : null
    return { days, created: days === null ? null : details.created_date, partial, asked: true }
  } catch {
    return { days: null, created: null, partial: true, asked: true }
  }
}

/** RDAP is asked unless switched off (`rdap: { enabled: false }`); offline and test mode are handled by lookupDomainAge. */
function isRdapConfigured(ctx: CheckContext): boolean {
  return ctx.options.rdap?.enabled !== false
}

// ─── assembling outcomes ──────────────────────────────────────────────────────────────────────────────────────────

/** The data set in force (its email lists and versions), or null when the context has none. */
function dataSetOf(ctx: CheckContext): ReturnType<CheckContext['sources']['data']['current']> | null {
  try {
    return ctx.sources.data.current() ?? null
  } catch {
    return null
  }
}

/** The facts that need no network: lists (of the data set in force; else the bundled ones), provider, typo. */
/**
 * What an address's domain alone decides: list membership, provider and the corrected domain (null: none), written as
 * `normalized` writes domains (Unicode).
 */
interface DomainFacts {
  isDisposable: boolean
  isFree: boolean
  provider: string | null
  suggestedDomain: string | null
}

// Sign-up traffic repeats a few domains: their facts are kept per data set (the lists they come from) in a small
// map emptied when full. The facts depend on nothing but the domain and the lists.
const DOMAIN_FACTS_MAX = 2048
const builtInFacts = new Map<string, DomainFacts>()
const factsByLists = new WeakMap<EmailLists, Map<string, DomainFacts>>()

function domainFactsOf(d: string, lists: EmailLists | null): DomainFacts {
  let memo = lists === null ? builtInFacts : factsByLists.get(lists)
  if (memo === undefined) factsByLists.set(lists as EmailLists, (memo = new Map()))
  let facts = memo.get(d)
  if (facts === undefined) {
    const isDisposable = lists ? lists.isDisposable : isDisposableDomain
    const isFree = lists ? lists.isFreeProvider : isFreeProviderDomain
    const suggested = safe(() => suggestDomain(d), null)
    facts = {
      isDisposable: safe(() => isDisposable(d), false),
      isFree: safe(() => isFree(d), false),
      provider: safe(() => detectProvider(d, []), null),
      suggestedDomain: typeof suggested === 'string' ? unicodeForm(suggested) : null,
    }
    if (memo.size >= DOMAIN_FACTS_MAX) memo.clear()
    memo.set(d, facts)
  }
  return facts
}

/**
 * A domain as `normalized` shows it: A-labels (`xn--…`) in Unicode. The typo rules work on the ASCII form, so a
 * suggestion for `bücher.con` came back as `xn--bcher-kva.com`; one that does not convert stays as it is.
 */
function unicodeForm(domain: string): string {
  if (!domain.startsWith('xn--') && !domain.includes('.xn--')) return domain
  const unicode = domainToUnicode(domain)
  return unicode === '' ? domain : unicode
}

function staticFacts(parsed: Extract<ParsedEmail, { ok: true }>, lists: EmailLists | null): EmailData {
  const facts = domainFactsOf(parsed.asciiDomain, lists)
  // as suggestEmail(local part, domain): the local part and the corrected domain
  const suggestion = facts.suggestedDomain === null || parsed.localPart === '' ? null : `${parsed.localPart}@${facts.suggestedDomain}`
  return {
    normalized: parsed.normalized,
    local_part: parsed.localPart,
    domain: parsed.domain,
    syntax_valid: true,
    mx_found: false,
    mx_records: [],
    smtp_check: 'skipped',
    is_disposable: facts.isDisposable,
    is_role: safe(() => isRoleLocalPart(parsed.localPart), false),
    is_free_provider: facts.isFree,
    provider: facts.provider,
    is_catch_all: false,
    did_you_mean: suggestion !== null && suggestion !== parsed.normalized ? suggestion : null,
    domain_age_days: null,
    has_spf: null,
    has_dmarc: null,
  }
}

function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn() ?? fallback
  } catch {
    return fallback
  }
}

const AGE_FACTORS: readonly FactorCode[] = ['domain_newly_registered', 'domain_brand_new', 'domain_recently_registered']

/** The age factors of a domain age — the same as the domain-age lookup's, so one domain scores the same in both. */
function ageFactors(ageDays: number | null): FactorCode[] {
  if (ageDays === null || ageDays >= RECENTLY_REGISTERED_DAYS) return []
  if (ageDays >= NEWLY_REGISTERED_DAYS) return ['domain_recently_registered']
  return ageDays < BRAND_NEW_DAYS ? ['domain_newly_registered', 'domain_brand_new'] : ['domain_newly_registered']
}

/** A cached answer brought up to today: the domain age (and its factors) from the remembered registration date. */
function reviveEmail(ctx: CheckContext, outcome: CheckOutcome<EmailData>): CheckOutcome<EmailData> {
  const created = outcome.memo?.domain_created
  if (typeof created !== 'string') return outcome
  const ageDays = computeDomainAges(ctx.now(), created, null).ageDays
  if (ageDays === outcome.details.domain_age_days) return outcome
  const factors = outcome.factors.filter((f) => !AGE_FACTORS.includes(f))
  return { ...outcome, details: { ...outcome.details, domain_age_days: ageDays }, factors: [...factors, ...ageFactors(ageDays)] }
}

interface Findings {
  dns: DnsFindings
  smtpCheck: SmtpCheck
  catchAll: boolean
  ageDays: number | null
  /** the registration date behind `ageDays` (kept in the outcome's memo so a cached answer can be revived) */
  domainCreated?: string | null
  partial: boolean
  offline: boolean
  dataSources: string[]
  /** the mail server answered 4xx (see isSmtpDeferral) */
  smtpDeferred?: boolean
}

/** Details + factors from the static facts and the network findings. */
function assemble(base: EmailData, f: Findings): CheckOutcome<EmailData> {
  // `base` is this lookup's own (staticFacts made it for this call): completed in place, not copied, since object
  // spread costs more than the rest of an offline lookup's details
  const details = base
  details.mx_found = f.dns.status === 'ok'
  details.mx_records = f.dns.status === 'ok' ? f.dns.hosts : []
  details.smtp_check = f.smtpCheck
  details.is_catch_all = f.smtpCheck === 'catch_all' || f.catchAll
  details.domain_age_days = f.ageDays
  details.has_spf = f.dns.hasSpf
  details.has_dmarc = f.dns.hasDmarc
  const factors: FactorCode[] = []
  // Sentences by factor: the verdict reason is the one of the factor that decides (the scoring engine picks it).
  const reasons: Partial<Record<FactorCode, string>> = {}
  switch (f.dns.status) {
    case 'nxdomain':
      factors.push('email_domain_not_found')
      reasons.email_domain_not_found = `The domain ${base.domain} does not exist.`
      break
    case 'null_mx':
      factors.push('email_null_mx')
      reasons.email_null_mx = `The domain ${base.domain} declares that it accepts no email (null MX).`
      break
    case 'no_mx':
      factors.push('email_no_mx')
      reasons.email_no_mx = `The domain ${base.domain} has no mail server (no MX, A or AAAA record).`
      break
    case 'unavailable':
      factors.push('email_dns_unavailable')
      if (f.offline) {
        reasons.email_dns_unavailable = 'Offline: DNS and the mail server were not asked, so deliverability is unknown.'
        reasons.email_smtp_unavailable = reasons.email_dns_unavailable
      } else if (f.dns.nxdomainNotTrusted) {
        reasons.email_dns_unavailable = `DNS answered that ${base.domain} does not exist, but the resolver also denies (or cannot confirm) its top-level domain, so deliverability is unknown.`
      }
      break
    case 'ok':
      break
  }
  switch (f.smtpCheck) {
    case 'undeliverable':
      factors.push('email_undeliverable')
      reasons.email_undeliverable = 'The mail server says this mailbox does not exist.'
      break
    case 'unknown':
      factors.push('email_smtp_unknown')
      break
    case 'unavailable':
      if (f.dns.status === 'ok' || f.offline) factors.push('email_smtp_unavailable')
      break
    default:
      break
  }
  if (details.is_catch_all) factors.push('email_catch_all')
  if (details.is_disposable) factors.push('email_disposable')
  if (details.is_role) factors.push('email_role_account')
  if (details.did_you_mean !== null) factors.push('email_typo_suspected')
  if (details.is_free_provider) factors.push('email_free_provider')
  if (f.ageDays !== null) factors.push(...ageFactors(f.ageDays))
  if (details.did_you_mean !== null) reasons.email_typo_suspected = `The domain looks like a typo: did you mean ${details.did_you_mean}?`
  const outcome: CheckOutcome<EmailData> = {
    details,
    factors,
    reasons,
    partial: f.partial,
    dataSources: f.dataSources,
    validReason: validReasonOf(details.smtp_check),
  }
  if (f.domainCreated) outcome.memo = { domain_created: f.domainCreated }
  if (f.smtpDeferred && f.smtpCheck === 'unknown') outcome.memo = { ...outcome.memo, smtp_deferred: true }
  return outcome
}

function validReasonOf(smtp: SmtpCheck): string {
  if (smtp === 'deliverable') return 'The mail server confirms that this mailbox exists.'
  if (smtp === 'skipped') return 'The address is well-formed and its domain accepts email (mailbox not checked).'
  return 'The address is well-formed and its domain accepts email.'
}

/** An address that fails the syntax check: no lookups at all. */
function invalidSyntaxOutcome(parsed: Extract<ParsedEmail, { ok: false }>): CheckOutcome<EmailData> {
  const suggestion =
    parsed.localPart !== '' && parsed.domain !== '' && parsed.localPart.length <= 64 && parsed.domain.length <= 253
      ? safe(() => suggestEmail(parsed.localPart, parsed.domain), null)
      : null
  return {
    details: {
      normalized: parsed.normalized,
      local_part: parsed.localPart,
      domain: parsed.domain,
      syntax_valid: false,
      mx_found: false,
      mx_records: [],
      smtp_check: 'skipped',
      is_disposable: false,
      is_role: false,
      is_free_provider: false,
      provider: null,
      is_catch_all: false,
      did_you_mean: typeof suggestion === 'string' && suggestion !== '' && suggestion !== parsed.normalized ? suggestion : null,
      domain_age_days: null,
      has_spf: null,
      has_dmarc: null,
    },
    factors: ['email_invalid_syntax'],
    reasons: { email_invalid_syntax: describeEmailSyntaxError(parsed.reason) },
    partial: false,
    dataSources: ['syntax'],
  }
}

// ─── test mode ────────────────────────────────────────────────────────────────────────────────────────────────────

/** A scripted answer of test mode: what DNS and SMTP "said" and what the lists "found". */
interface TestScenario {
  dns?: DnsFindings['status']
  smtp?: Exclude<SmtpCheck, 'skipped'>
  disposable?: boolean
  role?: boolean
  typo?: string
  ageDays?: number
}

const TEST_DOMAIN = 'example.com'
const TEST_SCENARIOS: Record<string, TestScenario> = {
  deliverable: {},
  undeliverable: { smtp: 'undeliverable' },
  catchall: { smtp: 'catch_all' },
  role: { role: true },
  disposable: { disposable: true },
  'disposable-catchall': { disposable: true, smtp: 'catch_all' },
  typo: { typo: 'typo@gmail.com' },
  newdomain: { ageDays: 3 },
  unknown: { smtp: 'unknown' },
  unavailable: { smtp: 'unavailable' },
  dnsfail: { dns: 'unavailable' },
  nomx: { dns: 'no_mx' },
  nullmx: { dns: 'null_mx' },
  nodomain: { dns: 'nxdomain' },
}

/**
 * Test mode: no network. At example.com the local part picks a scripted scenario ({@link emailCheck}.testInputs);
 * any other valid address gets the real lists/provider/typo facts and a "deliverable" DNS/SMTP answer, with the
 * domain age from the domain-age lookup's test mode.
 */
async function testEmail(ctx: CheckContext, parsed: ParsedEmail, smtp: boolean): Promise<CheckOutcome<EmailData>> {
  if (!parsed.ok) return invalidSyntaxOutcome(parsed)
  const base = staticFacts(parsed, dataSetOf(ctx)?.email ?? null)
  const scenario = parsed.asciiDomain === TEST_DOMAIN ? TEST_SCENARIOS[parsed.localPart.toLowerCase()] : undefined
  let ageDays: number | null
  if (scenario) {
    base.is_disposable = scenario.disposable ?? false
    base.is_role = scenario.role ?? false
    base.is_free_provider = false
    base.provider = null
    base.did_you_mean = scenario.typo ?? null
    ageDays = scenario.ageDays ?? 4000
  } else {
    ageDays = (await domainAgeDays(ctx, parsed.asciiDomain)).days
  }
  const dnsStatus = scenario?.dns ?? 'ok'
  const hosts = dnsStatus === 'ok' ? [`mx1.${parsed.asciiDomain}`, `mx2.${parsed.asciiDomain}`] : []
  const dns: DnsFindings = {
    status: dnsStatus,
    hosts,
    hasSpf: dnsStatus === 'unavailable' ? null : dnsStatus !== 'nxdomain',
    hasDmarc: dnsStatus === 'unavailable' ? null : dnsStatus !== 'nxdomain',
  }
  if (!scenario) base.provider = safe(() => detectProvider(parsed.asciiDomain, hosts), null) ?? base.provider
  let smtpCheck: SmtpCheck
  if (dnsStatus !== 'ok') smtpCheck = dnsStatus === 'unavailable' ? 'unavailable' : 'skipped'
  else smtpCheck = smtp ? (scenario?.smtp ?? 'deliverable') : 'skipped'
  return assemble(base, {
    dns,
    smtpCheck,
    catchAll: smtpCheck === 'catch_all',
    ageDays,
    partial: dnsStatus === 'unavailable' || smtpCheck === 'unavailable',
    offline: false,
    dataSources: smtp && dnsStatus === 'ok' ? ['syntax', 'lists', 'dns', 'smtp'] : ['syntax', 'lists', 'dns'],
  })
}

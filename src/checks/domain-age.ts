/**
 * The domain-age lookup: how long ago the registrable domain of a domain, URL or email address was registered, from
 * the registry's RDAP service, with its expiry, registrar, statuses, name servers and DNSSEC flag; every date from
 * `ctx.now()`. Its factors and age bands: docs/decisions.md, "Results" → "domain-age factors" and "`age_band`".
 */
import { invalidInput } from '../errors.js'
import type { AgeBand, DomainAgeData } from '../schema.js'
import type { FactorCode } from '../scoring/factors.js'
import type { RdapAnswer } from '../sources/rdap.js'
import { parseDomainInput } from './domain-input.js'
import type { CheckContext, CheckDefinition, CheckOutcome } from './types.js'
import type { CommonLookupOptions } from '../lookup.js'

/** Options of the domain-age lookup. */
export interface DomainAgeOptions extends CommonLookupOptions {
}

/** The prepared input: the registrable domain RDAP is asked about. */
export interface DomainAgeInput {
  /** the registrable domain (ASCII); the host itself when it has none (`registrable` false) */
  domain: string
  /** false for a single label or a bare public suffix (`localhost`, `co.uk`): nothing to ask a registry */
  registrable: boolean
}

/** Days (whole, elapsed) under which a domain counts as newly registered (`is_newly_registered`). */
export const NEWLY_REGISTERED_DAYS = 30
/** Below this age (days) a domain is also "brand new" (factor domain_brand_new, on top of newly registered). */
export const BRAND_NEW_DAYS = 7
/** Days under which a domain counts as recently registered (from {@link NEWLY_REGISTERED_DAYS}). */
export const RECENTLY_REGISTERED_DAYS = 90
/** Days to expiry under which `domain_expiring_soon` fires. */
export const EXPIRING_SOON_DAYS = 30

const DAY_MS = 86_400_000

/**
 * Ask RDAP about one registrable domain and build the domain-age details. Never rejects.
 *
 * Used by this lookup and by the email lookup (`domain_age_days` = `details.age_days`). Offline (or with RDAP
 * switched off) the details carry null dates/ages; when RDAP times out or fails, too, and `partial` is true. In test mode it answers from the
 * documented magic domains ({@link domainAgeCheck}.testInputs) without any network.
 *
 * @example
 * const { details, partial } = await lookupDomainAge(ctx, 'corp.com')
 * details.age_days // 4012, or null when unknown
 */
export async function lookupDomainAge(
  ctx: CheckContext,
  registrableDomain: string,
): Promise<{ details: DomainAgeData; partial: boolean }> {
  const outcome = await ageOutcome(ctx, registrableDomain)
  return { details: outcome.details, partial: outcome.partial }
}

/**
 * The documented test-mode answers, by the first label of the registrable domain (any TLD, any subdomain:
 * `www.new-domain.example` and `x@new-domain.test` behave like `new-domain.example`). Dates are relative to
 * `ctx.now()`. Every other domain answers like `old-domain`.
 */
const TEST_DOMAINS: Record<string, { answer: (now: Date, domain: string) => RdapAnswer; note: string }> = {
  'old-domain': {
    note: 'registered 3,700 days (~10 years) ago, expires in 300 days: 3_years_plus, valid → approve',
    answer: (now, d) => testFound(d, now, 3700, 300),
  },
  'two-years': {
    note: 'registered 800 days ago: under_3_years, valid → approve',
    answer: (now, d) => testFound(d, now, 800, 295),
  },
  'months-old': {
    note: 'registered 200 days ago: under_1_year, valid → approve',
    answer: (now, d) => testFound(d, now, 200, 165),
  },
  'recent-domain': {
    note: 'registered 45 days ago: under_90_days, domain_recently_registered → risky, approve (score 15)',
    answer: (now, d) => testFound(d, now, 45, 320),
  },
  'young-domain': {
    note: 'registered 20 days ago: under_30_days, domain_newly_registered → risky, verify',
    answer: (now, d) => testFound(d, now, 20, 345),
  },
  'new-domain': {
    note: 'registered 3 days ago: under_7_days, domain_newly_registered + domain_brand_new → risky, review (score 70)',
    answer: (now, d) => testFound(d, now, 3, 362),
  },
  'new-expiring': {
    note: 'registered 5 days ago, expires in 10 days: newly registered + brand new + expiring soon → risky, review (score 80)',
    answer: (now, d) => testFound(d, now, 5, 10),
  },
  'expiring-domain': {
    note: 'registered ~6 years ago, expires in 10 days: domain_expiring_soon (info) → valid, approve',
    answer: (now, d) => testFound(d, now, 2200, 10),
  },
  'no-created-date': {
    note: 'the registry answers without a registration date: domain_age_unknown → unknown, approve',
    answer: (now, d) => ({ ...testFound(d, now, 0, 365), created: null }),
  },
  unregistered: {
    note: 'RDAP 404: found/registered false, domain_not_registered → invalid, block (free of charge)',
    answer: (_now, d) => emptyAnswer(d, 'not_found'),
  },
  'rdap-timeout': {
    note: 'RDAP does not answer in time: partial, domain_age_unknown → unknown, approve (free of charge)',
    answer: (_now, d) => ({ ...emptyAnswer(d, 'timeout'), error: 'the registry timed out after 8 s (test mode)', cause: 'timeout' }),
  },
  'rdap-error': {
    note: 'RDAP fails (e.g. HTTP 500 / malformed answer): partial, domain_age_unknown → unknown, approve (free of charge)',
    answer: (_now, d) => ({ ...emptyAnswer(d, 'error'), error: 'the registry answered HTTP 500 (test mode)', cause: 'http' }),
  },
}

/**
 * The domain-age lookup (`rc.domainAge(input)`, `POST /v1/domain/age`, `riskcheck domain-age`).
 *
 * The input may be a domain, a URL or an email address; RDAP is asked about the registrable domain of its host
 * (`x@eu.corp.com` → `corp.com`). An input with no parsable host, or an IP address, is INVALID_INPUT. A host
 * without a registrable domain (`localhost`, `co.uk`) is judged not registered without any network.
 */
export const domainAgeCheck: CheckDefinition<DomainAgeInput, DomainAgeOptions, DomainAgeData> = {
  type: 'domain_age',

  prepare(input: unknown) {
    const parsed = parseDomainInput(input)
    if (parsed === null) {
      throw invalidInput('The domain has no parsable host name (expected a domain, URL or email address).', 'domain')
    }
    const registrable = parsed.registrableDomain !== null
    const domain = parsed.registrableDomain ?? parsed.host
    return { input: { domain, registrable }, cacheKey: domain }
  },

  async run(ctx, input) {
    if (!input.registrable) return notRegistrableOutcome(input.domain)
    return ageOutcome(ctx, input.domain)
  },

  test(ctx, input) {
    if (!input.registrable) return notRegistrableOutcome(input.domain)
    return outcomeFromAnswer(ctx.now(), input.domain, testAnswer(ctx.now(), input.domain), 'rdap')
  },

  revive(ctx, outcome) {
    // A cached answer keeps its dates; ages, bands and factors are recomputed for today.
    const d = outcome.details
    if (!d.found || d.created_date === null) return outcome
    const answer: RdapAnswer = {
      status: 'found',
      domain: d.domain,
      created: d.created_date,
      updated: d.updated_date,
      expires: d.expires_date,
      registrar: d.registrar,
      statuses: d.statuses,
      nameservers: d.nameservers,
      dnssec: d.dnssec,
    }
    return outcomeFromAnswer(ctx.now(), d.domain, answer, outcome.dataSources[0] ?? 'rdap')
  },

  testInputs: [
    ...Object.entries(TEST_DOMAINS).map(([label, t]) => ({ input: `${label}.example`, note: t.note })),
    { input: 'https://www.new-domain.example/signup', note: 'a URL: its registrable domain new-domain.example is looked up' },
    { input: 'someone@mail.old-domain.example', note: 'an email address: old-domain.example is looked up' },
    { input: 'localhost', note: 'no registrable domain: not registered → invalid, block (no RDAP query, free of charge)' },
    { input: 'any-other.example', note: 'any other domain answers like old-domain.example' },
    { input: 'not a domain', note: 'no parsable host: rejected with INVALID_INPUT' },
  ],

  cli: {
    command: 'domain-age',
    summary: 'Registration age of a domain (RDAP): created/expiry dates, age band, registrar, statuses, DNSSEC',
  },
}

// ─── internals ─────────────────────────────────────────────────────────────────────────────────────────────────────

async function ageOutcome(ctx: CheckContext, domain: string): Promise<CheckOutcome<DomainAgeData>> {
  if (ctx.mode === 'test') return outcomeFromAnswer(ctx.now(), domain, testAnswer(ctx.now(), domain), 'rdap')
  if (ctx.offline || ctx.options.rdap?.enabled === false) {
    return {
      details: unknownDetails(domain),
      factors: ['domain_age_unknown'],
      reasons: {
        domain_age_unknown: ctx.offline
          ? 'Offline: the registry (RDAP) was not asked, so the domain age is unknown.'
          : 'RDAP is switched off (rdap.enabled: false), so the domain age is unknown.',
      },
      partial: false, // not asked by configuration is not a failure
      dataSources: [],
    }
  }
  let answer: RdapAnswer
  try {
    answer = await ctx.sources.rdap.lookup(domain)
  } catch (e) {
    // the source never rejects; this guards against a replaced one that does
    answer = { ...emptyAnswer(domain, 'error'), error: e instanceof Error ? e.message : String(e), cause: 'other' }
  }
  return outcomeFromAnswer(ctx.now(), domain, answer, 'rdap')
}

/**
 * The reason of a failed lookup, naming its cause as the RDAP source reports it (`… failed: DNS lookup of
 * data.iana.org failed (ENOTFOUND), so …`). A failure is never "not registered": the factor is `domain_age_unknown`.
 */
function failureReason(answer: RdapAnswer): string {
  const why = answer.error !== undefined && answer.error !== '' ? `: ${answer.error}` : ''
  return answer.status === 'timeout'
    ? `The registry (RDAP) did not answer in time${why}, so the domain age is unknown.`
    : `The registry (RDAP) lookup failed${why}, so the domain age is unknown.`
}

/** Turn an RDAP answer into the outcome, with every date computed from `now`. */
function outcomeFromAnswer(now: Date, domain: string, answer: RdapAnswer, source: string): CheckOutcome<DomainAgeData> {
  if (answer.status === 'timeout' || answer.status === 'error') {
    return {
      details: unknownDetails(domain),
      factors: ['domain_age_unknown'],
      reasons: { domain_age_unknown: failureReason(answer) },
      partial: true,
      dataSources: [source],
    }
  }
  if (answer.status === 'not_found') {
    return {
      details: { ...unknownDetails(domain) },
      factors: ['domain_not_registered'],
      reasons: { domain_not_registered: `The registry has no registration for ${domain}.` },
      partial: false,
      dataSources: [source],
    }
  }

  const ages = computeDomainAges(now, answer.created, answer.expires)
  const factors: FactorCode[] = []
  if (ages.ageDays === null) factors.push('domain_age_unknown')
  else if (ages.ageDays < NEWLY_REGISTERED_DAYS) {
    factors.push('domain_newly_registered')
    if (ages.ageDays < BRAND_NEW_DAYS) factors.push('domain_brand_new')
  }
  else if (ages.ageDays < RECENTLY_REGISTERED_DAYS) factors.push('domain_recently_registered')
  if (ages.daysUntilExpiry !== null && ages.daysUntilExpiry < EXPIRING_SOON_DAYS) factors.push('domain_expiring_soon')

  const details: DomainAgeData = {
    domain,
    found: true,
    registered: true,
    is_newly_registered: ages.ageDays !== null && ages.ageDays < NEWLY_REGISTERED_DAYS,
    created_date: answer.created,
    updated_date: answer.updated,
    expires_date: answer.expires,
    age_days: ages.ageDays,
    days_until_expiry: ages.daysUntilExpiry,
    age_years: ages.ageYears,
    age_band: ages.ageBand,
    registrar: answer.registrar,
    statuses: [...answer.statuses],
    nameservers: [...answer.nameservers],
    dnssec: answer.dnssec,
  }
  const outcome: CheckOutcome<DomainAgeData> = { details, factors, partial: false, dataSources: [source] }
  if (ages.ageDays === null) {
    outcome.reasons = { domain_age_unknown: 'The registry answered but publishes no registration date, so the domain age is unknown.' }
  } else {
    outcome.validReason = `The domain was registered ${describeAge(ages.ageDays, ages.ageYears)} ago.`
  }
  return outcome
}

/** Ages derived from the registration and expiry dates ({@link computeDomainAges}). */
export interface DomainAges {
  ageDays: number | null
  ageYears: number | null
  ageBand: AgeBand | null
  daysUntilExpiry: number | null
}

/**
 * Date math of the lookup (pure): whole days since `created` (a creation date in the future counts as 0),
 * calendar years with one decimal (truncated, like a person's age), the age band, and whole days until `expires`
 * (negative once expired). Null inputs give null outputs.
 *
 * @example
 * computeDomainAges(new Date('2026-11-15T00:00:00Z'), '2026-11-01T00:00:00Z', null)
 * // { ageDays: 14, ageYears: 0, ageBand: 'under_30_days', daysUntilExpiry: null }
 */
export function computeDomainAges(now: Date, created: string | null, expires: string | null): DomainAges {
  const nowMs = now.getTime()
  const createdMs = created === null ? NaN : Date.parse(created)
  const expiresMs = expires === null ? NaN : Date.parse(expires)
  let ageDays: number | null = null
  let ageYears: number | null = null
  let ageBand: AgeBand | null = null
  if (Number.isFinite(createdMs)) {
    const createdDate = new Date(Math.min(createdMs, nowMs))
    ageDays = Math.floor((nowMs - createdDate.getTime()) / DAY_MS)
    const years = calendarYears(createdDate, now)
    ageYears = Math.floor(years * 10) / 10
    ageBand =
      ageDays < 7
        ? 'under_7_days'
        : ageDays < 30
          ? 'under_30_days'
          : ageDays < 90
            ? 'under_90_days'
            : years < 1
              ? 'under_1_year'
              : years < 3
                ? 'under_3_years'
                : '3_years_plus'
  }
  const daysUntilExpiry = Number.isFinite(expiresMs) ? Math.floor((expiresMs - nowMs) / DAY_MS) : null
  return { ageDays, ageYears, ageBand, daysUntilExpiry }
}

/** Calendar years from `from` to `to` (to ≥ from): whole anniversaries passed plus the fraction of the current year. */
function calendarYears(from: Date, to: Date): number {
  let whole = to.getUTCFullYear() - from.getUTCFullYear()
  let last = anniversary(from, whole)
  if (last.getTime() > to.getTime()) {
    whole--
    last = anniversary(from, whole)
  }
  const next = anniversary(from, whole + 1)
  const span = next.getTime() - last.getTime()
  return whole + (span > 0 ? (to.getTime() - last.getTime()) / span : 0)
}

/** `from` moved `years` calendar years on (29 February → 1 March in common years). */
function anniversary(from: Date, years: number): Date {
  return new Date(
    Date.UTC(
      from.getUTCFullYear() + years,
      from.getUTCMonth(),
      from.getUTCDate(),
      from.getUTCHours(),
      from.getUTCMinutes(),
      from.getUTCSeconds(),
      from.getUTCMilliseconds(),
    ),
  )
}

function describeAge(days: number, years: number | null): string {
  if (years !== null && years >= 1) return `${years} years`
  return days === 1 ? '1 day' : `${days} days`
}

function notRegistrableOutcome(host: string): CheckOutcome<DomainAgeData> {
  return {
    details: unknownDetails(host),
    factors: ['domain_not_registered'],
    reasons: { domain_not_registered: `${host} is a single label or a public suffix, not a domain anyone can register.` },
    partial: false,
    dataSources: ['public_suffix_list'],
  }
}

/** Details with nothing known: found/registered false (nothing was found), every date and age null. */
function unknownDetails(domain: string): DomainAgeData {
  return {
    domain,
    found: false,
    registered: false,
    is_newly_registered: false,
    created_date: null,
    updated_date: null,
    expires_date: null,
    age_days: null,
    days_until_expiry: null,
    age_years: null,
    age_band: null,
    registrar: null,
    statuses: [],
    nameservers: [],
    dnssec: null,
  }
}

function emptyAnswer(domain: string, status: RdapAnswer['status']): RdapAnswer {
  return { status, domain, created: null, updated: null, expires: null, registrar: null, statuses: [], nameservers: [], dnssec: null }
}

function testAnswer(now: Date, domain: string): RdapAnswer {
  const label = domain.split('.')[0] ?? ''
  const entry = Object.hasOwn(TEST_DOMAINS, label) ? TEST_DOMAINS[label] : TEST_DOMAINS['old-domain']
  return entry!.answer(now, domain)
}

function testFound(domain: string, now: Date, ageDays: number, expiresInDays: number): RdapAnswer {
  const at = (days: number) => new Date(now.getTime() + days * DAY_MS).toISOString()
  return {
    status: 'found',
    domain,
    created: at(-ageDays),
    updated: at(-Math.min(ageDays, 2)),
    expires: at(expiresInDays),
    registrar: 'Example Registrar, Inc.',
    statuses: ['client transfer prohibited'],
    nameservers: [`ns1.${domain}`, `ns2.${domain}`],
    dnssec: ageDays > 365,
  }
}

/**
 * The email-authentication lookup (`rc.emailAuth(input)`, `POST /v1/domain/email-auth`, `riskcheck email-auth`): MX,
 * SPF, DMARC, DKIM (common selectors), BIMI and a letter grade (./grade.ts). The input is a domain, URL or address (no
 * parsable host → INVALID_INPUT); its `auth_*` factors are in ../../scoring/factors.ts. Which names are asked, and
 * when: docs/decisions.md, "Email checks" → "email-auth questions".
 */

import { invalidInput } from '../../errors.js'
import type { EmailAuthData } from '../../schema.js'
import type { FactorCode } from '../../scoring/factors.js'
import { isDnsFailure, type DnsAnswer, type DnsSource, type MxRecord } from '../../sources/dns-types.js'
import { trustNxdomain } from '../../sources/dns-trust.js'
import { parseDomainInput } from '../domain-input.js'
import type { CheckContext, CheckDefinition, CheckOutcome } from '../types.js'
import { checkBimi, type BimiCheckResult } from './bimi.js'
import { checkDkim, type DkimCheckResult } from './dkim.js'
import { checkDmarc, type DmarcCheckResult, type DmarcPolicy } from './dmarc.js'
import { gradeEmailAuth, type GradeFacts, type GradeResult, type Tristate } from './grade.js'
import { checkSpf, type SpfCheckResult } from './spf.js'
import type { CommonLookupOptions } from '../../lookup.js'

export { GRADE_RUBRIC, gradeEmailAuth } from './grade.js'
export { checkSpf, parseSpfRecord, SPF_LOOKUP_LIMIT, SPF_VOID_LOOKUP_LIMIT } from './spf.js'
export { checkDmarc, parseDmarcRecord } from './dmarc.js'
export { checkDkim, DEFAULT_DKIM_SELECTORS, DKIM_SELECTOR_LIST } from './dkim.js'
export { checkBimi } from './bimi.js'

/** Options of the email-authentication lookup. */
export interface EmailAuthOptions extends CommonLookupOptions {
}

/** The prepared input. */
export interface EmailAuthInput {
  /** the host whose mail is authenticated (ASCII, lower-case) */
  host: string
  /** its organizational domain (registrable domain), for the DMARC/BIMI fallback; null when it has none */
  orgDomain: string | null
}

/** Everything one lookup found, beyond the documented details (for tests, the CLI's verbose mode and benchmarks). */
export interface EmailAuthReport {
  host: string
  orgDomain: string | null
  mx: { status: DnsAnswer<MxRecord>['status']; records: MxRecord[] }
  spf: SpfCheckResult
  dmarc: DmarcCheckResult
  dkim: DkimCheckResult
  bimi: BimiCheckResult
  grade: GradeResult
}

/**
 * Runs every part of the lookup against a DNS source and grades it. Never rejects for DNS reasons (failures are
 * statuses); use {@link emailAuthCheck} for the documented outcome.
 *
 * @example
 * const report = await inspectEmailAuth(dns, 'eu.corp.com', 'corp.com')
 * report.grade.grade      // 'B'
 * report.dmarc.inherited  // true
 */
export async function inspectEmailAuth(dns: DnsSource, host: string, orgDomain: string | null): Promise<EmailAuthReport> {
  const [mx, spf, dmarc, dkim, bimi] = await Promise.all([
    dns.resolveMx(host),
    checkSpf(dns, host),
    checkDmarc(dns, host, orgDomain),
    checkDkim(dns, host),
    checkBimi(dns, host, orgDomain),
  ])
  const grade = gradeEmailAuth(factsOf(mx, spf, dmarc, dkim, bimi))
  return { host, orgDomain, mx: { status: mx.status, records: mx.records }, spf, dmarc, dkim, bimi, grade }
}

const STRENGTH: Readonly<Record<DmarcPolicy, number>> = { none: 0, quarantine: 1, reject: 2 }

function mailHosts(records: readonly MxRecord[]): string[] {
  return records.filter((r) => r.exchange !== '').map((r) => r.exchange)
}

function factsOf(
  mx: DnsAnswer<MxRecord>,
  spf: SpfCheckResult,
  dmarc: DmarcCheckResult,
  dkim: DkimCheckResult,
  bimi: BimiCheckResult,
): GradeFacts {
  const mxState: Tristate = isDnsFailure(mx.status) ? 'unknown' : mailHosts(mx.records).length > 0 ? 'yes' : 'no'
  return {
    mx: mxState,
    spf: spf.status === 'temperror' ? 'unknown' : spf.status,
    spfRecordValid: spf.recordValid,
    spfPolicy: spf.policy,
    spfPassAllViaInclude: spf.passAllViaInclude,
    dmarc: dmarc.status === 'temperror' ? 'unknown' : dmarc.status,
    dmarcPolicy: dmarc.effectivePolicy,
    dmarcPct: dmarc.pct,
    dmarcSubdomainWeaker:
      dmarc.subdomainPolicy !== null && dmarc.policy !== null && STRENGTH[dmarc.subdomainPolicy] < STRENGTH[dmarc.policy],
    dmarcRua: dmarc.ruaValid,
    dkim: dkim.status === 'found' ? 'yes' : dkim.status === 'not_found' ? 'no' : 'unknown',
    bimi: bimi.status === 'found' ? 'yes' : bimi.status === 'unknown' ? 'unknown' : 'no',
  }
}

/** Turns a report into the documented details, the factor codes and the partial flag. */
export function outcomeOfReport(report: EmailAuthReport): CheckOutcome<EmailAuthData> {
  const { spf, dmarc, dkim, bimi, grade } = report
  const factors: FactorCode[] = []
  let dnsUnavailable = false
  const hosts = mailHosts(report.mx.records)
  if (isDnsFailure(report.mx.status)) dnsUnavailable = true
  else if (report.mx.status === 'nxdomain') factors.push('auth_domain_not_found', 'auth_no_mx')
  else if (hosts.length === 0) factors.push('auth_no_mx')

  if (spf.status === 'none') factors.push('auth_no_spf')
  if (spf.status === 'temperror') dnsUnavailable = true
  if (spf.policy === 'pass' || spf.passAllViaInclude) factors.push('auth_spf_pass_all')
  if (spf.status === 'permerror') factors.push(spf.tooManyLookups ? 'auth_spf_too_many_lookups' : 'auth_spf_permerror')
  if (spf.policy === 'softfail' || spf.policy === 'neutral') factors.push('auth_spf_softfail_or_neutral')

  if (dmarc.status === 'none' || dmarc.status === 'invalid') factors.push('auth_no_dmarc')
  else if (dmarc.status === 'temperror') dnsUnavailable = true
  else if (dmarc.effectivePolicy === 'none') factors.push('auth_dmarc_none')
  else if (dmarc.effectivePolicy === 'quarantine' || (dmarc.pct ?? 100) < 100) factors.push('auth_dmarc_weak')

  if (dkim.status === 'not_found') factors.push('auth_no_dkim')
  else if (dkim.status === 'unknown') dnsUnavailable = true
  if (bimi.status === 'unknown') dnsUnavailable = true
  if (dnsUnavailable) factors.push('auth_dns_unavailable')

  const details: EmailAuthData = {
    domain: report.host,
    grade: grade.grade,
    mx: { found: hosts.length > 0, records: hosts },
    spf: {
      found: spf.found,
      record: spf.record,
      policy: spf.policy,
      dns_lookups: spf.dnsLookups,
      too_many_lookups: spf.tooManyLookups,
    },
    dmarc: {
      found: dmarc.found,
      record: dmarc.record,
      policy: dmarc.policy,
      subdomain_policy: dmarc.subdomainPolicy,
      rua: dmarc.rua,
      pct: dmarc.pct,
    },
    dkim: { found: dkim.found, selectors_found: [...dkim.selectorsFound], selectors_checked: dkim.selectorsChecked },
    bimi: { found: bimi.found, record: bimi.record },
  }
  return {
    details,
    factors,
    validReason: `Grade ${grade.grade}: ${summarize(report)}.`,
    partial: dnsUnavailable,
    dataSources: ['dns'],
  }
}

function summarize(report: EmailAuthReport): string {
  const parts: string[] = []
  const { spf, dmarc, dkim, bimi } = report
  if (dmarc.effectivePolicy) parts.push(`DMARC p=${dmarc.effectivePolicy}${(dmarc.pct ?? 100) < 100 ? ` pct=${dmarc.pct}` : ''}`)
  const all: Record<string, string> = { fail: '-all', softfail: '~all', neutral: '?all', pass: '+all' }
  if (spf.policy) parts.push(`SPF ${all[spf.policy]}`)
  if (dkim.found) parts.push(`DKIM (${dkim.selectorsFound.join(', ')})`)
  if (bimi.found) parts.push('BIMI')
  return parts.length > 0 ? parts.join(', ') : 'no email authentication records'
}

/**
 * The outcome when DNS gives nothing to judge: offline mode (not asked: `partial` false), a broken resolver or a
 * source that threw (failed: `partial` true).
 */
function unavailableOutcome(input: EmailAuthInput, reason: string, dataSources: string[], partial = true): CheckOutcome<EmailAuthData> {
  const grade = gradeEmailAuth({
    mx: 'unknown',
    spf: 'unknown',
    spfRecordValid: false,
    spfPolicy: null,
    spfPassAllViaInclude: false,
    dmarc: 'unknown',
    dmarcPolicy: null,
    dmarcPct: null,
    dmarcSubdomainWeaker: false,
    dmarcRua: false,
    dkim: 'unknown',
    bimi: 'unknown',
  })
  return {
    details: {
      domain: input.host,
      grade: grade.grade,
      mx: { found: false, records: [] },
      spf: { found: false, record: null, policy: null, dns_lookups: 0, too_many_lookups: false },
      dmarc: { found: false, record: null, policy: null, subdomain_policy: null, rua: null, pct: null },
      dkim: { found: false, selectors_found: [], selectors_checked: 0 },
      bimi: { found: false, record: null },
    },
    factors: ['auth_dns_unavailable'],
    reasons: { auth_dns_unavailable: reason },
    partial,
    dataSources,
  }
}

// ─── test mode ─────────────────────────────────────────────────────────────────────────────────────────────────────

type MemoryZone = Record<string, { MX?: MxRecord[]; A?: string[]; TXT?: string[]; timeout?: boolean }>

/** A DNS source answering from memory (test mode only: no network). */
function createMemoryDns(zone: MemoryZone): DnsSource {
  let queries = 0
  const answer = <T>(name: string, pick: (r: MemoryZone[string]) => T[] | undefined): Promise<DnsAnswer<T>> => {
    queries++
    const rec = zone[name.toLowerCase()]
    if (!rec) return Promise.resolve({ status: 'nxdomain', records: [] })
    if (rec.timeout) return Promise.resolve({ status: 'timeout', records: [], error: 'test-mode timeout' })
    const records = pick(rec) ?? []
    return Promise.resolve(records.length > 0 ? { status: 'ok', records } : { status: 'nodata', records: [] })
  }
  return {
    resolveMx: (n) => answer(n, (r) => r.MX),
    resolveTxt: (n) => answer(n, (r) => r.TXT),
    resolve4: (n) => answer(n, (r) => r.A),
    resolve6: (n) => answer<string>(n, () => undefined),
    reverse: (n) => answer<string>(n, () => undefined),
    resolveNs: (n) => answer<string>(n, () => undefined),
    stats: () => ({ queries, cacheHits: 0, deduplicated: 0, timeouts: 0 }),
    close: () => {},
  }
}

const TEST_DKIM_KEY = 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtestmodekey'

interface TestZoneSpec {
  mx?: boolean | 'null'
  spf?: string[]
  dmarc?: string
  dkim?: boolean
  bimi?: boolean
  /** extra names relative to the host (`l1` → `l1.<host>`) */
  extra?: (host: string) => MemoryZone
  timeout?: 'all' | 'dmarc'
  /** the host does not exist at all (NXDOMAIN) */
  nxdomain?: boolean
}

function buildTestZone(host: string, spec: TestZoneSpec): MemoryZone {
  if (spec.timeout === 'all') {
    return { [host]: { timeout: true }, [`_dmarc.${host}`]: { timeout: true }, [`default._bimi.${host}`]: { timeout: true }, [`google._domainkey.${host}`]: { timeout: true } }
  }
  if (spec.nxdomain) return {}
  const zone: MemoryZone = { [host]: { A: ['192.0.2.10'] } }
  const apex = zone[host] as MemoryZone[string]
  if (spec.mx === true) apex.MX = [{ priority: 10, exchange: `mx.${host}` }]
  if (spec.mx === 'null') apex.MX = [{ priority: 0, exchange: '' }]
  if (spec.spf) apex.TXT = spec.spf
  if (spec.dmarc !== undefined) zone[`_dmarc.${host}`] = spec.timeout === 'dmarc' ? { timeout: true } : { TXT: [spec.dmarc] }
  if (spec.dkim) zone[`google._domainkey.${host}`] = { TXT: [TEST_DKIM_KEY] }
  if (spec.bimi) zone[`default._bimi.${host}`] = { TXT: [`v=BIMI1; l=https://${host}/logo.svg; a=https://${host}/vmc.pem`] }
  return { ...zone, ...(spec.extra ? spec.extra(host) : {}) }
}

const reject = (host: string) => `v=DMARC1; p=reject; rua=mailto:dmarc@${host}`

/**
 * The documented test-mode domains, by the first label of the input's registrable domain (any TLD, any subdomain,
 * URL or email address: `x@grade-b.example` behaves like `grade-b.example`). Each is a small zone the real check
 * runs against (in memory, no network). Every other domain answers like `grade-a`.
 */
const TEST_DOMAINS: Record<string, { spec: TestZoneSpec; note: string }> = {
  'grade-a-plus': {
    spec: { mx: true, spf: ['v=spf1 mx -all'], dmarc: 'v=DMARC1; p=reject; rua=mailto:dmarc@example.com', dkim: true, bimi: true },
    note: 'MX, SPF -all, DMARC p=reject, DKIM, BIMI: grade A+ → valid, approve',
  },
  'grade-a': {
    spec: { mx: true, spf: ['v=spf1 mx -all'], dmarc: 'v=DMARC1; p=reject; rua=mailto:dmarc@example.com', dkim: true },
    note: 'as grade-a-plus without BIMI: grade A → valid, approve',
  },
  'grade-b': {
    spec: { mx: true, spf: ['v=spf1 mx -all'], dmarc: 'v=DMARC1; p=quarantine; rua=mailto:dmarc@example.com', dkim: true },
    note: 'DMARC p=quarantine: grade B, auth_dmarc_weak (info) → valid, approve',
  },
  'no-dkim': {
    spec: { mx: true, spf: ['v=spf1 mx -all'], dmarc: 'v=DMARC1; p=reject; rua=mailto:dmarc@example.com' },
    note: 'no DKIM key at the probed selectors: grade B, auth_no_dkim (info) → valid, approve',
  },
  'grade-c': {
    spec: { mx: true, spf: ['v=spf1 mx -all'], dmarc: 'v=DMARC1; p=none; rua=mailto:dmarc@example.com', dkim: true },
    note: 'DMARC p=none: grade C, auth_dmarc_none → risky, approve',
  },
  'spf-too-many-lookups': {
    spec: {
      mx: true,
      spf: ['v=spf1 include:l1.%h -all'],
      dmarc: 'v=DMARC1; p=reject; rua=mailto:dmarc@example.com',
      dkim: true,
      extra: (host) => {
        const z: MemoryZone = {}
        for (let i = 1; i <= 6; i++) {
          z[`l${i}.${host}`] = { A: ['192.0.2.1'], TXT: [i < 6 ? `v=spf1 a include:l${i + 1}.${host} ~all` : 'v=spf1 a ~all'] }
        }
        return z
      },
    },
    note: 'SPF include chain needing 12 DNS lookups: too_many_lookups, grade C, auth_spf_too_many_lookups → risky, approve',
  },
  'spf-two-records': {
    spec: { mx: true, spf: ['v=spf1 mx -all', 'v=spf1 ip4:192.0.2.0/24 -all'], dmarc: 'v=DMARC1; p=reject', dkim: true },
    note: 'two v=spf1 records (permerror): grade C, auth_spf_permerror → risky, approve',
  },
  'grade-d': {
    spec: { mx: true, spf: ['v=spf1 mx -all'], dkim: true },
    note: 'no DMARC record: grade D, auth_no_dmarc → risky, approve',
  },
  'weak-auth': {
    spec: { mx: true, spf: ['v=spf1 mx ~all'] },
    note: 'SPF ~all only (no DMARC, no DKIM): grade D, score 40 → risky, verify',
  },
  'no-mail-auth': {
    spec: {},
    note: 'no MX, SPF, DMARC or DKIM: grade F, score 75 → risky, review',
  },
  'grade-f': {
    spec: { mx: true, spf: ['v=spf1 +all'] },
    note: 'SPF +all and no DMARC: grade F, score 85+ → risky, block',
  },
  'no-such-domain': {
    spec: { nxdomain: true },
    note: 'the domain does not exist (NXDOMAIN): grade F, auth_domain_not_found → invalid, block',
  },
  'null-mx': {
    spec: { mx: 'null', spf: ['v=spf1 -all'], dmarc: 'v=DMARC1; p=reject; rua=mailto:dmarc@example.com' },
    note: 'a parked domain (null MX, v=spf1 -all, p=reject): grade B, auth_no_mx + auth_no_dkim → risky, approve',
  },
  'dmarc-timeout': {
    spec: { mx: true, spf: ['v=spf1 mx -all'], dmarc: '', dkim: true, timeout: 'dmarc' },
    note: 'the DMARC lookup times out: partial, auth_dns_unavailable, grade C (never F) → unknown, approve',
  },
  'dns-timeout': {
    spec: { timeout: 'all' },
    note: 'every DNS lookup times out: partial, auth_dns_unavailable, grade D (never F) → unknown, approve',
  },
}

function testLabel(input: EmailAuthInput): string {
  const base = input.orgDomain ?? input.host
  const dot = base.indexOf('.')
  return dot < 0 ? base : base.slice(0, dot)
}

async function testOutcome(input: EmailAuthInput): Promise<CheckOutcome<EmailAuthData>> {
  const entry = TEST_DOMAINS[testLabel(input)] ?? (TEST_DOMAINS['grade-a'] as { spec: TestZoneSpec })
  const spec: TestZoneSpec = {
    ...entry.spec,
    ...(entry.spec.spf ? { spf: entry.spec.spf.map((r) => r.replaceAll('%h', input.host)) } : {}),
  }
  const dns = createMemoryDns(buildTestZone(input.host, spec))
  return outcomeOfReport(await inspectEmailAuth(dns, input.host, input.orgDomain))
}

// ─── the check ─────────────────────────────────────────────────────────────────────────────────────────────────────

/**
 * The email-authentication lookup.
 *
 * @example
 * const { details } = await emailAuthCheck.run(ctx, emailAuthCheck.prepare('x@eu.corp.com', {}, ctx).input, {})
 * details.grade // 'B'
 */
export const emailAuthCheck: CheckDefinition<EmailAuthInput, EmailAuthOptions, EmailAuthData> = {
  type: 'email_auth',

  prepare(input: unknown) {
    const parsed = parseDomainInput(input)
    if (parsed === null) {
      throw invalidInput('The domain has no parsable host name (expected a domain, URL or email address).', 'domain')
    }
    const orgDomain = parsed.registrableDomain
    return { input: { host: parsed.host, orgDomain }, cacheKey: parsed.host }
  },

  async run(ctx: CheckContext, input: EmailAuthInput) {
    if (ctx.mode === 'test') return testOutcome(input)
    if (ctx.offline) return unavailableOutcome(input, 'Offline: DNS was not asked, so email authentication is unknown.', [], false)
    try {
      const report = await inspectEmailAuth(ctx.sources.dns, input.host, input.orgDomain)
      // "The domain does not exist" only from a resolver that resolves the domain's top-level domain.
      if (report.mx.status === 'nxdomain' && (await trustNxdomain(ctx.sources.dns, input.host, ctx.options.warn)) !== 'trusted') {
        return unavailableOutcome(input, 'DNS answered that the domain does not exist, but the resolver also denies its top-level domain, so email authentication is unknown.', ['dns'])
      }
      return outcomeOfReport(report)
    } catch (e) {
      // the DNS source never rejects; this guards against a replaced one that does
      const why = e instanceof Error ? e.message : String(e)
      return unavailableOutcome(input, `DNS failed (${why}), so email authentication is unknown.`, ['dns'])
    }
  },

  test(_ctx, input) {
    return testOutcome(input)
  },

  testInputs: [
    ...Object.entries(TEST_DOMAINS).map(([label, t]) => ({ input: `${label}.example`, note: t.note })),
    { input: 'postmaster@mail.grade-b.example', note: 'an email address: the host mail.grade-b.example is graded (like grade-b)' },
    { input: 'https://www.grade-c.example/', note: 'a URL: the host www.grade-c.example is graded (like grade-c)' },
    { input: 'any-other.example', note: 'any other domain answers like grade-a.example' },
    { input: 'not a domain', note: 'no parsable host: rejected with INVALID_INPUT' },
  ],

  cli: {
    command: 'email-auth',
    summary: 'Email authentication of a domain: MX, SPF (lookup counting), DMARC, DKIM, BIMI and a letter grade',
  },
}

/**
 * The email-authentication grade (docs/scoring.md "Email-authentication grade"): points per part give a letter, then
 * caps lower it; {@link GRADE_RUBRIC} is the same rubric as data. A DNS failure never makes an F (docs/decisions.md,
 * "Email checks" → "grade under DNS failures").
 */

import type { Grade } from '../../schema.js'
import type { DmarcPolicy } from './dmarc.js'
import type { SpfPolicy } from './spf.js'

/** Yes / no / could not tell (the lookup failed). */
export type Tristate = 'yes' | 'no' | 'unknown'

/** The facts the grade is computed from (collected by ./index.ts from the part checks). */
export interface GradeFacts {
  /** an MX record with a mail host (a null MX is "no") */
  mx: Tristate
  /**
   * SPF: `ok` (one valid record, no error in its tree), `none`, `permerror` (several records, syntax, limits,
   * loops, include targets without a record), `unknown` (DNS failed)
   */
  spf: 'ok' | 'none' | 'permerror' | 'unknown'
  /** the top record is one syntactically valid `v=spf1` record (true also when only its tree is broken) */
  spfRecordValid: boolean
  /** the SPF result for unlisted senders (`all`, redirect, or neutral); null when unknown */
  spfPolicy: SpfPolicy | null
  /** an included record ends in `+all` (every sender passes) */
  spfPassAllViaInclude: boolean
  /** DMARC: `ok`, `none` (no record), `invalid` (several records, or a record receivers ignore), `unknown` */
  dmarc: 'ok' | 'none' | 'invalid' | 'unknown'
  /** the policy applying to the host (sp when inherited from the organizational domain) */
  dmarcPolicy: DmarcPolicy | null
  /** pct of the applying record (100 when absent) */
  dmarcPct: number | null
  /** the record's sp is weaker than its p */
  dmarcSubdomainWeaker: boolean
  /** the record has at least one valid rua URI */
  dmarcRua: boolean
  dkim: Tristate
  bimi: Tristate
}

/** Points of each part (the rubric of docs/scoring.md: DMARC 40, SPF 30, DKIM 15, MX 10, BIMI 5). */
export interface GradePoints {
  dmarc: number
  spf: number
  dkim: number
  mx: number
  bimi: number
  total: number
}

/** The grade and how it was reached. */
export interface GradeResult {
  grade: Grade
  /** the letter from points alone, before caps */
  pointsGrade: Grade
  points: GradePoints
  /** the caps that apply (each may or may not have lowered the letter), as rubric cap ids */
  caps: GradeCapId[]
  /** true when some part could not be told (DNS failure) */
  partial: boolean
  /** one line per deduction, for people */
  notes: string[]
}

/** Ids of the caps of {@link GRADE_RUBRIC}. */
export type GradeCapId =
  | 'spf_pass_all'
  | 'no_dmarc'
  | 'dmarc_none'
  | 'spf_permerror'
  | 'dmarc_quarantine'
  | 'no_dkim'
  | 'a_plus_requirements'
  | 'dns_failure_not_f'

/** The rubric as data, in the order it is applied. */
export const GRADE_RUBRIC = {
  points: [
    {
      part: 'DMARC',
      max: 40,
      items: [
        { points: 10, when: 'one valid DMARC record applies (at _dmarc.<host>, else inherited from the organizational domain)' },
        { points: 25, when: 'the applying policy is reject (quarantine 18, none 5); pct < 100 scores one step lower' },
        { points: 3, when: 'sp is absent or not weaker than p' },
        { points: 2, when: 'rua names at least one valid report address' },
      ],
    },
    {
      part: 'SPF',
      max: 30,
      items: [
        { points: 10, when: 'exactly one syntactically valid v=spf1 record' },
        { points: 12, when: 'it ends in -all (~all 10, ?all or no all 2, +all 0)' },
        { points: 8, when: 'its include/redirect tree stays within 10 DNS lookups and 2 void lookups, without errors' },
      ],
    },
    { part: 'DKIM', max: 15, items: [{ points: 15, when: 'a DKIM key is found at one of the probed selectors' }] },
    { part: 'MX', max: 10, items: [{ points: 10, when: 'the domain has an MX record with a mail host (not a null MX)' }] },
    { part: 'BIMI', max: 5, items: [{ points: 5, when: 'a v=BIMI1 record at default._bimi' }] },
  ],
  thresholds: [
    { grade: 'A+', minPoints: 95 },
    { grade: 'A', minPoints: 85 },
    { grade: 'B', minPoints: 70 },
    { grade: 'C', minPoints: 55 },
    { grade: 'D', minPoints: 35 },
    { grade: 'F', minPoints: 0 },
  ] as Array<{ grade: Grade; minPoints: number }>,
  caps: [
    { id: 'spf_pass_all', maxGrade: 'F', when: 'SPF ends in +all (or includes a record ending in +all): anyone may send' },
    { id: 'no_dmarc', maxGrade: 'D', when: 'no DMARC record, several DMARC records, or a record receivers ignore' },
    { id: 'dmarc_none', maxGrade: 'C', when: 'the applying DMARC policy is p=none (monitoring only)' },
    { id: 'spf_permerror', maxGrade: 'C', when: 'SPF permerror: several records, a syntax error, > 10 lookups, > 2 void lookups, a loop' },
    { id: 'dmarc_quarantine', maxGrade: 'B', when: 'the applying DMARC policy is p=quarantine' },
    { id: 'no_dkim', maxGrade: 'B', when: 'no DKIM key found at the probed selectors' },
  ] as Array<{ id: GradeCapId; maxGrade: Grade; when: string }>,
  aPlusRequires: ['DMARC p=reject at pct 100', 'SPF -all without errors', 'a DKIM key', 'a BIMI record'],
  dnsFailures:
    'A part whose DNS lookup failed scores 0 and triggers no cap; the result is partial. It never yields an F: ' +
    'an F is raised to D unless the grade would be F even if every failed part had answered perfectly.',
} as const

const ORDER: readonly Grade[] = ['F', 'D', 'C', 'B', 'A', 'A+']

function lower(a: Grade, b: Grade): Grade {
  return ORDER.indexOf(a) <= ORDER.indexOf(b) ? a : b
}

function letterFromPoints(points: number): Grade {
  for (const t of GRADE_RUBRIC.thresholds) if (points >= t.minPoints) return t.grade
  return 'F'
}

const POLICY_STRENGTH: Readonly<Record<DmarcPolicy, number>> = { none: 0, quarantine: 1, reject: 2 }

function pointsOf(f: GradeFacts): GradePoints {
  let dmarc = 0
  if (f.dmarc === 'ok' && f.dmarcPolicy !== null) {
    dmarc += 10
    let step = POLICY_STRENGTH[f.dmarcPolicy]
    if ((f.dmarcPct ?? 100) < 100 && step > 0) step--
    dmarc += step === 2 ? 25 : step === 1 ? 18 : 5
    if (!f.dmarcSubdomainWeaker) dmarc += 3
    if (f.dmarcRua) dmarc += 2
  }
  let spf = 0
  if (f.spf !== 'none' && f.spf !== 'unknown' && f.spfRecordValid) {
    spf += 10
    const p = f.spfPassAllViaInclude ? 'pass' : f.spfPolicy
    spf += p === 'fail' ? 12 : p === 'softfail' ? 10 : p === 'neutral' ? 2 : 0
    if (f.spf === 'ok') spf += 8
  }
  const dkim = f.dkim === 'yes' ? 15 : 0
  const mx = f.mx === 'yes' ? 10 : 0
  const bimi = f.bimi === 'yes' ? 5 : 0
  return { dmarc, spf, dkim, mx, bimi, total: dmarc + spf + dkim + mx + bimi }
}

function capsOf(f: GradeFacts): Array<{ id: GradeCapId; maxGrade: Grade }> {
  const fired = new Set<GradeCapId>()
  if (f.spfPolicy === 'pass' || f.spfPassAllViaInclude) fired.add('spf_pass_all')
  if (f.dmarc === 'none' || f.dmarc === 'invalid') fired.add('no_dmarc')
  if (f.dmarc === 'ok' && f.dmarcPolicy === 'none') fired.add('dmarc_none')
  if (f.spf === 'permerror') fired.add('spf_permerror')
  if (f.dmarc === 'ok' && f.dmarcPolicy === 'quarantine') fired.add('dmarc_quarantine')
  if (f.dkim === 'no') fired.add('no_dkim')
  return GRADE_RUBRIC.caps.filter((c) => fired.has(c.id))
}

function meetsAPlus(f: GradeFacts): boolean {
  return (
    f.dmarc === 'ok' &&
    f.dmarcPolicy === 'reject' &&
    (f.dmarcPct ?? 100) === 100 &&
    f.spf === 'ok' &&
    f.spfPolicy === 'fail' &&
    !f.spfPassAllViaInclude &&
    f.dkim === 'yes' &&
    f.bimi === 'yes'
  )
}

/** The letter for facts, without the DNS-failure floor. */
function letterOf(f: GradeFacts): { grade: Grade; pointsGrade: Grade; points: GradePoints; caps: GradeCapId[] } {
  const points = pointsOf(f)
  const pointsGrade = letterFromPoints(points.total)
  let grade = pointsGrade
  const caps: GradeCapId[] = []
  for (const cap of capsOf(f)) {
    grade = lower(grade, cap.maxGrade)
    caps.push(cap.id)
  }
  if (grade === 'A+' && !meetsAPlus(f)) {
    grade = 'A'
    caps.push('a_plus_requirements')
  }
  return { grade, pointsGrade, points, caps }
}

/** The same facts with every unknown part replaced by its best possible answer. */
function bestCase(f: GradeFacts): GradeFacts {
  const best = { ...f }
  if (f.mx === 'unknown') best.mx = 'yes'
  if (f.dkim === 'unknown') best.dkim = 'yes'
  if (f.bimi === 'unknown') best.bimi = 'yes'
  if (f.dmarc === 'unknown') {
    Object.assign(best, { dmarc: 'ok', dmarcPolicy: 'reject', dmarcPct: 100, dmarcSubdomainWeaker: false, dmarcRua: true })
  }
  if (f.spf === 'unknown') {
    best.spf = 'ok'
    best.spfRecordValid = true
    if (f.spfPolicy === null) best.spfPolicy = 'fail'
  }
  return best
}

function describe(f: GradeFacts, caps: GradeCapId[]): string[] {
  const notes: string[] = []
  const capNote: Record<GradeCapId, string> = {
    spf_pass_all: 'SPF lets every sender pass (+all): grade F.',
    no_dmarc: 'No usable DMARC record: at most D.',
    dmarc_none: 'DMARC p=none only monitors: at most C.',
    spf_permerror: 'SPF permerror (receivers ignore the record): at most C.',
    dmarc_quarantine: 'DMARC p=quarantine instead of reject: at most B.',
    no_dkim: 'No DKIM key at the probed selectors: at most B.',
    a_plus_requirements: 'A+ needs DMARC p=reject at pct 100, SPF -all, DKIM and BIMI.',
    dns_failure_not_f: 'Some DNS lookups failed: the grade is partial and not lowered to F by the failure.',
  }
  for (const c of caps) notes.push(capNote[c])
  if (f.mx === 'no') notes.push('No MX record.')
  if (f.spf === 'none') notes.push('No SPF record.')
  if (f.bimi === 'no') notes.push('No BIMI record.')
  return notes
}

/**
 * Grades the facts with the rubric of docs/scoring.md. Pure.
 *
 * @example
 * gradeEmailAuth({ mx: 'yes', spf: 'ok', spfRecordValid: true, spfPolicy: 'fail', spfPassAllViaInclude: false,
 *   dmarc: 'ok', dmarcPolicy: 'reject', dmarcPct: 100, dmarcSubdomainWeaker: false, dmarcRua: true,
 *   dkim: 'yes', bimi: 'yes' }).grade // 'A+'
 */
export function gradeEmailAuth(facts: GradeFacts): GradeResult {
  const partial =
    facts.mx === 'unknown' || facts.spf === 'unknown' || facts.dmarc === 'unknown' || facts.dkim === 'unknown' || facts.bimi === 'unknown'
  const result = letterOf(facts)
  let grade = result.grade
  const caps = [...result.caps]
  if (partial && grade === 'F' && letterOf(bestCase(facts)).grade !== 'F') {
    grade = 'D'
    caps.push('dns_failure_not_f')
  }
  return { grade, pointsGrade: result.pointsGrade, points: result.points, caps, partial, notes: describe(facts, caps) }
}

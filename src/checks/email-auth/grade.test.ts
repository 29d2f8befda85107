import { describe, expect, it } from 'vitest'
import { GRADE_RUBRIC, gradeEmailAuth, type GradeFacts } from './grade.js'

const PERFECT: GradeFacts = {
  mx: 'yes',
  spf: 'ok',
  spfRecordValid: true,
  spfPolicy: 'fail',
  spfPassAllViaInclude: false,
  dmarc: 'ok',
  dmarcPolicy: 'reject',
  dmarcPct: 100,
  dmarcSubdomainWeaker: false,
  dmarcRua: true,
  dkim: 'yes',
  bimi: 'yes',
}

const NOTHING: GradeFacts = {
  ...PERFECT,
  mx: 'no',
  spf: 'none',
  spfRecordValid: false,
  spfPolicy: null,
  dmarc: 'none',
  dmarcPolicy: null,
  dmarcPct: null,
  dmarcRua: false,
  dkim: 'no',
  bimi: 'no',
}

const grade = (over: Partial<GradeFacts>) => gradeEmailAuth({ ...PERFECT, ...over })

describe('GRADE_RUBRIC', () => {
  it('weights the parts as the documented rubric says and the items add up', () => {
    expect(GRADE_RUBRIC.points.map((p) => [p.part, p.max])).toEqual([
      ['DMARC', 40], ['SPF', 30], ['DKIM', 15], ['MX', 10], ['BIMI', 5],
    ])
    for (const part of GRADE_RUBRIC.points) expect(part.items.reduce((s, i) => s + i.points, 0)).toBe(part.max)
    expect(GRADE_RUBRIC.thresholds.map((t) => t.grade)).toEqual(['A+', 'A', 'B', 'C', 'D', 'F'])
  })
})

describe('gradeEmailAuth', () => {
  it('A+ for everything in place (100 points)', () => {
    const g = gradeEmailAuth(PERFECT)
    expect(g).toMatchObject({ grade: 'A+', partial: false, caps: [] })
    expect(g.points).toEqual({ dmarc: 40, spf: 30, dkim: 15, mx: 10, bimi: 5, total: 100 })
  })

  it('A+ needs p=reject at pct 100, -all, DKIM and BIMI', () => {
    expect(grade({ bimi: 'no' }).grade).toBe('A')
    expect(grade({ spfPolicy: 'softfail' }).grade).toBe('A')
    const pct = grade({ dmarcPct: 50 })
    expect(pct.grade).toBe('A')
    expect(pct.points.dmarc).toBe(33) // reject at pct 50 scores like quarantine
    expect(grade({ dmarcRua: false }).grade).toBe('A+') // 98 points, every requirement met
  })

  it('caps: quarantine or no DKIM → B; p=none or SPF permerror → C; no DMARC → D; +all → F', () => {
    expect(grade({ dmarcPolicy: 'quarantine' })).toMatchObject({ grade: 'B', caps: ['dmarc_quarantine'] })
    expect(grade({ dkim: 'no' })).toMatchObject({ grade: 'B', caps: ['no_dkim'] })
    expect(grade({ dmarcPolicy: 'none' })).toMatchObject({ grade: 'C', caps: ['dmarc_none'] })
    expect(grade({ spf: 'permerror' })).toMatchObject({ grade: 'C', caps: ['spf_permerror'] })
    expect(grade({ spf: 'permerror', spfRecordValid: false, spfPolicy: null }).grade).toBe('C')
    expect(grade({ dmarc: 'none', dmarcPolicy: null })).toMatchObject({ grade: 'D', caps: ['no_dmarc'] })
    expect(grade({ dmarc: 'invalid', dmarcPolicy: null }).grade).toBe('D')
    expect(grade({ spfPolicy: 'pass' })).toMatchObject({ grade: 'F', caps: ['spf_pass_all'] })
    expect(grade({ spfPassAllViaInclude: true }).grade).toBe('F')
  })

  it('letters from points when no cap applies', () => {
    // no SPF at all: 40 + 15 + 10 + 5 = 70 → B
    expect(grade({ spf: 'none', spfRecordValid: false, spfPolicy: null })).toMatchObject({ grade: 'B', pointsGrade: 'B' })
    // no SPF, no MX, no BIMI: 55 → C
    expect(grade({ spf: 'none', spfRecordValid: false, spfPolicy: null, mx: 'no', bimi: 'no' }).grade).toBe('C')
    // nothing at all: 0 points → F
    expect(gradeEmailAuth(NOTHING)).toMatchObject({ grade: 'F', pointsGrade: 'F' })
    // SPF ~all + MX only: 38 → D; ?all + MX: 30 → F
    expect(gradeEmailAuth({ ...NOTHING, mx: 'yes', spf: 'ok', spfRecordValid: true, spfPolicy: 'softfail' }).grade).toBe('D')
    expect(gradeEmailAuth({ ...NOTHING, mx: 'yes', spf: 'ok', spfRecordValid: true, spfPolicy: 'neutral' }).grade).toBe('F')
  })

  it('DNS failures make the grade partial and never produce an F', () => {
    const all = gradeEmailAuth({ ...NOTHING, mx: 'unknown', spf: 'unknown', dmarc: 'unknown', dkim: 'unknown', bimi: 'unknown' })
    expect(all).toMatchObject({ grade: 'D', partial: true })
    expect(all.caps).toContain('dns_failure_not_f')
    // an unknown part triggers no cap: DMARC timed out, the rest perfect → points 60 → C (not the no-DMARC D)
    expect(grade({ dmarc: 'unknown', dmarcPolicy: null, dmarcPct: null })).toMatchObject({ grade: 'C', partial: true })
    // DKIM unknown: no "no DKIM" cap
    expect(grade({ dkim: 'unknown' })).toMatchObject({ grade: 'A', partial: true })
  })

  it('an F stays F when the facts obtained force it whatever the failed parts say', () => {
    const plusAll = gradeEmailAuth({ ...NOTHING, spf: 'ok', spfRecordValid: true, spfPolicy: 'pass', dmarc: 'unknown', dkim: 'unknown' })
    expect(plusAll).toMatchObject({ grade: 'F', partial: true })
    // no MX, SPF, DMARC known; only BIMI failed: at most 5 more points → still F
    expect(gradeEmailAuth({ ...NOTHING, bimi: 'unknown' })).toMatchObject({ grade: 'F', partial: true })
  })
})

/**
 * The test-input tables of docs/test-mode.md (generated from each check's `testInputs`) say true things: every row's stated
 * verdict, action, score, confidence and "free" match what test mode answers for that input.
 */
import { describe, expect, it } from 'vitest'
import { creditsFor } from '../src/billing.js'
import { CHECKS, type SingleLookupType } from '../src/checks/registry.js'
import { isRiskcheckError } from '../src/errors.js'
import { createRiskcheck } from '../src/riskcheck.js'

const rc = createRiskcheck({ mode: 'test', now: () => new Date('2026-11-22T00:00:00Z') })

/** What a note claims, parsed: `→ risky, verify (score 40, medium confidence)`, `(free)`, `INVALID_INPUT`. */
function claims(note: string) {
  const after = note.includes('→') ? note.slice(note.lastIndexOf('→') + 1) : ''
  const m = /^\s*(valid|invalid|risky|unknown)(?:\s*\([a-z_, ]+\))?,\s*(approve|verify|review|block)\b/.exec(after)
  return {
    status: m?.[1],
    action: m?.[2],
    score: /\bscore (\d+)(\+)?/.exec(note),
    confidence: /\b(low|medium|high) confidence\b/.exec(note)?.[1],
    free: /(?<![-\w])free\b/.test(note), // not 'toll-free'
    rejected: /INVALID_INPUT/.test(note),
  }
}

describe('the test-input tables are true', () => {
  for (const [type, def] of Object.entries(CHECKS) as Array<[SingleLookupType, (typeof CHECKS)[SingleLookupType]]>) {
    it(type, async () => {
      const wrong: string[] = []
      const check = (ok: boolean, what: string, t: { input: string; note: string }) => {
        if (!ok) wrong.push(`${JSON.stringify(t.input)} — ${what} — note: ${t.note}`)
      }
      for (const t of def.testInputs) {
        const c = claims(t.note)
        let r
        try {
          r = await rc.lookup(type, t.input, (t as { options?: object }).options as never)
        } catch (e) {
          check(isRiskcheckError(e, 'INVALID_INPUT') && c.rejected, `rejected with ${String((e as Error).message)}`, t)
          continue
        }
        check(!c.rejected, 'answered, not rejected', t)
        if (c.status) check(r.verdict.status === c.status, `status ${r.verdict.status}`, t)
        if (c.action) check(r.recommendation.action === c.action, `action ${r.recommendation.action}`, t)
        if (c.score) check(c.score[2] ? r.risk.score >= Number(c.score[1]) : r.risk.score === Number(c.score[1]), `score ${r.risk.score}`, t)
        if (c.confidence) check(r.risk.confidence === c.confidence, `confidence ${r.risk.confidence}`, t)
        if (type === 'ip') {
          const country = (r.details as { location: { country_code: string | null } }).location.country_code
          const located = /located in (?:the )?([A-Z]{2})\b/.exec(t.note)?.[1]
          if (located) check(country === located, `located in ${country}`, t)
          if (/location null/.test(t.note)) check(country === null, `located in ${country}`, t)
          if (/location null/.test(t.note) && located) check(false, 'the note says both "location null" and "located in"', t)
        }
        const free = creditsFor(type, r.details as never) === 0
        check(free === c.free, free ? 'free of charge, but the note does not say so' : 'billed, but the note says free', t)
      }
      expect(wrong).toEqual([])
    })
  }
})

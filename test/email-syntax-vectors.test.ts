/**
 * Syntax conformance table: cases from public email-validation test suites (isemail, python
 * email-validator, validator.js), each with the suite it came from and what riskcheck expects.
 * Data and sources: test/fixtures/email-syntax/vectors.json and SOURCES.md beside it.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { EMAIL_SYNTAX_ERRORS, parseEmailAddress, type EmailSyntaxError } from '../src/checks/email/syntax.js'

interface Vector {
  input: string
  ok: boolean
  asciiDomain?: string
  reason?: EmailSyntaxError
  source: string
  upstream: string
  note?: string
}

interface VectorFile {
  sources: Record<string, { repository: string; path: string; commit: string | null; license: string }>
  cases: Vector[]
}

const file = JSON.parse(
  readFileSync(new URL('./fixtures/email-syntax/vectors.json', import.meta.url), 'utf8'),
) as VectorFile

/** printable label for a case (control and invisible characters escaped) */
function label(v: Vector): string {
  const shown = JSON.stringify(v.input).replace(/[^\x20-\x7e]/gu, (ch) => `\\u{${(ch.codePointAt(0) ?? 0).toString(16)}}`)
  const short = shown.length > 70 ? `${shown.slice(0, 60)}…(${v.input.length} chars)` : shown
  return `[${v.source}] ${short} → ${v.ok ? `ok ${v.asciiDomain}` : v.reason}`
}

describe('email syntax vectors from public test suites', () => {
  it('has at least 60 cases, every one with a named source that is described', () => {
    expect(file.cases.length).toBeGreaterThanOrEqual(60)
    for (const v of file.cases) {
      expect(file.sources[v.source], `source ${v.source}`).toBeDefined()
      expect(v.upstream.length).toBeGreaterThan(0)
      if (v.ok) expect(typeof v.asciiDomain).toBe('string')
      else expect(EMAIL_SYNTAX_ERRORS).toContain(v.reason)
    }
    // each of the three suites contributes
    const counts = new Map<string, number>()
    for (const v of file.cases) counts.set(v.source, (counts.get(v.source) ?? 0) + 1)
    for (const key of ['isemail', 'email-validator-py', 'validator.js']) expect(counts.get(key) ?? 0).toBeGreaterThanOrEqual(20)
  })

  it.each(file.cases.map((v) => [label(v), v] as const))('%s', (_name, v) => {
    const r = parseEmailAddress(v.input)
    if (v.ok) {
      expect(r).toMatchObject({ ok: true, asciiDomain: v.asciiDomain })
    } else {
      expect(r).toMatchObject({ ok: false, reason: v.reason })
    }
  })

  it('covers every rejection reason somewhere in the table (except three the suites lack; unit-tested in syntax.test.ts)', () => {
    const seen = new Set(file.cases.filter((v) => !v.ok).map((v) => v.reason))
    const notInSuites = new Set<EmailSyntaxError>(['not_a_string', 'fullwidth_at', 'domain_too_long'])
    const missing = EMAIL_SYNTAX_ERRORS.filter((r) => !notInSuites.has(r) && !seen.has(r))
    expect(missing).toEqual([])
  })
})

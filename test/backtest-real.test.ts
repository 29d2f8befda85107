/**
 * Backtests over answers the real lookups wrote (test mode: every documented input of every lookup, combined checks
 * in every context, a bulk job as JSON rows and as results.csv): re-scoring under the policy that answered changes
 * nothing, and under another policy each change is exactly what that policy gives for the stored factors.
 */
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHECKS, type SingleLookupType } from '../src/checks/registry.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { BULK_TYPES, CONTEXTS, type BulkResultRow, type CheckDetails, type LookupResult } from '../src/schema.js'
import { backtest, createPolicy, evaluate, readResults, type FactorCode } from '../src/scoring/index.js'

let rc: Riskcheck
const singles: LookupResult[] = []
const checks: Array<LookupResult<CheckDetails>> = []
const rows: BulkResultRow[] = []
let csv = ''

beforeAll(async () => {
  rc = createRiskcheck({ mode: 'test', now: () => new Date('2026-06-01T00:00:00Z') })
  for (const type of Object.keys(CHECKS) as SingleLookupType[])
    for (const t of CHECKS[type].testInputs) {
      try {
        singles.push(JSON.parse(JSON.stringify(await rc.lookup(type, t.input))))
      } catch {
        // an input that cannot be looked up at all (an error, not an answer)
      }
    }
  const emails = CHECKS.email.testInputs.map((t) => t.input).slice(0, 8)
  const ips = CHECKS.ip.testInputs.map((t) => t.input).slice(0, 6)
  for (const context of [null, ...CONTEXTS])
    for (const [i, email] of emails.entries())
      checks.push(JSON.parse(JSON.stringify(await rc.check({ email, ip: ips[i % ips.length]!, phone: i % 2 ? '+12015550102' : null, context }))))
  for (const type of BULK_TYPES) {
    const job = await rc.bulk.create({ type, inputs: CHECKS[type].testInputs.map((t) => t.input) })
    await rc.bulk.waitFor(job.id)
    for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
      const page = await rc.bulk.results(job.id, { cursor, limit: 1000 })
      rows.push(...(JSON.parse(JSON.stringify(page.data)) as BulkResultRow[]))
      cursor = page.next_cursor
    }
    if (type === 'email') for await (const chunk of await rc.bulk.resultsCsv(job.id)) csv += String(chunk)
  }
})
afterAll(() => rc.close())

describe('backtest over answers riskcheck wrote', () => {
  it('the answers cover every action and a good part of the vocabulary', () => {
    const all = [...singles, ...checks]
    expect(new Set(all.map((r) => r.recommendation.action))).toEqual(new Set(['approve', 'verify', 'review', 'block']))
    expect(new Set(all.flatMap((r) => r.risk.factors)).size).toBeGreaterThan(25)
    expect(rows.some((r) => r.error !== null)).toBe(true)
  })

  it('re-scoring under the policy that answered changes nothing (single lookups, combined checks in their context, bulk rows, results.csv)', async () => {
    for (const [name, source] of [
      ['singles', singles],
      ['checks', checks],
      ['rows', rows],
    ] as const) {
      const r = await backtest(source, rc.policy)
      expect(r.changed, name).toBe(0)
      expect(r.skipped.no_factors + r.skipped.not_a_result, name).toBe(0)
      expect(r.scored, name).toBe(source.length - r.skipped.error)
    }
    const fromCsv = await backtest(readResults(Readable.from([csv]), { format: 'csv' }), rc.policy)
    expect(fromCsv.changed).toBe(0)
    expect(fromCsv.scored).toBe(rows.filter((r) => r.error === null && CHECKS.email.testInputs.some((t) => t.input === r.input)).length)
  })

  it('a combined check carries the factors of each part: the parts and the cross-signals make up its factors', () => {
    for (const c of checks) {
      const parts = [c.details.email, c.details.ip, c.details.phone].flatMap((p) => p?.risk.factors ?? [])
      const signals = (['email_ip_country_mismatch', 'phone_ip_country_mismatch', 'disposable_and_vpn'] as const).filter((f) => c.risk.factors.includes(f))
      expect(new Set([...parts, ...signals])).toEqual(new Set(c.risk.factors))
    }
  })

  it('under another policy every change is what that policy gives for the stored factors, in the stored context', async () => {
    const policy = createPolicy({
      weights: { email_disposable: 90, ip_vpn: 60, email_catch_all: 45 },
      thresholds: { medium: 30 },
      rules: ['unusable_input_blocks', { name: 'tor_blocks', when: { any: ['ip_tor'] }, action: 'block' }],
    })
    const answers = [...singles, ...checks]
    const r = await backtest(answers, policy)
    let expected = 0
    for (const a of answers) {
      const context = a.request.type === 'check' ? (a.details as CheckDetails).context : null
      const next = evaluate(a.risk.factors as FactorCode[], { policy, context })
      if (next.action !== a.recommendation.action) expected++
      const change = r.changes.find((c) => c.input === (typeof a.request.input === 'string' ? a.request.input : '') && c.type === a.request.type && c.context === context)
      if (change && typeof a.request.input === 'string') expect(change.candidate).toEqual({ action: next.action, score: next.score, rule: next.rule })
    }
    expect(expected).toBeGreaterThan(5)
    expect(r.changed).toBe(expected)
  })
})

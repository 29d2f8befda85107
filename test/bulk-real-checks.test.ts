/**
 * The bulk engine over the real checks, with no network: every type's documented test-mode inputs give the same rows
 * as single lookups, and offline phone/IP jobs are folded and billed per the billing table.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createBulkEngine } from '../src/bulk/index.js'
import type { BulkEngine } from '../src/bulk/types.js'
import { CHECKS } from '../src/checks/registry.js'
import { createMemoryLedger } from '../src/credits.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { BULK_TYPES, BulkJobSchema, BulkResultRowSchema, BULK_DETAILS_SCHEMAS, type BulkResultRow } from '../src/schema.js'
import { schemaErrors } from './validate.js'

const open: Array<{ rc: Riskcheck; bulk: BulkEngine }> = []
afterEach(async () => {
  for (const { rc, bulk } of open.splice(0)) {
    await bulk.close()
    await rc.close()
  }
})

function setup(options: Parameters<typeof createRiskcheck>[0]) {
  const rc = createRiskcheck(options)
  const bulk = createBulkEngine(rc.env)
  open.push({ rc, bulk })
  return { rc, bulk }
}

async function rowsOf(bulk: BulkEngine, id: string): Promise<BulkResultRow[]> {
  const out: BulkResultRow[] = []
  let cursor: string | null = null
  do {
    const page = await bulk.results(id, { cursor, limit: 1000 })
    out.push(...page.data)
    cursor = page.next_cursor
  } while (cursor)
  return out
}

describe('bulk over the real checks', () => {
  it('test mode: each type’s documented inputs give the rows single lookups give', async () => {
    const now = new Date('2026-11-22T00:00:00Z')
    const { rc, bulk } = setup({ mode: 'test', now: () => now })
    for (const type of BULK_TYPES) {
      const inputs = CHECKS[type].testInputs.map((t) => t.input)
      const job = await bulk.create({ type, inputs })
      const done = await bulk.waitFor(job.id)
      expect(schemaErrors(BulkJobSchema, done)).toEqual([])
      expect(done.status).toBe('completed')
      expect(done.credits_used).toBe(0)
      const rows = await rowsOf(bulk, job.id)
      expect(rows).toHaveLength(done.unique_inputs)
      expect(done.unique_inputs + done.results.skipped).toBe(inputs.length)
      const byInput = new Map(rows.map((r) => [r.input, r]))
      for (const input of inputs) {
        const row = byInput.get(input)
        let single: Awaited<ReturnType<Riskcheck['lookup']>> | null = null
        let error: string | null = null
        try {
          single = await rc.lookup(type, input)
        } catch (e) {
          error = (e as { code?: string }).code ?? 'thrown'
        }
        if (!row) continue // folded with an earlier spelling of the same input
        expect(schemaErrors(BulkResultRowSchema, row)).toEqual([])
        if (single) {
          expect(row, `${type} ${input}`).toMatchObject({
            action: single.recommendation.action,
            status: single.verdict.status,
            reason: single.verdict.reason,
            risk_score: single.risk.score,
            factors: single.risk.factors,
            error: null,
          })
          // a single lookup's details plus velocity (null: off); a bulk row is not traffic and carries none
          const { velocity: _, ...singleDetails } = single.details as Record<string, unknown>
          expect(row.details).toEqual(singleDetails)
          expect(schemaErrors(BULK_DETAILS_SCHEMAS[type], row.details)).toEqual([])
        } else {
          expect(row.error, `${type} ${input}`).toMatch(new RegExp(`^${error}: `))
          expect(row.action).toBeNull()
        }
      }
    }
  })

  it('offline phones: folded by E.164 across spellings, invalid numbers free, the country option applied', async () => {
    const ledger = createMemoryLedger(100)
    const { bulk } = setup({ offline: true, credits: ledger })
    const inputs = ['+1 415 555 2671', '+1 (415) 555-2671', '+44 20 7946 0958', 'not a number', '020 7946 0958', '']
    const job = await bulk.create({ type: 'phone', inputs, country: 'gb' })
    // +14155552671 (two spellings), +442079460958 (the national spelling read as GB), the junk
    expect(job.unique_inputs).toBe(3)
    expect(job.results.skipped).toBe(3)
    const done = await bulk.waitFor(job.id)
    const rows = await rowsOf(bulk, job.id)
    const e164 = rows.map((r) => (r.details as { e164: string | null }).e164)
    expect(rows.map((r) => r.input)).toEqual(['+1 415 555 2671', '+44 20 7946 0958', 'not a number'])
    expect(e164).toEqual(['+14155552671', '+442079460958', null])
    const invalid = rows.filter((r) => r.status === 'invalid')
    expect(invalid.every((r) => r.credits_used === 0 && r.action === 'block')).toBe(true)
    const billed = rows.reduce((n, r) => n + r.credits_used, 0)
    expect(done.credits_used).toBe(billed)
    expect(billed).toBe(rows.length - invalid.length)
    expect(await ledger.balance()).toBe(100 - billed)
    for (const r of rows) expect(schemaErrors(BULK_DETAILS_SCHEMAS.phone, r.details)).toEqual([])
  })

  it('offline IPs: invalid inputs are free error rows; answers are complete (reverse DNS not asked), so nothing to retry', async () => {
    const ledger = createMemoryLedger(10)
    const { bulk } = setup({ offline: true, credits: ledger })
    const job = await bulk.create({ type: 'ip', inputs: ['8.8.8.8', '008.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '10.0.0.1', 'nope'] })
    const done = await bulk.waitFor(job.id)
    expect(done).toMatchObject({ unique_inputs: 6, credits_used: 4 })
    expect(done.results.errors).toBe(2)
    expect(await ledger.balance()).toBe(6)
    const rows = await rowsOf(bulk, job.id)
    expect(rows.find((r) => r.input === '10.0.0.1')).toMatchObject({ status: 'invalid' })
    expect(rows.find((r) => r.input === '1.1.1.1')!.details).toMatchObject({ location: { country_code: 'AU' } })
    for (const r of rows) if (r.error === null) expect(r.details).toMatchObject({ reverse_dns: null })
    // offline mode does not ask reverse DNS: no row failed for a temporary reason, and invalid inputs are not retried
    await expect(bulk.retry(job.id)).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
  })
})

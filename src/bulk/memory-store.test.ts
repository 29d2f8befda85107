import { describe, expect, it } from 'vitest'
import type { BulkJob } from '../schema.js'
import { errorRow, pendingRow } from './fold.js'
import { createMemoryBulkStore } from './memory-store.js'
import type { BulkRowRecord } from './types.js'

const job = (id: string, unique: number, expires = '2026-11-29T00:00:00.000Z'): BulkJob => ({
  id,
  name: id,
  type: 'phone_type',
  status: 'queued',
  total_rows: unique,
  unique_inputs: unique,
  processed: 0,
  credits_used: 0,
  results: { approve: 0, verify: 0, review: 0, block: 0, errors: 0, skipped: 0, cache_hits: 0 },
  created_at: '2026-11-22T00:00:00.000Z',
  completed_at: null,
  expires_at: expires,
})

const done = (index: number, input: string, action: BulkRowRecord['action'], details: Record<string, unknown>): BulkRowRecord => ({
  ...pendingRow(index, input),
  state: 'done',
  action,
  status: 'valid',
  reason: 'The number is valid — “ünïcödé” reasons survive.',
  risk_score: 12.5,
  credits_used: 1,
  cache_hit: true,
  factors: ['phone_landline', 'phone_line_type_unknown'],
  details,
})

describe('createMemoryBulkStore', () => {
  it('keeps rows out of the heap and gives them back exactly, with state, action and retry flags', () => {
    const store = createMemoryBulkStore()
    const rows = [pendingRow(0, 'a'), errorRow(1, '=bad', 'INVALID_INPUT: no', false), pendingRow(2, 'c')]
    const rec = store.insertJob({ job: job('j1', 3), reserved: 2, options: { country: 'US', smtp: null } }, rows) as { seq: number }
    expect(rec.seq).toBe(1)
    expect(store.pendingRows('j1')).toEqual([
      { index: 0, input: 'a' },
      { index: 2, input: 'c' },
    ])
    const details = { e164: '+1', country: 'US', valid: true, line_type: 'mobile', numbering_plan_type: null }
    const odd = { not: { the: 'schema' } }
    store.commitRows('j1', [done(0, 'a', 'approve', details), { ...done(2, 'c', 'block', odd), retryable: true }], { ...job('j1', 3), processed: 3 })
    const got = store.listRows('j1', { fromIndex: 0, toIndex: null, action: null, limit: 10 }) as BulkRowRecord[]
    expect(got).toEqual([done(0, 'a', 'approve', details), rows[1], { ...done(2, 'c', 'block', odd), retryable: true }])
    expect(store.listRows('j1', { fromIndex: 0, toIndex: null, action: 'block', limit: 10 })).toHaveLength(1)
    expect(store.listRows('j1', { fromIndex: 0, toIndex: 1, action: null, limit: 10 })).toHaveLength(1)
    expect(store.listRows('j1', { fromIndex: 1, toIndex: null, action: null, limit: 1 })).toEqual([rows[1]])
    expect(store.listRetryableInputs('j1')).toEqual(['c'])
    expect((store.getJob('j1') as { job: BulkJob }).job.processed).toBe(3)
    expect(store.bytes).toBeGreaterThan(0)
  })

  it('lists newest first, finds unfinished jobs and deletes expired ones', () => {
    const store = createMemoryBulkStore()
    store.insertJob({ job: job('old', 0, '2026-11-23T00:00:00.000Z'), reserved: 0, options: { country: null, smtp: null } }, [])
    store.insertJob({ job: { ...job('new', 0), status: 'completed' }, reserved: 0, options: { country: null, smtp: null } }, [])
    const list = store.listJobs({ beforeSeq: null, limit: 10 }) as Array<{ job: BulkJob; seq: number }>
    expect(list.map((r) => r.job.id)).toEqual(['new', 'old'])
    expect((store.listJobs({ beforeSeq: list[0]!.seq, limit: 10 }) as unknown[]).length).toBe(1)
    expect((store.listUnfinishedJobs() as Array<{ job: BulkJob }>).map((r) => r.job.id)).toEqual(['old'])
    expect(store.deleteExpired(Date.parse('2026-11-23T00:00:00.000Z'))).toEqual(['old'])
    expect(store.getJob('old')).toBeUndefined()
    expect(store.size).toBe(1)
  })
})

import { describe, expect, it } from 'vitest'
import { schemaErrors } from '../../test/validate.js'
import { BulkJobSchema, EventPayloadSchema, type BulkJob } from '../schema.js'
import { formatEventLine } from './format.js'
import {
  CREDIT_ALERTS_RESET,
  buildBulkCompletedEvent,
  buildCreditsAddedEvent,
  buildCreditsDepletedEvent,
  buildCreditsLowEvent,
  buildPingEvent,
  computeCreditAlert,
  createDeliveryId,
  createEventId,
  createWebhookSecret,
  matchesSubscription,
  parseEventSubscription,
  type CreditAlertState,
} from './events.js'

const now = new Date('2026-03-15T10:20:30.900Z')
const orgId = 'org_123'

const SAMPLE_JOB: BulkJob = {
  id: 'bulk_abc',
  name: 'March leads',
  type: 'email',
  status: 'completed',
  total_rows: 9812,
  unique_inputs: 9700,
  processed: 9700,
  credits_used: 9900,
  results: { approve: 8000, verify: 900, review: 488, block: 312, errors: 0, skipped: 112, cache_hits: 40 },
  created_at: '2026-03-15T09:00:00.000Z',
  completed_at: '2026-03-15T10:20:30.000Z',
  expires_at: '2026-03-22T09:00:00.000Z',
}

describe('event builders', () => {
  const events = [
    buildCreditsLowEvent({ orgId, now, balance: 240, thresholdPercent: 25, monthlyCredits: 10000 }),
    buildCreditsDepletedEvent({ orgId, now, balance: 0, monthlyCredits: 10000 }),
    buildCreditsAddedEvent({ orgId, now, amount: 10000, balance: 10240, reason: 'period_renewal' }),
    buildBulkCompletedEvent({ orgId, now, job: SAMPLE_JOB }),
    buildPingEvent({ orgId, now, endpointId: 'we_1' }),
  ]

  it('every payload matches EventPayloadSchema', () => {
    for (const e of events) expect(schemaErrors(EventPayloadSchema, e), e.type).toEqual([])
  })

  it('has the documented envelope: evt_ id, type, unix-second created, api_version "1", org_id', () => {
    for (const e of events) {
      expect(e.id).toMatch(/^evt_[0-9a-f]{24}$/)
      expect(e.created).toBe(Math.floor(now.getTime() / 1000))
      expect(e.api_version).toBe('1')
      expect(e.org_id).toBe(orgId)
      expect(e.test_mode).toBe(false)
    }
    expect(events.map((e) => e.type)).toEqual(['credits.low', 'credits.depleted', 'credits.added', 'bulk.completed', 'ping'])
  })

  it('test_mode: true only when the builder is told a test key caused the event', () => {
    const job = buildBulkCompletedEvent({ orgId, now, job: SAMPLE_JOB, testMode: true })
    expect(job.test_mode).toBe(true)
    expect(schemaErrors(EventPayloadSchema, job)).toEqual([])
    expect(Object.keys(job)).toEqual(['id', 'type', 'created', 'api_version', 'org_id', 'test_mode', 'data'])
    expect(formatEventLine(job)).toMatch(/^riskcheck \(test mode\): bulk job /)
    expect(formatEventLine(events[3]!)).toMatch(/^riskcheck: bulk job /)
  })

  it('carries the documented data fields', () => {
    expect(events[0]?.data).toEqual({ balance: 240, threshold_percent: 25, monthly_credits: 10000 })
    expect(events[1]?.data).toEqual({ balance: 0, monthly_credits: 10000 })
    expect(events[2]?.data).toEqual({ amount: 10000, balance: 10240, reason: 'period_renewal' })
    expect(events[3]?.data).toEqual(SAMPLE_JOB)
    expect(schemaErrors(BulkJobSchema, events[3]?.data)).toEqual([])
    expect(events[4]?.data).toEqual({ endpoint_id: 'we_1', message: expect.any(String) })
  })

  it('keeps a given id and copies the job (later changes do not leak in)', () => {
    const job = structuredClone(SAMPLE_JOB)
    const e = buildBulkCompletedEvent({ orgId, now, job, id: 'evt_fixed' })
    job.results.block = 0
    expect(e.id).toBe('evt_fixed')
    expect((e.data.results as { block: number }).block).toBe(312)
  })

  it('rejects bad inputs (programming errors) with TypeError', () => {
    expect(() => buildCreditsLowEvent({ orgId, now, balance: -1, thresholdPercent: 25, monthlyCredits: 1 })).toThrow(TypeError)
    expect(() => buildCreditsAddedEvent({ orgId, now, amount: 1, balance: 1, reason: 'gift' as 'top_up' })).toThrow(TypeError)
    expect(() => buildPingEvent({ orgId: '', now, endpointId: 'we_1' })).toThrow(TypeError)
    expect(() => buildPingEvent({ orgId, now: new Date(NaN), endpointId: 'we_1' })).toThrow(TypeError)
  })
})

describe('ids', () => {
  it('are prefixed and unique', () => {
    const ids = new Set(Array.from({ length: 200 }, () => createEventId()))
    expect(ids.size).toBe(200)
    expect(createDeliveryId()).toMatch(/^dlv_[0-9a-f]{24}$/)
    expect(createWebhookSecret()).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/)
  })
})

describe('matchesSubscription', () => {
  it.each([
    [['*'], 'credits.low', true],
    [['*'], 'bulk.completed', true],
    [['credits.low'], 'credits.low', true],
    [['credits.low'], 'credits.depleted', false],
    [['bulk.completed', 'credits.added'], 'credits.added', true],
    [[], 'credits.low', false],
    [['*'], 'ping', false],
    [['ping'], 'ping', false],
  ] as const)('%j receives %s: %s', (events, type, expected) => {
    expect(matchesSubscription(events, type)).toBe(expected)
  })
})

describe('parseEventSubscription', () => {
  it('accepts known types or exactly *', () => {
    expect(parseEventSubscription(['*'])).toEqual({ ok: true, events: ['*'] })
    expect(parseEventSubscription(['credits.low', 'bulk.completed', 'credits.low'])).toEqual({
      ok: true,
      events: ['credits.low', 'bulk.completed'],
    })
  })
  it.each([[[]], [['*', 'credits.low']], [['credits.lowish']], [[1]], ['*'], [null]])('refuses %j', (v) => {
    expect(parseEventSubscription(v).ok).toBe(false)
  })
})

describe('computeCreditAlert', () => {
  const monthlyCredits = 10000
  const run = (balances: number[], start: CreditAlertState = CREDIT_ALERTS_RESET) => {
    let state = start
    const out: string[] = []
    for (const balance of balances) {
      const r = computeCreditAlert({ balance, monthlyCredits, state })
      state = r.state
      if (r.alert) out.push(r.alert.type === 'credits.low' ? `low${r.alert.thresholdPercent}` : 'depleted')
    }
    return { out, state }
  }

  it('sends 25 %, then 5 %, then depleted, each once on the way down', () => {
    expect(run([9000, 2600, 2500, 2499, 2000, 600, 499, 300, 1, 0, 0]).out).toEqual(['low25', 'low5', 'depleted'])
  })

  it('one big charge sends only the most severe level', () => {
    expect(run([9000, 300, 200]).out).toEqual(['low5'])
    expect(run([9000, 0]).out).toEqual(['depleted'])
  })

  it('levels re-arm when credits arrive (state reset)', () => {
    const first = run([2000, 400, 0])
    expect(first.out).toEqual(['low25', 'low5', 'depleted'])
    expect(run([10000, 2400], CREDIT_ALERTS_RESET).out).toEqual(['low25'])
    expect(run([2400], first.state).out).toEqual([])
  })

  it('with no monthly allowance only depletion is reported', () => {
    let state = CREDIT_ALERTS_RESET
    const a = computeCreditAlert({ balance: 5, monthlyCredits: 0, state })
    expect(a.alert).toBeNull()
    state = a.state
    expect(computeCreditAlert({ balance: 0, monthlyCredits: 0, state }).alert).toEqual({ type: 'credits.depleted' })
  })
})

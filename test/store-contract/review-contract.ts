/**
 * The contract of {@link ReviewStore} (src/server/store/contracts/reviews.ts): the review queue — entries added in
 * batches (a repeated request id ignored), read only by their org and mode, filtered and paged newest first, one of
 * two racing claims winning, the decision carried out once with its webhook event in the outbox, the purge — run by
 * ./contracts.test.ts on every engine of ./engines.ts. Every call is awaited, so synchronous and promise-returning
 * stores run the same cases.
 */
import { expect, it } from 'vitest'
import type { NewReview, ReviewStore } from '../../src/server/store/contracts/reviews.js'
import type { Store } from '../../src/server/store/contracts/store.js'
import { buildReviewDecidedEvent } from '../../src/webhooks/events.js'

const T0 = Date.parse('2026-11-22T00:00:00Z')
const DAY = 24 * 60 * 60 * 1000

/** A review store made for one case, over the database of `store` (whose outbox the events go into). */
export interface ContractReviews {
  reviews: ReviewStore
  store: Store
  done(): Promise<void>
}

let n = 0
const entry = (orgId: string, extra: Partial<NewReview> = {}): NewReview => {
  n += 1
  return {
    id: `rev_${String(n).padStart(24, '0')}`,
    orgId,
    mode: 'live',
    requestId: `req_contract${n}`,
    type: 'ip',
    input: JSON.stringify('192.0.2.8'),
    score: 80,
    factors: [{ code: 'ip_tor', weight: 80 }],
    action: 'review',
    createdAt: T0 + n,
    phoneE164: null,
    ...extra,
  }
}

export function reviewContract(factory: () => Promise<ContractReviews>): void {
  const withReviews = (run: (c: ContractReviews) => Promise<void>) => async () => {
    const c = await factory()
    try {
      await run(c)
    } finally {
      await c.done()
    }
  }

  it(
    'adds entries (a repeated request id ignored) and reads them only by their org and mode, newest first, filtered and paged',
    withReviews(async ({ reviews }) => {
      const a = entry('org_a')
      const b = entry('org_a', { type: 'email', input: JSON.stringify('x@example.com'), score: 40, factors: [{ code: 'email_disposable', weight: 40 }, { code: 'ip_vpn', weight: 0 }] })
      const c = entry('org_a', { mode: 'test' })
      const d = entry('org_b')
      const p = entry('org_c', { type: 'phone', input: JSON.stringify('(900) 234-5678'), phoneE164: '+19002345678' })
      await reviews.addReviews([a, b, c, d, p])
      await reviews.addReviews([{ ...entry('org_a'), requestId: a.requestId }])
      const all = await reviews.listReviews('org_a', 'live', { cutoffMs: 0, limit: 10 })
      expect(all.data.map((r) => r.id)).toEqual([b.id, a.id])
      expect(all.nextSeq).toBeNull()
      expect(all.data[0]).toMatchObject({ ...b, decision: null, decidedBy: null, decidedAt: null, note: null, listId: null, outcomeId: null, completedAt: null })
      expect(await reviews.getReview('org_c', 'live', p.id, 0)).toMatchObject({ ...p, phoneE164: '+19002345678' })
      expect(await reviews.getReview('org_b', 'live', a.id, 0)).toBeNull()
      expect(await reviews.getReview('org_a', 'test', a.id, 0)).toBeNull()
      expect((await reviews.getReview('org_a', 'test', c.id, 0))?.requestId).toBe(c.requestId)

      const ids = async (q: Omit<Parameters<ReviewStore['listReviews']>[2], 'cutoffMs'>) => (await reviews.listReviews('org_a', 'live', { ...q, cutoffMs: 0 })).data.map((r) => r.id)
      expect(await ids({ limit: 10, type: 'email' })).toEqual([b.id])
      expect(await ids({ limit: 10, minScore: 41 })).toEqual([a.id])
      expect(await ids({ limit: 10, maxScore: 40 })).toEqual([b.id])
      expect(await ids({ limit: 10, factor: 'ip_vpn' })).toEqual([b.id])
      expect(await ids({ limit: 10, factor: 'ip' })).toEqual([]) // a whole code, not a part of one
      expect(await ids({ limit: 10, status: 'decided' })).toEqual([])
      const first = await reviews.listReviews('org_a', 'live', { cutoffMs: 0, limit: 1 })
      expect(first.data.map((r) => r.id)).toEqual([b.id])
      expect(await ids({ limit: 1, beforeSeq: first.nextSeq! })).toEqual([a.id])
    }),
  )

  it(
    'one of two racing claims wins; the decision is carried out once, its event written with it',
    withReviews(async ({ reviews, store }) => {
      const org = await store.createOrg({ name: 'Reviews', planId: 'free' }, T0)
      const a = entry(org.id)
      await reviews.addReviews([a])
      const claim = (decision: 'approve' | 'block', by: string) => reviews.claimDecision(org.id, 'live', a.id, { decision, decidedBy: by, note: null, listId: null, at: T0 + DAY, cutoffMs: 0 })
      const [x, y] = await Promise.all([claim('block', 'key:one'), claim('approve', 'key:two')])
      expect([x.status, y.status].sort()).toEqual(['claimed', 'decided'])
      if (x.status === 'not_found' || y.status === 'not_found') throw new Error('unreachable')
      const winner = x.status === 'claimed' ? x : y
      const loser = x.status === 'claimed' ? y : x
      expect(loser.record.decision).toBe(winner.record.decision)
      expect(await reviews.claimDecision('org_other', 'live', a.id, { decision: 'block', decidedBy: 'key:x', note: null, listId: null, at: T0, cutoffMs: 0 })).toEqual({ status: 'not_found' })

      const event = buildReviewDecidedEvent({
        orgId: org.id,
        now: new Date(T0 + DAY),
        data: { review_id: a.id, request_id: a.requestId, type: 'ip', mode: 'live', decision: winner.record.decision!, decided_by: winner.record.decidedBy!, outcome_id: 'out_1', list_id: null },
      })
      expect(await reviews.completeDecision('org_other', 'live', a.id, { outcomeId: 'out_1', at: T0 + DAY }, event)).toBe(false)
      expect(await reviews.completeDecision(org.id, 'live', a.id, { outcomeId: 'out_1', at: T0 + DAY }, event)).toBe(true)
      expect(await reviews.completeDecision(org.id, 'live', a.id, { outcomeId: 'out_2', at: T0 + DAY }, { ...event, id: 'evt_other' })).toBe(false)
      expect(await reviews.getReview(org.id, 'live', a.id, 0)).toMatchObject({ outcomeId: 'out_1', completedAt: T0 + DAY, decidedAt: T0 + DAY })
      const events = (await store.listEvents({ orgId: org.id })).filter((e) => e.type === 'review.decided')
      expect(events.map((e) => e.id)).toEqual([event.id])
      expect(await reviews.listReviews(org.id, 'live', { cutoffMs: 0, limit: 10, status: 'decided' })).toMatchObject({ data: [{ id: a.id }] })
    }),
  )

  it(
    'purges entries decided before the cutoff and pending ones created before it',
    withReviews(async ({ reviews }) => {
      const old = entry('org_p', { createdAt: T0 })
      const decided = entry('org_p', { createdAt: T0 })
      const fresh = entry('org_p', { createdAt: T0 + 10 * DAY })
      await reviews.addReviews([old, decided, fresh])
      await reviews.claimDecision('org_p', 'live', decided.id, { decision: 'approve', decidedBy: 'user:u', note: 'fine', listId: null, at: T0 + 5 * DAY, cutoffMs: 0 })
      expect(await reviews.purge(T0 + DAY)).toBe(1)
      expect(await reviews.getReview('org_p', 'live', decided.id, 0)).not.toBeNull()
      expect(await reviews.purge(T0 + 6 * DAY)).toBe(1)
      expect((await reviews.listReviews('org_p', 'live', { cutoffMs: 0, limit: 10 })).data.map((r) => r.id)).toEqual([fresh.id])
    }),
  )

  it(
    'an entry the purge at a cutoff would delete is, at that cutoff, neither read nor listed nor claimed, swept or not',
    withReviews(async ({ reviews }) => {
      const old = entry('org_x', { createdAt: T0 })
      const edge = entry('org_x', { createdAt: T0 + DAY }) // created at the cutoff: the purge keeps it
      const decided = entry('org_x', { createdAt: T0 })
      const fresh = entry('org_x', { createdAt: T0 + 10 * DAY })
      await reviews.addReviews([old, edge, decided, fresh])
      const claim = (id: string, at: number, cutoffMs: number) => reviews.claimDecision('org_x', 'live', id, { decision: 'block', decidedBy: 'key:k', note: null, listId: null, at, cutoffMs })
      expect(await claim(decided.id, T0 + 5 * DAY, T0)).toMatchObject({ status: 'claimed' })
      const cutoff = T0 + DAY
      const listed = async (query: Omit<Parameters<ReviewStore['listReviews']>[2], 'cutoffMs'>) => (await reviews.listReviews('org_x', 'live', { ...query, cutoffMs: cutoff })).data.map((r) => r.id)
      const seen = async () => ({
        all: await listed({ limit: 10 }),
        pending: await listed({ limit: 10, status: 'pending' }),
        got: await Promise.all([old, edge, decided, fresh].map(async (e) => (await reviews.getReview('org_x', 'live', e.id, cutoff))?.id ?? null)),
      })
      const expected = { all: [fresh.id, decided.id, edge.id], pending: [fresh.id, edge.id], got: [null, edge.id, decided.id, fresh.id] }
      expect(await seen()).toEqual(expected)
      // the claim itself refuses it (not a read before it): nothing is written
      expect(await claim(old.id, T0 + 2 * DAY, cutoff)).toEqual({ status: 'not_found' })
      expect(await reviews.getReview('org_x', 'live', old.id, 0)).toMatchObject({ decision: null, decidedBy: null, decidedAt: null })
      expect(await claim(edge.id, T0 + 2 * DAY, cutoff)).toMatchObject({ status: 'claimed', record: { id: edge.id, decision: 'block' } })
      expected.pending = [fresh.id]
      expect(await seen()).toEqual(expected)
      // the sweep changes nothing a reader at the cutoff sees
      expect(await reviews.purge(cutoff)).toBe(1)
      expect(await seen()).toEqual(expected)
      // a decided entry goes with its decision's retention
      expect(await reviews.getReview('org_x', 'live', decided.id, T0 + 5 * DAY + 1)).toBeNull()
      expect(await claim(decided.id, T0 + 6 * DAY, T0 + 5 * DAY + 1)).toEqual({ status: 'not_found' })
    }),
  )
}

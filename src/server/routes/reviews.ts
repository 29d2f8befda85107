/**
 * The review queue (scope `lookup`; docs/reviews.md): GET /v1/reviews pages the org's answers whose action was
 * `review`, newest first, with filters; POST /v1/reviews/{id}/decision approves or blocks one — recording an
 * outcome, optionally adding the input to a list of the org, and sending `review.decided`. Entries belong to the org
 * and the key's mode: another org's review id is NOT_FOUND.
 */
import { Type } from '@sinclair/typebox'
import { LOOKUP_TYPES } from '../../schema.js'
import { authorize, type RequestAuth } from '../auth.js'
import type { ReviewOwner } from '../reviews.js'
import { REVIEW_DECISIONS, type ReviewRecord } from '../store/contracts/reviews.js'
import { QueryInteger } from '../query-integer.js'
import { Text } from '../text.js'
import { defineRoute, type RouteDef } from './types.js'

const ownerOf = (auth: RequestAuth | undefined): ReviewOwner => ({ orgId: auth!.orgId, mode: auth!.mode })
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const Nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()])
const Decision = Type.Union(REVIEW_DECISIONS.map((d) => Type.Literal(d)), { description: 'approve (outcome `legitimate`) or block (outcome `fraud`).' })

const ReviewSchema = Type.Object(
  {
    id: Type.String({ pattern: '^rev_' }),
    request_id: Type.String(),
    type: Type.Union(LOOKUP_TYPES.map((t) => Type.Literal(t))),
    input: Type.Unknown({ description: 'The request’s input as sent (a string, or the combined check’s fields); kept until the entry is deleted.' }),
    score: Type.Integer(),
    factors: Type.Array(Type.Object({ code: Type.String(), weight: Type.Number() }, { additionalProperties: false }), {
      description: 'The fired factors with their weights under the policy that scored the answer.',
    }),
    action: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('decided')]),
    decision: Type.Union([Decision, Type.Null()]),
    decided_by: Nullable(Type.String({ description: '`key:<key id>` (the API) or `user:<user id>` (the dashboard).' })),
    decided_at: Nullable(Type.String({ format: 'date-time' })),
    note: Nullable(Type.String()),
    list_id: Nullable(Type.String({ description: 'The list the input was added to.' })),
    outcome_id: Nullable(Type.String({ description: 'The outcome the decision recorded (GET /v1/outcomes).' })),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)

/** A stored entry as the API shows it. */
export const reviewView = (r: ReviewRecord) => ({
  id: r.id,
  request_id: r.requestId,
  type: r.type,
  input: JSON.parse(r.input) as unknown,
  score: r.score,
  factors: r.factors,
  action: r.action,
  status: r.decision === null ? ('pending' as const) : ('decided' as const),
  decision: r.decision,
  decided_by: r.decidedBy,
  decided_at: iso(r.decidedAt),
  note: r.note,
  list_id: r.listId,
  outcome_id: r.outcomeId,
  created_at: iso(r.createdAt)!,
})

const Score = (description: string) => Type.Optional(QueryInteger(0, 100, description))
const ReviewQuery = Type.Object(
  {
    type: Type.Optional(Type.Union(LOOKUP_TYPES.map((t) => Type.Literal(t)))),
    status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('decided')])),
    min_score: Score('Only scores of at least this (0–100; not above `max_score`).'),
    max_score: Score('Only scores of at most this (0–100).'),
    factor: Type.Optional(Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$', description: 'Only entries where this factor fired.' })),
    limit: Type.Optional(QueryInteger(1, 100, 'Page size, 1 to 100 (default 50).')),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The next_cursor of the previous page.' })),
  },
  { additionalProperties: false },
)

/** Body of POST /v1/reviews/{id}/decision. */
export const DecisionBody = Type.Object(
  {
    decision: Decision,
    add_to_list: Type.Optional(
      Type.Union([Text({ minLength: 1, maxLength: 100 }), Type.Null()], { description: 'A list of the org in the key’s mode: an allow list to approve, a block list to block.' }),
    ),
    note: Type.Optional(Type.Union([Text({ maxLength: 500 }), Type.Null()], { description: 'At most 500 characters; kept with the outcome.' })),
  },
  { additionalProperties: false },
)

/** The review routes. */
export const reviewRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    url: '/v1/reviews',
    operationId: 'list_reviews',
    summary: 'The review queue, newest first',
    description:
      'Answers of the org in the key’s mode whose action was `review`; filters `type`, `status`, `min_score`, `max_score`, `factor`. An entry past its retention is not listed, whether or not it has been deleted yet.',
    tags: ['Reviews'],
    scope: 'lookup',
    status: 200,
    envelope: false,
    query: ReviewQuery,
    response: {
      name: 'ReviewList',
      schema: Type.Object({ success: Type.Literal(true), data: Type.Array(ReviewSchema), next_cursor: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
    },
    errors: ['UPSTREAM_UNAVAILABLE'],
    handler: async ({ query, auth, ctx }) => {
      const page = await ctx.reviews.list(ownerOf(auth), {
        limit: query.limit !== undefined ? Number(query.limit) : 50,
        ...(query.type !== undefined ? { type: query.type } : {}),
        ...(query.status !== undefined ? { status: query.status } : {}),
        ...(query.min_score !== undefined ? { minScore: Number(query.min_score) } : {}),
        ...(query.max_score !== undefined ? { maxScore: Number(query.max_score) } : {}),
        ...(query.factor !== undefined ? { factor: query.factor } : {}),
        ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
      })
      return { success: true as const, data: page.data.map(reviewView), next_cursor: page.next_cursor }
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/v1/reviews/:id/decision',
    operationId: 'decide_review',
    summary: 'Approve or block a review',
    description:
      'Records the outcome (`legitimate` for approve, `fraud` for block) of the answer, optionally adds its input to a list of the org (approve: an allow list; block: a block list; else 400; the key needs the `lists` scope for that, else 403 FORBIDDEN_SCOPE), and sends `review.decided`. Idempotent: the same decision again answers the same review with `already_decided: true`; the other decision is a 409 CONFLICT. Another org’s review, or one past its retention (deleted or not yet), is a 404 NOT_FOUND. Free.',
    tags: ['Reviews'],
    scope: 'lookup',
    status: 200,
    params: Type.Object({ id: Text({ minLength: 1, maxLength: 100, description: 'The review id (rev_…).' }) }, { additionalProperties: false }),
    body: DecisionBody,
    response: { name: 'ReviewDecision', schema: Type.Object({ review: ReviewSchema, already_decided: Type.Boolean() }, { additionalProperties: false }) },
    errors: ['NOT_FOUND', 'CONFLICT', 'UPSTREAM_UNAVAILABLE'],
    handler: async ({ params, body, auth, ctx }) => {
      // adding to a list is the lists scope's to grant: a lookup key must not allow-list its own inputs
      if (body.add_to_list !== undefined && body.add_to_list !== null) authorize(auth!, 'lists')
      const r = await ctx.reviews.decide(ownerOf(auth), params.id, body, `key:${auth!.key.id}`)
      return { review: reviewView(r.review), already_decided: r.alreadyDecided }
    },
  }),
]

/**
 * Outcomes (scope `lookup`; docs/outcomes.md): POST /v1/outcomes records up to 1,000 labels of what happened after
 * answers — by the answer's request id or by input — with a result per item; GET /v1/outcomes pages them, newest
 * first. An org's labels in one key mode are its own: another org's request id is `not_found` for that item.
 */
import { Type } from '@sinclair/typebox'
import { RiskcheckError } from '../../errors.js'
import { OUTCOME_KINDS, type OutcomeRecord } from '../store/contracts/outcomes.js'
import { MAX_OUTCOMES_PER_CALL, OUTCOME_INPUT_TYPES, type OutcomeItem } from '../outcomes.js'
import { QueryInteger } from '../query-integer.js'
import { NO_NUL_PATTERN, Text } from '../text.js'
import { defineRoute, type RouteDef } from './types.js'

const Kind = Type.Union(
  OUTCOME_KINDS.map((k) => Type.Literal(k)),
  { description: 'fraud, legitimate, chargeback, account_takeover, bounced (a hard bounce of mail to the address), delivered, spam_complaint.' },
)
const InputType = Type.Union(OUTCOME_INPUT_TYPES.map((t) => Type.Literal(t)))
const RequestId = Text({ minLength: 1, maxLength: 100, description: 'The `request.id` of an answer of this org and key mode (kept 180 days by default).' })

/** One item: either `request_id`, or `input` with its `type`. */
const OutcomeItemSchema = Type.Object(
  {
    request_id: Type.Optional(RequestId),
    input: Type.Optional(Type.String({ minLength: 1, maxLength: 400, pattern: NO_NUL_PATTERN, description: 'An email address, a phone number in international form (+…) or one IP address; with `type`.' })),
    type: Type.Optional(Type.Union([InputType], { description: 'The type of `input`: email, phone or ip.' })),
    outcome: Kind,
    note: Type.Optional(Type.Union([Text({ maxLength: 500 }), Type.Null()], { description: 'At most 500 characters, no control characters.' })),
  },
  { additionalProperties: false, description: 'Either request_id, or input with type.' },
)

/** Body of POST /v1/outcomes. */
export const OutcomesBody = Type.Object(
  {
    outcomes: Type.Array(OutcomeItemSchema, { minItems: 1, maxItems: MAX_OUTCOMES_PER_CALL, description: '1 to 1,000 outcomes (more: 400 INVALID_REQUEST).' }),
  },
  { additionalProperties: false },
)

const ItemResult = Type.Object(
  {
    index: Type.Integer({ description: 'Position of the item in `outcomes`.' }),
    id: Type.Union([Type.String(), Type.Null()], { description: 'The outcome id (`out_…`): the new one, or the current one when unchanged; null on error.' }),
    status: Type.Union(['recorded', 'unchanged', 'not_found', 'invalid_input'].map((s) => Type.Literal(s)), {
      description: 'recorded; unchanged (the subject already has this outcome); not_found (no such request of this org and mode); invalid_input.',
    }),
    error: Type.Union([Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: false }), Type.Null()]),
  },
  { additionalProperties: false },
)
const RecordResult = Type.Object({ results: Type.Array(ItemResult) }, { additionalProperties: false })

const OutcomeSchema = Type.Object(
  {
    id: Type.String(),
    request_id: Type.Union([Type.String(), Type.Null()]),
    input_type: Type.Union([InputType, Type.Null()], { description: 'For a label given by input: its type (the input itself is not kept).' }),
    outcome: Kind,
    note: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    superseded_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When a later, different outcome of the same subject replaced it.' }),
  },
  { additionalProperties: false },
)
const OutcomeList = Type.Object(
  { success: Type.Literal(true), data: Type.Array(OutcomeSchema), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
)

const view = (r: OutcomeRecord) => ({
  id: r.id,
  request_id: r.requestId,
  input_type: r.requestId === null ? (r.subject.split(':')[1] as (typeof OUTCOME_INPUT_TYPES)[number]) : null,
  outcome: r.outcome,
  note: r.note,
  created_at: new Date(r.createdAt).toISOString(),
  superseded_at: r.supersededAt === null ? null : new Date(r.supersededAt).toISOString(),
})

/** Refuses an item that is not exactly one of the two shapes. */
function checkShapes(items: readonly OutcomeItem[]): void {
  items.forEach((it, i) => {
    const byId = it.request_id !== undefined
    const byInput = it.input !== undefined || it.type !== undefined
    if (byId === byInput) throw new RiskcheckError('INVALID_REQUEST', `outcomes[${i}] must have either request_id, or input with type.`)
    if (byInput && (it.input === undefined || it.type === undefined)) throw new RiskcheckError('MISSING_FIELD', `outcomes[${i}] needs both input and type.`)
  })
}

/** The outcome routes. */
export const outcomeRoutes: RouteDef[] = [
  defineRoute({
    method: 'POST',
    url: '/v1/outcomes',
    operationId: 'record_outcomes',
    summary: 'Record outcomes of answers',
    description:
      'Labels what happened after answers: by request id (every input of that request) or by input. Idempotent: an outcome equal to the current one of its subject is `unchanged`; a different one supersedes it (both kept). A result per item. Free.',
    tags: ['Outcomes'],
    scope: 'lookup',
    status: 200,
    body: OutcomesBody,
    // room for the largest valid body: 1,000 items of a 400-character input and a 500-character note, every character
    // a 12-byte JSON escape of a surrogate pair (about 10.9 MB)
    bodyLimit: 12 * 1024 * 1024,
    response: { name: 'OutcomeRecordResult', schema: RecordResult },
    errors: ['UPSTREAM_UNAVAILABLE'],
    handler: async ({ body, auth, ctx }) => {
      const items = body.outcomes as OutcomeItem[]
      checkShapes(items)
      return { results: await ctx.outcomes.record({ orgId: auth!.orgId, mode: auth!.mode }, items) }
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/outcomes',
    operationId: 'list_outcomes',
    summary: 'Recorded outcomes, newest first',
    description: 'Every outcome of the org in the key’s mode, superseded ones included; filters `request_id` and `outcome`.',
    tags: ['Outcomes'],
    scope: 'lookup',
    status: 200,
    envelope: false,
    query: Type.Object(
      {
        request_id: Type.Optional(RequestId),
        outcome: Type.Optional(Kind),
        limit: Type.Optional(QueryInteger(1, 100, 'Page size, 1 to 100 (default 50).')),
        cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The next_cursor of the previous page.' })),
      },
      { additionalProperties: false },
    ),
    response: { name: 'OutcomeList', schema: OutcomeList },
    errors: ['UPSTREAM_UNAVAILABLE'],
    handler: async ({ query, auth, ctx }) => {
      const page = await ctx.outcomes.list(
        { orgId: auth!.orgId, mode: auth!.mode },
        {
          limit: query.limit !== undefined ? Number(query.limit) : 50,
          ...(query.request_id !== undefined ? { requestId: query.request_id } : {}),
          ...(query.outcome !== undefined ? { outcome: query.outcome } : {}),
          ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
        },
      )
      return { success: true as const, data: page.data.map(view), next_cursor: page.next_cursor }
    },
  }),
]

/**
 * Bulk jobs (scope `bulk`): POST /v1/bulk/jobs (202), GET /v1/bulk/jobs, GET and DELETE /v1/bulk/jobs/{id},
 * POST /v1/bulk/jobs/{id}/retry (202), GET /v1/bulk/jobs/{id}/results and GET /v1/bulk/jobs/{id}/results.csv.
 *
 * Each caller works with the engine of its org and key mode (live jobs are billed to the org, test-key jobs run in
 * test mode for free); a job of another org — or of the other mode — is NOT_FOUND. Lists are pages:
 * `{ success, data: [...], next_cursor }`, where next_cursor (or null) is passed back as `cursor`.
 */
import { Type } from '@sinclair/typebox'
import { RiskcheckError } from '../../errors.js'
import { CSV_BASE_COLUMNS } from '../../bulk/csv.js'
import { INPUT_LIMITS } from '../../checks/input-limits.js'
import { ACTIONS, BULK_TYPES, BulkJobSchema, BulkResultRowSchema } from '../../schema.js'
import type { RequestAuth } from '../auth.js'
import type { BulkOwner } from '../store/contracts/bulk.js'
import { QueryInteger } from '../query-integer.js'
import { NO_NUL_PATTERN, Text } from '../text.js'
import { defineRoute, EmptyBody, type RouteDef, type ServerContext } from './types.js'

/** Largest body of POST /v1/bulk/jobs: 100,000 inputs of up to ~300 characters (only this route). */

/** The engine's paging options from a page query (`limit` arrives checked: ../query-integer.ts). */
function pageQuery(query: { cursor?: string; limit?: unknown }): { cursor: string | null; limit?: number } {
  return { cursor: query.cursor ?? null, ...(query.limit !== undefined ? { limit: Number(query.limit) } : {}) }
}

/** A page as the list envelope of docs/api.md "Conventions": `{ success, data, next_cursor }`. */
function listEnvelope<T>(page: { data: T[]; next_cursor: string | null }) {
  return { success: true as const, data: page.data, next_cursor: page.next_cursor }
}
export const BULK_BODY_LIMIT = 32 * 1024 * 1024

const ownerOf = (auth: RequestAuth | undefined): BulkOwner => ({ orgId: auth!.orgId, mode: auth!.mode })

function engineOf(ctx: ServerContext, auth: RequestAuth | undefined) {
  if (!ctx.bulk) throw new RiskcheckError('UPSTREAM_UNAVAILABLE', 'Bulk jobs need the SQLite or PostgreSQL store; this server runs without one.')
  return ctx.bulk.engineFor(ownerOf(auth))
}

const Id = Type.Object({ id: Text({ minLength: 1, maxLength: 100, description: 'The bulk job id.' }) }, { additionalProperties: false })
const Limit = (def: number, max: number) => Type.Optional(QueryInteger(1, max, `Page size, 1 to ${max} (default ${def}).`))
const Cursor = Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The next_cursor of the previous page.' }))

/** The per-input limits as prose: `email 320, phone and phone_type 40, … characters`. */
function inputLimitsText(): string {
  const byLimit = new Map<number, string[]>()
  for (const t of BULK_TYPES) byLimit.set(INPUT_LIMITS[t], [...(byLimit.get(INPUT_LIMITS[t]) ?? []), t])
  return `${[...byLimit].map(([limit, types]) => `${types.join(' and ')} ${limit.toLocaleString('en-US')}`).join(', ')} characters`
}

/** Body of POST /v1/bulk/jobs. 1 to 100,000 inputs (more → 413 INPUT_LIMIT_EXCEEDED, none → 422 INVALID_INPUT). */
export const BulkCreateBody = Type.Object(
  {
    type: Type.Union(BULK_TYPES.map((t) => Type.Literal(t)), { description: 'The lookup run on every input.' }),
    inputs: Type.Array(Type.String({ pattern: NO_NUL_PATTERN }), {
      description: `1 to 100,000 inputs; duplicates (after normalization) and blank inputs are folded free of charge. An input longer than its type's single lookup takes (${inputLimitsText()}) is an error row (INVALID_INPUT, naming the limit): never looked up or charged, stored with its first characters only.`,
    }),
    name: Type.Optional(Type.Union([Text({ maxLength: 200 }), Type.Null()], { description: 'At most 200 characters, no control characters.' })),
    country: Type.Optional(
      Type.Union([Type.String({ minLength: 2, maxLength: 2, pattern: '^[A-Za-z]{2}$' }), Type.Null()], {
        description: 'ISO 3166 alpha-2 default country for phone numbers without a + prefix.',
      }),
    ),
    smtp: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { description: 'false skips mailbox checks of emails.' })),
    recheck_deferred: Type.Optional(
      Type.Union([Type.Boolean(), Type.Null()], {
        description: 'Email jobs: rows a mail server deferred (4xx, greylisting) are checked again before the job completes (status `rechecking` meanwhile).',
      }),
    ),
  },
  { additionalProperties: false },
)

const JobList = Type.Object(
  {
    success: Type.Literal(true),
    data: Type.Array(BulkJobSchema),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
)
const ResultsPage = Type.Object(
  {
    success: Type.Literal(true),
    data: Type.Array(BulkResultRowSchema),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
)
const BulkJob = { name: 'BulkJob', schema: BulkJobSchema }

/** The bulk routes. */
export const bulkRoutes: RouteDef[] = [
  defineRoute({
    method: 'POST',
    url: '/v1/bulk/jobs',
    operationId: 'create_bulk_job',
    summary: 'Start a bulk job',
    description:
      'Folds duplicates and blank inputs (free), reserves one credit per unique input (402 INSUFFICIENT_CREDITS and nothing starts when the balance is short) and queues the job. Unused credits are refunded when it ends. Test keys run test answers for free.',
    tags: ['Bulk'],
    scope: 'bulk',
    status: 202,
    body: BulkCreateBody,
    response: BulkJob,
    errors: ['INSUFFICIENT_CREDITS'],
    bodyLimit: BULK_BODY_LIMIT,
    handler: async ({ body, auth, ctx }) => {
      const engine = engineOf(ctx, auth)
      const job = await engine.create(body)
      await ctx.bulk!.settle(ownerOf(auth), 0)
      return job
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/bulk/jobs',
    operationId: 'list_bulk_jobs',
    summary: 'Recent bulk jobs, newest first',
    description: 'A `cursor` is taken only from the org and key mode of the page that gave it, else 400 INVALID_REQUEST (Conventions, Pages).',
    tags: ['Bulk'],
    scope: 'bulk',
    status: 200,
    envelope: false,
    query: Type.Object({ limit: Limit(20, 100), cursor: Cursor }, { additionalProperties: false }),
    response: { name: 'BulkJobList', schema: JobList },
    errors: [],
    handler: async ({ query, auth, ctx }) => {
      return listEnvelope(await engineOf(ctx, auth).list(pageQuery(query)))
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/bulk/jobs/:id',
    operationId: 'get_bulk_job',
    summary: 'A bulk job with its progress and counts',
    tags: ['Bulk'],
    scope: 'bulk',
    status: 200,
    params: Id,
    response: BulkJob,
    errors: ['NOT_FOUND'],
    handler: ({ params, auth, ctx }) => engineOf(ctx, auth).get(params.id),
  }),
  defineRoute({
    method: 'DELETE',
    url: '/v1/bulk/jobs/:id',
    operationId: 'cancel_bulk_job',
    summary: 'Cancel a bulk job',
    description: 'Inputs not reached yet are not charged; results so far stay available. A finished job is returned as it is.',
    tags: ['Bulk'],
    scope: 'bulk',
    status: 200,
    params: Id,
    response: BulkJob,
    errors: ['NOT_FOUND'],
    handler: async ({ params, auth, ctx }) => {
      const engine = engineOf(ctx, auth)
      const before = await engine.get(params.id)
      const job = await engine.cancel(params.id)
      if (before.status !== job.status && job.status === 'cancelled') await ctx.bulk!.settle(ownerOf(auth), Math.max(0, job.processed - job.results.errors))
      return job
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/v1/bulk/jobs/:id/retry',
    operationId: 'retry_bulk_job',
    summary: 'Retry the rows of a finished job that failed for temporary reasons',
    description: 'Creates a new job (the old one is unchanged) of the rows whose data source did not answer or that could not be checked; invalid inputs are not retried.',
    tags: ['Bulk'],
    scope: 'bulk',
    status: 202,
    params: Id,
    body: EmptyBody,
    response: BulkJob,
    errors: ['NOT_FOUND', 'INSUFFICIENT_CREDITS'],
    handler: async ({ params, auth, ctx }) => {
      const job = await engineOf(ctx, auth).retry(params.id)
      await ctx.bulk!.settle(ownerOf(auth), 0)
      return job
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/bulk/jobs/:id/results',
    operationId: 'list_bulk_results',
    summary: 'Result rows of a job, one per unique input, in input order',
    description:
      'While the job runs, rows are returned up to the first row not finished yet and next_cursor points there; null means no more rows will come.',
    tags: ['Bulk'],
    scope: 'bulk',
    status: 200,
    envelope: false,
    params: Id,
    query: Type.Object(
      {
        cursor: Cursor,
        limit: Limit(100, 1000),
        action: Type.Optional(Type.Union(ACTIONS.map((a) => Type.Literal(a)), { description: 'Only rows with this action.' })),
      },
      { additionalProperties: false },
    ),
    response: { name: 'BulkResultsPage', schema: ResultsPage },
    errors: ['NOT_FOUND'],
    handler: async ({ params, query, auth, ctx }) => {
      return listEnvelope(await engineOf(ctx, auth).results(params.id, { ...pageQuery(query), action: query.action ?? null }))
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/bulk/jobs/:id/results.csv',
    operationId: 'download_bulk_results',
    summary: 'The results as a CSV file (streamed)',
    description:
      `Columns: ${CSV_BASE_COLUMNS.join(', ')}, then the type's details flattened to dotted names (every type's list: "results.csv columns" in docs/api.md). A text cell that a spreadsheet would read as a formula (it starts with =, +, -, @, tab or CR) is prefixed with ' — unless it is only a number (-12.5) or a phone number (+ and digit groups split by single spaces, dots or hyphens: +12015551000, +1 201 555 1000), which stays as it is so the file re-imports as data. A cell with a comma, a semicolon (a spreadsheet's separator in many locales), a quote or a line break is quoted. While the job runs, the rows finished so far.`,
    tags: ['Bulk'],
    scope: 'bulk',
    status: 200,
    envelope: false,
    contentType: 'text/csv',
    params: Id,
    response: Type.String({ description: 'CSV text (RFC 4180), header first.' }),
    errors: ['NOT_FOUND'],
    handler: async ({ params, auth, ctx, reply }) => {
      const stream = await engineOf(ctx, auth).resultsCsv(params.id)
      void reply
        .type('text/csv; charset=utf-8')
        .header('Content-Disposition', `attachment; filename="${params.id.replace(/[^A-Za-z0-9_-]/g, '')}-results.csv"`)
      return stream
    },
  }),
]

/**
 * Public routes: GET /v1/pricing (plans and per-product credit costs; not wrapped in the envelope — docs/api.md),
 * GET /v1/openapi.json (the OpenAPI 3.1 document generated from the route declarations), GET /docs/errors (the error
 * reference every `docs_url` links to, ../error-docs.ts), and the probes GET /healthz
 * and GET /readyz (../health.ts; docs/deployment.md).
 */
import { Type } from '@sinclair/typebox'
import { PricingSchema } from '../../schema.js'
import { pricingOf } from '../../accounts/plans.js'
import { VERSION } from '../../version.js'
import { ERROR_DOCS_PATH, renderErrorDocs } from '../error-docs.js'
import { defineRoute, type RouteDef } from './types.js'

const Health = Type.Object(
  {
    status: Type.Literal('ok'),
    version: Type.String({ description: 'The riskcheck version answering.' }),
    uptime_seconds: Type.Number({ minimum: 0 }),
  },
  { additionalProperties: false },
)

const CheckReportSchema = Type.Object(
  {
    name: Type.String({ description: '`database`, `migrations`, `redis` (with --redis-url), or a check the embedding application added.' }),
    ok: Type.Boolean(),
    degraded: Type.Optional(
      Type.Boolean({
        description: 'Present (true) when the check failed but the server answers without it, in a lesser way (Redis: rate limits per instance); the status stays `ready`.',
      }),
    ),
    message: Type.Optional(Type.String({ description: 'What is wrong, or a short fact when ok. Never a secret.' })),
    duration_ms: Type.Number({ minimum: 0 }),
  },
  { additionalProperties: false },
)

const ReadinessSchema = Type.Object(
  {
    status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready'), Type.Literal('draining')], {
      description: '`ready` (200: it can answer requests); `not_ready` (503: a check failed — the database is unreachable, say) or `draining` (503: the server is shutting down).',
    }),
    checks: Type.Array(CheckReportSchema),
    data: Type.Object(
      {
        set: Type.String({ description: '`bundled` or the id of the installed data set in use.' }),
        problem: Type.Union([Type.String(), Type.Null()], { description: 'A problem reading the data directory, else null.' }),
        stale: Type.Boolean({ description: 'A source is older than its maximum age. Reported; does not make the server unready.' }),
        stale_sources: Type.Array(Type.String()),
        sources: Type.Array(
          Type.Object(
            {
              name: Type.String(),
              version: Type.String(),
              age_seconds: Type.Union([Type.Number(), Type.Null()]),
              max_age_seconds: Type.Number(),
              stale: Type.Boolean(),
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

const startedAt = performance.now()

/** The public routes. */
export const metaRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    url: '/v1/pricing',
    operationId: 'get_pricing',
    summary: 'Plans and per-product credit costs',
    description: 'Public. The body is the pricing object itself, not wrapped in success/data.',
    tags: ['Account'],
    scope: null,
    status: 200,
    envelope: false,
    response: { name: 'Pricing', schema: PricingSchema },
    errors: [],
    handler: ({ ctx }) => pricingOf(ctx.plans, ctx.products),
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/openapi.json',
    operationId: 'get_openapi',
    summary: 'This API as an OpenAPI 3.1 document',
    tags: ['Meta'],
    scope: null,
    status: 200,
    envelope: false,
    response: Type.Object({ openapi: Type.Literal('3.1.0') }, { additionalProperties: true, description: 'An OpenAPI 3.1 document.' }),
    errors: [],
    handler: ({ ctx }) => ctx.openapi(),
  }),
  defineRoute({
    method: 'GET',
    url: ERROR_DOCS_PATH,
    operationId: 'get_error_docs',
    summary: 'The error reference (HTML)',
    description:
      'The table of the error codes of this document, one row per code with the anchor every `docs_url` ends in ' +
      '(`#rate_limited`). It is where `docs_url` points unless the operator names other documentation (`serve --docs-url`).',
    tags: ['Meta'],
    scope: null,
    status: 200,
    envelope: false,
    contentType: 'text/html',
    response: Type.String({ description: 'An HTML page.' }),
    errors: [],
    handler: ({ reply }) => {
      void reply.type('text/html; charset=utf-8').header('Cache-Control', 'public, max-age=3600')
      return renderErrorDocs()
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/healthz',
    operationId: 'get_healthz',
    summary: 'Liveness: the process answers',
    description: 'No key, no rate limit, not billed. Reads nothing but the process itself (see /readyz for dependencies).',
    tags: ['Meta'],
    scope: null,
    probe: true,
    status: 200,
    envelope: false,
    response: { name: 'Health', schema: Health },
    errors: [],
    handler: () => ({ status: 'ok' as const, version: VERSION, uptime_seconds: Math.round((performance.now() - startedAt) / 100) / 10 }),
  }),
  defineRoute({
    method: 'GET',
    url: '/readyz',
    operationId: 'get_readyz',
    summary: 'Readiness: database reachable, migrations current, data freshness',
    description:
      '200 when every check passes, 503 when one fails or the server is draining (the body says which). Each check has a ' +
      'time limit, so the answer comes in bounded time. Stale data is reported in `data` and an unreachable Redis as a ' +
      '`degraded` check, but neither fails readiness: the server still answers.',
    tags: ['Meta'],
    scope: null,
    probe: true,
    status: 200,
    envelope: false,
    response: { name: 'Readiness', schema: ReadinessSchema },
    errors: [],
    handler: async ({ ctx, reply }) => {
      const r = await ctx.readiness()
      if (r.status !== 'ready') void reply.code(503)
      return r
    },
  }),
]

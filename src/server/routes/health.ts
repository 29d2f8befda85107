/**
 * GET /healthz and GET /readyz (../health.ts): outside /v1, public, not rate limited, never billed. /readyz answers
 * 503 with the same body when a check fails or the server is draining.
 */
import { Type } from '@sinclair/typebox'
import { defineRoute, type RouteDef } from './types.js'

const Health = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false })

const ReadinessSchema = Type.Object(
  {
    status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
    checks: Type.Array(
      Type.Object(
        {
          name: Type.String({ description: '`database`, `accepting` (false while draining), or a check the deployment adds (`redis`, …)' }),
          ok: Type.Boolean(),
          error: Type.Optional(Type.String({ description: 'Why the check failed; never carries credentials.' })),
        },
        { additionalProperties: false },
      ),
    ),
    data: Type.Object(
      {
        stale: Type.Boolean({ description: 'A data source is older than its maximum age. Reported; does not make the server unready.' }),
        stale_sources: Type.Array(Type.String()),
        set: Type.String({ description: '`bundled` or the id of the installed data set in use' }),
        sources: Type.Array(
          Type.Object(
            {
              name: Type.String(),
              version: Type.String(),
              age_seconds: Type.Union([Type.Integer(), Type.Null()]),
              max_age_seconds: Type.Integer(),
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

/** The health routes. */
export const healthRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    url: '/healthz',
    operationId: 'get_healthz',
    summary: 'Liveness: the process is up',
    description: 'Public, not rate limited, not billed. 200 `{"status":"ok"}` while the process answers.',
    tags: ['Meta'],
    scope: null,
    status: 200,
    envelope: false,
    unlimited: true,
    response: { name: 'Health', schema: Health },
    errors: [],
    handler: () => ({ status: 'ok' as const }),
  }),
  defineRoute({
    method: 'GET',
    url: '/readyz',
    operationId: 'get_readyz',
    summary: 'Readiness: database reachable, schema current, not draining; data freshness per source',
    description:
      'Public, not rate limited, not billed. 200 when every check passes, 503 with the same body when one fails (a load balancer should stop sending traffic). Stale open data is reported under `data` with the stale sources named, and does not fail readiness.',
    tags: ['Meta'],
    scope: null,
    status: 200,
    envelope: false,
    unlimited: true,
    notReadyStatus: 503,
    response: { name: 'Readiness', schema: ReadinessSchema },
    errors: [],
    handler: async ({ ctx, reply }) => {
      const r = await ctx.readiness!()
      if (r.status !== 'ready') void reply.code(503)
      return r
    },
  }),
]

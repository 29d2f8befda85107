/**
 * The dashboard acts on bulk jobs and webhook endpoints through the API's own route handlers (src/server/routes),
 * called in-process as the team (the way a key of the team would call them). Before a handler runs, its params,
 * query and body are checked against the route's own schemas by the server's own validator (the one Fastify runs for
 * an API request, reached through the dashboard request), and a refusal carries the API's message and status: a form
 * and an API request are validated, limited and stored by the same code and answer with the same messages.
 */
import type { TSchema } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { RiskcheckError } from '../errors.js'
import type { RequestAuth } from '../server/auth.js'
import { mapError } from '../server/envelope.js'
import { ROUTES } from '../server/routes/index.js'
import type { RouteDef, ServerContext } from '../server/routes/types.js'

/** The caller a dashboard action acts as: the team, in live or test mode. */
function teamAuth(orgId: string, mode: 'live' | 'test'): RequestAuth {
  return {
    key: { id: 'key_dashboard', orgId, name: 'dashboard', mode, scopes: ['lookup', 'bulk', 'account:read', 'webhooks', 'lists'], hash: '', last4: '', createdAt: 0, revokedAt: null, lastUsedAt: null },
    orgId,
    mode,
    ratePerSecond: 0,
    suspended: false,
  }
}

/** What a dashboard action hands an API route. */
export interface ApiInput {
  mode?: 'live' | 'test'
  body?: unknown
  params?: Record<string, string>
  query?: Record<string, string>
  reply?: FastifyReply
}

function routeOf(operationId: string): RouteDef {
  const route = ROUTES.find((r) => r.operationId === operationId)
  if (!route) throw new Error(`no API route ${operationId}`)
  return route
}

/**
 * Checks `input` against the schemas of the API route `operationId` with the server's validator (as `request`'s
 * route compiles them); a RiskcheckError with the API's code and message (INVALID_REQUEST, MISSING_FIELD) when it
 * fails. Dashboard actions that read by an id before they call the route check the id with this first.
 */
export function checkApiInput(request: FastifyRequest, operationId: string, input: Pick<ApiInput, 'body' | 'params' | 'query'>): void {
  const route = routeOf(operationId)
  const parts: Array<[string, TSchema | undefined, unknown]> = [
    ['params', route.params, input.params ?? {}],
    ['querystring', route.query, input.query ?? {}],
    ['body', route.body, input.body ?? {}],
  ]
  for (const [part, schema, value] of parts) {
    if (!schema) continue
    const check = request.compileValidationSchema(schema, part as 'body')
    if (!check(value)) {
      const m = mapError({ validation: check.errors ?? [], validationContext: part })
      throw new RiskcheckError(m.code, m.message)
    }
  }
}

/**
 * Runs the API route `operationId` for the team, after {@link checkApiInput}; the route's own errors
 * (RiskcheckError) pass through.
 */
export async function callApi<T>(svc: ServerContext, request: FastifyRequest, operationId: string, orgId: string, input: ApiInput = {}): Promise<T> {
  const route = routeOf(operationId)
  checkApiInput(request, operationId, input)
  if (route.method !== 'GET' && (await svc.store.getOrg(orgId, svc.nowMs()))?.suspended) {
    throw new RiskcheckError('ACCOUNT_SUSPENDED', 'This account is suspended; contact support.')
  }
  return (await route.handler({
    body: input.body ?? {},
    params: input.params ?? {},
    query: input.query ?? {},
    auth: teamAuth(orgId, input.mode ?? 'live'),
    request: undefined as never,
    reply: input.reply ?? (undefined as never),
    ctx: svc,
  })) as T
}

/**
 * The status and message of an API refusal, for the page that shows it (the API's own status: 400 for a field the
 * schema refuses, 422 for a value it cannot use, 404 …), or undefined for anything else (rethrow it).
 */
export function apiRefusal(e: unknown): { status: number; message: string } | undefined {
  if (!(e instanceof RiskcheckError)) return undefined
  if (e.status < 500 || e.code === 'UPSTREAM_UNAVAILABLE') return { status: e.status, message: e.message }
  return undefined
}

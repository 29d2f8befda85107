/**
 * The dashboard acts on bulk jobs and webhook endpoints through the API's own route handlers (src/server/routes),
 * called in-process as the team (the way a key of the team would call them), so a form and an API request are
 * validated, limited and stored by the same code and answer with the same messages.
 */
import type { FastifyReply } from 'fastify'
import { RiskcheckError } from '../errors.js'
import type { RequestAuth } from '../server/auth.js'
import { ROUTES } from '../server/routes/index.js'
import type { ServerContext } from '../server/routes/types.js'

/** The caller a dashboard action acts as: the team, in live or test mode. */
function teamAuth(orgId: string, mode: 'live' | 'test'): RequestAuth {
  return {
    key: { id: 'key_dashboard', orgId, name: 'dashboard', mode, scopes: ['lookup', 'bulk', 'account:read', 'webhooks'], hash: '', last4: '', createdAt: 0, revokedAt: null, lastUsedAt: null },
    orgId,
    mode,
    ratePerSecond: 0,
    suspended: false,
  }
}

/** Runs the API route `operationId` for the team; the route's own errors (RiskcheckError) pass through. */
export async function callApi<T>(
  svc: ServerContext,
  operationId: string,
  orgId: string,
  input: { mode?: 'live' | 'test'; body?: unknown; params?: Record<string, string>; query?: Record<string, string>; reply?: FastifyReply } = {},
): Promise<T> {
  const route = ROUTES.find((r) => r.operationId === operationId)
  if (!route) throw new Error(`no API route ${operationId}`)
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

/** The message of an API error for a flash line, or undefined for anything else (rethrow it). */
export function apiMessage(e: unknown): string | undefined {
  return e instanceof RiskcheckError && e.status < 500 ? e.message : e instanceof RiskcheckError && e.code === 'UPSTREAM_UNAVAILABLE' ? e.message : undefined
}

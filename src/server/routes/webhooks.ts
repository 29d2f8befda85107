/**
 * Webhook endpoints (scope `webhooks`): POST /v1/webhook-endpoints (201, with the secret), GET /v1/webhook-endpoints,
 * POST /v1/webhook-endpoints/{id}/rotate-secret (the new secret; the old one stops working at once and queued
 * deliveries are signed with the new one) and DELETE /v1/webhook-endpoints/{id}.
 *
 * The URL must be a public https URL (validateWebhookUrl: no credentials, no private/reserved address literal, no
 * localhost), else 422 INVALID_INPUT; at most 10 endpoints per org; `events` is a list of event types or `["*"]`;
 * `format` defaults to slack / discord for their incoming-webhook URLs and json otherwise.
 */
import { Type } from '@sinclair/typebox'
import { endpointView } from '../../accounts/views.js'
import { RiskcheckError } from '../../errors.js'
import { EVENT_TYPES, WebhookEndpointSchema } from '../../schema.js'
import { createWebhookSecret, parseEventSubscription } from '../../webhooks/events.js'
import { defaultFormatForUrl, WEBHOOK_FORMATS, type WebhookFormat } from '../../webhooks/format.js'
import { validateWebhookUrl } from '../../webhooks/ssrf.js'
import { Text } from '../text.js'
import { defineRoute, EmptyBody, type RouteDef, type ServerContext } from './types.js'

/** Most endpoints of one org (docs/api.md: at most 10). */
export const MAX_WEBHOOK_ENDPOINTS = 10

function webhooksOf(ctx: ServerContext) {
  if (!ctx.webhooks) throw new RiskcheckError('UPSTREAM_UNAVAILABLE', 'Webhooks need the SQLite or PostgreSQL store; this server runs without one.')
  return ctx.webhooks
}

const notFound = (id: string) => new RiskcheckError('NOT_FOUND', `No webhook endpoint ${JSON.stringify(id.slice(0, 64))}.`)

const Id = Type.Object({ id: Text({ minLength: 1, maxLength: 100, description: 'The endpoint id.' }) }, { additionalProperties: false })
const Endpoint = { name: 'WebhookEndpoint', schema: WebhookEndpointSchema }

/** Body of POST /v1/webhook-endpoints. */
export const WebhookCreateBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'A public https URL.' }),
    events: Type.Array(Type.String({ maxLength: 40 }), {
      maxItems: EVENT_TYPES.length + 1,
      description: `Event types (${EVENT_TYPES.join(', ')}), or ["*"] for all.`,
    }),
    description: Type.Optional(Type.Union([Text({ maxLength: 500 }), Type.Null()])),
    format: Type.Optional(
      Type.Union(
        WEBHOOK_FORMATS.map((f) => Type.Literal(f)),
        { description: 'json (signed JSON payload), slack or discord (a chat message); default from the URL.' },
      ),
    ),
  },
  { additionalProperties: false },
)

/** The webhook-endpoint routes. */
export const webhookRoutes: RouteDef[] = [
  defineRoute({
    method: 'POST',
    url: '/v1/webhook-endpoints',
    operationId: 'create_webhook_endpoint',
    summary: 'Register a webhook endpoint',
    description: 'The response carries the signing secret (whsec_…) — the only time it is shown, apart from a rotation.',
    tags: ['Webhooks'],
    scope: 'webhooks',
    status: 201,
    body: WebhookCreateBody,
    response: Endpoint,
    errors: ['INVALID_INPUT'],
    handler: async ({ body, auth, ctx }) => {
      const wh = webhooksOf(ctx)
      const check = validateWebhookUrl(body.url, { allowLoopback: ctx.allowLoopbackWebhooks === true })
      if (!check.ok) throw new RiskcheckError('INVALID_INPUT', `The webhook url is not usable: ${check.message}.`, { field: 'url' })
      const events = parseEventSubscription(body.events)
      if (!events.ok) throw new RiskcheckError('INVALID_REQUEST', `\`events\`: ${events.message}.`, { field: 'events' })
      const orgId = auth!.orgId
      const secret = createWebhookSecret()
      const format: WebhookFormat = body.format ?? defaultFormatForUrl(check.url)
      const created = await wh.deliveries.createEndpoint(
        { orgId, url: check.url.href, description: body.description ?? null, events: events.events, format, secret },
        ctx.nowMs(),
        // counted with the insert (a count read first let concurrent creations all pass it)
        MAX_WEBHOOK_ENDPOINTS,
      )
      return endpointView(created, secret)
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/webhook-endpoints',
    operationId: 'list_webhook_endpoints',
    summary: 'The webhook endpoints of the org (without secrets)',
    tags: ['Webhooks'],
    scope: 'webhooks',
    status: 200,
    response: Type.Array(WebhookEndpointSchema),
    errors: [],
    handler: async ({ auth, ctx }) => (await webhooksOf(ctx).deliveries.listOrgEndpoints(auth!.orgId)).map((e) => endpointView(e)),
  }),
  defineRoute({
    method: 'POST',
    url: '/v1/webhook-endpoints/:id/rotate-secret',
    operationId: 'rotate_webhook_secret',
    summary: 'Replace the signing secret of an endpoint',
    description: 'The old secret stops working immediately; deliveries already queued are signed with the new secret.',
    tags: ['Webhooks'],
    scope: 'webhooks',
    status: 200,
    params: Id,
    body: EmptyBody,
    response: Endpoint,
    errors: ['NOT_FOUND'],
    handler: async ({ params, auth, ctx }) => {
      const secret = createWebhookSecret()
      const e = await webhooksOf(ctx).deliveries.rotateSecret(params.id, secret, auth!.orgId)
      if (!e) throw notFound(params.id)
      return endpointView(e, secret)
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/v1/webhook-endpoints/:id',
    operationId: 'delete_webhook_endpoint',
    summary: 'Delete a webhook endpoint',
    description: 'Deliveries still queued for it are dropped.',
    tags: ['Webhooks'],
    scope: 'webhooks',
    status: 200,
    params: Id,
    response: {
      name: 'DeletedWebhookEndpoint',
      schema: Type.Object({ id: Type.String(), deleted: Type.Boolean() }, { additionalProperties: false }),
    },
    errors: ['NOT_FOUND'],
    handler: async ({ params, auth, ctx }) => {
      if (!(await webhooksOf(ctx).deliveries.deleteEndpoint(params.id, auth!.orgId))) throw notFound(params.id)
      return { id: params.id, deleted: true }
    },
  }),
]

/**
 * Stored records as the outside world sees them: the objects of the documented API (docs/api.md), built in one place
 * so the HTTP routes and `riskcheck admin` print the same fields the same way.
 */
import type { WebhookEndpoint } from '../schema.js'
import type { WebhookEndpointRecord } from '../webhooks/queue.js'

/** The webhook endpoint object (docs/api.md); the secret only when given (create and rotate). */
export function endpointView(e: WebhookEndpointRecord & { description: string | null }, secret?: string): WebhookEndpoint {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    format: e.format,
    status: e.status,
    disabled_reason: e.disabledReason,
    created_at: e.createdAt.toISOString(),
    ...(secret ? { secret } : {}),
  }
}

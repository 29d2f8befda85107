/** What every webhook storage writes the same way: endpoint ids and the notice of an auto-disabled endpoint. */
import { randomBytes } from 'node:crypto'
import { RiskcheckError } from '../../../errors.js'
import type { OperatorNotice, WebhookEndpointRecord } from '../contracts/deliveries.js'

/** A new endpoint id: `we_` + 24 hex characters. */
export function newEndpointId(): string {
  return `we_${randomBytes(12).toString('hex')}`
}

/** The refusal of an endpoint over an org's limit (400 INVALID_REQUEST), as every delivery storage throws it. */
export function endpointLimitError(maxPerOrg: number): RiskcheckError {
  return new RiskcheckError('INVALID_REQUEST', `At most ${maxPerOrg} webhook endpoints may exist; delete one first.`)
}

/**
 * The operator notice of an endpoint auto-disabled at `at` (`riskcheck admin notices list`, the dashboard mails it):
 * what every delivery storage writes in the transaction that disables the endpoint.
 */
export function disabledEndpointNotice(endpoint: WebhookEndpointRecord, at: Date): Omit<OperatorNotice, 'id'> {
  return { at: at.getTime(), orgId: endpoint.orgId, subject: endpoint.id, kind: DISABLED_KIND, message: disabledMessage(endpoint, at, ` (${endpoint.url})`) }
}

const DISABLED_KIND = 'webhook_endpoint_disabled'

/**
 * The log line of that notice: its fields, and the same sentence without the URL, which may carry the receiver's
 * credential (a Slack or Discord incoming-webhook token in its path, a token in its query); the log keeps none.
 */
export function disabledEndpointLogLine(endpoint: WebhookEndpointRecord, at: Date): { fields: Record<string, string>; message: string } {
  return { fields: { notice: DISABLED_KIND, subject: endpoint.id, org_id: endpoint.orgId }, message: disabledMessage(endpoint, at, '') }
}

function disabledMessage(endpoint: WebhookEndpointRecord, at: Date, url: string): string {
  return (
    `Webhook endpoint ${endpoint.id}${url} of org ${endpoint.orgId} was disabled at ${at.toISOString()}: ` +
    'its deliveries have failed for a day. Re-enable it with `riskcheck admin webhook enable ' +
    `${endpoint.id}\`, then resend missed events with \`riskcheck admin webhook resend ${endpoint.id}\`.`
  )
}

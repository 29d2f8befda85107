/**
 * Webhook endpoints page: create (the API's route, so the URL rules and the limit of 10 are the API's; the signing
 * secret is shown once), the list with status and disabled reason, and per endpoint its delivery log (each
 * delivery with event, status, attempts, response code, time), resend missed deliveries, turn a disabled endpoint
 * back on, rotate the secret (shown once), send a ping and delete. Re-enable, resend and ping are the operator
 * actions of `riskcheck admin webhook …` (webhookOperator).
 *
 * Every member sees endpoints and their logs; owners and admins change them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { EVENT_TYPES, type WebhookEndpoint } from '../../schema.js'
import type { StoredEndpoint } from '../../server/store/contracts/deliveries.js'
import { webhookOperator } from '../../server/webhook-service.js'
import { WEBHOOK_FORMATS } from '../../webhooks/format.js'
import { apiRefusal, callApi, checkApiInput } from '../api.js'
import { DashboardError, doneFlash, field, fields, notFound, atLeast, type Dash, type TeamView } from '../context.js'
import { csrfField, dataTable, html, when, type Html } from '../html.js'

type Req = FastifyRequest<{ Params: { org: string; id?: string }; Querystring: { done?: string } }>

/** The server's webhook service; 503 when its store has none. */
function webhookService(dash: Dash) {
  if (!dash.svc.webhooks) throw new DashboardError(503, 'Webhooks need the SQLite or PostgreSQL store; this server runs without one.')
  return dash.svc.webhooks
}

/** The endpoint if it belongs to the viewer's team, else 404. */
async function endpointOf(dash: Dash, v: TeamView, id: string | undefined): Promise<StoredEndpoint> {
  const e = id ? await webhookService(dash).deliveries.getStoredEndpoint(id) : null
  if (!e || e.orgId !== v.org.id) throw notFound()
  return e
}

const statusBadge = (e: { status: string; disabledReason: string | null }) =>
  html`<span class="status ${e.status}">${e.status}</span>${e.disabledReason ? html` <span class="muted">(${e.disabledReason === 'failing' ? 'deliveries failed for a day' : e.disabledReason})</span>` : ''}`

/** The endpoints page: the one just created with its secret, the form (owners and admins), the list. */
async function listPage(dash: Dash, reply: FastifyReply, v: TeamView, extra: { flash?: { kind: 'ok' | 'error'; text: string } | undefined; created?: WebhookEndpoint; values?: { url: string; description: string } }, code = 200) {
  const endpoints = await webhookService(dash).deliveries.listOrgEndpoints(v.org.id)
  const admin = atLeast(v.member.role, 'admin')
  const body: Html = html`
${
extra.created
  ? html`<section class="card"><h2>Endpoint created</h2><p>Its signing secret, shown this once (verify the SVC-Signature header with it):</p>
<div class="secret"><code id="wh-secret" data-testid="secret">${extra.created.secret ?? ''}</code><button type="button" class="secondary" data-copy="wh-secret" hidden>Copy</button></div>
<p><a href="${v.base}/webhooks/${extra.created.id}">Open the endpoint</a></p></section>`
  : ''
}
${
admin
  ? html`<section class="card" aria-labelledby="add-endpoint"><h2 id="add-endpoint">Add an endpoint</h2>
<form method="post" action="${v.base}/webhooks" class="stack">${csrfField(v.session.csrf)}
<label><span>URL</span><input type="url" name="url" required maxlength="2048" placeholder="https://example.com/hooks/riskcheck" value="${extra.values?.url ?? ''}"></label>
<label><span>Description (optional)</span><input type="text" name="description" maxlength="500" value="${extra.values?.description ?? ''}"></label>
<fieldset><legend>Events</legend><label><input type="checkbox" name="events" value="*" checked> all</label>
${EVENT_TYPES.filter((t) => t !== 'ping').map((t) => html`<label><input type="checkbox" name="events" value="${t}"> <code>${t}</code></label>`)}</fieldset>
<label><span>Format</span><select name="format"><option value="">from the URL (Slack, Discord, else JSON)</option>${WEBHOOK_FORMATS.map((f) => html`<option value="${f}">${f}</option>`)}</select></label>
<button type="submit">Add endpoint</button></form></section>`
  : html`<p class="muted">Owners and admins add and change endpoints.</p>`
}
<h2>Endpoints</h2>
${
endpoints.length === 0
  ? html`<p class="muted">No endpoints yet.</p>`
  : dataTable(
      ['URL', 'Events', 'Status', 'Last success', 'Created'],
      endpoints.map((e) => ({
        attrs: { 'data-endpoint': e.id },
        cells: [
          html`<a href="${v.base}/webhooks/${e.id}" class="wrap">${e.url}</a>${e.description ? html`<br><small class="muted">${e.description}</small>` : ''}`,
          e.events.map((t) => html`<code>${t}</code> `),
          statusBadge(e),
          when(e.lastSuccessAt?.getTime()),
          when(e.createdAt.getTime()),
        ],
      })),
    )
}`
  return dash.page(reply, dash.teamLayout(v, 'Webhook endpoints', 'webhooks', extra.flash), body, code)
}

/** One endpoint: its actions and its last 100 deliveries. */
async function detailPage(dash: Dash, reply: FastifyReply, v: TeamView, e: StoredEndpoint, extra: { flash?: { kind: 'ok' | 'error'; text: string } | undefined; secret?: string }) {
  const wh = webhookService(dash)
  const deliveries = (await wh.deliveries.listDeliveries({ endpointId: e.id })).sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()).slice(0, 100)
  const types = new Map<string, string>()
  for (const d of deliveries) if (!types.has(d.eventId)) types.set(d.eventId, (await wh.deliveries.getEvent(d.eventId))?.type ?? '—')
  const admin = atLeast(v.member.role, 'admin')
  const action = (path: string, label: string, cls = 'secondary', confirm?: string) =>
    html`<form method="post" action="${v.base}/webhooks/${e.id}/${path}" class="inline"${confirm ? html` data-confirm="${confirm}"` : ''}>${csrfField(v.session.csrf)}<button type="submit" class="${cls}">${label}</button></form>`
  const body: Html = html`
${
extra.secret
  ? html`<section class="card"><h2>New signing secret</h2><p>Shown this once; the old secret stopped working and queued deliveries are signed with this one.</p>
<div class="secret"><code id="wh-secret" data-testid="secret">${extra.secret}</code><button type="button" class="secondary" data-copy="wh-secret" hidden>Copy</button></div></section>`
  : ''
}
<section class="card"><p class="wrap"><b>${e.url}</b></p>
<p>Status: <span data-testid="endpoint-status">${statusBadge(e)}</span> · format <code>${e.format}</code> · events ${e.events.map((t) => html`<code>${t}</code> `)}</p>
<p class="muted">Created ${when(e.createdAt.getTime())} · last success ${when(e.lastSuccessAt?.getTime())}</p>
<div class="actions">
${admin && e.status === 'disabled' ? action('enable', 'Turn back on', '') : ''}
${admin ? action('resend', 'Resend missed deliveries') : ''}
${action('ping', 'Send a ping')}
${admin ? action('rotate', 'Rotate secret', 'secondary', 'Rotate the secret? The old one stops working at once.') : ''}
${admin ? action('delete', 'Delete', 'danger', 'Delete this endpoint? Queued deliveries are dropped.') : ''}
</div></section>
<h2>Delivery log</h2>
${
deliveries.length === 0
  ? html`<p class="muted">No deliveries yet.</p>`
  : dataTable(
      ['Event', 'Status', 'Attempts', 'Response', 'Last attempt'],
      deliveries.map((d) => ({
        attrs: { 'data-delivery': d.id },
        cells: [
          html`<code>${types.get(d.eventId)}</code><br><small class="muted mono">${d.eventId}</small>`,
          html`<span class="status ${d.status === 'succeeded' ? 'ok' : d.status === 'pending' ? 'queued' : 'error'}">${d.status}</span>${d.resendOf ? html` <small class="muted">resend</small>` : ''}`,
          d.attempts,
          d.lastStatus ?? (d.lastError ? html`<span class="muted">${d.lastError}</span>` : '—'),
          when(d.lastAttemptAt?.getTime()),
        ],
      })),
    )
}`
  return dash.page(reply, dash.teamLayout(v, 'Webhook endpoint', 'webhooks', extra.flash), body)
}

/** POST …/webhooks: the API's create_webhook_endpoint, its refusal shown on the form. */
async function createEndpoint(dash: Dash, request: Req, reply: FastifyReply) {
  const v = await dash.team(request, request.params.org, 'admin')
  const url = field(request.body, 'url')
  const description = field(request.body, 'description')
  let events = fields(request.body, 'events')
  if (events.includes('*') || events.length === 0) events = ['*']
  const format = field(request.body, 'format')
  try {
    const created = await callApi<WebhookEndpoint>(dash.svc, request, 'create_webhook_endpoint', v.org.id, {
      body: { url, events, description: description || null, ...(format ? { format } : {}) },
    })
    return listPage(dash, reply, v, { created }, 201)
  } catch (e) {
    const refused = apiRefusal(e)
    if (!refused) throw e
    return listPage(dash, reply, v, { flash: { kind: 'error', text: refused.message }, values: { url: url.slice(0, 2048), description: description.slice(0, 500) } }, refused.status)
  }
}

/** POST …/webhooks/:id/:action: turn back on, resend, ping, rotate the secret, delete. */
async function endpointAction(dash: Dash, request: FastifyRequest<{ Params: { org: string; id: string; action: string } }>, reply: FastifyReply) {
  const { action } = request.params
  const v = await dash.team(request, request.params.org, action === 'ping' ? 'developer' : 'admin')
  // the id as the API's routes take it (every endpoint route has the same id schema), before it is read
  try {
    checkApiInput(request, 'delete_webhook_endpoint', { params: { id: request.params.id } })
  } catch (err) {
    const refused = apiRefusal(err)
    throw new DashboardError(refused?.status === 404 ? 404 : 400, refused?.message ?? 'Not a webhook endpoint id.')
  }
  const e = await endpointOf(dash, v, request.params.id)
  const wh = webhookService(dash)
  const back = (done: string) => reply.redirect(`${v.base}/webhooks/${e.id}?done=${done}`, 303)
  switch (action) {
    case 'enable':
      await webhookOperator.enable(wh.deliveries, e.id, dash.nowMs())
      return back('enabled')
    case 'resend':
      await webhookOperator.resend(wh.deliveries, e.id, dash.nowMs())
      return back('resend')
    case 'ping':
      // Into the outbox next to the endpoints (as `riskcheck admin webhook ping` does); the next round delivers it.
      await wh.ping(e, 'Ping from the riskcheck dashboard') // no one's address: the receiver is a third party
      return back('ping')
    case 'rotate': {
      const rotated = await callApi<WebhookEndpoint>(dash.svc, request, 'rotate_webhook_secret', v.org.id, { params: { id: e.id } })
      return detailPage(dash, reply, v, await endpointOf(dash, v, e.id), { secret: rotated.secret! })
    }
    case 'delete':
      await callApi(dash.svc, request, 'delete_webhook_endpoint', v.org.id, { params: { id: e.id } })
      return reply.redirect(`${v.base}/webhooks?done=deleted`, 303)
    default:
      throw notFound()
  }
}

/** The webhook pages under /dashboard/t/:org/webhooks. */
export function registerWebhookPages(app: FastifyInstance, dash: Dash): void {
  app.get('/t/:org/webhooks', async (request: Req, reply) => listPage(dash, reply, await dash.team(request, request.params.org), { flash: doneFlash(request.query) }))
  app.post('/t/:org/webhooks', async (request: Req, reply) => createEndpoint(dash, request, reply))
  app.get('/t/:org/webhooks/:id', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org)
    return detailPage(dash, reply, v, await endpointOf(dash, v, request.params.id), { flash: doneFlash(request.query) })
  })
  app.post('/t/:org/webhooks/:id/:action', async (request: FastifyRequest<{ Params: { org: string; id: string; action: string } }>, reply) => endpointAction(dash, request, reply))
}

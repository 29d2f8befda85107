/**
 * API keys page: create a live or test key (the secret shown once), list and revoke — the service's keys, as
 * `riskcheck admin key …`, so a revocation holds from the next request. Every member sees and creates keys; owners and
 * admins grant the `webhooks` scope and revoke any key, a developer only their own; live keys need a verified address.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { issueApiKey } from '../../accounts/keys.js'
import { SCOPES, type Scope } from '../../schema.js'
import type { ApiKeyRecord } from '../../accounts/types.js'
import { Text } from '../../server/text.js'
import { atLeast, doneFlash, notFound, DashboardError, type Dash, type TeamView } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, dataTable, html, when, type Html } from '../html.js'

type OrgReq = FastifyRequest<{ Params: { org: string; id?: string }; Querystring: { done?: string } }>

const SCOPE_HELP: Record<Scope, string> = {
  lookup: 'single lookups',
  bulk: 'bulk jobs',
  'account:read': 'GET /v1/account',
  webhooks: 'webhook endpoints (owners and admins grant it)',
  lists: 'allow/block lists (/v1/lists)',
}

/** The create-key form: a name (at most 100 characters of text), the mode, the scopes (each one of SCOPES). */
const KeyForm = Type.Object({
  name: Type.Optional(Text({ maxLength: 100 })),
  mode: Type.Optional(Type.Union([Type.Literal('test'), Type.Literal('live')])),
  scopes: Type.Optional(Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), { maxItems: SCOPES.length, uniqueItems: true })),
})

/** The non-secret beginning of a key: `svc_live_` + its id part. */
export const keyPrefix = (k: ApiKeyRecord) => `svc_${k.mode}_${k.id.slice(4)}`

/** Whether the viewer may revoke `key`. */
function mayRevoke(v: TeamView, key: ApiKeyRecord, creators: Map<string, string>): boolean {
  return atLeast(v.member.role, 'admin') || creators.get(key.id) === v.user.id
}

export function registerKeyPages(app: FastifyInstance, dash: Dash): void {
  const render = async (reply: FastifyReply, v: TeamView, extra: { flash?: { kind: 'ok' | 'error'; text: string } | undefined; created?: { key: ApiKeyRecord; secret: string } }, status = 200) => {
    const keys = (await dash.svc.store.listKeys(v.org.id)).sort((a, b) => b.createdAt - a.createdAt)
    const creators = await dash.teams.keyCreators(v.org.id)
    const members = new Map((await dash.teams.listMembers(v.org.id)).map((m) => [m.userId, m.email]))
    const verified = v.user.emailVerifiedAt !== null
    const admin = atLeast(v.member.role, 'admin')
    const body: Html = html`
${
  extra.created
    ? html`<section class="card" aria-labelledby="new-key"><h2 id="new-key">Your new ${extra.created.key.mode} key “${extra.created.key.name}”</h2>
<p>Copy it now: it is shown this once and cannot be recovered, only replaced.</p>
<div class="secret"><code id="new-secret" data-testid="secret">${extra.created.secret}</code><button type="button" class="secondary" data-copy="new-secret" hidden>Copy</button></div></section>`
    : ''
}
<section class="card" aria-labelledby="create-key"><h2 id="create-key">Create a key</h2>
<form method="post" action="${v.base}/keys" class="stack">
${csrfField(v.session.csrf)}
<label><span>Name</span><input type="text" name="name" maxlength="100" required placeholder="e.g. signup form"></label>
<fieldset><legend>Mode</legend>
<label><input type="radio" name="mode" value="test" checked> Test (free, canned answers)</label>
<label><input type="radio" name="mode" value="live"${verified ? '' : html` disabled`}> Live${verified ? '' : html` <span class="muted">(verify your email first)</span>`}</label>
</fieldset>
<fieldset><legend>Scopes</legend>
${SCOPES.map(
  (s) => html`<label><input type="checkbox" name="scopes" value="${s}"${s === 'webhooks' ? (admin ? '' : html` disabled`) : s === 'lists' ? '' : html` checked`}> <code>${s}</code> <span class="muted">${SCOPE_HELP[s]}</span></label>`,
)}
</fieldset>
<button type="submit">Create key</button>
</form></section>
<h2>Keys</h2>
${
  keys.length === 0
    ? html`<p class="muted">No keys yet.</p>`
    : dataTable(
        ['Name', 'Key', 'Scopes', 'Created', 'Last used', 'Status', 'Action'],
        keys.map((k) => ({
          attrs: { 'data-key': k.id },
          cells: [
            html`${k.name}${creators.has(k.id) ? html`<br><small class="muted">by ${members.get(creators.get(k.id)!) ?? 'a former member'}</small>` : ''}`,
            html`<code>${keyPrefix(k)}…${k.last4}</code>`,
            k.scopes.map((s) => html`<code>${s}</code> `),
            when(k.createdAt),
            when(k.lastUsedAt),
            k.revokedAt === null ? html`<span class="status ok">active</span>` : html`<span class="status revoked">revoked</span> <small class="muted">${when(k.revokedAt)}</small>`,
            {
              cls: 'actions',
              body:
                k.revokedAt === null && mayRevoke(v, k, creators)
                  ? html`<form method="post" action="${v.base}/keys/${k.id}/revoke" class="inline" data-confirm="Revoke ${k.name}? Requests with it fail from now on.">${csrfField(v.session.csrf)}<button type="submit" class="danger" aria-label="Revoke ${k.name}">Revoke</button></form>`
                  : '',
            },
          ],
        })),
      )
}`
    return dash.page(reply, dash.teamLayout(v, 'API keys', 'keys', extra.flash), body, status)
  }

  app.get('/t/:org/keys', async (request: OrgReq, reply) => {
    const v = await dash.team(request, request.params.org)
    return render(reply, v, { flash: doneFlash(request.query) })
  })

  app.post('/t/:org/keys', async (request: OrgReq, reply) => {
    const v = await dash.team(request, request.params.org)
    const form = readForm(request, KeyForm)
    const name = (form.name ?? '').trim() || 'unnamed key'
    const mode = form.mode ?? 'test'
    const scopes = (form.scopes ?? []) as Scope[]
    const fail = (text: string, status: number) => render(reply, v, { flash: { kind: 'error', text } }, status)
    if (mode === 'live' && v.user.emailVerifiedAt === null) return fail('Live keys need a verified email address: follow the link in the mail we sent.', 403)
    if (scopes.includes('webhooks') && !atLeast(v.member.role, 'admin')) return fail('Only owners and admins grant the webhooks scope.', 403)
    if (scopes.length === 0) return fail('Pick at least one scope.', 422)
    const created = await issueApiKey(dash.svc.store, { orgId: v.org.id, mode, scopes, name }, dash.nowMs())
    await dash.teams.recordKeyCreator(v.org.id, created.key.id, v.user.id)
    return render(reply, v, { created }, 201)
  })

  app.post('/t/:org/keys/:id/revoke', async (request: OrgReq, reply) => {
    const v = await dash.team(request, request.params.org)
    const key = await dash.svc.store.getKey(request.params.id ?? '')
    if (!key || key.orgId !== v.org.id) throw notFound()
    if (!mayRevoke(v, key, await dash.teams.keyCreators(v.org.id))) throw new DashboardError(403, 'Developers revoke only keys they created; ask an owner or admin.')
    await dash.svc.store.revokeKey(key.id, dash.nowMs())
    return reply.redirect(`${v.base}/keys?done=revoked`, 303)
  })
}

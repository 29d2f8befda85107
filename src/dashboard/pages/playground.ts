/**
 * Lookup playground: try any of the seven lookups with the team's test key and see the result object. The request
 * goes through the API itself (an in-process HTTP request to /v1/…, so authentication, the test key's rate limit
 * and test mode apply as for any client) with the team's playground key: a test key with the `lookup` scope named
 * "Dashboard playground", created on first use. Its secret lives only in this process's memory; after a restart
 * the old playground key is revoked and a new one made. It is listed on the API keys page like any key.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { issueApiKey } from '../../accounts/keys.js'
import { PRODUCTS } from '../../accounts/plans.js'
import { field, type Dash, type TeamView } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, html } from '../html.js'

export const PLAYGROUND_KEY_NAME = 'Dashboard playground'
type Values = Record<'type' | 'email' | 'phone' | 'ip' | 'domain' | 'country', string>

/** The lookup of the form is one of the API's (the fields go to the API as they are, which checks them). */
const PlaygroundForm = Type.Object({ type: Type.Optional(Type.Union(PRODUCTS.map((p) => Type.Literal(p.id)))) })

/** The request body of a lookup type from the form's fields (only the fields that type takes). */
export function playgroundBody(v: Values): Record<string, string> {
  const opt = (k: 'email' | 'phone' | 'ip' | 'country') => (v[k] ? { [k]: v[k] } : {})
  switch (v.type) {
    case 'email':
      return { email: v.email }
    case 'phone':
    case 'phone_type':
      return { phone: v.phone, ...opt('country') }
    case 'ip':
      return { ip: v.ip }
    case 'domain_age':
    case 'email_auth':
      return { domain: v.domain }
    default:
      return { ...opt('email'), ...opt('ip'), ...opt('phone'), ...opt('country') }
  }
}

export function registerPlaygroundPages(scope: FastifyInstance, dash: Dash, api: FastifyInstance): void {
  const secrets = new Map<string, string>()

  const keyOf = async (v: TeamView): Promise<string> => {
    const known = secrets.get(v.org.id)
    if (known) {
      const id = `key_${known.slice(9, 21)}`
      const rec = await dash.svc.store.getKey(id)
      if (rec && rec.revokedAt === null) return known
    }
    for (const k of await dash.svc.store.listKeys(v.org.id)) {
      if (k.name === PLAYGROUND_KEY_NAME && k.mode === 'test' && k.revokedAt === null) await dash.svc.store.revokeKey(k.id, dash.nowMs())
    }
    const { key, secret } = await issueApiKey(dash.svc.store, { orgId: v.org.id, mode: 'test', scopes: ['lookup'], name: PLAYGROUND_KEY_NAME }, dash.nowMs())
    await dash.teams.recordKeyCreator(v.org.id, key.id, v.user.id)
    secrets.set(v.org.id, secret)
    return secret
  }

  const render = (v: TeamView, values: Values, result?: { status: number; json: string }) => html`
<section class="card"><form method="post" action="${v.base}/playground" class="stack">${csrfField(v.session.csrf)}
<label><span>Lookup</span><select name="type">${PRODUCTS.map((p) => html`<option value="${p.id}"${p.id === values.type ? html` selected` : ''}>${p.name} — ${p.endpoint}</option>`)}</select></label>
<p class="muted">Fill the field of the lookup (the combined check takes any of email, IP and phone).</p>
<label><span>Email</span><input type="text" name="email" value="${values.email}" placeholder="someone@example.com"></label>
<label><span>Phone</span><input type="text" name="phone" value="${values.phone}" placeholder="+14155552671"></label>
<label><span>Country (phones without +)</span><input type="text" name="country" value="${values.country}" maxlength="2" placeholder="US"></label>
<label><span>IP address</span><input type="text" name="ip" value="${values.ip}" placeholder="8.8.8.8"></label>
<label><span>Domain</span><input type="text" name="domain" value="${values.domain}" placeholder="example.com"></label>
<button type="submit">Run with the test key</button></form></section>
${
  result
    ? html`<h2>Result <span class="status ${result.status === 200 ? 'ok' : 'error'}">HTTP ${result.status}</span></h2><pre class="result" data-testid="result" tabindex="0">${result.json}</pre>`
    : ''
}`

  const empty: Values = { type: 'email', email: '', phone: '', ip: '', domain: '', country: '' }

  scope.get('/t/:org/playground', async (request: FastifyRequest<{ Params: { org: string } }>, reply) => {
    const v = await dash.team(request, request.params.org)
    return dash.page(reply, dash.teamLayout(v, 'Lookup playground', 'playground'), render(v, empty))
  })

  scope.post('/t/:org/playground', async (request: FastifyRequest<{ Params: { org: string } }>, reply) => {
    const v = await dash.team(request, request.params.org)
    const type = readForm(request, PlaygroundForm).type
    // whole: the API, not the form, decides what is too long
    const values = Object.fromEntries(Object.keys(empty).map((k) => [k, field(request.body, k)])) as Values
    const product = PRODUCTS.find((p) => p.id === type) ?? PRODUCTS[0]!
    values.type = product.id
    const secret = await keyOf(v)
    const res = await api.inject({
      method: 'POST',
      url: product.endpoint,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      payload: JSON.stringify(playgroundBody(values)),
    })
    let json = res.body
    try {
      json = JSON.stringify(JSON.parse(res.body), null, 2)
    } catch {
      // not JSON: shown as it came
    }
    // a lookup the API refused is a page with the API's status (and its answer shown)
    const status = res.statusCode >= 400 && res.statusCode < 500 ? res.statusCode : 200
    return dash.page(reply, dash.teamLayout(v, 'Lookup playground', 'playground'), render(v, values, { status: res.statusCode, json }), status)
  })
}

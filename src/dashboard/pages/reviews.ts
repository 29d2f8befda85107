/**
 * Review page: the team's review queue of one mode (answers whose action was `review`), newest first, with type,
 * input, score, factors and their weights, and age; filters (type, status, score, factor); per pending row Approve and
 * Block buttons (a form with the session's CSRF token; app.js adds the `a` / `b` keys on a focused row) and an
 * optional list to add the input to. Reading goes through the API's route, deciding through the one decision path
 * of the API (src/server/reviews.ts), after the route's own validation; the decider is the signed-in user.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { RiskcheckError } from '../../errors.js'
import { LOOKUP_TYPES } from '../../schema.js'
import { apiRefusal, callApi, checkApiInput } from '../api.js'
import { atLeast, DashboardError, type Dash, type TeamView } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, dataTable, html, type Html } from '../html.js'

type Mode = 'live' | 'test'
type Flash = { kind: 'ok' | 'error'; text: string } | undefined
interface ReviewView {
  id: string
  request_id: string
  type: string
  input: unknown
  score: number
  factors: Array<{ code: string; weight: number }>
  status: 'pending' | 'decided'
  decision: string | null
  decided_by: string | null
  list_id: string | null
  created_at: string
}
interface ListView {
  id: string
  name: string
  kind: string
  item_type: string
}
type Query = { type?: string; status?: string; min_score?: string; max_score?: string; factor?: string; cursor?: string; done?: string }
type Req = FastifyRequest<{ Params: { org: string; mode: string; id: string }; Querystring: Query }>

const DecisionForm = Type.Object({ decision: Type.Optional(Type.String()), add_to_list: Type.Optional(Type.String()), note: Type.Optional(Type.String()) })
const FILTERS = ['type', 'status', 'min_score', 'max_score', 'factor'] as const

const modeOf = (s: string | undefined): Mode => {
  if (s !== 'live' && s !== 'test') throw new DashboardError(404, 'Not found.')
  return s
}

/** How long ago, in the largest whole unit (`5 min`, `3 h`, `2 d`). */
function age(nowMs: number, iso: string): string {
  const s = Math.max(0, Math.floor((nowMs - Date.parse(iso)) / 1000))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min`
  if (s < 86_400) return `${Math.floor(s / 3600)} h`
  return `${Math.floor(s / 86_400)} d`
}

/** The input as one line: a single lookup's string, or the combined check's fields. */
function inputText(input: unknown): string {
  if (typeof input === 'string') return input
  if (input && typeof input === 'object') {
    return Object.entries(input as Record<string, unknown>)
      .filter(([k, v]) => v !== null && v !== undefined && k !== 'bypass_cache')
      .map(([k, v]) => `${k}: ${String(v)}`)
      .join(', ')
  }
  return '—'
}

/** The filters of the page's query the API takes (empty ones left out). */
function filtersOf(query: Query): Record<string, string> {
  const out: Record<string, string> = {}
  for (const f of FILTERS) {
    const v = query[f]
    if (typeof v === 'string' && v.trim() !== '') out[f] = v.trim()
  }
  return out
}

/** The filter form. */
function filterForm(action: string, f: Record<string, string>): Html {
  const option = (value: string, label: string, current: string | undefined) => html`<option value="${value}"${current === value ? html` selected` : ''}>${label}</option>`
  return html`<form method="get" action="${action}" class="actions" aria-label="Filters">
<label><span>Type</span> <select name="type">${option('', 'any', f.type)}${LOOKUP_TYPES.map((t) => option(t, t, f.type))}</select></label>
<label><span>Status</span> <select name="status">${option('', 'any', f.status)}${option('pending', 'pending', f.status)}${option('decided', 'decided', f.status)}</select></label>
<label><span>Score from</span> <input type="number" name="min_score" min="0" max="100" value="${f.min_score ?? ''}"></label>
<label><span>to</span> <input type="number" name="max_score" min="0" max="100" value="${f.max_score ?? ''}"></label>
<label><span>Factor</span> <input type="text" name="factor" maxlength="64" value="${f.factor ?? ''}" placeholder="ip_tor"></label>
<button type="submit" class="secondary">Filter</button></form>`
}

/** A pending row's decision form: Approve and Block, the optional list, the note. */
function decisionForm(action: string, csrf: string, lists: readonly ListView[]): Html {
  return html`<form method="post" action="${action}" class="stack">${csrfField(csrf)}
${
  lists.length > 0
    ? html`<label><span>Also add to list</span><select name="add_to_list"><option value="">no list</option>${lists.map(
        (l) => html`<option value="${l.id}">${l.name} (${l.kind}, ${l.item_type})</option>`,
      )}</select></label>`
    : ''
}
<div class="actions"><button type="submit" name="decision" value="approve" aria-keyshortcuts="a">Approve</button> <button type="submit" name="decision" value="block" class="danger" aria-keyshortcuts="b">Block</button></div></form>`
}

/** The queue page of a mode, drawn for `dash`. */
function reviewPage(dash: Dash) {
  return async (request: Req, reply: FastifyReply, v: TeamView, mode: Mode, flash: Flash, status = 200, asked: Query = request.query) => {
    const f = filtersOf(asked)
    const query = { ...f, ...(typeof asked.cursor === 'string' ? { cursor: asked.cursor } : {}) }
    let page: { data: ReviewView[]; next_cursor: string | null }
    try {
      page = await callApi(dash.svc, request, 'list_reviews', v.org.id, { mode, query })
    } catch (e) {
      const r = apiRefusal(e)
      if (!r) throw e
      throw new DashboardError(r.status, r.message)
    }
    const lists = dash.svc.lists && atLeast(v.member.role, 'admin') ? await callApi<ListView[]>(dash.svc, request, 'list_lists', v.org.id, { mode }) : []
    const canDecide = atLeast(v.member.role, 'developer')
    const base = `${v.base}/reviews/${mode}`
    const other: Mode = mode === 'live' ? 'test' : 'live'
    const now = dash.nowMs()
    const decided = (r: ReviewView) => html`<span class="status ${r.decision ?? ''}">${r.decision ?? ''}</span> <span class="muted">by ${r.decided_by ?? '—'}</span>`
    const body: Html = html`
<p>Answers of ${mode} keys whose action was <b>review</b>, newest first. Approving records the outcome <code>legitimate</code>, blocking <code>fraud</code> (later answers of the same input carry it). ${canDecide ? html`Focus a row and press <kbd>a</kbd> to approve or <kbd>b</kbd> to block.` : html`Your role sees the queue read-only.`} <a href="${v.base}/reviews/${other}">The ${other} queue</a></p>
${filterForm(base, f)}
${dataTable(
  ['Type', 'Input', 'Score', 'Factors (weight)', 'Age', 'Decision'],
  page.data.map((r) => ({
    attrs: { 'data-review': r.id, ...(r.status === 'pending' && canDecide ? { tabindex: '0' } : {}) },
    cells: [
      html`<code>${r.type}</code>`,
      html`<code class="wrap">${inputText(r.input)}</code>`,
      r.score,
      html`${r.factors.map((x, i) => html`${i > 0 ? ', ' : ''}<code>${x.code}</code> ${x.weight}`)}`,
      html`<span title="${r.created_at}">${age(now, r.created_at)}</span>`,
      r.status === 'decided' ? decided(r) : canDecide ? decisionForm(`${base}/${r.id}/decision`, v.session.csrf, lists) : 'pending',
    ],
  })),
  { empty: Object.keys(f).length > 0 ? 'No reviews match these filters.' : `No ${mode} reviews yet.` },
)}
${page.next_cursor ? html`<p><a href="${base}?${new URLSearchParams({ ...f, cursor: page.next_cursor }).toString()}">Next page</a></p>` : ''}`
    return dash.page(reply, dash.teamLayout(v, 'Review queue', 'reviews', flash), body, status)
  }
}

export function registerReviewPages(app: FastifyInstance, dash: Dash): void {
  const page = reviewPage(dash)
  app.get('/t/:org/reviews', async (request: Req, reply) => reply.redirect(`${(await dash.team(request, request.params.org)).base}/reviews/live`, 303))

  app.get('/t/:org/reviews/:mode', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org)
    const done = request.query.done
    const flash: Flash = done === 'approve' || done === 'block' ? { kind: 'ok', text: done === 'approve' ? 'Approved: outcome legitimate recorded.' : 'Blocked: outcome fraud recorded.' } : undefined
    return page(request, reply, v, modeOf(request.params.mode), flash)
  })

  app.post('/t/:org/reviews/:mode/:id/decision', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'developer')
    const mode = modeOf(request.params.mode)
    const form = readForm(request, DecisionForm)
    // lists are an admin's to change (the Lists page): a developer decides, without adding to one
    if (form.add_to_list && !atLeast(v.member.role, 'admin')) throw new DashboardError(403, 'Adding to a list takes the admin role.')
    const body = { decision: form.decision ?? '', ...(form.add_to_list ? { add_to_list: form.add_to_list } : {}), ...(form.note ? { note: form.note } : {}) }
    const params = { id: request.params.id }
    try {
      // the route's own validation, then the one decision path the route calls, as the signed-in user
      checkApiInput(request, 'decide_review', { params, body })
      const r = await dash.svc.reviews.decide({ orgId: v.org.id, mode }, params.id, body, `user:${v.user.id}`)
      return reply.redirect(`${v.base}/reviews/${mode}?done=${r.review.decision}`, 303)
    } catch (e) {
      if (e instanceof RiskcheckError && e.code === 'NOT_FOUND') throw new DashboardError(404, 'Not found.')
      const refused = apiRefusal(e)
      if (!refused) throw e
      return page(request, reply, v, mode, { kind: 'error', text: refused.message }, refused.status, {})
    }
  })
}

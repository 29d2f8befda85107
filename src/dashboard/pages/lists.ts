/**
 * Allow/block lists page: the team's lists of one mode (live or test, as keys of that mode see them) with their item
 * counts; create a list; per list, add values pasted or from a CSV file (its first column; the file is read into the
 * text box by app.js) with a reason and an expiry, search a value, page through the items, remove one, delete the
 * list. Every action goes through the API's list routes (../api.ts), so values are checked and normalised as the API
 * does. Every member sees the lists; owners and admins change them.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { RiskcheckError } from '../../errors.js'
import { LIST_ITEM_TYPES, LIST_KINDS } from '../../lists/types.js'
import { BULK_BODY_LIMIT } from '../../server/routes/bulk.js'
import { apiRefusal, callApi } from '../api.js'
import { atLeast, DashboardError, doneFlash, type Dash, type TeamView } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, dataTable, html, when, type Html } from '../html.js'
import { parseInputs } from './bulk.js'

type Mode = 'live' | 'test'
type Flash = { kind: 'ok' | 'error'; text: string } | undefined
interface ListView {
  id: string
  name: string
  kind: string
  item_type: string
  items: number
  created_at: string
}
interface ItemView {
  value: string
  reason: string | null
  expires_at: string | null
  created_at: string
}
type Req = FastifyRequest<{ Params: { org: string; mode: string; id: string }; Querystring: { done?: string; q?: string; cursor?: string } }>

const CreateForm = Type.Object({ name: Type.Optional(Type.String()), kind: Type.Optional(Type.String()), item_type: Type.Optional(Type.String()) })
const AddForm = Type.Object({ values: Type.Optional(Type.String()), reason: Type.Optional(Type.String()), expires: Type.Optional(Type.String()) })
const RemoveForm = Type.Object({ value: Type.Optional(Type.String()) })

const modeOf = (s: string | undefined): Mode => {
  if (s !== 'live' && s !== 'test') throw new DashboardError(404, 'Not found.')
  return s
}
const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso))

/** A value the API did not add, with why (`invalid` of its answer). */
interface InvalidValue {
  value: string
  message: string
}

/**
 * Every invalid value of an import, one a line in a scrolling block (the API names each; a paste of 5,000 values with
 * 40 typos needs all 40). A value is written as a JSON string, so spaces, quotes and control characters show.
 */
function invalidValues(invalid: readonly InvalidValue[]): Html | '' {
  if (invalid.length === 0) return ''
  return html`<details class="card" open data-invalid><summary>${invalid.length} invalid ${invalid.length === 1 ? 'value' : 'values'}, not added</summary>
<pre class="result">${invalid.map((i) => `${JSON.stringify(i.value)}: ${i.message}\n`)}</pre></details>`
}

/** The API's refusal as a page error; NOT_FOUND as the dashboard's 404. */
function refusalOf(e: unknown): { status: number; message: string } {
  if (e instanceof RiskcheckError && e.code === 'NOT_FOUND') throw new DashboardError(404, 'Not found.')
  const r = apiRefusal(e)
  if (!r) throw e
  return r
}

/** The two pages — the team's lists of a mode, and one list — drawn for `dash`. */
function listPages(dash: Dash) {
  const needStorage = () => {
    if (!dash.svc.lists) throw new DashboardError(503, 'Lists need the SQLite or PostgreSQL store; this server runs without one.')
  }
  const listsPage = async (request: FastifyRequest, reply: FastifyReply, v: TeamView, mode: Mode, flash: Flash, status = 200) => {
    needStorage()
    const lists = await callApi<ListView[]>(dash.svc, request, 'list_lists', v.org.id, { mode })
    const admin = atLeast(v.member.role, 'admin')
    const other: Mode = mode === 'live' ? 'test' : 'live'
    const body: Html = html`
<p>${mode === 'live' ? 'Live' : 'Test'} lists: lookups with ${mode} keys are matched against them from the next request. <a href="${v.base}/lists/${other}">The ${other} lists</a></p>
${
  admin
    ? html`<section class="card" aria-labelledby="new-list"><h2 id="new-list">New list</h2>
<form method="post" action="${v.base}/lists/${mode}" class="stack">${csrfField(v.session.csrf)}
<label><span>Name</span><input type="text" name="name" required maxlength="200"></label>
<label><span>Kind</span><select name="kind">${LIST_KINDS.map((k) => html`<option value="${k}">${k === 'block' ? 'block: a match blocks' : 'allow: a match approves'}</option>`)}</select></label>
<label><span>Items are</span><select name="item_type">${LIST_ITEM_TYPES.map((t) => html`<option value="${t}">${t}</option>`)}</select></label>
<button type="submit">Create list</button></form></section>`
    : html`<p class="muted">Owners and admins create and change lists.</p>`
}
<h2>Lists</h2>
${dataTable(
  ['List', 'Kind', 'Items are', 'Items', 'Created'],
  lists.map((l) => ({
    attrs: { 'data-list': l.id },
    cells: [html`<a href="${v.base}/lists/${mode}/${l.id}">${l.name}</a>`, l.kind, html`<code>${l.item_type}</code>`, l.items, when(ms(l.created_at))],
  })),
  { empty: `No ${mode} lists yet.` },
)}`
    return dash.page(reply, dash.teamLayout(v, 'Allow/block lists', 'lists', flash), body, status)
  }

  const listPage = async (
    request: Req,
    reply: FastifyReply,
    v: TeamView,
    mode: Mode,
    flash: Flash,
    status = 200,
    values?: { values: string; reason: string; expires: string },
    invalid: readonly InvalidValue[] = [],
  ) => {
    needStorage()
    const id = request.params.id
    let list: ListView
    let page: { data: ItemView[]; next_cursor: string | null }
    const q = typeof request.query.q === 'string' ? request.query.q.trim() : ''
    try {
      list = await callApi<ListView>(dash.svc, request, 'get_list', v.org.id, { mode, params: { id } })
      const query: Record<string, string> = q ? { value: q } : typeof request.query.cursor === 'string' ? { cursor: request.query.cursor } : {}
      page = await callApi(dash.svc, request, 'list_list_items', v.org.id, { mode, params: { id }, query })
    } catch (e) {
      const r = refusalOf(e)
      if (!q) throw new DashboardError(r.status, r.message)
      return listPage({ ...request, query: {} } as Req, reply, v, mode, { kind: 'error', text: r.message }, r.status)
    }
    const admin = atLeast(v.member.role, 'admin')
    const base = `${v.base}/lists/${mode}/${list.id}`
    const remove = (value: string) =>
      html`<form method="post" action="${base}/remove" class="inline">${csrfField(v.session.csrf)}<input type="hidden" name="value" value="${value}"><button type="submit" class="secondary">Remove</button></form>`
    const body: Html = html`${invalidValues(invalid)}
<section class="card"><p><b>${list.name}</b> · ${list.kind} list of <code>${list.item_type}</code> · ${list.items} items · ${mode}</p>
${admin ? html`<form method="post" action="${base}/delete" class="inline" data-confirm="Delete this list and its items?">${csrfField(v.session.csrf)}<button type="submit" class="danger">Delete list</button></form>` : ''}
</section>
${
  admin
    ? html`<section class="card" aria-labelledby="add-items"><h2 id="add-items">Add values</h2>
<form method="post" action="${base}/items" class="stack">${csrfField(v.session.csrf)}
<label><span>CSV file</span><input type="file" accept=".csv,.txt,text/csv,text/plain" data-into="list-values"></label>
<label><span>Values</span><textarea id="list-values" name="values" rows="8" placeholder="one a line, or a CSV whose first column holds them">${values?.values ?? ''}</textarea></label>
<label><span>Reason (optional)</span><input type="text" name="reason" maxlength="500" value="${values?.reason ?? ''}"></label>
<label><span>Expires (optional, at 00:00 UTC of)</span><input type="date" name="expires" value="${values?.expires ?? ''}"></label>
<button type="submit">Add values</button></form></section>`
    : ''
}
<h2>Items</h2>
<form method="get" action="${base}" class="inline"><label><span>Find a value</span><input type="search" name="q" value="${q}" maxlength="400"></label> <button type="submit" class="secondary">Search</button></form>
${dataTable(
  ['Value', 'Reason', 'Expires', 'Added', ''],
  page.data.map((i) => ({
    attrs: { 'data-item': i.value },
    cells: [html`<code class="wrap">${i.value}</code>`, i.reason ?? '—', when(ms(i.expires_at)), when(ms(i.created_at)), admin ? remove(i.value) : ''],
  })),
  { empty: q ? 'Not on this list.' : 'No items yet.' },
)}
${page.next_cursor ? html`<p><a href="${base}?cursor=${encodeURIComponent(page.next_cursor)}">Next page</a></p>` : ''}`
    return dash.page(reply, dash.teamLayout(v, list.name, 'lists', flash), body, status)
  }

  return { needStorage, listsPage, listPage }
}

export function registerListPages(app: FastifyInstance, dash: Dash): void {
  const { needStorage, listsPage, listPage } = listPages(dash)
  app.get('/t/:org/lists', async (request: Req, reply) => reply.redirect(`${(await dash.team(request, request.params.org)).base}/lists/live`, 303))

  app.get('/t/:org/lists/:mode', async (request: Req, reply) =>
    listsPage(request, reply, await dash.team(request, request.params.org), modeOf(request.params.mode), doneFlash(request.query)),
  )

  app.post('/t/:org/lists/:mode', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    const mode = modeOf(request.params.mode)
    needStorage()
    const form = readForm(request, CreateForm)
    try {
      const created = await callApi<ListView>(dash.svc, request, 'create_list', v.org.id, {
        mode,
        body: { name: (form.name ?? '').trim(), kind: form.kind ?? '', item_type: form.item_type ?? '' },
      })
      return reply.redirect(`${v.base}/lists/${mode}/${created.id}?done=created`, 303)
    } catch (e) {
      const r = refusalOf(e)
      return listsPage(request, reply, v, mode, { kind: 'error', text: r.message }, r.status)
    }
  })

  app.get('/t/:org/lists/:mode/:id', async (request: Req, reply) =>
    listPage(request, reply, await dash.team(request, request.params.org), modeOf(request.params.mode), doneFlash(request.query)),
  )

  app.post('/t/:org/lists/:mode/:id/:action', { bodyLimit: BULK_BODY_LIMIT }, async (request: FastifyRequest<{ Params: { org: string; mode: string; id: string; action: string } }>, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    const mode = modeOf(request.params.mode)
    const { id, action } = request.params
    needStorage()
    const r = request as unknown as Req
    const base = `${v.base}/lists/${mode}/${encodeURIComponent(id)}`
    try {
      switch (action) {
        case 'items': {
          const form = readForm(request, AddForm)
          const text = form.values ?? ''
          const reason = (form.reason ?? '').trim()
          const expires = (form.expires ?? '').trim()
          let added: { added: number; already_present: number; invalid: Array<{ value: string; message: string }> }
          try {
            const body = { values: parseInputs(text), ...(reason ? { reason } : {}), ...(expires ? { expires_at: `${expires}T00:00:00Z` } : {}) }
            added = await callApi(dash.svc, request, 'add_list_items', v.org.id, { mode, params: { id }, body })
          } catch (e) {
            const refused = refusalOf(e)
            // the API names the field `expires_at`; this form calls it Expires
            const message = refused.message.replaceAll('`expires_at`', 'Expires')
            // the whole text goes back in the box (as on the Bulk jobs page): a cut one lost the values past the cut
            return listPage(r, reply, v, mode, { kind: 'error', text: message }, refused.status, { values: text, reason: reason.slice(0, 500), expires: expires.slice(0, 40) })
          }
          const text2 = `${added.added} added, ${added.already_present} already on the list${added.invalid.length ? `, ${added.invalid.length} invalid (each named below)` : ''}.`
          return listPage(r, reply, v, mode, { kind: added.invalid.length ? 'error' : 'ok', text: text2 }, 200, undefined, added.invalid)
        }
        case 'remove': {
          // the API's body route, not the one with the value in the path (which holds at most 100 characters)
          const value = readForm(request, RemoveForm).value ?? ''
          const out = await callApi<{ removed: number; invalid: Array<{ message: string }> }>(dash.svc, request, 'remove_list_items', v.org.id, {
            mode,
            params: { id },
            body: { values: [value] },
          })
          const bad = out.invalid[0]
          if (bad) return listPage(r, reply, v, mode, { kind: 'error', text: `"${value.slice(0, 100)}": ${bad.message}.` }, 400)
          if (out.removed === 0) return listPage(r, reply, v, mode, { kind: 'error', text: `"${value.slice(0, 100)}" is not on the list.` }, 404)
          return reply.redirect(`${base}?done=deleted`, 303)
        }
        case 'delete':
          await callApi(dash.svc, request, 'delete_list', v.org.id, { mode, params: { id } })
          return reply.redirect(`${v.base}/lists/${mode}?done=deleted`, 303)
        default:
          throw new DashboardError(404, 'Not found.')
      }
    } catch (e) {
      if (e instanceof DashboardError) throw e
      const refused = refusalOf(e)
      return listPage(r, reply, v, mode, { kind: 'error', text: refused.message }, refused.status)
    }
  })
}

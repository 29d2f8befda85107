/**
 * Bulk jobs page: upload a CSV or paste inputs, pick the type and mode, watch progress live (app.js polls
 * jobs.json), cancel, retry, download the results CSV. Every action is the API's bulk route run as the team
 * (test jobs with test answers and no credits, live jobs billed to the team), so limits and messages are the API's.
 *
 * Inputs: one a line, or a CSV's first column (RFC 4180, as `riskcheck bulk` reads a file: a quoted field may hold
 * commas, `""` and line breaks); a first line that names the column (`email`, `input` …) is skipped.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { csvRecordsOfText, fieldStart, MAX_CSV_FIELD } from '../../bulk/csv.js'
import { RiskcheckError } from '../../errors.js'
import { BULK_TYPES, type BulkJob } from '../../schema.js'
import { BULK_BODY_LIMIT } from '../../server/routes/bulk.js'
import { apiRefusal, callApi } from '../api.js'
import { doneFlash, DashboardError, type Dash, type TeamView } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, dataTable, html, when, type Cell } from '../html.js'

type Req = FastifyRequest<{ Params: { org: string; mode?: string; id?: string }; Querystring: { done?: string } }>
type Mode = 'live' | 'test'
const HEADER = /^(input|inputs|value|values|email|emails|email_domain|phone|phones|phone_type|ip|ips|domain|domains|domain_age|email_auth|country|asn)$/i

/**
 * The inputs of a pasted list or CSV text: each record's first field, trimmed, blank ones dropped. A line break in a
 * quoted field of another column stays in that field (it used to start an input of its own). A quote opened and
 * never closed is refused (400 INVALID_REQUEST), since the rest of the text would be one input; so is a field longer
 * than the reader keeps (it was cut: often a quote opened by mistake that swallowed the lines up to the next one).
 */
export function parseInputs(text: string): string[] {
  const { records, unclosed, cut } = csvRecordsOfText(text)
  if (unclosed !== null) {
    throw new RiskcheckError('INVALID_REQUEST', `A quoted value is never closed (the one starting "${fieldStart(unclosed)}"): close its quote or remove it.`)
  }
  if (cut !== null) {
    throw new RiskcheckError(
      'INVALID_REQUEST',
      `A value is longer than ${MAX_CSV_FIELD.toLocaleString('en-US')} characters (record ${cut.record}, from line ${cut.line}, starting "${fieldStart(cut.kept)}"): ` +
        'if a quote opened there by mistake, close or remove it; else shorten the value.',
    )
  }
  const inputs = records.map((r) => (r[0] ?? '').trim())
  if (inputs.length > 0 && HEADER.test(inputs[0]!)) inputs.shift()
  return inputs.filter((l) => l !== '')
}

/** The new-job form; `type`, the inputs and `name` go on to the API's bulk route, which checks them. */
const BulkForm = Type.Object({
  type: Type.Optional(Type.String()),
  mode: Type.Optional(Type.Union([Type.Literal('test'), Type.Literal('live')])),
  inputs: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
})

const progressTotal = (j: BulkJob) => Math.max(1, j.unique_inputs, j.processed)
const busy = (j: BulkJob) => j.status === 'queued' || j.status === 'running'

/** The cells of a job's row: name, status, progress (app.js updates the three while it runs), results, actions. */
function jobCells(v: TeamView, j: BulkJob & { mode: Mode }): Cell[] {
  const action = (name: string, label: string, cls: string) =>
    html`<form method="post" action="${v.base}/bulk/${j.mode}/${j.id}/${name}" class="inline">${csrfField(v.session.csrf)}<button type="submit" class="${cls}">${label}</button></form>`
  return [
    html`${j.name}<br><small class="muted">${j.type} · ${j.mode} · ${when(Date.parse(j.created_at))}</small>`,
    html`<span class="status ${j.status}" data-field="status">${j.status}</span>`,
    html`<progress max="${progressTotal(j)}" value="${j.processed}">${j.processed}</progress> <span data-field="progress">${j.processed} / ${progressTotal(j)}</span>`,
    html`<small>approve ${j.results.approve} · verify ${j.results.verify} · review ${j.results.review} · block ${j.results.block} · errors ${j.results.errors}${j.mode === 'live' ? ` · ${j.credits_used} credits` : ''}</small>`,
    {
      cls: 'actions',
      body: html`<a class="button secondary" href="${v.base}/bulk/${j.mode}/${j.id}/results.csv" download>Results CSV</a>
${busy(j) ? action('cancel', 'Cancel', 'danger') : ''}
${!busy(j) && j.results.errors > 0 ? action('retry', 'Retry failed rows', 'secondary') : ''}`,
    },
  ]
}

export function registerBulkPages(app: FastifyInstance, dash: Dash): void {
  const modeOf = (s: string | undefined): Mode => {
    if (s !== 'live' && s !== 'test') throw new DashboardError(404, 'Not found.')
    return s
  }
  const jobsOf = async (request: FastifyRequest, v: TeamView) => {
    const out: Array<BulkJob & { mode: Mode }> = []
    for (const mode of ['live', 'test'] as const) {
      const page = await callApi<{ data: BulkJob[] }>(dash.svc, request, 'list_bulk_jobs', v.org.id, { mode, query: { limit: '50' } })
      out.push(...page.data.map((j) => ({ ...j, mode })))
    }
    return out.sort((a, b) => b.created_at.localeCompare(a.created_at))
  }

  const page = async (
    request: FastifyRequest,
    reply: FastifyReply,
    v: TeamView,
    flash?: { kind: 'ok' | 'error'; text: string },
    status = 200,
    values?: { inputs: string; name: string },
  ) => {
    const jobs = await jobsOf(request, v)
    const verified = v.user.emailVerifiedAt !== null
    const body = html`
<section class="card" aria-labelledby="new-job"><h2 id="new-job">New bulk job</h2>
<form method="post" action="${v.base}/bulk" class="stack">${csrfField(v.session.csrf)}
<label><span>Type</span><select name="type">${BULK_TYPES.map((t) => html`<option value="${t}">${t}</option>`)}</select></label>
<fieldset><legend>Mode</legend><label><input type="radio" name="mode" value="test" checked> Test (free)</label>
<label><input type="radio" name="mode" value="live"${verified ? '' : html` disabled`}> Live (uses credits)</label></fieldset>
<label><span>CSV file</span><input type="file" accept=".csv,.txt,text/csv,text/plain" data-into="bulk-inputs"></label>
<label><span>Inputs</span><textarea id="bulk-inputs" name="inputs" rows="8" placeholder="one a line, or a CSV whose first column holds them">${values?.inputs ?? ''}</textarea></label>
<label><span>Name (optional)</span><input type="text" name="name" maxlength="200" value="${values?.name ?? ''}"></label>
<button type="submit">Start job</button></form></section>
<h2>Jobs</h2>
${
  jobs.length === 0
    ? html`<p class="muted">No bulk jobs yet.</p>`
    : dataTable(
        ['Job', 'Status', 'Progress', 'Results', 'Actions'],
        jobs.map((j) => ({ attrs: { id: `job-${j.id}`, 'data-status': j.status }, cells: jobCells(v, j) })),
        { wrap: { 'data-poll': `${v.base}/bulk/jobs.json`, 'data-busy': jobs.some(busy) ? 'true' : 'false' } },
      )
}`
    return dash.page(reply, dash.teamLayout(v, 'Bulk jobs', 'bulk', flash), body, status)
  }

  app.get('/t/:org/bulk', async (request: Req, reply) => page(request, reply, await dash.team(request, request.params.org), doneFlash(request.query)))

  app.get('/t/:org/bulk/jobs.json', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org)
    const jobs = await jobsOf(request, v)
    return reply.type('application/json').send(jobs.map((j) => ({ id: j.id, status: j.status, processed: j.processed, total: progressTotal(j) })))
  })

  app.post('/t/:org/bulk', { bodyLimit: BULK_BODY_LIMIT }, async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org)
    const form = readForm(request, BulkForm)
    const mode: Mode = form.mode ?? 'test'
    const text = form.inputs ?? ''
    const name = (form.name ?? '').trim()
    // the box gets back the whole text sent: a cut one dropped every input past the cut, the last one cut in two
    const fail = (text2: string, status: number) => page(request, reply, v, { kind: 'error', text: text2 }, status, { inputs: text, name: name.slice(0, 200) })
    if (mode === 'live' && v.user.emailVerifiedAt === null) return fail('Live jobs need a verified email address.', 403)
    try {
      await callApi(dash.svc, request, 'create_bulk_job', v.org.id, { mode, body: { type: (form.type ?? '').trim(), inputs: parseInputs(text), ...(name ? { name } : {}) } })
    } catch (e) {
      const refused = apiRefusal(e)
      if (!refused) throw e
      return fail(refused.message, refused.status)
    }
    return reply.redirect(`${v.base}/bulk?done=created`, 303)
  })

  app.post('/t/:org/bulk/:mode/:id/:action', async (request: FastifyRequest<{ Params: { org: string; mode: string; id: string; action: string } }>, reply) => {
    const v = await dash.team(request, request.params.org)
    const mode = modeOf(request.params.mode)
    const op = request.params.action === 'cancel' ? 'cancel_bulk_job' : request.params.action === 'retry' ? 'retry_bulk_job' : null
    if (!op) throw new DashboardError(404, 'Not found.')
    let job: BulkJob
    try {
      job = await callApi<BulkJob>(dash.svc, request, op, v.org.id, { mode, params: { id: request.params.id } })
    } catch (e) {
      const refused = apiRefusal(e)
      if (!refused) throw e
      if (e instanceof RiskcheckError && e.code === 'NOT_FOUND') throw new DashboardError(404, 'Not found.')
      return page(request, reply, v, { kind: 'error', text: refused.message }, refused.status)
    }
    // cancelling a job that finished meanwhile returns it as it is (the API's rule): say so
    const done = op === 'retry_bulk_job' ? 'retried' : job.status === 'cancelled' ? 'cancelled' : 'finished'
    return reply.redirect(`${v.base}/bulk?done=${done}`, 303)
  })

  app.get('/t/:org/bulk/:mode/:id/results.csv', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org)
    const mode = modeOf(request.params.mode)
    try {
      return await callApi(dash.svc, request, 'download_bulk_results', v.org.id, { mode, params: { id: request.params.id ?? '' }, reply })
    } catch (e) {
      const refused = apiRefusal(e)
      if (!refused) throw e
      throw e instanceof RiskcheckError && e.code === 'NOT_FOUND' ? new DashboardError(404, 'Not found.') : new DashboardError(refused.status, refused.message)
    }
  })
}

/**
 * Policy page (owners and admins; docs/dashboard.md "Pages, accounts and rules"): the team's scoring policy in force
 * and what it changes from the default; upload a candidate (JSON or YAML, validated by the validator `riskcheck policy check` uses), see
 * its backtest over the team's answers of the last 7 days labelled by the team's outcomes — the report of
 * `riskcheck admin policy set` — then Apply it (the server scores the team's next request with it) or Discard it.
 * The candidate waits in a hidden field signed by the server (docs/decisions.md, "Policies measured on outcomes").
 */
import { createHmac } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { describePolicy } from '../../cli/policy-command.js'
import { labelTable, matrixTable, metricsTable, reviewQueueHtml } from '../../cli/backtest-html.js'
import { labelSourceLine } from '../../cli/backtest-text.js'
import { fmtInt, share } from '../../cli/backtest-text.js'
import { formatPolicyIssues, parsePolicy, PolicyFileError, policyFromObject, type PolicyFile } from '../../scoring/policy-file.js'
import { backtestOrg } from '../../server/org-backtest.js'
import { sameToken, DashboardError, type Dash, type TeamView } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, html, Html } from '../html.js'

/** Largest policy text the page takes (a policy file is a few kilobytes). */
export const DASHBOARD_POLICY_BYTES = 64 * 1024
/** Changes listed under the backtest. */
const SHOWN_CHANGES = 20

type Req = FastifyRequest<{ Params: { org: string }; Querystring: { done?: string } }>
type Flash = { kind: 'ok' | 'error'; text: string } | undefined

const TestForm = Type.Object({ policy: Type.Optional(Type.String()) })
const ApplyForm = Type.Object({ candidate: Type.Optional(Type.String()), signature: Type.Optional(Type.String()) })

const DONE: Record<string, string> = {
  applied: 'Applied: the team’s requests are scored with this policy from the next one.',
  discarded: 'The candidate is discarded; nothing changed.',
}

/** The signature of a candidate: bound to the team and the session, keyed by the store's key-hash secret. */
async function sign(dash: Dash, v: TeamView, canonical: string): Promise<string> {
  const secret = await dash.svc.store.keyHashSecret()
  return createHmac('sha256', secret).update(`policy-candidate\u0000${v.org.id}\u0000${v.session.idHash}\u0000${canonical}`).digest('hex')
}

/** The policy in force: version, when and from where it was set, what it changes. */
async function inForce(dash: Dash, v: TeamView): Promise<Html> {
  const rec = await dash.svc.orgPolicyStore.getOrgPolicy(v.org.id)
  if (!rec) return html`<section class="card" id="in-force"><h2>In force</h2><p>The service policy (no policy of this team's own).</p></section>`
  let lines: string[]
  try {
    lines = describePolicy(policyFromObject(JSON.parse(rec.canonical) as unknown))
  } catch (e) {
    lines = [`not usable by this riskcheck (the service policy applies): ${(e as Error).message}`]
  }
  return html`<section class="card" id="in-force"><h2>In force</h2>
<p>Policy <code data-testid="version">${rec.version}</code>${rec.description ? html` — ${rec.description}` : ''}, set ${new Date(rec.setAt).toISOString()}${rec.source ? html` from ${rec.source}` : ''}.</p>
<ul>${lines.map((l) => html`<li>${l}</li>`)}</ul></section>`
}

function uploadForm(v: TeamView, text = ''): Html {
  return html`<section class="card" aria-labelledby="candidate"><h2 id="candidate">Test a candidate policy</h2>
<form method="post" action="${v.base}/policy/test" class="stack">${csrfField(v.session.csrf)}
<label><span>Policy file (JSON or YAML, up to ${DASHBOARD_POLICY_BYTES / 1024} KiB)</span><input type="file" accept=".json,.yaml,.yml,application/json,text/yaml" data-into="policy-text"></label>
<label><span>Policy</span><textarea id="policy-text" name="policy" rows="12" placeholder="weights: { ip_vpn: 60 }">${text}</textarea></label>
<button type="submit">Backtest</button></form></section>`
}

/** The backtest of a valid candidate, with Apply and Discard. */
async function candidateSection(dash: Dash, v: TeamView, file: PolicyFile): Promise<Html> {
  const bt = await backtestOrg({
    policies: dash.svc.orgPolicyStore,
    outcomes: dash.svc.outcomeStore,
    orgId: v.org.id,
    policy: file.policy,
    nowMs: dash.nowMs(),
    maxChanges: SHOWN_CHANGES,
  })
  const r = bt.report
  const signature = await sign(dash, v, file.canonical)
  const raw = (s: string) => new Html(s)
  const changes = r.changes.map(
    (c) => html`<tr><td><code class="wrap">${c.input}</code></td><td>${c.current.action}</td><td>${c.candidate.action} ${c.candidate.score}</td><td>${c.label ?? ''}</td><td>${c.candidate.rule ?? ''}</td></tr>`,
  )
  return html`<section class="card" id="backtest"><h2>Backtest of <code data-testid="candidate-version">${file.version}</code></h2>
<ul>${describePolicy(file).map((l) => html`<li>${l}</li>`)}</ul>
${formatPolicyIssues(file.warnings).map((l) => html`<p class="muted">warning: ${l}</p>`)}
<p id="summary">Over the team's answers of live keys since ${new Date(bt.since).toISOString()}: ${fmtInt(r.read)} read, ${fmtInt(r.scored)} re-scored; ${fmtInt(r.changed)} change action (${share(r.changed, r.scored)}).</p>
<p id="label-source">${labelSourceLine(bt, null)}</p>
<h3>Transition matrix (current ↓, candidate →)</h3>
${raw(matrixTable(r))}
${raw(reviewQueueHtml(r))}
${r.labels ? html`<h3>Labelled answers</h3>${raw(labelTable(r))}<h3>Precision and recall for fraud</h3>${raw(metricsTable(r))}` : html`<p class="muted">No labels: record outcomes (POST /v1/outcomes) to measure fraud caught and good customers held.</p>`}
${r.changes.length > 0 ? html`<h3>Changes (first ${SHOWN_CHANGES})</h3><table id="changes"><tr><th>input</th><th>current</th><th>candidate</th><th>label</th><th>rule</th></tr>${changes}</table>` : ''}
<form method="post" action="${v.base}/policy/apply" class="inline">${csrfField(v.session.csrf)}<input type="hidden" name="candidate" value="${file.canonical}"><input type="hidden" name="signature" value="${signature}"><button type="submit">Apply</button></form>
<form method="post" action="${v.base}/policy/discard" class="inline">${csrfField(v.session.csrf)}<button type="submit" class="secondary">Discard</button></form>
</section>`
}

async function page(dash: Dash, reply: FastifyReply, v: TeamView, parts: { flash?: Flash; errors?: string[]; text?: string; candidate?: Html }, status = 200) {
  const body = html`${await inForce(dash, v)}
${parts.errors && parts.errors.length > 0 ? html`<section class="card" id="policy-errors"><h2>Not a valid policy</h2><ul>${parts.errors.map((e) => html`<li>${e}</li>`)}</ul></section>` : ''}
${parts.candidate ?? ''}
${uploadForm(v, parts.text)}`
  return dash.page(reply, dash.teamLayout(v, 'Scoring policy', 'policy', parts.flash), body, status)
}

export function registerPolicyPages(app: FastifyInstance, dash: Dash): void {
  app.get('/t/:org/policy', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    const code = request.query.done
    const text = typeof code === 'string' ? DONE[code] : undefined
    return page(dash, reply, v, { flash: text ? { kind: 'ok', text } : undefined })
  })

  app.post('/t/:org/policy/test', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    const text = readForm(request, TestForm).policy ?? ''
    if (text.trim() === '') return page(dash, reply, v, { flash: { kind: 'error', text: 'Choose a policy file or paste a policy.' } }, 400)
    if (Buffer.byteLength(text, 'utf8') > DASHBOARD_POLICY_BYTES)
      return page(dash, reply, v, { flash: { kind: 'error', text: `The policy is larger than ${DASHBOARD_POLICY_BYTES / 1024} KiB; a policy file is a few kilobytes.` } }, 413)
    let file: PolicyFile
    try {
      file = await parsePolicy(text, { format: text.trimStart().startsWith('{') ? 'json' : 'yaml' })
    } catch (e) {
      if (!(e instanceof PolicyFileError)) throw e
      const n = e.issues.length
      return page(dash, reply, v, { flash: { kind: 'error', text: `Not a valid policy (${n} error${n === 1 ? '' : 's'}).` }, errors: formatPolicyIssues(e.issues), text }, 400)
    }
    return page(dash, reply, v, { candidate: await candidateSection(dash, v, file), text })
  })

  app.post('/t/:org/policy/apply', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    const form = readForm(request, ApplyForm)
    const canonical = form.candidate ?? ''
    if (!sameToken(form.signature, await sign(dash, v, canonical))) throw new DashboardError(400, 'This candidate was not tested here (or the session changed): upload it again.')
    let file: PolicyFile
    try {
      file = policyFromObject(JSON.parse(canonical) as unknown)
    } catch (e) {
      // Signed but no longer accepted (this riskcheck changed in between): test it again.
      return page(dash, reply, v, { flash: { kind: 'error', text: `The candidate is no longer valid: ${(e as Error).message}` } }, 400)
    }
    await dash.svc.orgPolicyStore.setOrgPolicy({ orgId: v.org.id, version: file.version, canonical: file.canonical, description: file.description, source: `dashboard (${v.user.email})`, setAt: dash.nowMs() })
    dash.log()?.info({ org_id: v.org.id, policy_version: file.version, user_id: v.user.id }, 'org policy set from the dashboard')
    return reply.redirect(`${v.base}/policy?done=applied`, 303)
  })

  app.post('/t/:org/policy/discard', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    return reply.redirect(`${v.base}/policy?done=discarded`, 303)
  })
}

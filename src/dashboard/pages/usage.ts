/**
 * Usage & credits page: balance by bucket (subscription, purchased), plan and period, charts of lookups and credits
 * per day by lookup type for the period (SVG drawn on the server, no script), and the credit events (low,
 * depleted, added) from the service's event outbox.
 *
 * The per-day numbers are the dashboard's own tally (TeamStore.addUsage): every live single lookup answered 200 by
 * the API is counted by {@link registerUsageTally} with the credits its answer reports. Bulk jobs count in the
 * period totals of the account (shown above the charts), not per day.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { StoredEvent } from '../../accounts/types.js'
import { PRODUCTS } from '../../accounts/plans.js'
import type { ServerContext } from '../../server/routes/types.js'
import { doneFlash, type Dash } from '../context.js'
import { barChart } from '../chart.js'
import { dataTable, html, when } from '../html.js'
import type { TeamStore } from '../../server/store/contracts/team-store.js'

const DAY_MS = 24 * 3600_000
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)
/** Lookup types in chart order (one colour each). */
const TYPES = PRODUCTS.map((p) => p.id)

/** How often the usage tally writes what it counted (and at close). */
export const USAGE_FLUSH_MS = 1000

/** The dashboard's usage tally: counts in memory, written in one go every {@link USAGE_FLUSH_MS}. */
export interface UsageTally {
  /** Writes what was counted so far (before a usage page is drawn, and at close). */
  flush(): Promise<void>
  close(): Promise<void>
}

/**
 * Counts live lookups per team, day and type as the API answers them (a lookup listener of the server: the key's
 * team and the credits billed come with the answer, so nothing is read per request). Counts are summed in memory and
 * written every second, so the chart costs the API no database write per request; a process that dies loses at most
 * that second of the chart (never of billing: credits and usage totals are the store's, written with each request).
 */
export function registerUsageTally(svc: ServerContext, teams: TeamStore, log: Pick<FastifyInstance['log'], 'warn'>): UsageTally {
  const pending = new Map<string, { orgId: string; day: string; type: string; lookups: number; credits: number }>()
  svc.onLookup((auth, result, billed) => {
    if (auth.mode !== 'live' || result.metadata.test_mode) return
    const type = result.request.type
    const day = dayOf(svc.nowMs())
    const key = `${auth.orgId}\u0000${day}\u0000${type}`
    const row = pending.get(key) ?? { orgId: auth.orgId, day, type, lookups: 0, credits: 0 }
    row.lookups++
    row.credits += billed
    pending.set(key, row)
  })
  let writing: Promise<void> = Promise.resolve()
  const flush = (): Promise<void> => {
    const rows = [...pending.values()]
    pending.clear()
    writing = writing.then(async () => {
      for (const r of rows) {
        try {
          await teams.addUsage(r.orgId, r.day, r.type, r.lookups, r.credits)
        } catch (err) {
          if (!svc.noteOutage(err)) {
            log.warn({ err }, 'dashboard: usage tally failed')
            continue
          }
          // the database is down: the counts wait for the next write (the outage has its own log line)
          const key = `${r.orgId}\u0000${r.day}\u0000${r.type}`
          const row = pending.get(key) ?? { ...r, lookups: 0, credits: 0 }
          row.lookups += r.lookups
          row.credits += r.credits
          pending.set(key, row)
        }
      }
    })
    return writing
  }
  const timer = setInterval(() => void flush(), USAGE_FLUSH_MS)
  timer.unref()
  return {
    flush,
    async close() {
      clearInterval(timer)
      await flush()
    },
  }
}

function eventText(e: StoredEvent): string {
  const data = (e.payload as { data?: Record<string, unknown> }).data ?? {}
  return Object.entries(data)
    .filter(([, v]) => typeof v !== 'object')
    .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${String(v)}`)
    .join(' · ')
}

export function registerUsagePages(app: FastifyInstance, dash: Dash, tally: UsageTally): void {
  app.get('/t/:org/usage', async (request: FastifyRequest<{ Params: { org: string }; Querystring: { done?: string } }>, reply) => {
    const v = await dash.team(request, request.params.org)
    const org = v.org
    const plan = dash.svc.plans.find((p) => p.id === org.planId)
    const end = org.periodEnd - 1
    const days: string[] = []
    for (let t = Date.parse(`${dayOf(org.periodStart)}T00:00:00Z`); t <= end; t += DAY_MS) days.push(dayOf(t))
    await tally.flush()
    const rows = await dash.teams.listUsage(org.id, days[0] ?? dayOf(org.periodStart), days[days.length - 1] ?? dayOf(end))
    const events = (await dash.svc.store.listEvents({ orgId: org.id, limit: 10_000 })).filter((e) => e.type.startsWith('credits.')).reverse().slice(0, 50)
    const body = html`
<div class="stats">
<div class="stat"><span class="muted">Balance</span><b data-testid="balance">${org.subscriptionCredits + org.purchasedCredits}</b></div>
<div class="stat"><span class="muted">Subscription credits</span><b data-testid="subscription">${org.subscriptionCredits}</b><small class="muted">of ${org.monthlyCredits} a period</small></div>
<div class="stat"><span class="muted">Purchased credits</span><b data-testid="purchased">${org.purchasedCredits}</b></div>
<div class="stat"><span class="muted">Plan</span><b>${plan?.name ?? org.planId}</b><small class="muted">${org.planStatus}${org.suspended ? ' · suspended' : ''}</small></div>
</div>
<p>Period <b>${when(org.periodStart)}</b> to <b>${when(org.periodEnd)}</b>: ${org.usage.periodLookups} lookups, ${org.usage.periodCredits} credits (all time ${org.usage.totalLookups} lookups, ${org.usage.totalCredits} credits).</p>
${barChart(days, rows, 'lookups', 'Live lookups per day by type', TYPES)}
${barChart(days, rows, 'credits', 'Credits per day by type', TYPES)}
<details class="card"><summary>The numbers of the charts</summary>${dataTable(
  ['Day', 'Type', 'Lookups', 'Credits'],
  rows.map((r) => ({ cells: [r.day, r.type, r.lookups, r.credits] })),
  { empty: 'No live lookups in this period yet.' },
)}</details>
<h2>Credit events</h2>
${
  events.length === 0
    ? html`<p class="muted">No credit events yet.</p>`
    : dataTable(
        ['Time', 'Event', 'Details'],
        events.map((e) => ({ cells: [when(e.created * 1000), html`<span class="status ${e.type === 'credits.added' ? 'ok' : 'error'}">${e.type}</span>`, eventText(e)] })),
        { body: { 'data-testid': 'credit-events' } },
      )
}`
    return dash.page(reply, dash.teamLayout(v, 'Usage & credits', 'usage', doneFlash(request.query)), body)
  })
}

/**
 * `riskcheck admin …`: the operator commands for what the team dashboard also does (docs/dashboard.md), run
 * against the server's database (safe while the server runs: every change one transaction; ./admin-database.ts).
 * The commands and their flags are listed in {@link ADMIN_HELP}.
 */
import { parseArgs } from 'node:util'
import { EXIT, messageOf, printError, UsageError, wholeNumber, type CliCommand, type CliIO } from './shared.js'
import type { ApiKeyRecord, CreditReason, OrgRecord } from '../accounts/types.js'
import { endpointView } from '../accounts/views.js'
import type { Scope } from '../schema.js'
import type { StoredEndpoint } from '../server/store/contracts/deliveries.js'
import { openAdminDatabase, runMigrate, type AdminDatabase } from './admin-database.js'
import { databaseTarget, databaseVariables, DEFAULT_DB, postgresLocation, type DatabaseTarget } from './database.js'
import { withEnvironment } from './serve-settings.js'

const ADMIN_HELP = `Usage: riskcheck admin <group> <action> [args] [--db ./riskcheck.sqlite | --database-url postgres://…] [--json]

  org create --name NAME [--plan PLAN_ID]        create an org (default plan: free)
  org list | org show ORG_ID                     orgs with plan, credits and usage
  org suspend ORG_ID | org unsuspend ORG_ID      every request of a suspended org gets 403 ACCOUNT_SUSPENDED
  key create --org ORG_ID [--mode live|test] [--scopes lookup,bulk,account:read,webhooks,lists] [--name NAME]
                                                 create a key; the secret key is printed once, store it now
  key list --org ORG_ID                          keys of an org (never the secret)
  key revoke KEY_ID                              revoke a key (effective on its next request)
  key grant KEY_ID --scopes SCOPES               add scopes to a key (e.g. webhooks)
  credits add --org ORG_ID --amount N [--reason top_up|upgrade|period_renewal]
                                                 add purchased credits (sends credits.added)
  plan set --org ORG_ID --plan PLAN_ID [--monthly-credits N] [--rate-per-second N]
                                                 change plan; the overrides are a custom deal for this org
  plan list                                      the plan catalogue
  events list [--org ORG_ID] [--limit N]         the event outbox (credit alerts …), oldest first
  webhook list --org ORG_ID                      webhook endpoints of an org with status and last success
  webhook enable ENDPOINT_ID                     turn a disabled endpoint back on (a fresh failing window starts)
  webhook resend ENDPOINT_ID [--since ISO]       queue again the events the endpoint missed (same event ids)
  webhook ping ENDPOINT_ID                       queue a ping event to that endpoint (the running server sends it)
  notices list [--limit N]                       operator notices (endpoints disabled after a day of failures), newest first
  user list [--org ORG_ID]                       dashboard accounts with their teams and roles
  user verify EMAIL                              mark a dashboard account's address verified (live keys allowed)
  user two-factor-off EMAIL                      turn off a dashboard account's two-factor sign-in (lost authenticator
                                                 and recovery codes); its sessions end
  list create --org ORG_ID --name NAME --kind block|allow --type email|email_domain|ip|phone|country|asn [--mode live|test]
                                                 create an allow/block list of the org (live keys' by default)
  list show --org ORG_ID [LIST_ID] [--limit N]   the org's lists with item counts, or one list and its first items
  list add LIST_ID --org ORG_ID [VALUE …] [--file FILE|-] [--reason R] [--expires ISO]
                                                 add values (normalised; invalid ones named), from the arguments
                                                 and/or a file of one value a line (- reads standard input)
  list remove LIST_ID --org ORG_ID VALUE …       remove values
  list delete LIST_ID --org ORG_ID               delete a list and its items (every list command takes --mode)
  policy set --org ORG_ID FILE [--dry-run] [--changes N] [--labels FILE | --no-outcomes]
                                                 backtest the policy file over the org's answers of the last 7 days
                                                 (transition matrix, changed inputs; labelled by the org's outcomes:
                                                 precision and recall for fraud, good customers held, review queue),
                                                 then apply it from the org's next request; --dry-run only prints the
                                                 backtest; --labels FILE labels from a CSV input,label instead
  policy show --org ORG_ID                       the org's own policy: version id, file, what it changes
  policy clear --org ORG_ID                      back to the service policy (serve --policy, else the default)
  migrate [--check]                              PostgreSQL: apply pending schema migrations and print the versions
                                                 applied; --check changes nothing and exits 1 unless the schema is
                                                 current (prints current and expected versions)

The database is the server's: --db PATH (RISKCHECK_DB; default ./riskcheck.sqlite) or --database-url URL
(RISKCHECK_DATABASE_URL or DATABASE_URL; ?schema=NAME picks the schema). On PostgreSQL pending migrations are applied
first unless --no-migrate (RISKCHECK_NO_MIGRATE=1), which refuses a schema that is behind.

Exit codes: 0 done · 1 not found / refused (migrate --check: not current) · 64 bad usage
`

class NotFound extends Error {}

function need(values: Record<string, unknown>, flag: string): string {
  const v = values[flag]
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${flag} is required`)
  return v
}

function onePositional(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected one ${what}`)
  return positionals[0]!
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** The org as printed by the admin commands. */
export function orgView(org: OrgRecord) {
  return {
    id: org.id,
    name: org.name,
    plan: org.planId,
    monthly_credits: org.monthlyCredits,
    rate_per_second: org.ratePerSecond,
    status: org.planStatus,
    suspended: org.suspended,
    credits: {
      subscription: org.subscriptionCredits,
      purchased: org.purchasedCredits,
      total_available: org.subscriptionCredits + org.purchasedCredits,
    },
    period_start: iso(org.periodStart),
    period_end: iso(org.periodEnd),
    usage: {
      period: { lookups: org.usage.periodLookups, credits: org.usage.periodCredits },
      all_time: { lookups: org.usage.totalLookups, credits: org.usage.totalCredits },
    },
    created_at: iso(org.createdAt),
  }
}

/** The key as printed by the admin commands (never the hash). */
export function keyView(key: ApiKeyRecord) {
  return {
    id: key.id,
    org_id: key.orgId,
    name: key.name,
    mode: key.mode,
    scopes: key.scopes,
    last4: key.last4,
    created_at: iso(key.createdAt),
    revoked_at: iso(key.revokedAt),
    last_used_at: iso(key.lastUsedAt),
  }
}

function orgLine(o: ReturnType<typeof orgView>): string {
  return `${o.id}  ${o.name}  plan ${o.plan} (${o.monthly_credits} credits/period, ${o.rate_per_second} req/s)  credits ${o.credits.total_available} (subscription ${o.credits.subscription}, purchased ${o.credits.purchased})  ${o.suspended ? 'SUSPENDED' : o.status}`
}

function keyLine(k: ReturnType<typeof keyView>): string {
  return `${k.id}  ${k.mode}  …${k.last4}  ${k.name}  [${k.scopes.join(', ')}]${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`
}

/** The webhook endpoint as printed by the admin commands (never the secret). */
function endpointAdminView(e: StoredEndpoint) {
  const { id, ...rest } = endpointView(e)
  return {
    id,
    org_id: e.orgId,
    ...rest,
    enabled_at: e.enabledAt ? e.enabledAt.toISOString() : null,
    last_success_at: e.lastSuccessAt ? e.lastSuccessAt.toISOString() : null,
  }
}

function endpointLine(e: ReturnType<typeof endpointAdminView>): string {
  return `${e.id}  ${e.status}${e.disabled_reason ? ` (${e.disabled_reason})` : ''}  ${e.format}  ${e.url}  [${e.events.join(', ')}]  last success ${e.last_success_at ?? 'never'}`
}

async function runWebhook(database: AdminDatabase, action: string, positionals: string[], values: Record<string, unknown>, nowMs: number) {
  const deliveries = await database.deliveries(nowMs)
  const endpoint = async (id: string) => {
    const e = await deliveries.getStoredEndpoint(id)
    if (!e) throw new NotFound(`no webhook endpoint ${id}`)
    return e
  }
  switch (action) {
    case 'list': {
      const list = (await deliveries.listOrgEndpoints(need(values, 'org'))).map(endpointAdminView)
      return { json: list, text: list.map(endpointLine).join('\n') || '(no webhook endpoints)' }
    }
    case 'enable': {
      const id = onePositional(positionals, 'ENDPOINT_ID')
      await endpoint(id)
      const v = endpointAdminView((await deliveries.enable(id, nowMs))!)
      return { json: v, text: `${endpointLine(v)}\nEnabled. Resend what it missed with: riskcheck admin webhook resend ${id}` }
    }
    case 'resend': {
      const id = onePositional(positionals, 'ENDPOINT_ID')
      const e = await endpoint(id)
      if (e.status !== 'enabled') throw new NotFound(`webhook endpoint ${id} is disabled; enable it first (riskcheck admin webhook enable ${id})`)
      let since: Date | undefined
      if (values.since !== undefined) {
        since = new Date(String(values.since))
        if (Number.isNaN(since.getTime())) throw new UsageError(`--since must be an ISO date (got ${String(values.since)})`)
      }
      const created = await deliveries.resend(id, nowMs, since)
      const json = created.map((d) => ({ delivery_id: d.id, event_id: d.eventId, resend_of: d.resendOf }))
      return { json, text: `${created.length} deliveries queued for ${id}${created.length ? `:\n${json.map((d) => `  ${d.delivery_id}  event ${d.event_id}`).join('\n')}` : ''}` }
    }
    case 'ping': {
      const e = await endpoint(onePositional(positionals, 'ENDPOINT_ID'))
      const event = await deliveries.ping(e, nowMs)
      return { json: event, text: `ping ${event.id} queued for ${e.id} (${e.url}); the running server delivers it within seconds` }
    }
    default:
      throw new UsageError(`unknown admin command "webhook ${action}" (see riskcheck admin --help)`)
  }
}

async function run(database: AdminDatabase, group: string, action: string, positionals: string[], values: Record<string, unknown>, nowMs: number) {
  const { store } = database
  const { parseScopes, issueApiKey } = await import('../accounts/keys.js')
  const { DEFAULT_PLAN_ID } = await import('../accounts/plans.js')
  const scopesOf = (flag: string): Scope[] => {
    try {
      return parseScopes(need(values, flag))
    } catch (e) {
      throw new UsageError((e as Error).message)
    }
  }
  const org = async (id: string) => {
    const o = await store.getOrg(id, nowMs)
    if (!o) throw new NotFound(`no org ${id}`)
    return o
  }
  const planExists = async (id: string) => {
    if (!(await store.listPlans()).some((p) => p.id === id)) {
      throw new UsageError(`unknown plan ${id} (known: ${(await store.listPlans()).map((p) => p.id).join(', ')})`)
    }
  }
  if (group === 'webhook') return runWebhook(database, action, positionals, values, nowMs)
  if (group === 'user') {
    const { runDashboardUser } = await import('../dashboard/admin.js')
    try {
      return await runDashboardUser(store, await database.teams(), action, positionals, values, nowMs)
    } catch (e) {
      if (e instanceof TypeError) throw new UsageError(e.message)
      throw e
    }
  }
  if (group === 'list') {
    const { runAdminList } = await import('./admin-lists.js')
    return runAdminList(store, action, positionals, values, nowMs, org)
  }
  if (group === 'policy') {
    const { runOrgPolicy } = await import('./admin-policy.js')
    const { outcomeStoreOf } = await import('../server/store/open-storage.js')
    return runOrgPolicy(database.policies, action, positionals, values, nowMs, org, outcomeStoreOf(store))
  }
  switch (`${group} ${action}`) {
    case 'notices list': {
      const limit = wholeNumber('limit', values.limit, 1) ?? 100
      const notices = await (await database.deliveries(nowMs)).listNotices(limit)
      const json = notices.map((n) => ({ id: n.id, at: iso(n.at), org_id: n.orgId, subject: n.subject, kind: n.kind, message: n.message }))
      return { json, text: json.map((n) => `${n.at}  ${n.kind}  ${n.message}`).join('\n') || '(no notices)' }
    }
    case 'org create': {
      const plan = (values.plan as string | undefined) ?? DEFAULT_PLAN_ID
      await planExists(plan)
      const created = orgView(await store.createOrg({ name: need(values, 'name'), planId: plan }, nowMs))
      return { json: created, text: orgLine(created) }
    }
    case 'org list': {
      const list = (await store.listOrgs(nowMs)).map(orgView)
      return { json: list, text: list.map(orgLine).join('\n') || '(no orgs)' }
    }
    case 'org show': {
      const o = orgView(await org(onePositional(positionals, 'ORG_ID')))
      return { json: o, text: `${orgLine(o)}\n  period ${o.period_start} → ${o.period_end}; usage this period ${o.usage.period.lookups} lookups / ${o.usage.period.credits} credits; all time ${o.usage.all_time.lookups} / ${o.usage.all_time.credits}` }
    }
    case 'org suspend':
    case 'org unsuspend': {
      const id = onePositional(positionals, 'ORG_ID')
      const o = await store.setOrgSuspended(id, action === 'suspend', nowMs)
      if (!o) throw new NotFound(`no org ${id}`)
      const v = orgView(o)
      return { json: v, text: orgLine(v) }
    }
    case 'key create': {
      const mode = (values.mode as string | undefined) ?? 'live'
      if (mode !== 'live' && mode !== 'test') throw new UsageError('--mode must be live or test')
      const orgId = need(values, 'org')
      await org(orgId)
      const { key, secret } = await issueApiKey(
        store,
        {
          orgId,
          mode,
          ...(values.scopes !== undefined ? { scopes: scopesOf('scopes') } : {}),
          ...(values.name !== undefined ? { name: need(values, 'name') } : {}),
        },
        nowMs,
      )
      const v = { ...keyView(key), secret }
      return { json: v, text: `${keyLine(v)}\n\n  ${secret}\n\nThis key is shown once: store it now. Only its hash is kept.` }
    }
    case 'key list': {
      const orgId = need(values, 'org')
      await org(orgId)
      const list = (await store.listKeys(orgId)).map(keyView)
      return { json: list, text: list.map(keyLine).join('\n') || '(no keys)' }
    }
    case 'key revoke': {
      const id = onePositional(positionals, 'KEY_ID')
      const k = await store.revokeKey(id, nowMs)
      if (!k) throw new NotFound(`no key ${id}`)
      const v = keyView(k)
      return { json: v, text: keyLine(v) }
    }
    case 'key grant': {
      const id = onePositional(positionals, 'KEY_ID')
      const existing = await store.getKey(id)
      if (!existing) throw new NotFound(`no key ${id}`)
      const scopes = [...new Set([...existing.scopes, ...scopesOf('scopes')])]
      const v = keyView((await store.setKeyScopes(id, scopes))!)
      return { json: v, text: keyLine(v) }
    }
    case 'credits add': {
      const orgId = need(values, 'org')
      const amount = wholeNumber('amount', need(values, 'amount'), 1)!
      const reason = (values.reason as string | undefined) ?? 'top_up'
      if (!['top_up', 'upgrade', 'period_renewal'].includes(reason)) throw new UsageError('--reason must be top_up, upgrade or period_renewal')
      const o = await store.addCredits(orgId, amount, reason as CreditReason, nowMs)
      if (!o) throw new NotFound(`no org ${orgId}`)
      const v = orgView(o)
      return { json: v, text: orgLine(v) }
    }
    case 'plan set': {
      const orgId = need(values, 'org')
      const planId = need(values, 'plan')
      await planExists(planId)
      const monthlyCredits = wholeNumber('monthly-credits', values['monthly-credits'], 0)
      const ratePerSecond = wholeNumber('rate-per-second', values['rate-per-second'], 1)
      const o = await store.setOrgPlan(orgId, { planId, monthlyCredits: monthlyCredits ?? null, ratePerSecond: ratePerSecond ?? null }, nowMs)
      if (!o) throw new NotFound(`no org ${orgId}`)
      const v = orgView(o)
      return { json: v, text: orgLine(v) }
    }
    case 'plan list': {
      const plans = await store.listPlans()
      return {
        json: plans,
        text: plans.map((p) => `${p.id}  ${p.name}  ${p.monthly_price} USD  ${p.monthly_credits} credits  ${p.rate_per_second} req/s`).join('\n'),
      }
    }
    case 'events list': {
      const limit = wholeNumber('limit', values.limit, 1) ?? 100
      const events = await store.listEvents({ ...(values.org ? { orgId: need(values, 'org') } : {}), limit })
      const payloads = events.map((e) => e.payload)
      return {
        json: payloads,
        text: payloads.map((p) => `${new Date(p.created * 1000).toISOString()}  ${p.id}  ${p.org_id}  ${p.type}  ${JSON.stringify(p.data)}`).join('\n') || '(no events)',
      }
    }
    default:
      throw new UsageError(`unknown admin command "${group} ${action}" (see riskcheck admin --help)`)
  }
}

/**
 * Runs `riskcheck admin` with `args` (after the command name). Returns the exit code.
 *
 * @example await runAdmin(['org', 'create', '--name', 'Acme', '--json'], process)
 */
export async function runAdmin(args: string[], io: CliIO, options: { now?: () => number } = {}): Promise<number> {
  let parsed: { values: Record<string, unknown>; positionals: string[] }
  try {
    parsed = parseArgs({
      args,
      options: {
        db: { type: 'string' },
        'database-url': { type: 'string' },
        'no-migrate': { type: 'boolean' },
        check: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        name: { type: 'string' },
        plan: { type: 'string' },
        org: { type: 'string' },
        mode: { type: 'string' },
        scopes: { type: 'string' },
        amount: { type: 'string' },
        reason: { type: 'string' },
        'monthly-credits': { type: 'string' },
        'rate-per-second': { type: 'string' },
        limit: { type: 'string' },
        since: { type: 'string' },
        'dry-run': { type: 'boolean' },
        kind: { type: 'string' },
        type: { type: 'string' },
        file: { type: 'string' },
        expires: { type: 'string' },
        changes: { type: 'string' },
        labels: { type: 'string' },
        'no-outcomes': { type: 'boolean' },
      },
      allowPositionals: true,
      strict: true,
    }) as { values: Record<string, unknown>; positionals: string[] }
  } catch (e) {
    printError(io, 'riskcheck admin', e)
    return EXIT.usage
  }
  const { positionals } = parsed
  const [group, action, ...rest] = positionals
  if (parsed.values.help || group === undefined || group === 'help') {
    io.stdout.write(ADMIN_HELP)
    return parsed.values.help || group === 'help' ? 0 : 64
  }
  let values: Record<string, unknown>
  let target: DatabaseTarget
  try {
    // The same database settings as `serve`: a flag, else its variable, else ./riskcheck.sqlite.
    const merged = withEnvironment(parsed.values, io.env ?? process.env, databaseVariables())
    values = merged.values
    target = databaseTarget(values, merged.origin) ?? { kind: 'sqlite', path: DEFAULT_DB }
    if (target.kind === 'postgres') {
      if (!/^postgres(ql)?:\/\//.test(target.url)) throw new UsageError(`${merged.origin('database-url')} must start with postgres:// or postgresql://`)
      postgresLocation(target.url)
    }
    if (target.kind === 'sqlite' && values['no-migrate'] === true) {
      throw new UsageError(`${merged.origin('no-migrate')} is for PostgreSQL (--database-url): a SQLite file is migrated when it is opened`)
    }
    if (group === 'migrate' && action !== undefined) throw new UsageError(`admin migrate takes no action (got "${action}"); --check only checks`)
    if (values.check !== undefined && group !== 'migrate') throw new UsageError('--check is an option of admin migrate')
  } catch (e) {
    printError(io, 'riskcheck admin', e)
    return EXIT.usage
  }
  const nowMs = (options.now ?? Date.now)()
  const print = (out: { json: unknown; text: string }) => io.stdout.write(values.json ? `${JSON.stringify(out.json)}\n` : `${out.text}\n`)
  if (group === 'migrate') {
    try {
      const out = await runMigrate(target, values.check === true)
      print(out)
      return out.code
    } catch (e) {
      io.stderr.write(`riskcheck admin: migrate failed: ${messageOf(e)}\n`)
      return EXIT.failed
    }
  }
  if (action === undefined) {
    io.stderr.write(`riskcheck admin: missing action after "${group}" (see riskcheck admin --help)\n`)
    return 64
  }
  if (group === 'list' && values.file === '-') values['stdin-text'] = await readStdin(io)
  let database: AdminDatabase
  try {
    database = await openAdminDatabase(target, { migrate: values['no-migrate'] !== true })
  } catch (e) {
    io.stderr.write(`riskcheck admin: cannot open the database: ${messageOf(e)}\n`)
    return EXIT.failed
  }
  try {
    print(await run(database, group, action, rest, values, nowMs))
    return 0
  } catch (e) {
    printError(io, 'riskcheck admin', e)
    if (e instanceof UsageError) return EXIT.usage
    if (e instanceof NotFound || e instanceof RangeError) return EXIT.failed
    throw e
  } finally {
    await database.close()
  }
}

/** The whole of standard input as text. */
async function readStdin(io: CliIO): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of io.stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer))
  return Buffer.concat(chunks).toString('utf8')
}

/** The `admin` command (registered by the CLI). */
export const adminCommand: CliCommand = {
  name: 'admin',
  summary: 'operator commands: orgs, API keys, credits, plans, suspension, webhook endpoints, lists, org policies (admin --help)',
  run: (args, io) => runAdmin(args, io),
}

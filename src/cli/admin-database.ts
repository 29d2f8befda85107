/**
 * The database `riskcheck admin` works on, SQLite (`--db`) or PostgreSQL (`--database-url`), seen through the same
 * stores the server uses — the service store, the org-policy store, the dashboard's team store and the webhook
 * delivery storage — so every admin command runs unchanged on either. And `riskcheck admin migrate`.
 */
import type { TeamStore } from '../server/store/contracts/team-store.js'
import type { EventPayload } from '../schema.js'
import type { OperatorNotice, StoredEndpoint } from '../server/store/contracts/deliveries.js'
import type { DeliveryServiceStorage } from '../server/store/contracts/service-storage.js'
import type { OrgPolicyStore } from '../server/store/contracts/org-policies.js'
import type { Awaitable } from '../accounts/types.js'
import type { Store } from '../server/store/contracts/store.js'
import type { DeliveryRecord } from '../webhooks/queue.js'
import { postgresLocation, safeUrl, type DatabaseTarget } from './database.js'

/** What `admin webhook …` and `admin notices list` need of the webhook delivery storage. */
export interface AdminDeliveries {
  getStoredEndpoint(id: string): Awaitable<StoredEndpoint | null>
  listOrgEndpoints(orgId: string): Awaitable<StoredEndpoint[]>
  /** Re-enables an endpoint (a fresh failing window starts); null when there is none. */
  enable(id: string, nowMs: number): Awaitable<StoredEndpoint | null>
  /** Queues again the events the endpoint missed (same event ids). */
  resend(id: string, nowMs: number, since?: Date): Promise<DeliveryRecord[]>
  /** Writes a ping event for the endpoint into the outbox; the running server delivers it. */
  ping(endpoint: StoredEndpoint, nowMs: number): Awaitable<EventPayload>
  listNotices(limit: number): Awaitable<OperatorNotice[]>
}

/** The stores of the admin's database. */
export interface AdminDatabase {
  store: Store
  policies: OrgPolicyStore
  teams(): Promise<TeamStore>
  /** The webhook delivery storage, its clock stopped at `nowMs`. */
  deliveries(nowMs: number): Promise<AdminDeliveries>
  close(): Promise<void>
}

/**
 * The operator's webhook actions over the delivery storage the server itself uses (SQLite's or PostgreSQL's): what
 * they write — a re-enabled endpoint, deliveries queued again, a ping in the outbox — the running server delivers.
 */
async function adminDeliveries(storage: DeliveryServiceStorage): Promise<AdminDeliveries> {
  const [{ webhookOperator }, { buildPingEvent }] = await Promise.all([import('../server/webhook-service.js'), import('../webhooks/events.js')])
  const d = storage.deliveries
  return {
    getStoredEndpoint: (id) => d.getStoredEndpoint(id),
    listOrgEndpoints: (orgId) => d.listOrgEndpoints(orgId),
    enable: (id, at) => webhookOperator.enable(d, id, at),
    resend: (id, at, since) => webhookOperator.resend(d, id, at, since),
    async ping(endpoint, at) {
      const event = buildPingEvent({ orgId: endpoint.orgId, now: new Date(at), endpointId: endpoint.id })
      await storage.insertEvent(event)
      return event
    },
    listNotices: (limit) => d.listNotices(limit),
  }
}

async function openSqlite(path: string): Promise<AdminDatabase> {
  const [{ createSqliteStore }, { createSqliteOrgPolicyStore }, { createSqliteTeamStore }] = await Promise.all([
    import('../server/store/sqlite/store.js'),
    import('../server/store/sqlite/org-policies.js'),
    import('../server/store/sqlite/dashboard.js'),
  ])
  const store = createSqliteStore(path)
  return {
    store,
    policies: createSqliteOrgPolicyStore(store.db),
    teams: async () => createSqliteTeamStore(store.db),
    async deliveries(nowMs) {
      const { createSqliteDeliveryStorage } = await import('../server/store/sqlite/deliveries.js')
      return adminDeliveries(createSqliteDeliveryStorage(store.db, () => nowMs))
    },
    close: async () => store.close(),
  }
}

async function openPostgresDatabase(url: string, migrate: boolean): Promise<AdminDatabase> {
  const { openPostgresServerStores } = await import('../server/store/postgres/server.js')
  const pgs = await openPostgresServerStores(postgresLocation(url), { migrate })
  return {
    store: pgs.store,
    policies: pgs.orgPolicies,
    teams: () => pgs.teamStore(),
    async deliveries(nowMs) {
      const { createPostgresDeliveryStorage } = await import('../server/store/postgres/deliveries.js')
      return adminDeliveries(createPostgresDeliveryStorage({ pool: pgs.store.pool, now: () => nowMs }))
    },
    close: () => pgs.close(),
  }
}

/**
 * Opens the admin's database: the SQLite file (created and migrated, as ever), or PostgreSQL (pending migrations
 * applied first unless `migrate` is false, which refuses a schema that is behind).
 */
export function openAdminDatabase(target: DatabaseTarget, options: { migrate: boolean }): Promise<AdminDatabase> {
  return target.kind === 'sqlite' ? openSqlite(target.path) : openPostgresDatabase(target.url, options.migrate)
}

/** What `admin migrate` prints (JSON with --json, else the text) and its exit code. */
export interface MigrateOutcome {
  json: unknown
  text: string
  code: number
}

/**
 * `riskcheck admin migrate [--check]`. On PostgreSQL: applies the pending migrations (the core ledger, then the
 * dashboard's) and prints the versions applied; with `check`, changes nothing and exits 1 unless the schema is the
 * one this riskcheck expects, printing current and expected versions. A SQLite file is migrated whenever it is
 * opened; here it is opened (migrated) or, with `check`, only read.
 */
export async function runMigrate(target: DatabaseTarget, check: boolean): Promise<MigrateOutcome> {
  if (target.kind === 'sqlite') return migrateSqlite(target.path, check)
  const pgs = await import('../server/store/postgres/server.js')
  const at = postgresLocation(target.url)
  const where = safeUrl(target.url)
  const versions = (s: import('../server/store/postgres/server.js').PostgresServerStatus) =>
    `version ${s.core.current} (dashboard ${s.dashboard.current}); this riskcheck expects ${s.core.expected} (dashboard ${s.dashboard.expected})`
  if (check) {
    const status = await pgs.postgresServerStatus(at)
    const problem = pgs.describeStatus(status)
    const current = problem === null
    return {
      json: { database_url: where, current: status.core.current, expected: status.core.expected, dashboard: status.dashboard, up_to_date: current },
      text: `${where}: ${versions(status)}: ${current ? 'up to date' : status.core.current > status.core.expected || status.dashboard.current > status.dashboard.expected ? 'newer: upgrade riskcheck' : 'behind: run riskcheck admin migrate'}`,
      code: current ? 0 : 1,
    }
  }
  const applied = await pgs.migratePostgresServer(at)
  const status = await pgs.postgresServerStatus(at)
  const list = (v: number[]) => (v.length ? v.join(', ') : 'none')
  return {
    json: { database_url: where, applied: applied.core, dashboard_applied: applied.dashboard, current: status.core.current, dashboard: status.dashboard.current },
    text: `${where}: applied ${list(applied.core)} (dashboard ${list(applied.dashboard)}); now at ${versions(status)}`,
    code: 0,
  }
}

async function migrateSqlite(path: string, check: boolean): Promise<MigrateOutcome> {
  const { MIGRATIONS } = await import('../server/store/sqlite/migrations.js')
  const expected = MIGRATIONS.length
  const { existsSync } = await import('node:fs')
  const Database = (await import('better-sqlite3')).default
  const read = () => {
    if (!existsSync(path)) return 0
    const db = new Database(path, { readonly: true, fileMustExist: true })
    try {
      return db.pragma('user_version', { simple: true }) as number
    } finally {
      db.close()
    }
  }
  const before = read()
  if (check) {
    const current = before === expected
    return {
      json: { db: path, current: before, expected, up_to_date: current },
      text: `${path}: version ${before}; this riskcheck expects ${expected}: ${current ? 'up to date' : before > expected ? 'newer: upgrade riskcheck' : 'behind: run riskcheck admin migrate (or start the server)'}`,
      code: current ? 0 : 1,
    }
  }
  const opened = await openSqlite(path)
  await opened.close()
  const applied = Array.from({ length: Math.max(0, expected - before) }, (_, i) => before + i + 1)
  return {
    json: { db: path, applied, current: expected },
    text: `${path}: applied ${applied.length ? applied.join(', ') : 'none'}; now at version ${expected}`,
    code: 0,
  }
}

/**
 * The dashboard over each engine it runs on: the memory store, SQLite (a temp file) and PostgreSQL (a schema of its
 * own, dropped after; only with RISKCHECK_TEST_DATABASE_URL). Each is a real server on loopback (offline lookups, a
 * mailer that keeps what it is given, a settable clock).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { MailMessage } from '../../src/dashboard/mail.js'
import { createMemoryStore, createMemoryTeamStore } from '../../src/server/store/sqlite/memory.js'
import type { TeamStore } from '../../src/server/store/contracts/team-store.js'
import { createServer, type RiskcheckServer, type ServerOptions } from '../../src/server/app.js'
import { openPostgresServerStores } from '../../src/server/store/postgres/server.js'
import { Client } from './http.js'
import { storeAccount, storeSession } from './store-account.js'

export type EngineName = 'memory' | 'sqlite' | 'postgres'

export interface Running {
  app: RiskcheckServer
  base: string
  mails: MailMessage[]
  /** The server clock (unix ms); move it with `clock.t += …`. */
  clock: { t: number }
  /** Runs SQL on the engine's database (SQLite and PostgreSQL; undefined in memory). */
  sql?: (statement: string) => Promise<void>
  /** Another server instance over the same database (and clock and mail box), as a second process would be. */
  twin(): Promise<Running>
  close(): Promise<void>
}

const databaseUrl = process.env.RISKCHECK_TEST_DATABASE_URL

/** The engines this run has: memory and SQLite always, PostgreSQL when RISKCHECK_TEST_DATABASE_URL is set. */
export function engines(suite: string): EngineName[] {
  if (!databaseUrl) console.log(`${suite}: PostgreSQL skipped: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it`)
  return databaseUrl ? ['memory', 'sqlite', 'postgres'] : ['memory', 'sqlite']
}

interface Shared {
  mails: MailMessage[]
  clock: { t: number }
  /** memory: the store object; SQLite: the file; PostgreSQL: the schema. */
  where: { memory: ReturnType<typeof createMemoryStore>; teams: TeamStore } | { file: string } | { schema: string }
}

/** Starts a server on `engine` with `options` (dashboard options merged). */
export async function start(engine: EngineName, options: Partial<ServerOptions> = {}, shared?: Shared): Promise<Running> {
  const mails: MailMessage[] = shared?.mails ?? []
  const clock = shared?.clock ?? { t: Date.parse('2026-11-23T10:00:00Z') }
  const cleanups: Array<() => Promise<void> | void> = []
  let db: ServerOptions['db']
  let extra: Partial<ServerOptions> = {}
  let teamStore: TeamStore | undefined
  let sql: Running['sql']
  let where: Shared['where']
  if (engine === 'memory') {
    const memory = shared && 'memory' in shared.where ? shared.where : { memory: createMemoryStore(), teams: createMemoryTeamStore() }
    db = memory.memory
    teamStore = memory.teams
    where = memory
  } else if (engine === 'sqlite') {
    let file = shared && 'file' in shared.where ? shared.where.file : ''
    if (!file) {
      const dir = mkdtempSync(join(tmpdir(), 'riskcheck-dash-engine-'))
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
      file = join(dir, 'db.sqlite')
    }
    db = file
    where = { file }
  } else {
    const schema = shared && 'schema' in shared.where ? shared.where.schema : `rc_dasha_${randomBytes(5).toString('hex')}`
    const stores = await openPostgresServerStores({ connectionString: databaseUrl!, schema })
    const pool = new pg.Pool({ connectionString: databaseUrl!, options: `-c search_path=${schema}`, max: 1 })
    sql = async (s) => void (await pool.query(s))
    cleanups.push(async () => {
      await pool.end()
      await stores.close()
      if (shared) return
      const admin = new pg.Pool({ connectionString: databaseUrl! })
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.end()
    })
    db = stores.store
    extra = { orgPolicies: stores.orgPolicies }
    teamStore = await stores.teamStore()
    where = { schema }
  }
  const app = createServer({
    db,
    ...extra,
    riskcheck: { offline: true, now: () => new Date(clock.t) },
    purgeIntervalMs: 0,
    webhookIntervalMs: 0,
    anonymousRatePerSecond: 10_000,
    unsafeAllowLoopbackWebhooks: true,
    ...options,
    dashboard: {
      mailer: { configured: true, send: async (m) => void mails.push(m), close: () => undefined },
      noticeIntervalMs: 0,
      ...(teamStore ? { teamStore } : {}),
      ...(options.dashboard || {}),
    },
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  if (engine === 'sqlite') {
    const sqlite = (app.store as unknown as { db: { exec(s: string): void } }).db
    sql = async (s) => sqlite.exec(s)
  }
  return {
    app,
    base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    mails,
    clock,
    ...(sql ? { sql } : {}),
    twin: () => start(engine, options, { mails, clock, where }),
    async close() {
      await app.close()
      for (const c of cleanups.reverse()) await c()
    },
  }
}

/**
 * Set-up without the sign-up and sign-in forms, for tests about something else: a person made in the store, owner
 * of a new team (unverified, as after Client.signUp, unless `verified`), and a Client signed in as them (a session
 * written to the store) that has opened the team's keys page. Their password (default 'correct horse battery') signs
 * in through the form as usual.
 */
export async function signedInClient(r: Running, email: string, team: string, { password = 'correct horse battery', verified = false } = {}): Promise<{ client: Client; team: string; userId: string }> {
  const { userId, orgId } = await storeAccount(r.app, email, team, { password, verified }, r.clock.t)
  const id = await storeSession(r.app, userId, r.clock.t)
  const client = new Client(r.base)
  client.cookies.set('rc_session', id)
  const path = `/dashboard/t/${orgId}`
  const keys = await client.get(`${path}/keys`)
  if (keys.status !== 200) throw new Error(`the session of ${email} answered ${keys.status}`)
  return { client, team: path, userId }
}

/**
 * The embedded store: SQLite through better-sqlite3 (one connection per process, WAL, migrations on open), composed
 * of ./accounts.ts, ./credits.ts, ./events.ts, ./requests.ts, ./group-commit.ts and ./leases.ts. Every credit change
 * is one IMMEDIATE transaction holding a conditional UPDATE (docs/decisions.md, "Storage engines" → "SQLite tables").
 */
import { randomBytes } from 'node:crypto'
import Database from 'better-sqlite3'
import type { CacheWrite } from '../../../accounts/types.js'
import { DEFAULT_PLANS, type Plan } from '../../../accounts/plans.js'
import { migrateSqlite } from './migrate.js'
import { MIGRATIONS, type Migration } from './migrations.js'
import { createSqliteAccounts, insertPlans } from './accounts.js'
import { createSqliteCredits } from './credits.js'
import { createSqliteEvents } from './events.js'
import { createCheckpointer, type Checkpointer } from './checkpointer.js'
import { groupCommit } from './group-commit.js'
import { createSqliteLeases, type SqliteLeases } from './leases.js'
import { createSqliteRequests } from './requests.js'
import type { Store, Synchronous } from '../contracts/store.js'

/** The SQLite store; `db` is exposed so later modules (bulk, webhooks) can add their tables and statements. */
export interface SqliteStore extends Synchronous<Store> {
  readonly engine: 'sqlite' | 'memory'
  readonly db: Database.Database
  /** The file path (or `:memory:`). */
  readonly path: string
  /**
   * Runs `write` in the group commit of the hot path (./group-commit.ts): it shares one transaction with the
   * other writes of the same event-loop turn and resolves after that commit. For modules on the same database whose
   * writes go with requests (the answer log of per-org policies).
   */
  groupWrite<T>(write: () => T): Promise<T>
  /** Writes one row of its own: throws when the file cannot be written (disk full, read-only, locked, I/O error). */
  probeWrite(): void
  /** The checkpoints run in the worker thread, and its failure (null without one: in memory, or turned off). */
  checkpointStats(): { checkpoints: number; failure: string | null } | null
  /**
   * Tells the store a commit outside the hot path wrote many pages (a large list emptied a step): the worker
   * checkpoints now, so the WAL does not grow to SQLite's own checkpoint, which runs inside a commit.
   */
  afterLargeCommit(): void
}

/** Options of {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * Extra migrations applied after the core ones (for modules built on this store), numbered by their place after
   * them (a `version` given is replaced).
   */
  migrations?: Array<Omit<Migration, 'version'> & { version?: number }>
  /** Milliseconds to wait for a lock held by another process (default 5000). */
  busyTimeoutMs?: number
  /** The plan catalogue a new database starts with (default: the default plans). */
  plans?: readonly Plan[]
  /**
   * WAL checkpoints in a worker thread (default true for a file): the hot path's commits never wait on one
   * (./checkpointer.ts). false leaves them to SQLite, inside the commit that crosses its threshold.
   */
  backgroundCheckpoints?: boolean
}

/**
 * Opens (creating if needed) the SQLite store at `path` (`:memory:` for a throw-away one): WAL journal, foreign keys,
 * busy timeout, migrations, the default plan catalogue and the key-hash secret on first start.
 *
 * @example
 * const store = createSqliteStore('./riskcheck.sqlite')
 * const org = store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
 */
export function createSqliteStore(path: string, options: SqliteStoreOptions = {}): SqliteStore {
  const db = new Database(path)
  // Extra migrations follow the core ones; a version of their own is optional (their place in the list is theirs).
  const migrations: Migration[] = [...MIGRATIONS, ...(options.migrations ?? []).map((m, i) => ({ ...m, version: MIGRATIONS.length + i + 1 }))]
  let journal: unknown
  try {
    // the busy timeout first: a process opening the file while another migrates it waits rather than fails
    const busyTimeoutMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))
    db.pragma(`busy_timeout = ${busyTimeoutMs}`)
    journal = switchToWal(db, busyTimeoutMs)
    db.pragma('synchronous = NORMAL')
    db.pragma('foreign_keys = ON')
    migrateSqlite(db, migrations, { pragma: 'user_version' }, {
      newer: (version, expected) => `riskcheck store: the database schema (version ${version}) is newer than this server (${expected}); upgrade riskcheck`,
    })
    db.transaction(() => {
      db.prepare(`INSERT OR IGNORE INTO meta (key, value) VALUES ('key_hash_secret', ?)`).run(randomBytes(32).toString('hex'))
      const plans = db.prepare('SELECT COUNT(*) AS n FROM plans').get() as { n: number }
      if (plans.n === 0) insertPlans(db, options.plans ?? DEFAULT_PLANS)
    }).immediate()
  } catch (e) {
    db.close()
    throw e
  }
  // SQLite's own checkpoint stays as a safety net, ten times further: for a failed worker, or long writes off the hot path
  // the mode the switch answered: asking again is one more read of a file other processes may be migrating (SQLITE_BUSY)
  const background = options.backgroundCheckpoints !== false && journal === 'wal' && !db.memory
  if (background) db.pragma('wal_autocheckpoint = 10000')
  return buildStore(db, path, migrations.length, background ? createCheckpointer(path) : null)
}

/**
 * `journal_mode = WAL`, tried again until `timeoutMs` while it answers SQLITE_BUSY: on a file still in rollback mode
 * that another process is writing (a new file several processes migrate at once), SQLite refuses the switch at once,
 * without the busy timeout, because waiting could deadlock.
 */
function switchToWal(db: Database.Database, timeoutMs: number): unknown {
  const deadline = Date.now() + timeoutMs
  const pause = new Int32Array(new SharedArrayBuffer(4))
  for (let waitMs = 1; ; waitMs = Math.min(waitMs * 2, 50)) {
    try {
      return db.pragma('journal_mode = WAL', { simple: true })
    } catch (e) {
      if ((e as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw e
      Atomics.wait(pause, 0, 0, waitMs)
    }
  }
}

/**
 * The settlements of one group commit, one per org: the lookups of an org's requests summed and their cache entries
 * written in one settlement (one savepoint) rather than one each; every caller answered after the commit.
 */
function groupedSettlements(
  group: <T>(write: () => T) => Promise<T>,
  settle: (orgId: string, lookups: number, nowMs: number, cacheWrites: readonly CacheWrite[] | undefined) => void,
  inTransaction: () => boolean,
): (orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]) => Promise<void> {
  type Ask = { orgId: string; lookups: number; nowMs: number; cacheWrites: readonly CacheWrite[] | undefined; resolve: () => void; reject: (e: unknown) => void }
  let asks: Ask[] = []
  return (orgId, lookups, nowMs, cacheWrites) =>
    new Promise<void>((resolve, reject) => {
      if (asks.push({ orgId, lookups, nowMs, cacheWrites, resolve, reject }) > 1) return
      // this group's asks: all pushed before its write runs (the commit runs at the end of the turn)
      let taken: Ask[] = []
      const failed = new Map<string, unknown>()
      const writeAll = () => {
        taken = asks
        asks = []
        const byOrg = new Map<string, Ask[]>()
        for (const a of taken) byOrg.set(a.orgId, [...(byOrg.get(a.orgId) ?? []), a])
        for (const [org, list] of byOrg) {
          try {
            const sum = list.reduce((n, a) => n + a.lookups, 0)
            settle(org, sum, Math.max(...list.map((a) => a.nowMs)), list.flatMap((a) => a.cacheWrites ?? []))
          } catch (e) {
            failed.set(org, e)
            // SQLite rolled the whole group back (a full disk): fail it all (./group-commit.ts)
            if (!inTransaction()) throw e
          }
        }
      }
      group(writeAll).then(
        () => {
          for (const a of taken) (failed.has(a.orgId) ? a.reject(failed.get(a.orgId)) : a.resolve())
        },
        (e) => {
          for (const a of taken.length > 0 ? taken : asks.splice(0)) a.reject(e)
        },
      )
    })
}

function buildStore(db: Database.Database, path: string, expectedVersion: number, checkpointer: Checkpointer | null): SqliteStore {
  const secret = (db.prepare(`SELECT value FROM meta WHERE key = 'key_hash_secret'`).get() as { value: string }).value
  let leases: SqliteLeases | undefined
  const requests = createSqliteRequests(db, { leaseLeft: (id, nowMs) => leases!.leaseLeft(id, nowMs) })
  const events = createSqliteEvents(db)
  const credits = createSqliteCredits(db, requests.resultCache, events)
  const { within: _steps, ...creditOps } = credits // the steps inside a transaction stay the leases'
  const group = groupCommit(db, checkpointer ? () => checkpointer.afterCommit() : undefined)
  leases = createSqliteLeases(db, credits, group)
  const settleGrouped = groupedSettlements(group, credits.settleCredits, () => db.inTransaction)
  let closed = false
  return {
    engine: 'sqlite',
    db,
    path,
    ...requests,
    ...createSqliteAccounts(db, credits.getOrg),
    ...creditOps,
    listEvents: events.listEvents,
    groupWrite: group,
    leases: leases.leases,
    grouped: {
      reserveCredits: (orgId, amount, nowMs) => group(() => credits.reserveCredits(orgId, amount, nowMs)),
      refundCredits: (orgId, res, amount, nowMs) => group(() => credits.refundCredits(orgId, res, amount, nowMs)),
      settleCredits: settleGrouped,
    },
    keyHashSecret: () => secret,
    probe() {
      // a real read of the file (not a cached value): throws when the store is closed or the file is unreadable
      const schemaVersion = db.pragma('user_version', { simple: true }) as number
      return { schemaVersion, expectedVersion }
    },
    checkpointStats: () => (checkpointer ? { ...checkpointer.stats } : null),
    afterLargeCommit: () => checkpointer?.afterLargeCommit(),
    probeWrite() {
      db.prepare(`INSERT INTO meta (key, value) VALUES ('write_probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(String(Date.now()))
    },
    close() {
      if (closed) return
      closed = true
      checkpointer?.close()
      db.close()
    },
  }
}

/**
 * Per-org scoring policies and the per-org answer log (docs/service.md, docs/decisions.md "Per-org
 * policies"): the storage behind `riskcheck admin policy set | show | clear` and the backtest `policy set` prints.
 *
 * - The org's policy: its version id (`pol_…`, the content hash of the canonical overrides), the canonical JSON of the
 *   overrides (what the server compiles), the file's description and path, and when it was set. One row per org;
 *   no row = the org uses the service's policy.
 * - The answer log: what re-scoring needs of each answer a live key of the org got from a single lookup or a combined
 *   check — time, type, input, action, score, fired factor codes, context — and nothing else (no details, no key, no
 *   request). Entries expire 7 days after the answer ({@link ANSWER_LOG_TTL_MS}) and an org keeps at most its newest
 *   {@link MAX_ANSWERS_PER_ORG}; both are enforced by {@link OrgPolicyStore.purgeAnswers}, which the server runs
 *   with its other purges, and reads never return older entries.
 *
 * Implementations: SQLite (tables of migration 003 in ./migrations.ts, {@link createSqliteOrgPolicyStore}) and memory
 * ({@link createMemoryOrgPolicyStore}); ./postgres/org-policies.ts holds the PostgreSQL tables and statements.
 */
import type Database from 'better-sqlite3'
import type { Action, CheckContextName, LookupType } from '../../schema.js'
import type { Awaitable } from '../../accounts/types.js'

/** How long an answer stays in the log: 7 days (the window `admin policy set` backtests over). */
export const ANSWER_LOG_TTL_MS = 7 * 24 * 60 * 60 * 1000

/** Most answers kept per org (the newest); a backtest covers at most these. */
export const MAX_ANSWERS_PER_ORG = 100_000

/** An org's own scoring policy as stored. */
export interface OrgPolicyRecord {
  orgId: string
  /** `pol_` + 16 hex digits: the content hash of `canonical` (the same id `riskcheck policy check` prints). */
  version: string
  /** Canonical JSON of the overrides (sorted keys; no `$schema`, no `description`). */
  canonical: string
  description: string | null
  /** The file it was set from (for `policy show`), or null. */
  source: string | null
  /** Unix ms. */
  setAt: number
}

/** One logged answer: exactly what re-scoring needs (a {@link import('../../scoring/index.js').StoredAnswer}). */
export interface LoggedAnswer {
  /** Unix ms of the answer. */
  at: number
  type: LookupType
  /** The input as the result recorded it (a combined check: its parts joined with ` · `). */
  input: string
  action: Action
  score: number | null
  factors: readonly string[]
  context: CheckContextName | null
}

/** The storage of per-org policies and answer logs. Methods may answer synchronously or with a promise. */
export interface OrgPolicyStore {
  /** The org's policy, or null when it uses the service's. */
  getOrgPolicy(orgId: string): Awaitable<OrgPolicyRecord | null>
  /** Only the version id (what every request reads when the auth read does not carry it). */
  getOrgPolicyVersion(orgId: string): Awaitable<string | null>
  /** Every org's policy (the server compiles them at start). */
  listOrgPolicies(): Awaitable<OrgPolicyRecord[]>
  /** Sets (replaces) the org's policy. */
  setOrgPolicy(record: OrgPolicyRecord): Awaitable<void>
  /** Removes the org's policy; returns the record removed, or null when there was none. */
  clearOrgPolicy(orgId: string): Awaitable<OrgPolicyRecord | null>
  /** Appends answers of an org to its log. */
  appendAnswers(orgId: string, answers: readonly LoggedAnswer[]): Awaitable<void>
  /** The org's logged answers at or after `sinceMs`, oldest first, at most the newest `limit` (default {@link MAX_ANSWERS_PER_ORG}). */
  listAnswers(orgId: string, sinceMs: number, limit?: number): Awaitable<LoggedAnswer[]>
  /** Deletes answers older than {@link ANSWER_LOG_TTL_MS} and each org's beyond its newest {@link MAX_ANSWERS_PER_ORG}. Returns how many went. */
  purgeAnswers(nowMs: number): Awaitable<number>
}

interface PolicyRow {
  org_id: string
  version: string
  canonical: string
  description: string | null
  source: string | null
  set_at: number
}

interface AnswerRow {
  at: number
  type: string
  input: string
  action: string
  score: number | null
  factors: string
  context: string | null
}

const toPolicy = (r: PolicyRow): OrgPolicyRecord => ({
  orgId: r.org_id,
  version: r.version,
  canonical: r.canonical,
  description: r.description,
  source: r.source,
  setAt: r.set_at,
})

const toAnswer = (r: AnswerRow): LoggedAnswer => ({
  at: r.at,
  type: r.type as LookupType,
  input: r.input,
  action: r.action as Action,
  score: r.score,
  // Factor codes are [a-z0-9_] (src/scoring/factors.ts), so a space separates them unambiguously.
  factors: r.factors === '' ? [] : r.factors.split(' '),
  context: r.context as CheckContextName | null,
})

/** Options of the implementations. */
export interface OrgPolicyStoreOptions {
  /** Answers kept per org (default {@link MAX_ANSWERS_PER_ORG}). */
  maxAnswersPerOrg?: number
  /**
   * SQLite: how answer-log writes are committed — the server passes its store's group commit
   * (`SqliteStore.groupWrite`), so the log costs no commit of its own. Default: a transaction of their own.
   */
  groupWrite?: <T>(write: () => T) => Promise<T>
}

/** A store type whose methods answer synchronously. */
type Sync<S> = { [K in keyof S]: S[K] extends (...args: infer A) => Awaitable<infer R> ? (...args: A) => R : S[K] }

/**
 * The SQLite implementation over the server's database (tables of migration 003).
 *
 * @example
 * const policies = createSqliteOrgPolicyStore(createSqliteStore('./riskcheck.sqlite').db)
 */
export function createSqliteOrgPolicyStore(
  db: Database.Database,
  options: OrgPolicyStoreOptions = {},
): Omit<Sync<OrgPolicyStore>, 'appendAnswers'> & Pick<OrgPolicyStore, 'appendAnswers'> {
  const cap = options.maxAnswersPerOrg ?? MAX_ANSWERS_PER_ORG
  const q = {
    get: db.prepare('SELECT * FROM org_policies WHERE org_id = ?'),
    version: db.prepare('SELECT version FROM org_policies WHERE org_id = ?').pluck(),
    list: db.prepare('SELECT * FROM org_policies ORDER BY org_id'),
    set: db.prepare(
      `INSERT INTO org_policies (org_id, version, canonical, description, source, set_at) VALUES (@org_id, @version, @canonical, @description, @source, @set_at)
       ON CONFLICT (org_id) DO UPDATE SET version = excluded.version, canonical = excluded.canonical, description = excluded.description,
         source = excluded.source, set_at = excluded.set_at`,
    ),
    clear: db.prepare('DELETE FROM org_policies WHERE org_id = ?'),
    append: db.prepare('INSERT INTO org_answers (org_id, at, type, input, action, score, factors, context) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    // The newest `limit` since a time, returned oldest first.
    list_answers: db.prepare(
      `SELECT at, type, input, action, score, factors, context FROM
         (SELECT * FROM org_answers WHERE org_id = ? AND at >= ? ORDER BY at DESC, id DESC LIMIT ?)
       ORDER BY at, id`,
    ),
    purgeOld: db.prepare('DELETE FROM org_answers WHERE at < ?'),
    crowded: db.prepare('SELECT org_id FROM org_answers GROUP BY org_id HAVING COUNT(*) > ?').pluck(),
    // Beyond the newest (last logged) MAX_ANSWERS_PER_ORG of the org.
    trim: db.prepare('DELETE FROM org_answers WHERE org_id = ? AND id <= (SELECT id FROM org_answers WHERE org_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)'),
  }
  const appendAll = db.transaction((orgId: string, answers: readonly LoggedAnswer[]) => {
    for (const a of answers) q.append.run(orgId, a.at, a.type, a.input, a.action, a.score === null ? null : Math.round(a.score), a.factors.join(' '), a.context)
  })
  const clearTx = db.transaction((orgId: string): OrgPolicyRecord | null => {
    const r = q.get.get(orgId) as PolicyRow | undefined
    if (!r) return null
    q.clear.run(orgId)
    return toPolicy(r)
  })
  const purgeTx = db.transaction((nowMs: number) => {
    let n = q.purgeOld.run(nowMs - ANSWER_LOG_TTL_MS).changes
    for (const orgId of q.crowded.all(cap) as string[]) n += q.trim.run(orgId, orgId, cap).changes
    return n
  })
  return {
    getOrgPolicy(orgId) {
      const r = q.get.get(orgId) as PolicyRow | undefined
      return r ? toPolicy(r) : null
    },
    getOrgPolicyVersion: (orgId) => (q.version.get(orgId) as string | undefined) ?? null,
    listOrgPolicies: () => (q.list.all() as PolicyRow[]).map(toPolicy),
    setOrgPolicy(r) {
      q.set.run({ org_id: r.orgId, version: r.version, canonical: r.canonical, description: r.description, source: r.source, set_at: r.setAt })
    },
    clearOrgPolicy: (orgId) => clearTx.immediate(orgId),
    appendAnswers(orgId, answers) {
      if (answers.length === 0) return
      if (options.groupWrite) return options.groupWrite(() => appendAll(orgId, answers))
      appendAll.immediate(orgId, answers)
    },
    listAnswers: (orgId, sinceMs, limit = cap) => (q.list_answers.all(orgId, sinceMs, limit) as AnswerRow[]).map(toAnswer),
    purgeAnswers: (nowMs) => purgeTx.immediate(nowMs),
  }
}

/**
 * The in-memory implementation (a server over a store other than SQLite without its own, and tests). Lost on exit.
 */
export function createMemoryOrgPolicyStore(options: OrgPolicyStoreOptions = {}): Sync<OrgPolicyStore> {
  const cap = options.maxAnswersPerOrg ?? MAX_ANSWERS_PER_ORG
  const policies = new Map<string, OrgPolicyRecord>()
  const answers = new Map<string, LoggedAnswer[]>()
  return {
    getOrgPolicy: (orgId) => policies.get(orgId) ?? null,
    getOrgPolicyVersion: (orgId) => policies.get(orgId)?.version ?? null,
    listOrgPolicies: () => [...policies.values()].sort((a, b) => (a.orgId < b.orgId ? -1 : 1)),
    setOrgPolicy(r) {
      policies.set(r.orgId, { ...r })
    },
    clearOrgPolicy(orgId) {
      const r = policies.get(orgId) ?? null
      policies.delete(orgId)
      return r
    },
    appendAnswers(orgId, list) {
      let log = answers.get(orgId)
      if (!log) answers.set(orgId, (log = []))
      for (const a of list) log.push({ ...a, factors: [...a.factors], score: a.score === null ? null : Math.round(a.score) })
    },
    listAnswers(orgId, sinceMs, limit = cap) {
      const log = (answers.get(orgId) ?? []).filter((a) => a.at >= sinceMs)
      // stable: equal times keep the order they were logged in
      const sorted = log.map((a, i) => [a, i] as const).sort((x, y) => x[0].at - y[0].at || x[1] - y[1]).map(([a]) => a)
      return sorted.slice(Math.max(0, sorted.length - limit))
    },
    purgeAnswers(nowMs) {
      let n = 0
      for (const [orgId, log] of answers) {
        const kept = log.filter((a) => a.at >= nowMs - ANSWER_LOG_TTL_MS)
        const trimmed = kept.slice(Math.max(0, kept.length - cap))
        n += log.length - trimmed.length
        if (trimmed.length === 0) answers.delete(orgId)
        else answers.set(orgId, trimmed)
      }
      return n
    },
  }
}

/**
 * Per-org policies and the answer log on SQLite (tables of migration 003 in ./migrations.ts, the velocity counts of migration 009); the contract is
 * ../contracts/org-policies.ts.
 */
import type Database from 'better-sqlite3'
import type { Action, CheckContextName, LookupType } from '../../../schema.js'
import type { Awaitable } from '../../../awaitable.js'
import type { LoggedAnswer, OrgPolicyRecord, OrgPolicyStore, OrgPolicyStoreOptions } from '../contracts/org-policies.js'
import { ANSWER_LOG_TTL_MS, decodeVelocity, encodeVelocity, MAX_ANSWERS_PER_ORG } from '../common/answer-log.js'

export type { LoggedAnswer, OrgPolicyRecord, OrgPolicyStore, OrgPolicyStoreOptions } from '../contracts/org-policies.js'
export { ANSWER_LOG_TTL_MS, MAX_ANSWERS_PER_ORG } from '../common/answer-log.js'

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
  request_id: string | null
  velocity: string | null
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
  ...(r.request_id !== null ? { requestId: r.request_id } : {}),
  velocity: decodeVelocity(r.velocity),
})

/** A store type whose methods answer synchronously. */
type Sync<S> = { [K in keyof S]: S[K] extends (...args: infer A) => Awaitable<infer R> ? (...args: A) => R : S[K] }

/** The policy store over SQLite without a group commit: every method answers synchronously. */
export type SqliteOrgPolicyStore = Sync<OrgPolicyStore>

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
    append: db.prepare('INSERT INTO org_answers (org_id, at, type, input, action, score, factors, context, request_id, velocity) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    // The newest `limit` since a time, returned oldest first.
    list_answers: db.prepare(
      `SELECT at, type, input, action, score, factors, context, request_id, velocity FROM
         (SELECT * FROM org_answers WHERE org_id = ? AND at >= ? ORDER BY at DESC, id DESC LIMIT ?)
       ORDER BY at, id`,
    ),
    purgeOld: db.prepare('DELETE FROM org_answers WHERE at < ?'),
    crowded: db.prepare('SELECT org_id FROM org_answers GROUP BY org_id HAVING COUNT(*) > ?').pluck(),
    // Beyond the newest (last logged) MAX_ANSWERS_PER_ORG of the org.
    trim: db.prepare('DELETE FROM org_answers WHERE org_id = ? AND id <= (SELECT id FROM org_answers WHERE org_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)'),
  }
  const appendAll = db.transaction((orgId: string, answers: readonly LoggedAnswer[]) => {
    for (const a of answers) q.append.run(orgId, a.at, a.type, a.input, a.action, a.score === null ? null : Math.round(a.score), a.factors.join(' '), a.context, a.requestId ?? null, encodeVelocity(a.velocity))
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

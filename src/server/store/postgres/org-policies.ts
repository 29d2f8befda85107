/**
 * The PostgreSQL {@link OrgPolicyStore} (per-org policies and the answer log) over a `pg` Pool or Client; its tables are
 * version 2 of the service's migrations, and the store's auth read returns an org's policy version with its key.
 */
import { ANSWER_LOG_TTL_MS, decodeVelocity, encodeVelocity, MAX_ANSWERS_PER_ORG } from '../common/answer-log.js'
import { type LoggedAnswer, type OrgPolicyRecord, type OrgPolicyStore, type OrgPolicyStoreOptions } from '../contracts/org-policies.js'
import type { Action, CheckContextName, LookupType } from '../../../schema.js'
import type { Queryable } from './client.js'

/** What the store needs of a connection (a `pg` Pool or Client); the name riskcheck/server exports it under. */
export type { Queryable as PgQueryable } from './client.js'
export { ORG_POLICY_POSTGRES_SCHEMA } from './migrations.js'

const toPolicy = (r: Record<string, unknown>): OrgPolicyRecord => ({
  orgId: r.org_id as string,
  version: r.version as string,
  canonical: r.canonical as string,
  description: (r.description as string | null) ?? null,
  source: (r.source as string | null) ?? null,
  setAt: Number(r.set_at),
})

const toAnswer = (r: Record<string, unknown>): LoggedAnswer => ({
  at: Number(r.at),
  type: r.type as LookupType,
  input: r.input as string,
  action: r.action as Action,
  score: r.score === null ? null : Number(r.score),
  factors: r.factors === '' ? [] : (r.factors as string).split(' '),
  context: (r.context as CheckContextName | null) ?? null,
  ...(typeof r.request_id === 'string' ? { requestId: r.request_id } : {}),
  velocity: decodeVelocity(r.velocity as string | null),
})

/**
 * Per-org policies and answer logs in PostgreSQL.
 *
 * @example
 * const pool = new pg.Pool({ connectionString })
 * await pool.query(ORG_POLICY_POSTGRES_SCHEMA)
 * createServer({ db: postgresStore, orgPolicies: createPostgresOrgPolicyStore(pool) })
 */
export function createPostgresOrgPolicyStore(db: Queryable, options: OrgPolicyStoreOptions = {}): OrgPolicyStore {
  const cap = options.maxAnswersPerOrg ?? MAX_ANSWERS_PER_ORG
  return {
    async getOrgPolicy(orgId) {
      const { rows } = await db.query('SELECT * FROM org_policies WHERE org_id = $1', [orgId])
      return rows[0] ? toPolicy(rows[0]) : null
    },
    async getOrgPolicyVersion(orgId) {
      const { rows } = await db.query('SELECT version FROM org_policies WHERE org_id = $1', [orgId])
      return (rows[0]?.version as string | undefined) ?? null
    },
    async listOrgPolicies() {
      return (await db.query('SELECT * FROM org_policies ORDER BY org_id')).rows.map(toPolicy)
    },
    async setOrgPolicy(r) {
      await db.query(
        `INSERT INTO org_policies (org_id, version, canonical, description, source, set_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (org_id) DO UPDATE SET version = EXCLUDED.version, canonical = EXCLUDED.canonical,
           description = EXCLUDED.description, source = EXCLUDED.source, set_at = EXCLUDED.set_at`,
        [r.orgId, r.version, r.canonical, r.description, r.source, r.setAt],
      )
    },
    async clearOrgPolicy(orgId) {
      const { rows } = await db.query('DELETE FROM org_policies WHERE org_id = $1 RETURNING *', [orgId])
      return rows[0] ? toPolicy(rows[0]) : null
    },
    async appendAnswers(orgId, answers) {
      if (answers.length === 0) return
      // One statement for the whole batch (atomic), columns passed as arrays.
      await db.query(
        `INSERT INTO org_answers (org_id, at, type, input, action, score, factors, context, request_id, velocity)
         SELECT $1::text, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[])`,
        [
          orgId,
          answers.map((a) => a.at),
          answers.map((a) => a.type),
          answers.map((a) => a.input),
          answers.map((a) => a.action),
          answers.map((a) => (a.score === null ? null : Math.round(a.score))),
          answers.map((a) => a.factors.join(' ')),
          answers.map((a) => a.context),
          answers.map((a) => a.requestId ?? null),
          answers.map((a) => encodeVelocity(a.velocity)),
        ],
      )
    },
    async listAnswers(orgId, sinceMs, limit = cap) {
      const { rows } = await db.query(
        `SELECT at, type, input, action, score, factors, context, request_id, velocity FROM
           (SELECT * FROM org_answers WHERE org_id = $1 AND at >= $2 ORDER BY at DESC, id DESC LIMIT $3) newest
         ORDER BY at, id`,
        [orgId, sinceMs, limit],
      )
      return rows.map(toAnswer)
    },
    async purgeAnswers(nowMs) {
      const old = await db.query('DELETE FROM org_answers WHERE at < $1', [nowMs - ANSWER_LOG_TTL_MS])
      // Beyond the newest (last logged) `cap` of each org.
      const surplus = await db.query(
        `DELETE FROM org_answers a USING (
           SELECT id, row_number() OVER (PARTITION BY org_id ORDER BY id DESC) AS n FROM org_answers
         ) ranked WHERE a.id = ranked.id AND ranked.n > $1`,
        [cap],
      )
      return (old.rowCount ?? 0) + (surplus.rowCount ?? 0)
    },
  }
}

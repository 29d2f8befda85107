/**
 * Per-org scoring policies and the per-org answer log (docs/service.md, docs/decisions.md "Per-org policies"): the
 * storage behind `riskcheck admin policy set | show | clear` and the backtest `policy set` prints. One policy row per
 * org (none = the service's policy); answers keep only what re-scoring needs and are bounded by ../common/answer-log.ts.
 */
import type { Awaitable } from '../../../awaitable.js'
import type { Action, CheckContextName, LookupType, Velocity } from '../../../schema.js'

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

/** One logged answer: exactly what re-scoring needs (a {@link import('../../../scoring/index.js').StoredAnswer}). */
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
  /**
   * The answer's `request.id` (what outcomes given by request id name, and what finds the keyed hashes of its inputs
   * in `answer_inputs`); absent or null for answers logged before the log kept it.
   */
  requestId?: string | null
  /**
   * The velocity counts the answer had (`details.velocity`; numbers only), so a backtest derives the velocity factors
   * again under a candidate's thresholds; null when it had none (absent: not recorded).
   */
  velocity?: Velocity | null
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

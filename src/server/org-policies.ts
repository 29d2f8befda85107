/**
 * Per-org scoring policies in the server (docs/service.md, "Scoring policy"): which policy scores a
 * request, and the answer log `riskcheck admin policy set` backtests over. Precedence and why no restart is needed:
 * docs/decisions.md, "Per-org policies" → "precedence" and "no restart".
 */
import { LRUCache } from 'lru-cache'
import type { LookupResult } from '../schema.js'
import { policyFromObject } from '../scoring/policy-file.js'
import type { Policy } from '../scoring/rules.js'
import { toStoredAnswer } from '../scoring/stored-answer.js'
import { batchWriter } from './batch-writer.js'
import type { LoggedAnswer, OrgPolicyRecord, OrgPolicyStore } from './store/contracts/org-policies.js'

/** Compiled policies kept (by version id); more distinct versions than this are compiled again when used. */
const MAX_COMPILED = 1000

/** Answers waiting for the end of the event-loop turn beyond which they are written at once. */
const MAX_PENDING = 1000

/** The policy of one request. */
export interface ResolvedPolicy {
  /** The org's own policy version in force, or null when the service's applies. */
  version: string | null
  policy: Policy
}

/** Options of {@link createOrgPolicies}. */
export interface OrgPoliciesOptions {
  store: OrgPolicyStore
  /** The service's policy (`serve --policy`, else the built-in default). */
  service: Policy
  nowMs: () => number
  /** Where problems go (a stored policy this riskcheck no longer accepts; a failed answer-log write). */
  warn: (fields: Record<string, unknown>, message: string) => void
}

/** The per-org policies of a server. */
export interface OrgPolicies {
  /**
   * The policy of a request of `orgId`. `known` is the version the auth read returned (undefined when the store
   * does not read it with the key: then the org-policy store is asked).
   */
  resolve(orgId: string, known: string | null | undefined): Promise<ResolvedPolicy>
  /** The policy of the org's latest request (for bulk rows scored in the background). */
  current(orgId: string): Policy
  /** Compiles every org's stored policy (at start). */
  preload(): Promise<void>
  /**
   * Logs an answer a live key got. Answers are written together once the current turn of the event loop ends (one
   * transaction per org for all answers finished meanwhile: a batch costs a tenth of separate writes), so the log is
   * on disk before the client reads the response. Never throws: a failed write is logged, the answer still served.
   */
  record(orgId: string, result: LookupResult<unknown>): void
  /** Writes the answers not yet written (at shutdown). */
  flush(): Promise<void>
  /** Deletes expired and surplus log entries. */
  purge(nowMs: number): Promise<number>
}

/** The log entry of a lookup result: what re-scoring needs, or null when it has no action or factors. */
export function loggedAnswerOf(result: LookupResult<unknown>, at: number): LoggedAnswer | null {
  const a = toStoredAnswer(result)
  if (typeof a === 'string' || !a.action || !a.type) return null
  const id = (result as { request?: { id?: unknown } }).request?.id
  return {
    at,
    type: a.type,
    input: a.input,
    action: a.action,
    score: a.score ?? null,
    factors: a.factors,
    context: a.context ?? null,
    requestId: typeof id === 'string' && id !== '' ? id : null,
    velocity: a.velocity ?? null,
  }
}

/** Creates the per-org policies of a server. */
export function createOrgPolicies(options: OrgPoliciesOptions): OrgPolicies {
  const { store, service, warn } = options
  // By version id; null: a stored policy this riskcheck refuses (the service's applies). The least recently used goes
  // first (lru-cache: O(1), where a Map's oldest key costs a scan of its deleted slots).
  const compiled = new LRUCache<string, { policy: Policy | null }>({ max: MAX_COMPILED })
  const latest = new Map<string, Policy>()
  // a write per org of each batch; a flush waits for the batch in flight, so a backtest after it reads every answer
  // given before
  const log = batchWriter<{ orgId: string; entry: LoggedAnswer }>(async (batch) => {
    const byOrg = new Map<string, LoggedAnswer[]>()
    for (const { orgId, entry } of batch) {
      const list = byOrg.get(orgId)
      if (list) list.push(entry)
      else byOrg.set(orgId, [entry])
    }
    for (const [orgId, answers] of byOrg) {
      try {
        await store.appendAnswers(orgId, answers)
      } catch (e) {
        warn({ org_id: orgId, err: e }, `answer log: ${answers.length} answer(s) not written (${(e as Error).message})`)
      }
    }
  }, MAX_PENDING)

  const compile = (rec: OrgPolicyRecord): Policy | null => {
    const hit = compiled.get(rec.version)
    if (hit) return hit.policy
    let policy: Policy | null
    try {
      policy = policyFromObject(JSON.parse(rec.canonical) as unknown, { source: `policy ${rec.version} of ${rec.orgId}` }).policy
    } catch (e) {
      // Valid when it was set, refused by this riskcheck (e.g. a factor code that no longer exists): the org is
      // scored under the service's policy until an operator sets a policy again. Logged once per version.
      warn({ org_id: rec.orgId, policy_version: rec.version }, `org policy ${rec.version} of ${rec.orgId} cannot be used (${(e as Error).message}); the service policy applies`)
      policy = null
    }
    compiled.set(rec.version, { policy })
    return policy
  }

  return {
    async resolve(orgId, known) {
      let version = known !== undefined ? known : await store.getOrgPolicyVersion(orgId)
      let policy: Policy | undefined
      if (version !== null) {
        const hit = compiled.get(version)
        if (hit) policy = hit.policy ?? undefined
        else {
          // Not compiled yet: read it. Cleared or replaced since the version was read? What the store holds now applies.
          const rec = await store.getOrgPolicy(orgId)
          version = rec?.version ?? null
          policy = (rec && compile(rec)) ?? undefined
        }
      }
      if (!policy || version === null) {
        latest.delete(orgId)
        return { version: null, policy: service }
      }
      latest.set(orgId, policy)
      return { version, policy }
    },
    current: (orgId) => latest.get(orgId) ?? service,
    async preload() {
      for (const rec of await store.listOrgPolicies()) {
        const policy = compile(rec)
        if (policy) latest.set(rec.orgId, policy)
      }
    },
    record(orgId, result) {
      const entry = loggedAnswerOf(result, options.nowMs())
      if (entry) log.add({ orgId, entry })
    },
    flush: () => log.flush(),
    purge: async (nowMs) => store.purgeAnswers(nowMs),
  }
}

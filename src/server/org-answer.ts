/**
 * What makes an answer an org's besides its check: the org's scoring policy, its allow/block lists of the key mode
 * and the labels of its outcomes. A lookup reads them with the versions its API key returned; a recheck of a
 * deferred answer, which has no key, reads them from the store — through these same functions (docs/rechecks.md).
 */
import type { ListIndex } from '../lists/compile.js'
import type { LookupEnv } from '../lookup.js'
import type { Signals } from '../signals.js'
import type { OrgLists } from './org-lists.js'
import type { OrgPolicies, ResolvedPolicy } from './org-policies.js'
import type { OutcomeOwner, OutcomeService } from './outcomes.js'
import type { ServerVelocity } from './velocity.js'

/** The server's parts an org's answer is scored with. */
export interface OrgAnswerParts {
  orgPolicies: OrgPolicies
  orgLists: OrgLists
  outcomes: OutcomeService
  velocity: ServerVelocity | null
  /** The instance's own signals (`serve --lists`, the library's velocity), under the org's. */
  baseSignals: Signals | undefined
}

/** Versions a key read returned (undefined: read from the store). */
export interface KnownVersions {
  policyVersion?: string | null | undefined
  listsVersion?: number | null | undefined
}

/** The org's policy in force and (when asked for) its compiled lists of the key mode: null when it has none. */
export async function resolveOrgScoring(
  parts: Pick<OrgAnswerParts, 'orgPolicies' | 'orgLists'>,
  owner: OutcomeOwner,
  known: KnownVersions,
  withLists: boolean,
): Promise<{ policy: ResolvedPolicy; lists: ListIndex | null }> {
  const policy = await parts.orgPolicies.resolve(owner.orgId, known.policyVersion)
  return { policy, lists: withLists ? await parts.orgLists.resolve(owner, known.listsVersion) : null }
}

/**
 * The signals of an org's answer: its lists (the instance's when it has none) and the velocity counter under the
 * org. Whether the answer is counted is the caller's run option (a lookup is; a recheck, counted when it was given,
 * is not); `once` is a request's Idempotency-Key, under which its checks count once however often it runs.
 */
export function orgSignals(
  parts: Pick<OrgAnswerParts, 'orgLists' | 'velocity' | 'baseSignals'>,
  orgId: string,
  lists: ListIndex | null | undefined,
  once?: { scope: string; key: string },
): Signals | undefined {
  const listed = parts.orgLists.signalsOf(lists, parts.baseSignals)
  return parts.velocity ? parts.velocity.signals(listed, orgId, once) : listed
}

/**
 * An answer of `owner` given without a request (a recheck): the org's policy, lists and — with `labels` — the hook
 * of its outcome labels, all read from the store now, as a lookup of the org would have them.
 */
export async function orgAnswerEnv(parts: OrgAnswerParts, owner: OutcomeOwner, labels: boolean): Promise<Pick<LookupEnv, 'policy' | 'signals' | 'answerLabels'>> {
  const { policy, lists } = await resolveOrgScoring(parts, owner, {}, true)
  const env = { policy: policy.policy, signals: orgSignals(parts, owner.orgId, lists) }
  return labels ? { ...env, answerLabels: (await parts.outcomes.prepare(owner)).hook } : env
}

/**
 * The scoring engine: pure functions from fired factors to a score, level, confidence, verdict status and recommended
 * action under a {@link Policy}. The score is the clamped sum of the distinct factors' weights; the level comes from
 * the thresholds, the action from the level unless a hard rule matches first; confidence from the "uncertain" factors,
 * the verdict status from the strongest effect (docs/scoring.md).
 *
 * @example
 * import { createPolicy, evaluate } from 'riskcheck/scoring'
 * evaluate(['ip_vpn'], { policy: createPolicy({ weights: { ip_vpn: 60 } }) }).action // 'verify'
 */
import type { Action, CheckContextName, Confidence, RiskLevel, Velocity, VerdictStatus } from '../schema.js'
import { FACTORS, isFactorCode, type FactorCode, type FactorEffect } from './factors.js'
import { resolveRules, validatePolicy, type PolicyIssue } from './policy-validate.js'
import { DEFAULT_POLICY, type ListActions, type Policy, type PolicyOverlay, type PolicyRule, type Thresholds } from './rules.js'
import { isVelocityFactor, mergeVelocity, velocityFactors, velocityUnder, type VelocityOverrides } from './velocity.js'

/** Overrides accepted by {@link createPolicy}: any part of a policy, merged onto the base. */
export interface PolicyOverrides {
  /** Where editors find the policy file schema (ignored by the engine). */
  $schema?: string
  /** A note for people (ignored by the engine, not part of the version id). */
  description?: string
  weights?: Partial<Record<FactorCode, number>>
  effects?: Partial<Record<FactorCode, FactorEffect>>
  thresholds?: Partial<Thresholds>
  actions?: Partial<Record<RiskLevel, Action>>
  /**
   * Replaces the base rules. A string keeps the base rule of that name at its position (`'unusable_input_blocks'`);
   * or spread `DEFAULT_POLICY.rules` yourself.
   */
  rules?: ReadonlyArray<PolicyRule | string>
  confidence?: Partial<Policy['confidence']>
  messages?: Partial<Record<Action, string>>
  /** Replaces the overlay of each context named. */
  contexts?: Partial<Record<CheckContextName, PolicyOverlay>>
  /** Velocity thresholds (checks per hour / per 24 hours) past which the velocity factors fire; merged window by window. */
  velocity?: VelocityOverrides
  /** What a block / allow list match decides before any rule (null: only its factor's weight counts). */
  lists?: Partial<ListActions>
}

/** Score, level and confidence of a set of factors. */
export interface Score {
  score: number
  level: RiskLevel
  confidence: Confidence
}

/** Everything the engine decides for a set of factors. */
export interface Assessment extends Score {
  status: VerdictStatus
  reason: string
  action: Action
  message: string
  /** The distinct fired factors, strongest first (by effect, then weight, then vocabulary order). */
  factors: FactorCode[]
  /** The rule that decided the action, if one did. */
  rule: string | null
}

const EFFECT_RANK: Record<FactorEffect, number> = { invalid: 3, risky: 2, unknown: 1, info: 0 }
const STATUS_BY_RANK: VerdictStatus[] = ['valid', 'unknown', 'risky', 'invalid']
const LEVELS: readonly RiskLevel[] = ['low', 'medium', 'high', 'critical']
const FACTOR_ORDER = new Map((Object.keys(FACTORS) as FactorCode[]).map((c, i) => [c, i]))

function checkThresholds(path: string, t: Thresholds): Thresholds {
  if (!(t.medium <= t.high && t.high <= t.critical)) throw new TypeError(`riskcheck scoring: ${path} must satisfy medium <= high <= critical`)
  return t
}

/**
 * Thrown by {@link createPolicy} for overrides it cannot use: a TypeError whose message names every bad path, with
 * the problems also as data in `issues` (the same ones `riskcheck policy check` prints for a policy file).
 */
export class PolicyError extends TypeError {
  readonly issues: readonly PolicyIssue[]
  constructor(issues: readonly PolicyIssue[], source?: string) {
    const where = source ? `${source}: ` : ''
    super(`riskcheck scoring: ${where}${issues.map((i) => `${i.path || 'policy'} ${i.message}`).join('; ')}`)
    this.name = 'PolicyError'
    this.issues = issues
  }
}

/**
 * Builds a complete policy from overrides on top of `base` (default: {@link DEFAULT_POLICY}). Throws a
 * {@link PolicyError} (a TypeError) naming every bad path: an unknown factor code or field, a weight outside 0–100,
 * thresholds out of order (also a context's, merged), a malformed rule. In `rules`, a string keeps the base rule of
 * that name: `rules: ['unusable_input_blocks', { name: 'tor_blocks', when: { any: ['ip_tor'] }, action: 'block' }]`.
 */
export function createPolicy(overrides: PolicyOverrides = {}, base: Policy = DEFAULT_POLICY): Policy {
  const { errors } = validatePolicy(overrides, base)
  if (errors.length > 0) throw new PolicyError(errors)
  const contexts: Record<string, PolicyOverlay | undefined> = { ...base.contexts }
  // the policy's own velocity limits hold in every context: they take the place of the base contexts' for their windows
  const top = overrides.velocity
  if (top) for (const [name, overlay] of Object.entries(contexts)) if (overlay?.velocity) contexts[name] = { ...overlay, velocity: velocityUnder(overlay.velocity, top) }
  for (const [name, overlay] of Object.entries(overrides.contexts ?? {})) contexts[name] = overlay
  return {
    weights: { ...base.weights, ...(overrides.weights ?? {}) },
    effects: { ...base.effects, ...(overrides.effects ?? {}) },
    thresholds: { ...base.thresholds, ...(overrides.thresholds ?? {}) },
    actions: { ...base.actions, ...(overrides.actions ?? {}) },
    rules: overrides.rules ? resolveRules(overrides.rules, base) : base.rules,
    confidence: { ...base.confidence, ...(overrides.confidence ?? {}) },
    messages: { ...base.messages, ...(overrides.messages ?? {}) },
    contexts: contexts as Policy['contexts'],
    velocity: mergeVelocity(base.velocity, overrides.velocity),
    lists: { ...base.lists, ...(overrides.lists ?? {}) },
  }
}

// Policies are treated as immutable, so each (policy, context) pair is merged once and reused.
const withContext = new WeakMap<Policy, Map<CheckContextName, Policy>>()

/** The policy with a context's overlay applied (its weights and thresholds merged, its rules tried first). */
export function applyContext(policy: Policy, context: CheckContextName | null | undefined): Policy {
  const overlay = context ? policy.contexts[context] : undefined
  if (!context || !overlay) return policy
  let byContext = withContext.get(policy)
  if (!byContext) withContext.set(policy, (byContext = new Map()))
  let merged = byContext.get(context)
  if (!merged) {
    merged = {
      ...policy,
      weights: { ...policy.weights, ...(overlay.weights ?? {}) },
      thresholds: checkThresholds(`contexts.${context}.thresholds`, { ...policy.thresholds, ...(overlay.thresholds ?? {}) }),
      rules: [...(overlay.rules ?? []), ...policy.rules],
      velocity: mergeVelocity(policy.velocity, overlay.velocity),
    }
    byContext.set(context, merged)
  }
  return merged
}

/** The level of a score under thresholds (inclusive lower bounds). */
export function levelOf(score: number, thresholds: Thresholds = DEFAULT_POLICY.thresholds): RiskLevel {
  if (score >= thresholds.critical) return 'critical'
  if (score >= thresholds.high) return 'high'
  if (score >= thresholds.medium) return 'medium'
  return 'low'
}

/** What the engine needs of one factor under a policy, looked up once per policy. */
interface FactorFacts {
  rank: number
  weight: number
  order: number
  uncertain: boolean
}

// Per policy (treated as immutable, like the context overlays): one Map lookup per fired factor instead of several
// lookups in the policy's large records — evaluation runs on every lookup, so it is kept lean.
const compiled = new WeakMap<Policy, Map<string, FactorFacts>>()

function factsOf(policy: Policy): Map<string, FactorFacts> {
  let facts = compiled.get(policy)
  if (!facts) {
    facts = new Map()
    for (const code of Object.keys(FACTORS) as FactorCode[]) {
      facts.set(code, {
        rank: EFFECT_RANK[policy.effects[code]],
        weight: policy.weights[code],
        order: FACTOR_ORDER.get(code) ?? 0,
        uncertain: (FACTORS[code] as { uncertain?: boolean }).uncertain === true,
      })
    }
    compiled.set(policy, facts)
  }
  return facts
}

/** The distinct factors of the vocabulary, in the order given. */
function distinct(factors: readonly FactorCode[], facts: Map<string, FactorFacts>): FactorCode[] {
  const out: FactorCode[] = []
  for (let i = 0; i < factors.length; i++) {
    const f = factors[i] as FactorCode
    if (facts.has(f) && !out.includes(f)) out.push(f)
  }
  return out
}

/** One pass over the distinct known factors: sum of weights, uncertain count, strongest effect. */
function tally(fired: readonly FactorCode[], facts: Map<string, FactorFacts>): { sum: number; uncertain: number; rank: number } {
  let sum = 0
  let uncertain = 0
  let rank = 0
  for (let i = 0; i < fired.length; i++) {
    const f = facts.get(fired[i] as string) as FactorFacts
    sum += f.weight
    if (f.uncertain) uncertain++
    if (f.rank > rank) rank = f.rank
  }
  return { sum, uncertain, rank }
}

function scoreOf(t: { sum: number; uncertain: number }, policy: Policy): Score {
  const value = Math.min(100, Math.max(0, Math.round(t.sum)))
  const confidence: Confidence =
    t.uncertain >= policy.confidence.low ? 'low' : t.uncertain >= policy.confidence.medium ? 'medium' : 'high'
  return { score: value, level: levelOf(value, policy.thresholds), confidence }
}

/**
 * Score, level and confidence of the fired factors under a policy. Unknown codes are ignored; duplicates count once.
 */
export function score(factors: readonly FactorCode[], policy: Policy = DEFAULT_POLICY): Score {
  const facts = factsOf(policy)
  return scoreOf(tally(distinct(factors, facts), facts), policy)
}

/** The verdict status the fired factors give (invalid > risky > unknown > valid). */
export function statusOf(factors: readonly FactorCode[], policy: Policy = DEFAULT_POLICY): VerdictStatus {
  const facts = factsOf(policy)
  return STATUS_BY_RANK[tally(distinct(factors, facts), facts).rank] as VerdictStatus
}

/** True when factor `a` sorts before `b`: stronger effect, then higher weight, then vocabulary order. */
function before(a: FactorFacts, b: FactorFacts): boolean {
  if (a.rank !== b.rank) return a.rank > b.rank
  if (a.weight !== b.weight) return a.weight > b.weight
  return a.order < b.order
}

/** Sorts in place, strongest first (an insertion sort: a lookup fires a handful of factors). */
function strongestFirst(factors: FactorCode[], facts: Map<string, FactorFacts>): FactorCode[] {
  for (let i = 1; i < factors.length; i++) {
    const f = factors[i] as FactorCode
    const ff = facts.get(f) as FactorFacts
    let j = i - 1
    while (j >= 0 && before(ff, facts.get(factors[j] as string) as FactorFacts)) {
      factors[j + 1] = factors[j] as FactorCode
      j--
    }
    factors[j + 1] = f
  }
  return factors
}

function ruleMatches(rule: PolicyRule, fired: readonly FactorCode[]): boolean {
  const all = rule.when.all
  if (all) for (let i = 0; i < all.length; i++) if (!fired.includes(all[i] as FactorCode)) return false
  const any = rule.when.any
  if (!any || any.length === 0) return true
  for (let i = 0; i < fired.length; i++) if (any.includes(fired[i] as FactorCode)) return true
  return false
}

const ACTION_WORD: Record<Action, string> = { approve: 'Approve', verify: 'Verify', review: 'Review', block: 'Block' }

/**
 * The decision of your lists, taken before any rule (`policy.lists`): a block list match decides first, then an
 * allow list match (so block wins when both match). Reported as the rule `block_list` / `allow_list`.
 */
function listRule(policy: Policy, fired: readonly FactorCode[]): PolicyRule | null {
  let rules = listRules.get(policy)
  if (!rules) {
    rules = (['block', 'allow'] as const).flatMap((kind): PolicyRule[] => {
      const action = policy.lists[kind]
      const factor: FactorCode = kind === 'block' ? 'list_blocked' : 'list_allowed'
      return action ? [{ name: `${kind}_list`, when: { any: [factor] }, action, message: `${ACTION_WORD[action]}: this input is on one of your ${kind} lists.` }] : []
    })
    listRules.set(policy, rules)
  }
  for (const r of rules) if (fired.includes((r.when.any as FactorCode[])[0] as FactorCode)) return r
  return null
}

const listRules = new WeakMap<Policy, PolicyRule[]>()

/** Options of {@link evaluate}. */
export interface EvaluateOptions {
  policy?: Policy
  /** Applies the context's overlay of the policy. */
  context?: CheckContextName | null
  /**
   * Sentences for particular factors (more specific than their descriptions); the reason is the sentence of the
   * deciding factor when it has one.
   */
  reasons?: Partial<Record<FactorCode, string>>
  /** Replaces the reason altogether (whatever decided the verdict). */
  reason?: string
  /** The reason when no factor fired. */
  validReason?: string
  /**
   * Velocity counts of the answer (`details.velocity`): the velocity factors they pass under the policy's thresholds
   * (the context's, when one is given) are added to `factors`, in place of any velocity factor given there.
   */
  velocity?: Velocity | null
}

/**
 * The full assessment of a set of fired factors: score, level, confidence, verdict status and reason, action and
 * message, and the rule that decided (if any). The reason comes from the factor that decided the verdict — the first
 * of the factors sorted strongest first (effect, then weight, then vocabulary order): its sentence in `reasons`, else
 * its description; `validReason` when no factor beyond `info` fired and the level is low. A block list match that
 * blocks is the reason itself.
 */
export function evaluate(factors: readonly FactorCode[], options: EvaluateOptions = {}): Assessment {
  const policy = applyContext(options.policy ?? DEFAULT_POLICY, options.context)
  let reasons = options.reasons
  if (options.velocity) {
    // the counts decide the velocity factors under this policy (a stored answer's own velocity factors are replaced)
    const v = velocityFactors(options.velocity, policy.velocity)
    factors = factors.some(isVelocityFactor) ? factors.filter((f) => !isVelocityFactor(f)) : factors
    if (v.factors.length > 0) {
      // concat and Object.assign, not spread syntax: several times cheaper on Node 20
      factors = factors.concat(v.factors)
      reasons = Object.assign({}, reasons, v.reasons)
    }
  }
  // what the policy decides depends on the factors alone: kept per factor list, counts or not
  const decided = decidedOf(factors, policy)
  const { fired, score: value, level, confidence, status, rule, action, message } = decided
  // the sentence of what decided: a block list match when that blocked (docs: its reason names the list), else the
  // strongest factor — an info factor too once the weights of info factors lift the level past low (then the valid
  // answer's sentence would stand beside a verify or a block)
  const top = rule?.name === 'block_list' ? 'list_blocked' : fired[0]
  const reason =
    options.reason ??
    (top !== undefined && (policy.effects[top] !== 'info' || (level !== 'low' && (policy.weights[top] ?? 0) > 0))
      ? (reasons?.[top] ?? FACTORS[top].description)
      : (options.validReason ?? 'No risk factors found.'))
  return { score: value, level, confidence, status, reason, action, message, factors: fired.slice(), rule: rule ? rule.name : null }
}

/** What a policy decides for a list of factors, whatever the sentences: all of an assessment but its reason. */
interface Decided extends Score {
  fired: readonly FactorCode[]
  status: VerdictStatus
  rule: PolicyRule | null
  action: Action
  message: string
}

// Answers repeat a few factor lists: what a policy decides for each is kept per policy (policies are not changed
// once made; a context's overlay is a policy of its own), in a small map emptied when full.
const DECIDED_MAX = 512
const decidedByPolicy = new WeakMap<Policy, Map<string, Decided>>()

function decidedOf(factors: readonly FactorCode[], policy: Policy): Decided {
  let memo = decidedByPolicy.get(policy)
  if (!memo) decidedByPolicy.set(policy, (memo = new Map()))
  const key = factors.join(',')
  let d = memo.get(key)
  if (!d) {
    d = decide(factors, policy)
    if (memo.size >= DECIDED_MAX) memo.clear()
    memo.set(key, d)
  }
  return d
}

function decide(factors: readonly FactorCode[], policy: Policy): Decided {
  const facts = factsOf(policy)
  const fired = strongestFirst(distinct(factors, facts), facts)
  const t = tally(fired, facts)
  const { score, level, confidence } = scoreOf(t, policy)
  const status = STATUS_BY_RANK[t.rank] as VerdictStatus
  let rule: PolicyRule | null = listRule(policy, fired)
  if (rule?.name === 'allow_list') {
    // an allow match approves whatever the risk, not an input that cannot be used (no mailbox, not a number): the
    // policy's unusable_input_blocks rule, when it keeps it, decides first
    const unusable = policy.rules.find((r) => r.name === 'unusable_input_blocks')
    if (unusable && ruleMatches(unusable, fired)) rule = unusable
  }
  if (fired.length > 0 && rule === null) {
    for (const r of policy.rules) {
      if (ruleMatches(r, fired)) {
        rule = r
        break
      }
    }
  }
  const action = rule ? rule.action : policy.actions[level]
  const message = rule?.message ?? policy.messages[action]
  return { fired, score, level, confidence, status, rule, action, message }
}

/**
 * The scoring engine: pure functions from fired factors to a score, a level, a confidence, a verdict status and a
 * recommended action, under a {@link Policy}.
 *
 * Model: the score is the sum of the weights of the distinct fired factors, clamped to 0–100 (so it is
 * order-independent and adding a factor never lowers it); the level comes from the thresholds; the action from the
 * level unless a hard rule matches first; confidence from the number of "uncertain" factors; the verdict status
 * from the strongest factor effect (invalid > risky > unknown > valid).
 *
 * @example
 * import { createPolicy, evaluate } from 'riskcheck/scoring'
 * const policy = createPolicy({ weights: { ip_vpn: 60 } })
 * evaluate(['ip_vpn'], { policy }).action // 'verify'
 */
import type { Action, CheckContextName, Confidence, RiskLevel, VerdictStatus } from '../schema.js'
import { FACTORS, isFactorCode, type FactorCode, type FactorEffect } from './factors.js'
import { resolveRules, validatePolicy, type PolicyIssue } from './policy-validate.js'
import { DEFAULT_POLICY, type Policy, type PolicyOverlay, type PolicyRule, type Thresholds } from './rules.js'

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

function distinct(factors: readonly FactorCode[]): FactorCode[] {
  const out: FactorCode[] = []
  for (const f of factors) if (isFactorCode(f) && !out.includes(f)) out.push(f)
  return out
}

/** One pass over the distinct known factors: sum of weights, uncertain count, strongest effect. */
function tally(fired: readonly FactorCode[], policy: Policy): { sum: number; uncertain: number; rank: number } {
  let sum = 0
  let uncertain = 0
  let rank = 0
  for (const f of fired) {
    sum += policy.weights[f]
    if ((FACTORS[f] as { uncertain?: boolean }).uncertain) uncertain++
    const r = EFFECT_RANK[policy.effects[f]]
    if (r > rank) rank = r
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
  return scoreOf(tally(distinct(factors), policy), policy)
}

/** The verdict status the fired factors give (invalid > risky > unknown > valid). */
export function statusOf(factors: readonly FactorCode[], policy: Policy = DEFAULT_POLICY): VerdictStatus {
  return STATUS_BY_RANK[tally(distinct(factors), policy).rank] as VerdictStatus
}

function strongestFirst(factors: FactorCode[], policy: Policy): FactorCode[] {
  if (factors.length < 2) return factors
  return factors.sort(
    (a, b) =>
      EFFECT_RANK[policy.effects[b]] - EFFECT_RANK[policy.effects[a]] ||
      policy.weights[b] - policy.weights[a] ||
      (FACTOR_ORDER.get(a) ?? 0) - (FACTOR_ORDER.get(b) ?? 0),
  )
}

function ruleMatches(rule: PolicyRule, fired: readonly FactorCode[]): boolean {
  const all = rule.when.all ?? []
  const any = rule.when.any ?? []
  return all.every((f) => fired.includes(f)) && (any.length === 0 || any.some((f) => fired.includes(f)))
}

/** Options of {@link evaluate}. */
export interface EvaluateOptions {
  policy?: Policy
  /** Applies the context's overlay of the policy. */
  context?: CheckContextName | null
  /** The verdict reason to report; by default the description of the strongest factor. */
  reason?: string
  /** The reason when no factor fired. */
  validReason?: string
}

/**
 * The full assessment of a set of fired factors: score, level, confidence, verdict status and reason, action and
 * message, and the rule that decided (if any).
 */
export function evaluate(factors: readonly FactorCode[], options: EvaluateOptions = {}): Assessment {
  const policy = applyContext(options.policy ?? DEFAULT_POLICY, options.context)
  const fired = strongestFirst(distinct(factors), policy)
  const t = tally(fired, policy)
  const { score: value, level, confidence } = scoreOf(t, policy)
  const status = STATUS_BY_RANK[t.rank] as VerdictStatus
  const rule = fired.length === 0 ? null : (policy.rules.find((r) => ruleMatches(r, fired)) ?? null)
  const action = rule ? rule.action : policy.actions[level]
  const top = fired[0]
  const reason =
    options.reason ??
    (top !== undefined && policy.effects[top] !== 'info'
      ? FACTORS[top].description
      : (options.validReason ?? 'No risk factors found.'))
  const message = rule?.message ?? policy.messages[action]
  return { score: value, level, confidence, status, reason, action, message, factors: fired, rule: rule ? rule.name : null }
}

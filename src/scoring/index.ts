/**
 * `riskcheck/scoring`: the pure scoring engine, the factor vocabulary and the default policy — import it alone to
 * unit-test your own policy without loading any data source.
 *
 * @example
 * import { createPolicy, evaluate, DEFAULT_POLICY } from 'riskcheck/scoring'
 * const policy = createPolicy({
 *   weights: { ip_vpn: 60 },
 *   rules: [...DEFAULT_POLICY.rules, { name: 'tor_blocks', when: { any: ['ip_tor'] }, action: 'block' }],
 * })
 * evaluate(['ip_tor'], { policy }).action // 'block'
 */
export { FACTORS, FACTOR_CODES, describeFactor, isFactorCode } from './factors.js'
export type { FactorCode, FactorDefinition, FactorEffect, FactorGroup } from './factors.js'
export { DEFAULT_POLICY, BLOCKING_FACTORS } from './rules.js'
export type { Policy, PolicyOverlay, PolicyRule, Thresholds } from './rules.js'
export { applyContext, createPolicy, evaluate, levelOf, score, statusOf } from './engine.js'
export type { Assessment, EvaluateOptions, PolicyOverrides, Score } from './engine.js'

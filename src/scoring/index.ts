/**
 * `riskcheck/scoring`: the pure scoring engine, the factor vocabulary and the default policy — import it alone to
 * unit-test your own policy without loading any data source — plus policy files (JSON/YAML, validated, versioned)
 * and backtests of a policy over stored answers.
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
export { DEFAULT_POLICY, DEFAULT_VELOCITY, BLOCKING_FACTORS } from './rules.js'
export type { ListActions, Policy, PolicyOverlay, PolicyRule, Thresholds } from './rules.js'
export { mergeVelocity, velocityFactors, VELOCITY_FACTORS } from './velocity.js'
export type { VelocityLimit, VelocityOverrides, VelocityThresholds } from './velocity.js'
export { applyContext, createPolicy, evaluate, levelOf, PolicyError, score, statusOf } from './engine.js'
export type { Assessment, EvaluateOptions, PolicyOverrides, Score } from './engine.js'
export { validatePolicy } from './policy-validate.js'
export type { PolicyIssue, PolicyValidation } from './policy-validate.js'
export { PolicyFileSchema, policyJsonSchema } from './policy-schema.js'
export {
  canonicalPolicyJson,
  formatPolicyIssues,
  loadPolicyFile,
  parsePolicy,
  policyFromObject,
  policyVersion,
  PolicyFileError,
} from './policy-file.js'
export type { ParsePolicyOptions, PolicyFile, PolicyFileIssue } from './policy-file.js'
export { backtest, createBacktest, HISTOGRAM_BINS } from './backtest.js'
export type {
  ActionCounts,
  ActionMetrics,
  BacktestChange,
  BacktestOptions,
  BacktestReport,
  Label,
  LabelMetrics,
  LabelOutcome,
  LabelReport,
  Labels,
  RankedLabel,
  ReviewQueue,
  SweepRow,
  ThresholdSweep,
} from './backtest.js'
export { expandResults, SKIP_REASONS, toStoredAnswer } from './stored-answer.js'
export type { SkipReason, StoredAnswer } from './stored-answer.js'
export { LabelsFileError, readLabels, readResultBatches, readResults, ResultsFileError, unescapeCsvCell } from './results-file.js'
export { parseAnswerLine } from './answer-line.js'
export type { ReadResultsOptions, TextSource } from './results-file.js'

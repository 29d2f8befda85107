/**
 * `riskcheck` as the README's code blocks see it when they run as tests: the library itself, except that
 * `createRiskcheck()` answers in test mode (no test may reach the internet; test mode gives the documented
 * deterministic answers) and every instance is remembered so the test can close it.
 */
import { createRiskcheck as create } from '../../src/index.js'
import type { Riskcheck, RiskcheckOptions } from '../../src/index.js'

export * from '../../src/index.js'

/** Instances the blocks created. */
export const created: Riskcheck[] = []

export function createRiskcheck(options: RiskcheckOptions = {}): Riskcheck {
  const rc = create({ mode: 'test', now: () => new Date('2026-11-22T00:00:00Z'), ...options })
  created.push(rc)
  return rc
}

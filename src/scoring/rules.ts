/**
 * The default scoring policy: weights (from the factor vocabulary), level thresholds, level → action, hard rules,
 * confidence rule, and the context overlays of the combined check. Every part is overridable through
 * {@link createPolicy} (./engine.ts) or the `scoring` option of `createRiskcheck`.
 */
import type { Action, CheckContextName, RiskLevel } from '../schema.js'
import { FACTORS, type FactorCode, type FactorEffect } from './factors.js'
import type { VelocityOverrides, VelocityThresholds } from './velocity.js'

/** Inclusive lower bounds of the levels above `low`. */
export interface Thresholds {
  medium: number
  high: number
  critical: number
}

/**
 * A hard rule: when it matches, its action replaces the level's action. Rules are tried in order; the first match
 * wins. A rule matches when every factor of `all` fired and (if given) at least one of `any` fired.
 */
export interface PolicyRule {
  /** A name for people and tests. */
  name: string
  when: { all?: readonly FactorCode[]; any?: readonly FactorCode[] }
  action: Action
  /** Replaces the level's recommendation message when the rule fires. */
  message?: string
}

/** Changes a context makes to the base policy (see {@link Policy.contexts}). */
export interface PolicyOverlay {
  weights?: Partial<Record<FactorCode, number>>
  thresholds?: Partial<Thresholds>
  /** Tried before the base rules. */
  rules?: readonly PolicyRule[]
  /** Velocity thresholds of this context, merged onto the base ones window by window. */
  velocity?: VelocityOverrides
}

/** A complete scoring policy. */
export interface Policy {
  /** Risk points per factor (0–100). */
  weights: Readonly<Record<FactorCode, number>>
  /** Verdict effect per factor. */
  effects: Readonly<Record<FactorCode, FactorEffect>>
  thresholds: Thresholds
  actions: Readonly<Record<RiskLevel, Action>>
  rules: readonly PolicyRule[]
  /** Confidence drops to `medium` at this many uncertain factors, and to `low` at `low`. */
  confidence: { medium: number; low: number }
  /** Recommendation message per action (used unless a rule gives its own). */
  messages: Readonly<Record<Action, string>>
  /** Overlays applied by the combined check's `context`. */
  contexts: Readonly<Partial<Record<CheckContextName, PolicyOverlay>>>
  /** Velocity thresholds (checks per hour and per 24 hours) past which the velocity factors fire. */
  velocity: VelocityThresholds
  /**
   * What your lists decide, before any rule: the action of an answer on a block list (`list_blocked`), and of one on
   * an allow list (`list_allowed`) and on no block list — but the rule `unusable_input_blocks`, when kept, still blocks
   * an unusable allow-listed input. null: the match only adds its factor's weight, and rules may use the factor.
   */
  lists: ListActions
}

/** The actions of list matches (see {@link Policy.lists}). */
export interface ListActions {
  block: Action | null
  allow: Action | null
}

const mapFactors = <T>(pick: (code: FactorCode) => T) =>
  Object.fromEntries((Object.keys(FACTORS) as FactorCode[]).map((c) => [c, pick(c)])) as Record<FactorCode, T>

/** Factors that block whatever their weight: the input cannot be used at all. */
export const BLOCKING_FACTORS: readonly FactorCode[] = [
  'email_invalid_syntax',
  'email_domain_not_found',
  'email_no_mx',
  'email_null_mx',
  'email_undeliverable',
  'email_bounced_before',
  'phone_invalid',
  'domain_not_registered',
  'auth_domain_not_found',
]

/**
 * The default velocity thresholds (no context, e.g. the single lookups): more checks than this in the last hour or
 * 24 hours fire the kind's factor. The contexts below set their own.
 */
export const DEFAULT_VELOCITY: VelocityThresholds = Object.freeze({
  ip: { hour: 10, day: 50 },
  network: { hour: 30, day: 200 },
  email_domain: { hour: 50, day: 300 },
  email: { hour: 5, day: 20 },
  phone: { hour: 5, day: 20 },
})

/** The default policy. Frozen: derive a new one with `createPolicy(overrides)`. */
export const DEFAULT_POLICY: Policy = Object.freeze({
  weights: Object.freeze(mapFactors((c) => FACTORS[c].weight)),
  effects: Object.freeze(mapFactors((c) => FACTORS[c].effect)),
  thresholds: Object.freeze({ medium: 40, high: 65, critical: 85 }),
  actions: Object.freeze({ low: 'approve', medium: 'verify', high: 'review', critical: 'block' } as const),
  rules: Object.freeze([
    {
      name: 'unusable_input_blocks',
      when: { any: BLOCKING_FACTORS },
      action: 'block',
      message: 'Block: this input cannot be used (invalid or non-existent).',
    },
  ]),
  confidence: Object.freeze({ medium: 1, low: 2 }),
  messages: Object.freeze({
    approve: 'Low risk: accept.',
    verify: 'Medium risk: ask for an extra verification step (e.g. a one-time code) before trusting it.',
    review: 'High risk: hold for manual review.',
    block: 'Critical risk: reject.',
  }),
  contexts: Object.freeze({
    signup: {
      // New accounts in a burst from one place are the classic fake-account pattern: count strictly.
      velocity: {
        ip: { hour: 5, day: 20 },
        network: { hour: 15, day: 60 },
        email_domain: { hour: 20, day: 100 },
        email: { hour: 3, day: 5 },
        phone: { hour: 3, day: 5 },
      },
    },
    lead: {
      // A lead costs little to keep and is verified later: tolerate more before acting.
      thresholds: { medium: 50, high: 75, critical: 90 },
      velocity: { email: { hour: 5, day: 10 }, phone: { hour: 5, day: 10 } },
    },
    checkout: {
      // Money moves: anonymity and throwaway identities weigh more, and every level starts earlier.
      thresholds: { medium: 30, high: 55, critical: 75 },
      weights: { ip_vpn: 45, ip_tor: 90, ip_public_proxy: 70, email_disposable: 80, phone_voip: 50 },
      // Returning customers buy again: only a real burst counts (card testing runs hundreds an hour).
      velocity: {
        ip: { hour: 20, day: 100 },
        network: { hour: 60, day: 400 },
        email_domain: { hour: 100, day: 1000 },
        email: { hour: 10, day: 50 },
        phone: { hour: 10, day: 50 },
      },
    },
  }),
  velocity: DEFAULT_VELOCITY,
  lists: Object.freeze({ block: 'block', allow: 'approve' } as const),
}) as Policy

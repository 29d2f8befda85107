/**
 * Velocity thresholds and the factors they give: a kind's factor (`velocity_ip_high` …) fires when its count of the
 * last hour passes the hour threshold, or its count of the last 24 hours passes the day threshold. Thresholds come
 * from the policy (`velocity`, and per context `contexts.<name>.velocity`); null switches a window off. The counts
 * themselves are measured by the velocity counter (src/velocity/); a backtest re-derives the factors from stored
 * counts under the candidate policy.
 */
import { VELOCITY_KINDS, type Velocity, type VelocityKind } from '../schema.js'
import type { FactorCode } from './factors.js'

/** The most checks of one kind allowed in each window before the kind's factor fires (null: no limit). */
export interface VelocityLimit {
  hour: number | null
  day: number | null
}

/** Limits per kind. */
export type VelocityThresholds = Readonly<Record<VelocityKind, VelocityLimit>>

/** Overrides of thresholds: any kind, any window. */
export type VelocityOverrides = Partial<Record<VelocityKind, Partial<VelocityLimit>>>

/** The factor of each kind. */
export const VELOCITY_FACTORS: Readonly<Record<VelocityKind, FactorCode>> = {
  ip: 'velocity_ip_high',
  network: 'velocity_network_high',
  email_domain: 'velocity_email_domain_high',
  email: 'velocity_email_high',
  phone: 'velocity_phone_high',
}

const VELOCITY_FACTOR_SET: ReadonlySet<string> = new Set(Object.values(VELOCITY_FACTORS))

/** True for a velocity factor code. */
export const isVelocityFactor = (code: string): boolean => VELOCITY_FACTOR_SET.has(code)

const SUBJECT: Record<VelocityKind, string> = {
  ip: 'this IP address',
  network: 'this network',
  email_domain: 'this email domain',
  email: 'this email address',
  phone: 'this phone number',
}

/**
 * `overrides` without the windows `top` sets: a context overlay of the base under a policy's own top-level limits,
 * which take the place of the base contexts' limits for those windows (the policy's own contexts still win over them).
 */
export function velocityUnder(overrides: VelocityOverrides | undefined, top: VelocityOverrides): VelocityOverrides | undefined {
  if (!overrides) return overrides
  const out: VelocityOverrides = {}
  for (const k of VELOCITY_KINDS) {
    const limit = overrides[k]
    if (!limit) continue
    const kept: Partial<VelocityLimit> = {}
    if (limit.hour !== undefined && top[k]?.hour === undefined) kept.hour = limit.hour
    if (limit.day !== undefined && top[k]?.day === undefined) kept.day = limit.day
    if (kept.hour !== undefined || kept.day !== undefined) out[k] = kept
  }
  return out
}

/** `thresholds` with `overrides` merged in, window by window. */
export function mergeVelocity(thresholds: VelocityThresholds, overrides: VelocityOverrides | undefined): VelocityThresholds {
  if (!overrides) return thresholds
  const out = {} as Record<VelocityKind, VelocityLimit>
  for (const k of VELOCITY_KINDS) out[k] = { ...thresholds[k], ...(overrides[k] ?? {}) }
  return out
}

/**
 * The velocity factors of counts under thresholds, with a sentence each.
 *
 * @example
 * velocityFactors({ ip: { hour: 12, day: 30 }, network: null, email_domain: null, email: null, phone: null }, thresholds)
 * // { factors: ['velocity_ip_high'], reasons: { velocity_ip_high: '12 checks from this IP address in the last hour (more than 10).' } }
 */
export function velocityFactors(
  counts: Velocity | null | undefined,
  thresholds: VelocityThresholds,
): { readonly factors: readonly FactorCode[]; readonly reasons: Readonly<Partial<Record<FactorCode, string>>> } {
  if (!counts) return NONE
  let factors: FactorCode[] | null = null
  let reasons: Partial<Record<FactorCode, string>> = NONE.reasons
  for (const k of VELOCITY_KINDS) {
    const c = counts[k]
    if (!c) continue
    const t = thresholds[k]
    const hour = t.hour !== null && c.hour > t.hour
    const day = t.day !== null && c.day > t.day
    if (!hour && !day) continue
    const code = VELOCITY_FACTORS[k]
    if (factors === null) {
      factors = []
      reasons = {}
    }
    factors.push(code)
    const [n, window, limit] = hour ? [c.hour, 'hour', t.hour] : [c.day, '24 hours', t.day]
    const verb = k === 'ip' || k === 'network' ? 'from' : 'with'
    reasons[code] = `${n} checks ${verb} ${SUBJECT[k]} in the last ${window} (more than ${limit}).`
  }
  return factors === null ? NONE : { factors, reasons }
}

/** No velocity factor (most answers): one shared answer, read only. */
const NONE = Object.freeze({ factors: Object.freeze([]) as readonly FactorCode[], reasons: Object.freeze({}) })

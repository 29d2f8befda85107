/**
 * A check context with only the phone source, for driving the phone checks without the facade (so these suites do
 * not depend on the other lookups' sources).
 */
import type { CheckContext, Sources } from '../src/checks/types.js'
import { resolveOptions } from '../src/options.js'
import { createPhoneSource, type PhoneCarrierSource } from '../src/sources/phone/index.js'

export interface PhoneContextOptions {
  mode?: 'live' | 'test'
  offline?: boolean
  carrierSource?: PhoneCarrierSource
  carrierTimeoutMs?: number
}

/** A context whose `sources.phone` is a real phone source; touching any other source throws. */
export function phoneContext(o: PhoneContextOptions = {}): CheckContext {
  const options = resolveOptions({
    mode: o.mode ?? 'live',
    offline: o.offline ?? false,
    now: () => new Date('2026-11-22T00:00:00Z'),
    ...(o.carrierSource ? { phone: { carrierSource: o.carrierSource, carrierTimeoutMs: o.carrierTimeoutMs ?? 500 } } : {}),
  })
  const phone = createPhoneSource({ carrierSource: o.carrierSource ?? null, carrierTimeoutMs: o.carrierTimeoutMs ?? 500 })
  const sources = new Proxy({ phone } as unknown as Sources, {
    get(target, key) {
      if (key === 'phone') return phone
      throw new Error(`the phone checks must not touch sources.${String(key)}`)
    },
  })
  return { now: options.now, mode: options.mode, offline: options.offline, sources, options }
}

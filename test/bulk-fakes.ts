/**
 * Fakes for the bulk engine's tests: a controllable check (type `phone`, so the billing table applies: invalid
 * numbers are free), a lookup environment with a fake clock and an in-memory ledger, and a store wrapper.
 *
 * The fake check's inputs are `<behaviour>-<anything>`, folded case- and space-insensitively:
 * - `ok-…` valid → approve · `voip-…` → verify · `review-…` → review · `invalid-…` → block, free (valid: false)
 * - `partial-…` a source did not answer (partial, retryable) → approve
 * - `throw-…` the lookup throws a plain Error (retryable error row)
 * - `reject-…` the lookup throws a RiskcheckError INVALID_INPUT (error row, not retryable)
 * - `slow-…` waits until `gate.open()` is called
 * - `bad-…` prepare rejects (INVALID_INPUT): error row at creation, free
 * - `flaky-…` partial until `flaky.fixed = true`
 */
import { createMemoryCache, type ResultCache } from '../src/cache.js'
import type { CheckContext, CheckDefinition, CheckOutcome } from '../src/checks/types.js'
import { createMemoryLedger, type CreditLedger } from '../src/credits.js'
import { invalidInput, RiskcheckError } from '../src/errors.js'
import type { LookupEnv } from '../src/lookup.js'
import { resolveOptions } from '../src/options.js'
import { createPolicy } from '../src/scoring/engine.js'
import type { FactorCode } from '../src/scoring/factors.js'
import { fakeClock } from './clock.js'

/** A gate slow rows wait on. */
export function createGate() {
  let release!: () => void
  let promise = new Promise<void>((r) => (release = r))
  return {
    wait: () => promise,
    open() {
      release()
    },
    reset() {
      promise = new Promise<void>((r) => (release = r))
    },
  }
}

export interface FakeDetails {
  e164: string | null
  valid: boolean
  line_type: string
  carrier: { name: string }
  note: string[]
}

/** Creates the fake check; `calls` counts run/test calls per normalized input. */
export function createFakeCheck() {
  const gate = createGate()
  const calls = new Map<string, number>()
  const flaky = { fixed: false }
  let inFlight = 0
  let maxInFlight = 0
  const answer = async (input: string): Promise<CheckOutcome<FakeDetails>> => {
    calls.set(input, (calls.get(input) ?? 0) + 1)
    inFlight++
    maxInFlight = Math.max(maxInFlight, inFlight)
    try {
      const kind = input.split('-')[0]
      await new Promise((r) => setImmediate(r))
      if (kind === 'slow') await gate.wait()
      if (kind === 'throw') throw new Error('socket hang up')
      if (kind === 'reject') throw new RiskcheckError('INVALID_INPUT', 'cannot look this up')
      const factors: FactorCode[] =
        kind === 'voip'
          ? ['phone_voip']
          : kind === 'review'
            ? ['phone_voip', 'phone_toll_free']
            : kind === 'invalid'
              ? ['phone_invalid']
              : kind === 'partial' || (kind === 'flaky' && !flaky.fixed)
                ? ['phone_carrier_unavailable']
                : []
      const partial = kind === 'partial' || (kind === 'flaky' && !flaky.fixed)
      return {
        details: { e164: kind === 'invalid' ? null : `+1${input.length}`, valid: kind !== 'invalid', line_type: 'mobile', carrier: { name: `=cmd|${input}` }, note: ['a', 'b'] },
        factors,
        partial,
        dataSources: ['fake'],
      }
    } finally {
      inFlight--
    }
  }
  const def: CheckDefinition<string, { country?: string }, FakeDetails> = {
    type: 'phone',
    prepare(input) {
      if (typeof input !== 'string') throw invalidInput('not a string')
      const norm = input.trim().toLowerCase()
      if (norm.startsWith('bad')) throw invalidInput('The phone number cannot be parsed.', 'phone')
      return { input: norm, cacheKey: norm }
    },
    run: (_ctx, input) => answer(input),
    test: (_ctx, input) => answer(input),
    testInputs: [],
    cli: { command: 'fake', summary: 'fake' },
  }
  return {
    def,
    gate,
    calls,
    flaky,
    get maxInFlight() {
      return maxInFlight
    },
  }
}

/** A lookup environment for the engine: live mode (billing on), offline, fake clock, in-memory ledger. */
export function createFakeEnv(options: { credits?: number | CreditLedger; mode?: 'live' | 'test'; cache?: ResultCache | null } = {}) {
  const clock = fakeClock('2026-11-22T10:00:00Z')
  const resolved = resolveOptions({ mode: options.mode ?? 'live', offline: true, now: clock.now })
  const ctx: CheckContext = {
    now: clock.now,
    mode: resolved.mode,
    offline: true,
    sources: {} as CheckContext['sources'],
    options: resolved,
  }
  const ledger =
    typeof options.credits === 'object' ? options.credits : createMemoryLedger(options.credits ?? 1_000_000)
  const env: LookupEnv = {
    ctx,
    cache: options.cache === undefined ? createMemoryCache() : options.cache,
    cacheTtlMs: 7 * 86_400_000,
    ledger,
    policy: createPolicy({}),
  }
  return { env, clock, ledger }
}

/** Resolves after pending immediates/microtasks have run `n` times. */
export async function settle(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

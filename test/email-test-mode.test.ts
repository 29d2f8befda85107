/**
 * The email lookup in test mode (documented magic inputs, no network) and offline mode, through the lookup pipeline
 * (prepare → run/test → scoring → result) the facade uses.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { emailCheck, type EmailOptions } from '../src/checks/email/index.js'
import { CACHE_TTL_MS } from '../src/cache.js'
import { UNMETERED } from '../src/credits.js'
import { runLookup } from '../src/lookup.js'
import type { RiskcheckOptions } from '../src/options.js'
import { ACTIONS, VERDICT_STATUSES, type EmailResult } from '../src/schema.js'
import { DEFAULT_POLICY } from '../src/scoring/rules.js'
import { createTestContext } from './helpers.js'
import { assertValidResult } from './validate.js'

function createEmailLookup(options: RiskcheckOptions) {
  const ctx = createTestContext(options)
  const env = { ctx, cache: null, cacheTtlMs: CACHE_TTL_MS, ledger: UNMETERED, policy: DEFAULT_POLICY }
  return {
    email: (input: unknown, opts?: EmailOptions) => runLookup(env, emailCheck, input, opts ?? {}) as Promise<EmailResult>,
    close: () => ctx.close(),
  }
}

const rc = createEmailLookup({ mode: 'test' })
const offline = createEmailLookup({ offline: true })
afterAll(async () => {
  await rc.close()
  await offline.close()
})

describe('test mode', () => {
  const cases: Array<[string, { smtp?: boolean } | undefined, string, string, Record<string, unknown>]> = [
    ['deliverable@example.com', undefined, 'valid', 'approve', { smtp_check: 'deliverable', mx_found: true }],
    ['undeliverable@example.com', undefined, 'invalid', 'block', { smtp_check: 'undeliverable' }],
    ['catchall@example.com', undefined, 'risky', 'approve', { smtp_check: 'catch_all', is_catch_all: true }],
    ['role@example.com', undefined, 'risky', 'approve', { is_role: true }],
    ['disposable@example.com', undefined, 'risky', 'review', { is_disposable: true }],
    ['disposable-catchall@example.com', undefined, 'risky', 'block', { is_disposable: true, is_catch_all: true }],
    ['typo@example.com', undefined, 'risky', 'verify', { did_you_mean: 'typo@gmail.com' }],
    ['newdomain@example.com', undefined, 'risky', 'review', { domain_age_days: 3 }],
    ['unknown@example.com', undefined, 'unknown', 'approve', { smtp_check: 'unknown' }],
    ['unavailable@example.com', undefined, 'unknown', 'approve', { smtp_check: 'unavailable' }],
    ['dnsfail@example.com', undefined, 'unknown', 'approve', { smtp_check: 'unavailable', has_spf: null }],
    ['nomx@example.com', undefined, 'invalid', 'block', { mx_found: false }],
    ['nullmx@example.com', undefined, 'invalid', 'block', { mx_found: false }],
    ['nodomain@example.com', undefined, 'invalid', 'block', { mx_found: false, has_spf: false }],
    ['not-an-email', undefined, 'invalid', 'block', { syntax_valid: false }],
    ['deliverable@example.com', { smtp: false }, 'valid', 'approve', { smtp_check: 'skipped' }],
    ['jane@gmial.com', undefined, 'risky', 'verify', { did_you_mean: 'jane@gmail.com', smtp_check: 'deliverable' }],
  ]

  it.each(cases)('%s %j → %s, %s', async (input, opts, status, action, details) => {
    const r = await rc.email(input, opts)
    assertValidResult(r, 'email')
    expect(r.verdict.status).toBe(status)
    expect(r.recommendation.action).toBe(action)
    expect(r.details).toMatchObject(details)
    expect(r.metadata.test_mode).toBe(true)
    expect(r.metadata.credits_used).toBe(0)
  })

  it('covers every verdict status and every action with the documented inputs', () => {
    expect(new Set(cases.map((c) => c[2]))).toEqual(new Set(VERDICT_STATUSES))
    expect(new Set(cases.map((c) => c[3]))).toEqual(new Set(ACTIONS))
  })

  it('documents every magic input it answers', () => {
    const documented = emailCheck.testInputs.map((t) => t.input.split(' ')[0])
    for (const [input] of cases) if (input.endsWith('@example.com')) expect(documented).toContain(input)
  })

  it('is deterministic and partial only for the source-failure inputs (DNS, unreachable mail server)', async () => {
    const a = await rc.email('catchall@example.com')
    const b = await rc.email('catchall@example.com')
    expect(a.details).toEqual(b.details)
    expect(a.partial).toBe(false)
    expect((await rc.email('unknown@example.com')).partial).toBe(false)
    expect((await rc.email('dnsfail@example.com')).partial).toBe(true)
    expect((await rc.email('unavailable@example.com')).partial).toBe(true)
  })
})

describe('offline mode', () => {
  it('answers from syntax and lists only: smtp unavailable, DNS fields null, complete (not partial), free', async () => {
    const r = await offline.email('jane@gmail.com')
    assertValidResult(r, 'email')
    expect(r.details).toMatchObject({
      syntax_valid: true,
      mx_found: false,
      smtp_check: 'unavailable',
      has_spf: null,
      has_dmarc: null,
      domain_age_days: null,
      is_free_provider: true,
      provider: 'google',
    })
    expect(r.partial).toBe(false)
    expect(r.verdict.status).toBe('unknown')
    expect(r.metadata.credits_used).toBe(0)
  })

  it('still finds disposable domains and typos offline', async () => {
    const r = await offline.email('x@mailinator.com')
    expect(r.details.is_disposable).toBe(true)
    expect(r.verdict.status).toBe('risky')
    expect((await offline.email('x@hotmail.con')).details.did_you_mean).toBe('x@hotmail.com')
  })
})

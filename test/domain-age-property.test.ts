/**
 * Property: any input — random strings, Unicode, domains, URLs, email addresses, non-strings — either is rejected
 * with INVALID_INPUT at prepare, or gives a schema-valid outcome within the RDAP deadline, consistent with itself.
 * RDAP goes to the loopback server (which maps common TLDs to itself; others have no RDAP server → unknown).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Value } from '@sinclair/typebox/value'
import { domainAgeCheck } from '../src/checks/domain-age.js'
import { isRiskcheckError } from '../src/errors.js'
import { AGE_BANDS, DomainAgeDataSchema } from '../src/schema.js'
import { FACTORS } from '../src/scoring/factors.js'
import type { CheckContext, Sources } from '../src/checks/types.js'
import type { ResolvedOptions } from '../src/options.js'
import { createRdapSource, type RdapSource } from '../src/sources/rdap.js'
import { standardRdapDomains, startRdapServer, type RdapServer } from './fake-internet/rdap-server.js'

const NOW = new Date('2026-11-22T00:00:00Z')
const TIMEOUT_MS = 250

let server: RdapServer
let rdap: RdapSource
let ctx: CheckContext

beforeAll(async () => {
  server = await startRdapServer({
    domains: standardRdapDomains(NOW, 2_000),
    tlds: ['com', 'net', 'org', 'de', 'uk', 'example', 'xn--p1ai'],
    now: () => NOW,
  })
  rdap = createRdapSource({ bootstrapData: server.bootstrapData, timeoutMs: TIMEOUT_MS, now: () => NOW })
  ctx = { now: () => NOW, mode: 'live', offline: false, sources: { rdap } as unknown as Sources, options: {} as ResolvedOptions }
})
afterAll(async () => {
  await rdap.close()
  await server.close()
})

const magic = fc.constantFrom(
  'old-domain.test',
  'new-domain.test',
  'x@unregistered.test',
  'https://slow-domain.test/',
  'malformed.test',
  'wrong-object.test',
  'broken.test',
  'localhost',
)
const inputs = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.domain(),
  fc.webUrl(),
  fc.emailAddress(),
  magic,
  fc.anything(),
)

describe('domain age on arbitrary input', () => {
  it('INVALID_INPUT or a schema-valid, self-consistent outcome within the deadline', async () => {
    const kinds = new Set<string>()
    await fc.assert(
      fc.asyncProperty(inputs, async (input) => {
        let prepared
        try {
          prepared = domainAgeCheck.prepare(input, {}, ctx)
        } catch (e) {
          expect(isRiskcheckError(e, 'INVALID_INPUT')).toBe(true)
          return
        }
        const o = await domainAgeCheck.run(ctx, prepared.input, {})
        expect([...Value.Errors(DomainAgeDataSchema, o.details)]).toEqual([])
        for (const f of o.factors) expect(Object.hasOwn(FACTORS, f)).toBe(true)
        const d = o.details
        expect(d.domain).toBe(prepared.cacheKey)
        if (d.age_band !== null) expect(AGE_BANDS).toContain(d.age_band)
        if (d.is_newly_registered) expect(o.factors).toContain('domain_newly_registered')
        if (o.partial) {
          // unknown is never "new"
          expect(d.is_newly_registered).toBe(false)
          expect(d.age_days).toBeNull()
          expect(o.factors).toEqual(['domain_age_unknown'])
        }
        if (!d.found) expect(d.age_days).toBeNull()
        kinds.add(o.partial ? 'partial' : d.found ? 'found' : 'not_found')
      }),
      { numRuns: 250 },
    )
    // the run reached the network paths, not only the parser
    expect([...kinds].sort()).toEqual(['found', 'not_found', 'partial'])
    expect(server.requests.length).toBeGreaterThan(5)
  })
})

/**
 * Property: any input — random strings, Unicode, domains, URLs, email addresses, non-strings — is either rejected with
 * INVALID_INPUT at prepare, or gives a schema-valid, self-consistent outcome from the loopback DNS server.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emailAuthCheck } from '../src/checks/email-auth/index.js'
import type { CheckContext, Sources } from '../src/checks/types.js'
import { isRiskcheckError } from '../src/errors.js'
import type { ResolvedOptions } from '../src/options.js'
import { EmailAuthDataSchema, GRADES } from '../src/schema.js'
import { FACTORS } from '../src/scoring/factors.js'
import { createDnsSource } from '../src/sources/dns.js'
import type { DnsSource } from '../src/sources/dns-types.js'
import { startDnsServer, type FakeDnsServer } from './fake-internet/dns-server.js'
import { schemaErrors } from './validate.js'

let server: FakeDnsServer
let dns: DnsSource
let ctx: CheckContext

beforeAll(async () => {
  server = await startDnsServer({
    zones: {
      'ok.test': { MX: [{ priority: 1, exchange: 'mx.ok.test' }], TXT: ['v=spf1 mx -all'] },
      '_dmarc.ok.test': { TXT: ['v=DMARC1; p=reject'] },
      'weird.test': { TXT: ['v=spf1 include:%{d} a:ü.test -all', 'v=spf1 ip4:1.2.3.4/99'] },
      '_dmarc.weird.test': { TXT: ['v=DMARC1; p=maybe; pct=-1; rua=x'] },
      'slow.test': { behaviour: 'timeout' },
    },
  })
  dns = createDnsSource({ servers: [server.address], timeoutMs: 100, tries: 1 })
  ctx = { now: () => new Date('2026-11-22T00:00:00Z'), mode: 'live', offline: false, sources: { dns } as unknown as Sources, options: {} as ResolvedOptions }
})
afterAll(async () => {
  dns.close()
  await server.close()
})

const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,10}[a-z0-9])?$/)
const inputs = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('ok.test', 'x@ok.test', 'https://weird.test/', 'slow.test', 'mail.weird.test', 'bücher.test', '[::1]', 'a..b', ''),
  fc.tuple(label, fc.constantFrom('test', 'example', 'com', 'co.uk')).map(([l, t]) => `${l}.${t}`),
  fc.tuple(label, label).map(([u, d]) => `${u}@${d}.test`),
  fc.anything(),
)

describe('email-auth property', () => {
  it('any input: INVALID_INPUT or a schema-valid, consistent outcome', async () => {
    await fc.assert(
      fc.asyncProperty(inputs, async (input) => {
        let prepared
        try {
          prepared = emailAuthCheck.prepare(input, {}, ctx)
        } catch (e) {
          expect(isRiskcheckError(e, 'INVALID_INPUT')).toBe(true)
          return
        }
        const o = await emailAuthCheck.run(ctx, prepared.input, {})
        expect(schemaErrors(EmailAuthDataSchema, o.details)).toEqual([])
        expect(GRADES).toContain(o.details.grade)
        expect(o.details.domain).toBe(prepared.input.host)
        for (const f of o.factors) expect(FACTORS[f].group).toBe('email_auth')
        expect(o.partial).toBe(o.factors.includes('auth_dns_unavailable'))
        if (o.partial) expect(o.details.grade === 'F').toBe(o.details.spf.policy === 'pass')
        expect(o.details.spf.too_many_lookups).toBe(o.details.spf.dns_lookups > 10)
        expect(o.details.dkim.selectors_checked).toBe(48)
      }),
      { numRuns: 150 },
    )
  })
})

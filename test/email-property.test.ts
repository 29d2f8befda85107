/**
 * Property: any input — random strings, random Unicode, generated addresses, addresses at domains the fake DNS
 * serves — gives a schema-valid email result, never a throw and never a hang, against the loopback internet.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resultErrors } from './validate.js'
import { startMailWorld, type MailWorld } from './fake-internet/mail-world.js'

let world: MailWorld
const DOMAINS = ['good-mail.com', 'catchall-corp.com', 'slowdns-corp.com', 'bücher.com', 'nullmx-corp.com', 'gmial.com']

beforeAll(async () => {
  world = await startMailWorld({
    zones: {
      'good-mail.com': { MX: [{ priority: 10, exchange: 'mx.good-mail.com' }], TXT: ['v=spf1 -all'] },
      'mx.good-mail.com': { A: ['127.0.0.1'] },
      'catchall-corp.com': { MX: [{ priority: 10, exchange: 'mx.good-mail.com' }] },
      'slowdns-corp.com': { MX: [{ priority: 10, exchange: 'mx.good-mail.com' }], behaviour: { delayMs: 500 } },
      'xn--bcher-kva.com': { A: ['127.0.0.1'] },
      'nullmx-corp.com': { MX: [{ priority: 0, exchange: '' }] },
      'gmial.com': { MX: [{ priority: 10, exchange: 'mx.good-mail.com' }] },
    },
    smtpServer: {
      onRcpt: (a) => {
        const h = [...a].reduce((n, c) => (n * 31 + c.charCodeAt(0)) % 5, 0)
        return (['accept', 'reject', 'greylist', 'block', 'accept'] as const)[h] ?? 'accept'
      },
    },
    riskcheck: { smtp: { timeoutMs: 300 }, dns: { timeoutMs: 200 } },
  })
})
afterAll(async () => {
  await world?.close()
})

async function checkOne(input: unknown): Promise<void> {
  const result = await world.email(input)
  const errors = resultErrors(result, 'email')
  if (errors.length > 0) throw new Error(`schema errors for ${JSON.stringify(input)}: ${errors.join('; ')}`)
  if (result.details.syntax_valid === false) expect(result.verdict.status).toBe('invalid')
  if (result.partial) expect(result.verdict.status).not.toBe('valid')
}

describe('email lookup properties', () => {
  it('random strings (ASCII and full Unicode) give schema-valid results', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 80 }), fc.string({ unit: 'grapheme', maxLength: 40 })), checkOne),
      { numRuns: 150 },
    )
  })

  it('generated addresses (mostly NXDOMAIN at the fake DNS) give schema-valid results', async () => {
    await fc.assert(fc.asyncProperty(fc.emailAddress(), checkOne), { numRuns: 100 })
  })

  it('random local parts at served domains run DNS and SMTP and stay schema-valid', async () => {
    const local = fc.oneof(
      fc.stringMatching(/^[a-z0-9._%+-]{1,20}$/),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }),
    )
    await fc.assert(
      fc.asyncProperty(local, fc.constantFrom(...DOMAINS), async (l, d) => checkOne(`${l}@${d}`)),
      { numRuns: 80 },
    )
  })

  it('non-string inputs are judged invalid, not thrown; a missing one is MISSING_FIELD', async () => {
    await fc.assert(fc.asyncProperty(fc.oneof(fc.integer(), fc.boolean(), fc.object(), fc.array(fc.string())), checkOne), { numRuns: 40 })
    for (const missing of [undefined, null]) await expect(world.email(missing)).rejects.toMatchObject({ code: 'MISSING_FIELD' })
  })
})

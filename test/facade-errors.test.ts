/**
 * How the library's calls reject when the caller is wrong: an unknown lookup type, and any call on a closed instance,
 * reject with a RiskcheckError of a documented code (README "Library"), never an internal error or a plain Error.
 */
import { describe, expect, it } from 'vitest'
import { isRiskcheckError } from '../src/errors.js'
import { createRiskcheck } from '../src/riskcheck.js'

describe('calls the library refuses', () => {
  it('an unknown lookup type is INVALID_REQUEST naming the types (before: INTERNAL_ERROR, "reading \'prepare\'")', async () => {
    const rc = createRiskcheck({ offline: true })
    for (const type of ['domain-age', 'phoneType', 'check', 'toString', '__proto__']) {
      const e = await rc.lookup(type as 'ip', '8.8.8.8').then(() => null, (x: unknown) => x)
      expect(isRiskcheckError(e), type).toBe(true)
      expect(e).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('one of email, phone, phone_type, ip, domain_age, email_auth') })
    }
    expect((await rc.lookup('ip', '8.8.8.8')).details.ip).toBe('8.8.8.8')
    await rc.close()
  })

  it('an unknown lookup option is INVALID_REQUEST naming the known ones, as createRiskcheck refuses an unknown option', async () => {
    // before, a misspelt option did nothing: rc.email(x, { smtpp: false }) ran the SMTP check it meant to skip
    const rc = createRiskcheck({ offline: true })
    await expect(rc.email('jane@gmail.com', { smtpp: false } as never)).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: 'Unknown option `smtpp` of the email lookup (known: bypassCache, checkId, smtp).' })
    await expect(rc.ip('8.8.8.8', { country: 'US' } as never)).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('(known: bypassCache, checkId)') })
    expect((await rc.phone('2015550123', { country: 'US', bypassCache: false, checkId: 'c1' })).details.e164).toBe('+12015550123')
    await rc.close()
  })

  it('a call on a closed instance rejects with MAINTENANCE (before: a plain Error)', async () => {
    const rc = createRiskcheck({ offline: true })
    await rc.close()
    for (const call of [() => rc.ip('8.8.8.8'), () => rc.check({ ip: '8.8.8.8' }), () => rc.lookup('email', 'a@b.co')]) {
      const e = await call().then(() => null, (x: unknown) => x)
      expect(isRiskcheckError(e)).toBe(true)
      expect(e).toMatchObject({ code: 'MAINTENANCE', status: 503, message: 'riskcheck: this instance is closed.' })
    }
  })
})

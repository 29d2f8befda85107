/**
 * A typo suggestion for an address with an IDN domain is written as `normalized` and `domain` are, with the Unicode
 * domain (also for an address typed in punycode, whose `normalized` is Unicode too): the ASCII form is what DNS and
 * SMTP are asked with, not what is shown to the person who typed the address.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createRiskcheck } from '../src/index.js'

const rc = createRiskcheck({ offline: true, cache: false })
afterAll(() => rc.close())

describe('did_you_mean of an IDN domain', () => {
  it.each(['jane@bücher.con', 'jane@BÜCHER.con', 'jane@xn--bcher-kva.con'])('%s → jane@bücher.com, in the reason too', async (input) => {
    const r = await rc.email(input)
    expect(r.details.normalized).toBe('jane@bücher.con')
    expect(r.details.did_you_mean).toBe('jane@bücher.com')
    expect(r.risk.factors).toContain('email_typo_suspected')
    expect(r.verdict.reason).toContain('jane@bücher.com')
    expect(JSON.stringify(r.details)).not.toContain('xn--')
  })

  it('an ASCII domain is suggested as before', async () => {
    expect((await rc.email('jane@gmial.com')).details.did_you_mean).toBe('jane@gmail.com')
    expect((await rc.email('jane@acme.con')).details.did_you_mean).toBe('jane@acme.com')
  })

  it('an IDN suggestion the same as the address is none (the comparison is in one form)', async () => {
    expect((await rc.email('jane@bücher.com')).details.did_you_mean).toBeNull()
  })
})

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compileDisposable, isAllowedDisposableEntry, subtractDisposable } from './build-email-lists.js'

describe('compiling a fresh disposable list', () => {
  it('lower-cases, converts IDNs, de-duplicates, and leaves out public suffixes and non-domains', () => {
    const c = compileDisposable(['Mailinator.com', 'mailinator.com', 'gmaıl.net', 'edu.pl', 'my.id', 'not a domain', 42, '', 'x'], ['33Mail.com'])
    expect(c.exact).toEqual(['mailinator.com', 'xn--gmal-nza.net'])
    expect(c.wildcard).toEqual(['33mail.com'])
    expect(c.allow).toEqual(['edu.pl', 'my.id'])
    expect(c.dropped).toBe(4)
    expect(isAllowedDisposableEntry('co.uk')).toBe(true)
    expect(isAllowedDisposableEntry('mailinator.com')).toBe(false)
  })

  it('the free-provider list loses the domains the disposable list names (also by a parent wildcard)', () => {
    const c = compileDisposable(['gmx.com'], ['spam.example'])
    expect(subtractDisposable(['gmail.com', 'gmx.com', 'a.spam.example'], c)).toEqual({ kept: ['gmail.com'], removed: ['gmx.com', 'a.spam.example'] })
  })

  it('never throws for any entries (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.domain(), fc.anything())), (list) => {
        const c = compileDisposable(list, [])
        for (const d of c.exact) expect(d).toMatch(/^[a-z0-9_.-]+$/)
      }),
    )
  })
})

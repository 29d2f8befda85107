import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import {
  getEmailListSizes,
  isDisposableDomain,
  isFreeProviderDomain,
  isRoleLocalPart,
  readEmailDataList,
  resolveEmailDataFile,
} from './lists.js'
import { parseEmailAddress } from './syntax.js'

const require = createRequire(import.meta.url)

describe('list sizes (pinned: a refresh that shrinks or balloons a list must update these on purpose)', () => {
  it('matches the snapshot sizes recorded in data/email/SOURCES.md', () => {
    expect(getEmailListSizes()).toEqual({
      // disposable-email-domains 1.0.62: 121,570 exact entries and 399 wildcard entries, minus the
      // 3 entries of data/email/disposable-allow.txt (edu.pl, my.id, web.id; the last two are in both
      // lists), and the 12 Unicode entries fold into punycode entries the list already has
      disposableExact: 121_555,
      disposableWildcard: 397,
      freeProviders: 4_467,
      roleLocalParts: 388,
    })
    expect(readEmailDataList('disposable-allow.txt')).toEqual(['edu.pl', 'my.id', 'web.id'])
  })

  it('reads the installed disposable-email-domains version the pins were taken from', () => {
    expect((require('disposable-email-domains/package.json') as { version: string }).version).toBe('1.0.62')
  })

  it('every data entry is well-formed', () => {
    for (const d of readEmailDataList('free-providers.txt')) {
      expect(parseEmailAddress(`x@${d}`), d).toMatchObject({ ok: true, asciiDomain: d })
    }
    for (const r of readEmailDataList('role-local-parts.txt')) {
      expect(parseEmailAddress(`${r}@x.org`).ok, r).toBe(true)
      expect(r).toBe(r.toLowerCase())
    }
  })

  it('finds its data files by walking up from the module', () => {
    expect(resolveEmailDataFile('free-providers.txt')).toMatch(/data[/\\]email[/\\]free-providers\.txt$/)
    expect(() => resolveEmailDataFile('no-such-file.txt')).toThrow(/data\/email\/no-such-file\.txt not found/)
  })
})

describe('isDisposableDomain', () => {
  it('matches exact entries and any subdomain of them (parent-domain walk)', () => {
    expect(isDisposableDomain('mailinator.com')).toBe(true)
    expect(isDisposableDomain('a.b.mailinator.com')).toBe(true)
    expect(isDisposableDomain('MAILINATOR.COM.')).toBe(true)
    expect(isDisposableDomain(' mailinator.com ')).toBe(true)
  })

  it('finds every listed domain (the bit filter in front of the sets never hides one)', () => {
    const allow = new Set(readEmailDataList('disposable-allow.txt'))
    const listed = [...(require('disposable-email-domains/index.json') as string[]), ...(require('disposable-email-domains/wildcard.json') as string[])]
    const missed = listed.filter((d) => /^[a-z0-9.-]+$/.test(d) && !allow.has(d) && !isDisposableDomain(d))
    expect(missed).toEqual([])
    expect(listed.length).toBeGreaterThan(100_000)
  })

  it('matches subdomains of wildcard entries', () => {
    const wildcard = require('disposable-email-domains/wildcard.json') as string[]
    expect(wildcard).toContain('33mail.com')
    expect(isDisposableDomain('someone.33mail.com')).toBe(true)
    expect(isDisposableDomain('33mail.com')).toBe(true)
  })

  it('does not match ordinary providers or look-alike names', () => {
    const exact = new Set(require('disposable-email-domains') as string[])
    for (const d of ['gmail.com', 'outlook.com', 'yahoo.co.uk', 'gmx.de', 'proton.me', 'example.org', 'mailinator.com.evil.org', 'xmailinator.com']) {
      expect(exact.has(d), d).toBe(false)
      expect(isDisposableDomain(d), d).toBe(false)
    }
  })

  it('does not flag everything under a public suffix that the upstream list happens to contain', () => {
    const exact = new Set(require('disposable-email-domains') as string[])
    expect(exact.has('edu.pl')).toBe(true) // upstream has it …
    expect(isDisposableDomain('uw.edu.pl')).toBe(false) // … but a university under it is not disposable
    expect(isDisposableDomain('edu.pl')).toBe(false)
    expect(isDisposableDomain('someone.my.id')).toBe(false)
  })

  it('handles Unicode entries and Unicode input through punycode', () => {
    const exact = require('disposable-email-domains') as string[]
    expect(exact).toContain('gmaıl.net')
    expect(isDisposableDomain('gmaıl.net')).toBe(true)
    expect(isDisposableDomain('xn--gmal-nza.net')).toBe(true)
  })

  it('answers false for non-domains without throwing', () => {
    for (const v of ['', '.', 'com', '..', 'x'.repeat(10_000), 42, null, undefined] as unknown[]) {
      expect(isDisposableDomain(v as string)).toBe(false)
    }
  })
})

describe('isFreeProviderDomain', () => {
  it('knows the big free providers, including curated additions', () => {
    for (const d of ['gmail.com', 'yahoo.com', 'yahoo.co.uk', 'hotmail.com', 'outlook.com', 'live.com', 'aol.com', 'icloud.com', 'me.com', 'protonmail.com', 'proton.me', 'gmx.de', 'web.de', 'mail.ru', 'yandex.ru', 'zoho.com', 'qq.com', '163.com', 'naver.com', 'daum.net', 'tuta.io']) {
      expect(isFreeProviderDomain(d), d).toBe(true)
    }
    expect(isFreeProviderDomain('GMail.COM.')).toBe(true)
  })

  it('does not report company domains, subdomains, disposable domains or removed entries', () => {
    for (const d of ['acme.com', 'mail.gmail.com', 'mailinator.com', 'facebook.com', 'example.org', '', 'gmail']) {
      expect(isFreeProviderDomain(d), d).toBe(false)
    }
  })
})

describe('isRoleLocalPart', () => {
  it('knows RFC 2142 names and common role names, case-insensitively', () => {
    for (const r of ['postmaster', 'abuse', 'hostmaster', 'webmaster', 'security', 'noc', 'info', 'sales', 'support', 'marketing', 'admin', 'Billing', 'CONTACT', 'help', 'hr', 'jobs', 'office', 'team', 'noreply']) {
      expect(isRoleLocalPart(r), r).toBe(true)
    }
  })

  it('ignores +tags, separators and trailing digits', () => {
    for (const r of ['support+ticket-42', 'no-reply', 'no_reply', 'do-not-reply', 'customer.service', 'customer_service', 'sales2', 'info01', 'mailer-daemon']) {
      expect(isRoleLocalPart(r), r).toBe(true)
    }
  })

  it('accepts role words combined with qualifiers and noreply-style prefixes', () => {
    for (const r of ['support-team', 'sales.emea', 'info.de', 'it.support', 'noreply-billing', 'donotreply.notifications', 'noreply12345']) {
      expect(isRoleLocalPart(r), r).toBe(true)
    }
  })

  it('does not flag personal names, even when they contain a role word', () => {
    for (const r of ['jane', 'jane.doe', 'john.sales', 'info.jane', 'salesman', 'adminton', 'teamwork', '', '+sales', 'x'.repeat(1000)]) {
      expect(isRoleLocalPart(r), r).toBe(false)
    }
    expect(isRoleLocalPart(5 as unknown as string)).toBe(false)
  })
})

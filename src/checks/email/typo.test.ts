import { parse } from 'tldts'
import { describe, expect, it } from 'vitest'
import { readEmailDataList } from './lists.js'
import fc from 'fast-check'
import { charMask, editDistanceBound, getTypoTargetCount, osaDistance, suggestDomain, suggestEmail, TLD_NEAR_MISSES, TLD_TYPOS, typoWork } from './typo.js'

describe('suggestEmail', () => {
  it('corrects common typos of popular domains (issue examples and mailcheck spec cases)', () => {
    const cases: Array<[string, string]> = [
      ['gmial.com', 'gmail.com'],
      ['hotmail.con', 'hotmail.com'],
      ['yaho.com', 'yahoo.com'],
      ['gmail.co', 'gmail.com'],
      ['outlok.com', 'outlook.com'],
      // mailcheck spec/mailcheckSpec.js
      ['gmailc.om', 'gmail.com'],
      ['gmail.con', 'gmail.com'],
      ['gnail.con', 'gmail.com'],
      ['GNAIL.con', 'gmail.com'],
      ['homail.con', 'hotmail.com'],
      ['hotmail.co', 'hotmail.com'],
      ['yajoo.com', 'yahoo.com'],
      ['yahooo.cmo', 'yahoo.com'],
      ['emaildomain.con', 'emaildomain.com'],
      ['con-artists.con', 'con-artists.com'],
      // common slips of the popular domains
      ['hotmial.com', 'hotmail.com'],
      ['yahooo.com', 'yahoo.com'],
      ['icloud.cm', 'icloud.com'],
      ['protonmial.com', 'protonmail.com'],
      // more
      ['gamil.com', 'gmail.com'],
      ['gmai.com', 'gmail.com'],
      ['gmailcom', 'gmail.com'],
      ['gmail,com', 'gmail.com'],
      ['hotmial.co.uk', 'hotmail.co.uk'],
      ['aol.con', 'aol.com'],
      ['outlook.comm', 'outlook.com'],
      ['163.con', '163.com'],
      ['yahoo.co', 'yahoo.com'],
      ['hitmail.com', 'hotmail.com'],
    ]
    for (const [typo, fixed] of cases) expect(suggestEmail('Test.User', typo), typo).toBe(`Test.User@${fixed}`)
  })

  it('never suggests for real popular domains, nor corrects one into another', () => {
    for (const d of ['gmail.com', 'GMAIL.COM', 'ymail.com', 'gmx.com', 'gmx.de', 'mail.com', 'email.com', 'hotmail.co.uk', 'yahoo.co.uk', 'live.com', 'me.com', 'foxmail.com', 'y7mail.com', 'online.de', 'myfastmail.com', 'inbox.ru']) {
      expect(suggestEmail('x', d), d).toBeNull()
    }
  })

  it('gives no suggestion when it is not confident', () => {
    for (const d of [
      'kicksend.com', // unrelated
      'gmx.fr', // short name: only TLD fixes, and .fr is a real TLD
      'gm', 'gma', 'gmai', // no TLD
      'hmail.com', // equally close to gmail, ymail and email
      'gimal.com', // 2 edits from a 5-letter name
      'mail.gmial.com', // extra labels
      'never.com', // '!' target: a word, not corrected into naver.com
      'sky.co', 'me.co', 'live.cm', // real TLD slip on a short name
      'comcast.nry', // unknown TLD typo
      'example.org',
      'bücher.de', // non-ASCII is left alone
      '',
    ]) {
      expect(suggestEmail('x', d), d).toBeNull()
    }
    for (const d of ['acme.constructor', 'acme.tostring', 'acme.__proto__', 'hasownproperty.com', 'acme.valueof']) {
      expect(suggestEmail('x', d), d).toBeNull()
    }
    expect(suggestEmail('', 'gmial.com')).toBeNull()
    expect(suggestEmail(1 as unknown as string, 'gmial.com')).toBeNull()
    expect(suggestEmail('x', null as unknown as string)).toBeNull()
  })

  it('fixes punctuation slips that make the address invalid', () => {
    expect(suggestEmail('a', 'yahoo.co.uk.')).toBe('a@yahoo.co.uk')
    expect(suggestEmail('a', 'acme.com.')).toBe('a@acme.com')
    expect(suggestEmail('a', 'acme,com')).toBe('a@acme.com')
    expect(suggestEmail('a', 'gmial.com.')).toBe('a@gmail.com')
  })

  it('fixes a non-existent TLD typo on any domain', () => {
    expect(suggestEmail('a', 'acme.con')).toBe('a@acme.com')
    expect(suggestEmail('a', 'mail.acme.cmo')).toBe('a@mail.acme.com')
    expect(suggestEmail('a', 'acme.nte')).toBe('a@acme.net')
    expect(suggestEmail('a', 'acme.ogr')).toBe('a@acme.org')
    expect(suggestEmail('a', 'acme.cm')).toBeNull() // Cameroon: a real TLD
  })

  it('never returns the input itself', () => {
    for (const d of [...readEmailDataList('typo-targets.txt').map((t) => t.replace(/^[!-]/, '')), 'acme.com', 'a.b.c']) {
      const s = suggestEmail('x', d)
      expect(s === null || s !== `x@${d}`, d).toBe(true)
    }
  })

  it('costs bounded work per domain, however many (counted; timings are in scripts/bench/email-offline.ts)', () => {
    const NEAR_MISSES = ['gmial.com', 'hotmial.com', 'yaho.com', 'outlok.com', 'gmail.con', 'yahooo.com', 'hotmal.co', 'iclod.com']
    const targets = getTypoTargetCount()
    const run = (n: number, tag: string) => {
      const before = typoWork()
      for (let i = 0; i < n; i++) suggestDomain(`company${tag}${i}.com`)
      // near misses of targets: these reach the distance computation (the index and the character-set bound rule
      // out most targets for the made-up names above before any table is filled)
      for (let i = 0; i < n / 5; i++) suggestDomain(NEAR_MISSES[i % NEAR_MISSES.length]!)
      const after = typoWork()
      return { suggestions: after.suggestions - before.suggestions, comparisons: after.comparisons - before.comparisons, cells: after.cells - before.cells }
    }
    const small = run(2_000, 'a')
    const large = run(8_000, 'b')
    expect(small.suggestions).toBe(2_400)
    expect(large.suggestions).toBe(9_600)
    for (const w of [small, large]) {
      expect(w.comparisons).toBeGreaterThan(0)
      expect(w.comparisons).toBeLessThanOrEqual(w.suggestions * targets) // each target at most once per domain
      expect(w.cells).toBeLessThanOrEqual(w.comparisons * 64 * 64) // each comparison a bounded table
    }
    // linear: four times the domains, about four times the work (generous bounds)
    expect(large.cells / small.cells).toBeGreaterThan(3)
    expect(large.cells / small.cells).toBeLessThan(5.5)
    // a domain past the length cap costs nothing
    const before = typoWork()
    expect(suggestDomain(`${'g'.repeat(100_000)}.com`)).toBeNull()
    expect(typoWork()).toEqual(before)
  })
})

describe('TLD tables', () => {
  it('TLD_TYPOS keys are not delegated TLDs (Public Suffix List), TLD_NEAR_MISSES keys are', () => {
    for (const k of Object.keys(TLD_TYPOS)) expect(parse(`abc.${k}`).isIcann, k).toBe(false)
    for (const k of Object.keys(TLD_NEAR_MISSES)) expect(parse(`abc.${k}`).isIcann, k).toBe(true)
  })

  it('loads the pinned number of targets', () => {
    expect(getTypoTargetCount()).toBe(114)
  })
})

describe('osaDistance', () => {
  it('counts substitutions, insertions, deletions and adjacent transpositions', () => {
    expect(osaDistance('gmail', 'gmail', 2)).toBe(0)
    expect(osaDistance('gmial', 'gmail', 2)).toBe(1)
    expect(osaDistance('gmal', 'gmail', 2)).toBe(1)
    expect(osaDistance('gmaill', 'gmail', 2)).toBe(1)
    expect(osaDistance('gnail', 'gmail', 2)).toBe(1)
    expect(osaDistance('gimal', 'gmail', 2)).toBe(2)
    expect(osaDistance('ca', 'abc', 5)).toBe(3) // OSA (not full Damerau) distance
    expect(osaDistance('', 'abc', 5)).toBe(3)
  })

  it('stops early and returns max + 1 beyond the bound', () => {
    expect(osaDistance('abcdef', 'uvwxyz', 2)).toBe(3)
    expect(osaDistance('a', 'abcdef', 1)).toBe(2)
  })

  it('the character-set bound that rules targets out never exceeds the distance (so it changes no suggestion)', () => {
    const label = fc.stringMatching(/^[a-z0-9-]{0,12}$/)
    fc.assert(
      fc.property(label, label, (a, b) => {
        expect(editDistanceBound(charMask(a), charMask(b))).toBeLessThanOrEqual(osaDistance(a, b, 64))
      }),
      { numRuns: 3000 },
    )
    // near misses: a few edits of a target
    for (const [a, b] of [['gmail', 'gmial'], ['hotmail', 'hotmial'], ['yahoo', 'yaho'], ['outlook', 'outlok'], ['gmail', 'gmai1']] as const) {
      expect(editDistanceBound(charMask(a), charMask(b))).toBeLessThanOrEqual(osaDistance(a, b, 64))
    }
  })
})

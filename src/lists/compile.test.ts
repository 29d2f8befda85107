import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseIp } from '../sources/ip/parse.js'
import { instantOfText } from '../instant.js'
import { compileLists, defaultListId, ListsError, summarize, type Entries, type ListIndex } from './compile.js'
import { matchLists } from './match.js'
import { xorshift } from '../../test/xorshift.js'

const compiled = (defs: unknown): ListIndex => {
  const c = compileLists(defs)
  if (!c.ok) throw new ListsError(c.invalid)
  return c.index
}

describe('compileLists', () => {
  it('names every unusable value with its list, position and reason, and compiles nothing then', () => {
    const c = compileLists([
      { name: 'ok', kind: 'block', itemType: 'ip', items: ['192.0.2.1', 'nope', { value: '10.0.0.0/8', expiresAt: 'soon' }] },
      { name: 'bad kind', kind: 'deny', itemType: 'ip', items: [] },
      { name: 'mails', kind: 'allow', itemType: 'email', items: ['a@b.co', { value: 'x@y.co', reason: 7 }] },
    ])
    expect(c.ok).toBe(false)
    if (c.ok) return
    expect(c.invalid).toEqual([
      { list: 0, index: 1, value: 'nope', reason: 'not an IP address or CIDR network' },
      { list: 0, index: 2, value: '10.0.0.0/8', reason: 'expiresAt must be a date (a Date, Unix ms, or an ISO 8601 date or date-time with Z or an offset)' },
      { list: 1, index: -1, value: 'bad kind', reason: 'kind must be one of block, allow' },
      { list: 2, index: 1, value: 'x@y.co', reason: 'reason must be a string of at most 500 characters' },
    ])
    expect(new ListsError(c.invalid).message).toBe(
      'riskcheck: option `lists`: lists[0].items[1] "nope": not an IP address or CIDR network; lists[0].items[2] "10.0.0.0/8": expiresAt must be a date (a Date, Unix ms, or an ISO 8601 date or date-time with Z or an offset); lists[1]: kind must be one of block, allow; lists[2].items[1] "x@y.co": reason must be a string of at most 500 characters',
    )
  })

  it('rejects malformed definitions with a reason (not an array, duplicate ids, missing fields)', () => {
    expect(compileLists('x')).toEqual({ ok: false, invalid: [{ list: -1, index: -1, value: 'x', reason: 'lists must be an array of lists' }] })
    // the option as a whole is named as such (it read "lists[-1]: …", a list that does not exist)
    expect(new ListsError((compileLists('x') as { ok: false; invalid: ConstructorParameters<typeof ListsError>[0] }).invalid).message).toBe('riskcheck: option `lists`: lists must be an array of lists')
    const dup = compileLists([
      { id: 'a', name: 'one', kind: 'block', itemType: 'asn', items: [] },
      { id: 'a', name: 'two', kind: 'block', itemType: 'asn', items: [] },
    ])
    expect(dup.ok ? [] : dup.invalid.map((i) => i.reason)).toEqual(['another list has the id a'])
    const missing = compileLists([null, { name: '', kind: 'block', itemType: 'ip', items: [] }, { name: 'x', kind: 'block', itemType: 'url', items: [] }, { name: 'y', kind: 'allow', itemType: 'ip' }])
    expect(missing.ok ? [] : missing.invalid.map((i) => i.reason)).toEqual([
      'a list must be an object with name, kind, itemType and items',
      'name must be 1 to 200 characters, not only spaces',
      'itemType must be one of email, email_domain, ip, phone, country, asn',
      'items must be an array',
    ])
  })

  it('counts names and reasons in characters, as the API\'s schema does; an expiry is an instant in any time zone', () => {
    const reasonsOf = (c: ReturnType<typeof compileLists>) => (c.ok ? [] : c.invalid.map((i) => `${i.list}:${i.index} ${i.reason}`))
    // 150 emoji are 300 UTF-16 units and 150 characters; 201 characters and blank names are refused
    expect(reasonsOf(compileLists([{ name: '😀'.repeat(150), kind: 'block', itemType: 'email', items: [{ value: 'a@b.co', reason: '😀'.repeat(500) }] }]))).toEqual([])
    expect(
      reasonsOf(
        compileLists([
          { name: '😀'.repeat(201), kind: 'block', itemType: 'asn', items: [] },
          { name: ' \t ', kind: 'block', itemType: 'asn', items: [] },
          { name: 'r', kind: 'block', itemType: 'asn', items: [{ value: 'AS1', reason: '😀'.repeat(501) }] },
        ]),
      ),
    ).toEqual(['0:-1 name must be 1 to 200 characters, not only spaces', '1:-1 name must be 1 to 200 characters, not only spaces', '2:0 reason must be a string of at most 500 characters'])
    // a date is midnight UTC, a date-time needs Z or an offset (without one, the machine's time zone would decide)
    const expiry = (expiresAt: unknown) => compileLists([{ name: 'e', kind: 'block', itemType: 'asn', items: [{ value: 'AS1', expiresAt }] }])
    for (const ok of ['2030-12-31', '2030-12-31T00:00Z', '2030-12-31T00:00:00.123+05:30', '2030-12-31t00:00:00z']) expect(reasonsOf(expiry(ok)), ok).toEqual([])
    for (const bad of ['2030-12-31T00:00:00', '2030-12-31 00:00:00Z', 'Dec 31 2030', '2030-12-31T00:00:00+0530']) expect(reasonsOf(expiry(bad)), bad).toHaveLength(1)
    expect(instantOfText('2030-12-31T00:00:00+05:00')).toBe(Date.UTC(2030, 11, 30, 19))
    expect(instantOfText('2030-12-31')).toBe(Date.UTC(2030, 11, 31))
  })

  it('counts a value given twice once (the later reason and expiry win); ids default to a stable hash', () => {
    const index = compiled([
      { name: 'Fraud', kind: 'block', item_type: 'email', items: ['Jane.Doe@gmail.com', { value: 'janedoe+x@googlemail.com', reason: 'second' }, 'b@c.io'] },
    ])
    expect(summarize(index)).toEqual([{ id: defaultListId('block', 'email', 'Fraud'), name: 'Fraud', kind: 'block', item_type: 'email', items: 2 }])
    expect(defaultListId('block', 'email', 'Fraud')).toMatch(/^lst_[0-9a-f]{16}$/)
    expect([index.email.get('janedoe@gmail.com')].flat().map((e) => e?.reason)).toEqual(['second'])
  })
})

describe('matchLists', () => {
  const index = compiled([
    { id: 'nets', name: 'Bad networks', kind: 'block', itemType: 'ip', items: ['203.0.113.0/24', '203.0.113.7', '2001:db8::/32', { value: '198.51.100.0/24', expiresAt: 1000 }] },
    { id: 'office', name: 'Office', kind: 'allow', itemType: 'ip', items: ['203.0.113.0/25'] },
    { id: 'domains', name: 'Domains', kind: 'block', itemType: 'email_domain', items: ['example.com', 'evil.example.com'] },
    { id: 'cc', name: 'Countries', kind: 'block', itemType: 'country', items: ['KP'] },
    { id: 'as', name: 'ASNs', kind: 'block', itemType: 'asn', items: ['AS64500'] },
    { id: 'phones', name: 'Phones', kind: 'allow', itemType: 'phone', items: ['+44 20 7946 0958'] },
  ])
  const ip = (address: string, country: string | null = null, asn: number | null = null) => ({ ip: address, location: { country_code: country }, network: { asn } })

  it('an address: one match per list, the most specific network of each, in list order', () => {
    const m = matchLists(index, 'ip', ip('203.0.113.7'), 0)
    expect(m.matches).toEqual([
      { list_id: 'nets', name: 'Bad networks', kind: 'block', item_type: 'ip', value: '203.0.113.7' },
      { list_id: 'office', name: 'Office', kind: 'allow', item_type: 'ip', value: '203.0.113.0/25' },
    ])
    expect(m.factors).toEqual(['list_blocked', 'list_allowed'])
    expect(m.reasons.list_blocked).toBe('The IP address is on the block list "Bad networks".')
    expect(matchLists(index, 'ip', ip('203.0.113.200'), 0).matches.map((x) => x.value)).toEqual(['203.0.113.0/24'])
    expect(matchLists(index, 'ip', ip('2001:db8:ffff::1'), 0).matches.map((x) => x.value)).toEqual(['2001:db8::/32'])
    expect(matchLists(index, 'ip', ip('192.0.2.1'), 0).matches).toEqual([])
  })

  it('expired items no longer match', () => {
    expect(matchLists(index, 'ip', ip('198.51.100.9'), 999).matches).toHaveLength(1)
    expect(matchLists(index, 'ip', ip('198.51.100.9'), 1000).matches).toHaveLength(0)
  })

  it('the country and AS of an address, the country of a phone number', () => {
    expect(matchLists(index, 'ip', ip('192.0.2.1', 'kp', 64500), 0).matches.map((x) => x.list_id)).toEqual(['cc', 'as'])
    const phone = { e164: '+442079460958', country: { code: 'GB', name: 'United Kingdom' } }
    expect(matchLists(index, 'phone', phone, 0).matches.map((x) => x.list_id)).toEqual(['phones'])
    expect(matchLists(index, 'phone_type', { e164: null, country: 'KP' }, 0).matches.map((x) => x.list_id)).toEqual(['cc'])
  })

  it('a domain and its subdomains, for email, domain age and email authentication', () => {
    const email = (d: string) => ({ syntax_valid: true, local_part: 'x', domain: d })
    expect(matchLists(index, 'email', email('a.b.example.com'), 0).matches.map((x) => x.value)).toEqual(['example.com'])
    expect(matchLists(index, 'email', email('mail.evil.example.com'), 0).matches.map((x) => x.value)).toEqual(['evil.example.com'])
    expect(matchLists(index, 'email', email('example.org'), 0).matches).toEqual([])
    expect(matchLists(index, 'email', { ...email('example.com'), syntax_valid: false }, 0).matches).toEqual([])
    expect(matchLists(index, 'domain_age', { domain: 'WWW.Example.com' }, 0).matches).toHaveLength(1)
    expect(matchLists(index, 'email_auth', { domain: 'example.com' }, 0).matches).toHaveLength(1)
  })

  it('a domain asks only about its suffixes with as many labels as a listed domain has', () => {
    const tlds = compiled([
      { name: 'TLDs', kind: 'block', itemType: 'email_domain', items: ['zip'] },
      { name: 'Rings', kind: 'block', itemType: 'email_domain', items: ['ring.example.com', 'bad.example.net'] },
    ])
    const filter = tlds.filters.emailDomain
    filter.work = 0
    // a.b.ring.example.com: 'com' (1 label) and 'ring.example.com' (3) are asked; the 5-, 4- and 2-label ones are not
    expect(matchLists(tlds, 'domain_age', { domain: 'a.b.ring.example.com' }, 0).matches.map((m) => m.value)).toEqual(['ring.example.com'])
    expect(filter.work).toBe(2)
    expect(matchLists(tlds, 'domain_age', { domain: 'x.y.files.zip' }, 0).matches.map((m) => m.value)).toEqual(['zip'])
    expect(matchLists(tlds, 'domain_age', { domain: 'bad.example.net' }, 0).matches.map((m) => m.value)).toEqual(['bad.example.net'])
    expect(matchLists(tlds, 'domain_age', { domain: 'example.net' }, 0).matches).toEqual([])
  })

  it('a value on several lists matches each of them', () => {
    const two = compiled([
      { id: 'a', name: 'A', kind: 'block', itemType: 'email_domain', items: ['shared.example'] },
      { id: 'b', name: 'B', kind: 'allow', itemType: 'email_domain', items: ['shared.example', { value: 'shared.example', reason: 'again' }] },
      { id: 'c', name: 'C', kind: 'block', itemType: 'ip', items: ['192.0.2.0/24'] },
      { id: 'd', name: 'D', kind: 'block', itemType: 'ip', items: ['192.0.2.0/24'] },
    ])
    expect(matchLists(two, 'domain_age', { domain: 'x.shared.example' }, 0).matches.map((m) => m.list_id)).toEqual(['a', 'b'])
    expect(matchLists(two, 'ip', { ip: '192.0.2.9', location: {}, network: {} }, 0).matches.map((m) => m.list_id)).toEqual(['c', 'd'])
    expect(summarize(two).map((l) => l.items)).toEqual([1, 1, 1, 1])
  })

  it('never throws on odd details', () => {
    for (const type of ['email', 'ip', 'phone', 'phone_type', 'domain_age', 'email_auth', 'check', 'x'])
      for (const d of [null, undefined, 1, 'x', {}, { ip: 5, location: null, network: 'x' }, { domain: {}, syntax_valid: true }])
        expect(matchLists(index, type, d, 0).matches).toEqual([])
  })
})

describe('matching cost does not grow with the lists (counted, not timed)', () => {
  /** A list of `n` IPv4 networks and addresses, `n` IPv6 ones and `n` of each other type. */
  function big(n: number): ListIndex {
    const v4: string[] = []
    const v6: string[] = []
    const rest: Record<string, string[]> = { email: [], email_domain: [], phone: [], asn: [] }
    for (let i = 0; i < n; i++) {
      v4.push(i % 3 === 0 ? `${10 + (i % 200)}.${(i >> 8) & 255}.${i & 255}.0/24` : `${10 + (i % 200)}.${(i >> 8) & 255}.${i & 255}.${i % 251}`)
      v6.push(`2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64`)
      rest.email!.push(`user${i}@example${i % 97}.com`)
      rest.email_domain!.push(`d${i}.example.net`)
      rest.phone!.push(`+4420794${String(60000 + (i % 40000)).padStart(5, '0')}`)
      rest.asn!.push(`AS${i + 1}`)
    }
    return compiled([
      { name: 'v4', kind: 'block', itemType: 'ip', items: v4 },
      { name: 'v6', kind: 'block', itemType: 'ip', items: v6 },
      ...Object.entries(rest).map(([t, items]) => ({ name: t, kind: 'block', itemType: t, items })),
    ])
  }

  class CountingMap<K, V> extends Map<K, V> {
    gets = 0
    override get(k: K): V | undefined {
      this.gets++
      return super.get(k)
    }
  }

  /** Work of one batch of lookups: prefix-index steps, values asked (of a filter, or of the country map) and map probes. */
  function work(index: ListIndex): { ip: number; probes: number; gets: number } {
    const maps = (['email', 'emailDomain', 'phone', 'country', 'asn'] as const).map((k) => {
      const m = new CountingMap<unknown, Entries>(index[k] as ReadonlyMap<unknown, Entries>)
      ;(index as unknown as Record<string, unknown>)[k] = m
      return m
    })
    index.ip.work = 0
    const filters = Object.values(index.filters)
    for (const f of filters) f.work = 0
    for (let i = 0; i < 200; i++) {
      matchLists(index, 'ip', { ip: `${10 + (i % 200)}.${i % 7}.${i % 250}.${i % 251}`, location: { country_code: 'DE' }, network: { asn: i } }, 0)
      matchLists(index, 'ip', { ip: `2001:db8:0:${i.toString(16)}::1`, location: { country_code: null }, network: { asn: null } }, 0)
      matchLists(index, 'email', { syntax_valid: true, local_part: `user${i}`, domain: `a.b.d${i}.example.net` }, 0)
      matchLists(index, 'phone', { e164: `+44207946${i}`, country: { code: 'GB', name: 'United Kingdom' } }, 0)
    }
    const country = maps[3] as CountingMap<unknown, Entries>
    return { ip: index.ip.work, probes: filters.reduce((n, f) => n + f.work, 0) + country.gets, gets: maps.reduce((n, m) => n + m.gets, 0) }
  }

  it('100 times the items: the same values asked, and prefix-index steps grow by log₂ 100 per lookup at most', { timeout: 60_000 }, () => {
    const small = work(big(200))
    const large = work(big(20_000))
    expect(large.probes).toBe(small.probes)
    // the maps are probed only for what their filters may hold
    expect(large.gets).toBeLessThanOrEqual(large.probes)
    expect(small.gets).toBeLessThanOrEqual(small.probes)
    const lookups = 400
    // binary search over 100× the ranges: log₂(100) ≈ 6.6 more steps per lookup; parent hops are bounded by the nesting
    expect(large.ip - small.ip).toBeLessThanOrEqual(lookups * 8)
    expect(large.ip / lookups).toBeLessThanOrEqual(Math.log2(40_000) + 4)
  })
})

describe('the prefix index agrees with a linear scan (property)', () => {
  it('random IPv4 networks and addresses', () => {
    const cidr = fc.tuple(fc.nat(0xffffffff), fc.integer({ min: 0, max: 32 }))
    fc.assert(
      fc.property(fc.array(cidr, { maxLength: 60 }), fc.array(fc.nat(0xffffffff), { maxLength: 30 }), (nets, addrs) => {
        const items = nets.map(([a, p]) => `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}/${p}`)
        const index = compiled([{ name: 'n', kind: 'block', itemType: 'ip', items }])
        for (const a of [...addrs, ...nets.map(([x]) => x)]) {
          const text = `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`
          const found: string[] = []
          index.ip.find(parseIp(text)!, (entries) => (found.push(...[entries].flat().map((e) => e.value)), false))
          const expected = nets
            .filter(([x, p]) => p === 0 || x >>> (32 - p) === a >>> (32 - p))
            .sort((x, y) => y[1] - x[1])
            .map(([x, p]) => normalizedOf(x, p))
          expect(found).toEqual([...new Set(expected)])
        }
      }),
      { numRuns: 200 },
    )
  })
})

describe('the prefix index with a directory (4,096 ranges and more) agrees with a linear scan', () => {
  it('random IPv4 networks, a third of them in four /16s, and addresses in and around them (5 seeds)', { timeout: 60_000 }, () => {
    for (const seed of [1, 7, 42, 2026, 65_537]) {
      const rnd = xorshift(seed)
      // prefix lengths mostly from 16 up (the networks stay distinct: over 4,096 ranges), a few short ones holding many
      const nets = Array.from({ length: 6000 }, (_, i): [number, number] => {
        const a = rnd()
        const p = rnd() % 33
        const len = p < 4 ? p * 3 : 16 + (p % 17)
        return i % 3 === 0 ? [(0x0a000000 + (a % 4) * 0x10000 + (a & 0xffff)) >>> 0, Math.max(len, 12)] : [a, len]
      })
      const items = nets.map(([a, p]) => `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}/${p}`)
      const index = compiled([{ name: 'n', kind: 'block', itemType: 'ip', items }])
      expect(index.ip.size).toBeGreaterThanOrEqual(4096)
      const addresses = [...nets.slice(0, 300).map(([a]) => a), ...Array.from({ length: 300 }, rnd), 0x0a000000, 0x0a03ffff, 0xffffffff, 0]
      for (const a of addresses) {
        const text = `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`
        const found: string[] = []
        index.ip.find(parseIp(text)!, (entries) => (found.push(...[entries].flat().map((e) => e.value)), false))
        const expected = nets
          .filter(([n, p]) => p === 0 || n >>> (32 - p) === a >>> (32 - p))
          .sort((u, v) => v[1] - u[1])
          .map(([n, p]) => normalizedOf(n, p))
        expect(found).toEqual([...new Set(expected)])
      }
    }
  })
})

/** The normalised text of an IPv4 network. */
function normalizedOf(x: number, p: number): string {
  const first = p === 0 ? 0 : (x >>> (32 - p)) * 2 ** (32 - p)
  const t = `${first >>> 24}.${(first >>> 16) & 255}.${(first >>> 8) & 255}.${first & 255}`
  return p === 32 ? t : `${t}/${p}`
}

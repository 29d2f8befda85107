import { describe, expect, it } from 'vitest'
import { createFakeDns, type FakeZone } from '../../../test/email-auth-fake-dns.js'
import { checkSpf, isSpfIp6, isSpfRecord, parseSpfRecord, selectSpfRecord, type SpfMechanism } from './spf.js'

function mechanisms(record: string): SpfMechanism[] {
  const r = parseSpfRecord(record)
  if (!r.ok) throw new Error(r.error)
  return r.record.terms.filter((t): t is SpfMechanism => t.kind === 'mechanism')
}

function parseError(record: string): string {
  const r = parseSpfRecord(record)
  if (r.ok) throw new Error(`expected a syntax error for ${record}`)
  return r.error
}

describe('isSpfRecord / selectSpfRecord', () => {
  it('needs exactly v=spf1 followed by a space or the end, case-insensitively', () => {
    expect(isSpfRecord('v=spf1 -all')).toBe(true)
    expect(isSpfRecord('v=spf1')).toBe(true)
    expect(isSpfRecord('V=SpF1 ~all')).toBe(true)
    expect(isSpfRecord('v=spf10')).toBe(false)
    expect(isSpfRecord('v=spf1mx')).toBe(false)
    expect(isSpfRecord(' v=spf1 -all')).toBe(false)
    expect(isSpfRecord('spf2.0/pra -all')).toBe(false)
  })

  it('counts the SPF records among other TXT records', () => {
    expect(selectSpfRecord(['google-site-verification=x', 'v=spf1 -all']).count).toBe(1)
    expect(selectSpfRecord(['v=spf1 -all', 'v=spf1 +all']).count).toBe(2)
    expect(selectSpfRecord(['hello']).count).toBe(0)
  })
})

describe('parseSpfRecord', () => {
  it('parses every mechanism with its qualifier, domain and CIDR lengths', () => {
    const m = mechanisms(
      'v=spf1 +a -a:mail.example.com/24 ~mx:mx.example.com//64 ?mx/28//96 ptr ptr:example.org ip4:192.0.2.0/24 ip6:2001:db8::/32 include:_spf.example.net exists:%{i}.bl.example.com -all',
    )
    expect(m.map((x) => `${x.qualifier}${x.name}`)).toEqual([
      '+a', '-a', '~mx', '?mx', '+ptr', '+ptr', '+ip4', '+ip6', '+include', '+exists', '-all',
    ])
    expect(m[1]).toMatchObject({ domain: 'mail.example.com', cidr4: 24, cidr6: null })
    expect(m[2]).toMatchObject({ domain: 'mx.example.com', cidr4: null, cidr6: 64 })
    expect(m[3]).toMatchObject({ domain: null, cidr4: 28, cidr6: 96 })
    expect(m[5]).toMatchObject({ domain: 'example.org' })
    expect(m[6]).toMatchObject({ network: '192.0.2.0', cidr4: 24 })
    expect(m[7]).toMatchObject({ network: '2001:db8::', cidr6: 32 })
    expect(m[9]).toMatchObject({ hasMacro: true })
  })

  it('parses modifiers: redirect, exp and unknown ones (ignored)', () => {
    const r = parseSpfRecord('v=spf1 mx redirect=_spf.example.com exp=explain.example.com moo.cow-far_out=man:dog/cat')
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(r.record.redirect).toBe('_spf.example.com')
    expect(r.record.exp).toBe('explain.example.com')
    expect(r.record.all).toBeNull()
    expect(r.record.terms.filter((t) => t.kind === 'modifier').map((t) => t.name)).toEqual(['redirect', 'exp', 'moo.cow-far_out'])
  })

  it('keeps the first all and warns about what follows it and about redirect next to all', () => {
    const r = parseSpfRecord('v=spf1 ~all -all redirect=x.example.com')
    expect(r.ok && r.record.all?.qualifier).toBe('~')
    expect(r.ok && r.record.warnings.join(' ')).toMatch(/after "all".*redirect/s)
  })

  it('rejects syntax errors anywhere in the record', () => {
    expect(parseError('v=spf1 ip4:1.2.3.4 -all moo')).toMatch(/unknown mechanism/)
    expect(parseError('v=spf1 ip4:1.2.3.4/33')).toMatch(/prefix/)
    expect(parseError('v=spf1 ip4:1.2.3.4/032')).toMatch(/prefix/)
    expect(parseError('v=spf1 ip4:1.2.3')).toMatch(/IPv4/)
    expect(parseError('v=spf1 ip6::CAFE::BABE')).toMatch(/IPv6/)
    expect(parseError('v=spf1 a//129')).toMatch(/prefix/)
    expect(parseError('v=spf1 a/24/64')).toMatch(/prefix|CIDR/)
    expect(parseError('v=spf1 -all:foo')).toMatch(/all/)
    expect(parseError('v=spf1 include')).toMatch(/needs a domain/)
    expect(parseError('v=spf1 include:')).toMatch(/empty domain-spec/)
    expect(parseError('v=spf1 a:museum')).toMatch(/fully qualified/)
    expect(parseError('v=spf1 a:abc.123')).toMatch(/top label/)
    expect(parseError('v=spf1 redirect=a.example.com redirect=b.example.com')).toMatch(/more than once/)
    expect(parseError('v=spf1 exp=a.example.com exp=b.example.com')).toMatch(/more than once/)
    expect(parseError('v=spf1 =all')).toMatch(/unknown mechanism/)
    expect(parseError('v=spf1 exists:%(ir).sbl.example.com')).toMatch(/macro/)
    expect(parseError('v=spf1 a:%{a}.example.com')).toMatch(/macro letter/)
    expect(parseError('v=spf1 foo=%abc -all')).toMatch(/macro/)
    expect(parseError('v=spf1 a:ünicode.example -all')).toMatch(/invalid character/)
    expect(parseError('v=spf1 a\t-all')).toMatch(/invalid character/)
    expect(parseError(`v=spf1 ${'a '.repeat(3000)}`)).toMatch(/longer than/)
  })

  it('accepts the RFC 7208 oddities that are valid', () => {
    expect(parseSpfRecord('v=spf1').ok).toBe(true)
    expect(parseSpfRecord('v=spf1 a  -all ').ok).toBe(true) // several spaces, trailing space
    expect(mechanisms('v=spf1 a:foo:bar/baz.example.com')[0]).toMatchObject({ domain: 'foo:bar/baz.example.com' })
    expect(mechanisms('v=spf1 a:foo.example.xn--zckzah -all')[0]).toMatchObject({ domain: 'foo.example.xn--zckzah' })
    expect(mechanisms('v=spf1 exists:%{l2r+-}.user.%{d2}')[0]).toMatchObject({ hasMacro: true })
    expect(parseSpfRecord('v=spf1 default=pass').ok).toBe(true)
  })

  it('validates IPv6 networks strictly', () => {
    for (const ok of ['::', '::1', '2001:db8::', 'CAFE:BABE:8000::', '::ffff:1.2.3.4', '1:2:3:4:5:6:7:8']) expect(isSpfIp6(ok)).toBe(true)
    for (const bad of [':CAFE::BABE', '1::2::3', '1:2:3:4:5:6:7:8:9', '12345::', 'g::1', '::1.2.3', '']) expect(isSpfIp6(bad)).toBe(false)
  })
})

describe('checkSpf', () => {
  it('counts DNS-querying terms recursively: nested includes add up', async () => {
    const zone: FakeZone = {
      'example.com': { TXT: ['v=spf1 include:a.example.com include:b.example.com mx ip4:192.0.2.1 -all'], MX: [{ priority: 10, exchange: 'mx.example.com' }] },
      'a.example.com': { TXT: ['v=spf1 include:c.example.com a ~all'], A: ['192.0.2.2'] },
      'b.example.com': { TXT: ['v=spf1 ptr ?all'] },
      'c.example.com': { TXT: ['v=spf1 exists:c.example.com ip6:2001:db8::/32 -all'], A: ['127.0.0.2'] },
    }
    const r = await checkSpf(createFakeDns(zone), 'example.com')
    // include a, include b, mx | include c, a | ptr | exists = 7
    expect(r).toMatchObject({ status: 'ok', policy: 'fail', policySource: 'all', dnsLookups: 7, voidLookups: 0, tooManyLookups: false })
    expect(r.visited.sort()).toEqual(['a.example.com', 'b.example.com', 'c.example.com'])
  })

  it('stops at the limit: the 11th term is counted, nothing beyond it is fetched', async () => {
    const zone: FakeZone = {
      'wide.example': { TXT: [`v=spf1 ${Array.from({ length: 20 }, (_, i) => `include:i${i}.wide.example`).join(' ')} -all`] },
    }
    for (let i = 0; i < 20; i++) zone[`i${i}.wide.example`] = { TXT: ['v=spf1 ip4:192.0.2.1 -all'] }
    const dns = createFakeDns(zone)
    const r = await checkSpf(dns, 'wide.example')
    expect(r.status).toBe('permerror')
    expect(r.dnsLookups).toBe(11)
    expect(r.tooManyLookups).toBe(true)
    expect(r.problems.map((p) => p.code)).toContain('too_many_lookups')
    expect(dns.calls.filter((c) => c.type === 'TXT')).toHaveLength(11) // the record + 10 includes
  })

  it('counts a deep include chain across levels and stops resolving past the limit', async () => {
    const zone: FakeZone = { 'deep.example': { TXT: ['v=spf1 include:l1.deep.example -all'] } }
    for (let i = 1; i <= 15; i++) zone[`l${i}.deep.example`] = { TXT: [`v=spf1 include:l${i + 1}.deep.example`] }
    zone['l16.deep.example'] = { TXT: ['v=spf1 -all'] }
    const dns = createFakeDns(zone)
    const r = await checkSpf(dns, 'deep.example')
    expect(r.tooManyLookups).toBe(true)
    expect(r.dnsLookups).toBe(11)
    expect(dns.calls.length).toBe(11)
  })

  it('resolves the includes of one record concurrently', async () => {
    const zone: FakeZone = {
      'par.example': { TXT: ['v=spf1 include:a.par.example include:b.par.example include:c.par.example mx a -all'], MX: [{ priority: 1, exchange: 'mx.par.example' }], A: ['192.0.2.1'] },
      'a.par.example': { TXT: ['v=spf1 ip4:192.0.2.1 -all'] },
      'b.par.example': { TXT: ['v=spf1 ip4:192.0.2.2 -all'] },
      'c.par.example': { TXT: ['v=spf1 ip4:192.0.2.3 -all'] },
    }
    const dns = createFakeDns(zone, { delayMs: 40 })
    const r = await checkSpf(dns, 'par.example')
    expect(r.status).toBe('ok')
    expect(dns.calls).toHaveLength(7) // TXT + 3 include TXT + MX + A + AAAA
    // two rounds: the record, then its 6 lookups all in flight together (one after another would be 7 rounds)
    expect(dns.maxInFlight()).toBe(6)
    const level2 = dns.calls.slice(1)
    const firstEnd = Math.min(...level2.map((c) => c.end))
    expect(level2.every((c) => c.start < firstEnd)).toBe(true)
  })

  it('counts void lookups: NXDOMAIN / no data for a, mx, exists, include targets', async () => {
    const zone: FakeZone = {
      'void.example': { TXT: ['v=spf1 a:nx1.void.example mx:nodata.void.example exists:nx2.void.example ~all'] },
      'nodata.void.example': { TXT: ['unrelated'] },
    }
    const r = await checkSpf(createFakeDns(zone), 'void.example')
    expect(r.voidLookups).toBe(3)
    expect(r.tooManyVoidLookups).toBe(true)
    expect(r.status).toBe('permerror')
    expect(r.problems.map((p) => p.code)).toEqual(['too_many_void_lookups'])

    const two = await checkSpf(createFakeDns({ 'v2.example': { TXT: ['v=spf1 a:nx1.v2.example a:nx2.v2.example -all'] } }), 'v2.example')
    expect(two).toMatchObject({ status: 'ok', voidLookups: 2, tooManyVoidLookups: false })
  })

  it('an a term is void only when both A and AAAA are empty', async () => {
    const zone: FakeZone = { 'six.example': { TXT: ['v=spf1 a a a -all'], AAAA: ['2001:db8::1'] } }
    const r = await checkSpf(createFakeDns(zone), 'six.example')
    expect(r.voidLookups).toBe(0)
  })

  it('reports several records as permerror with the records found', async () => {
    const r = await checkSpf(createFakeDns({ 'two.example': { TXT: ['v=spf1 -all', 'v=spf1 mx ~all', 'other'] } }), 'two.example')
    expect(r).toMatchObject({ status: 'permerror', found: true, recordValid: false, record: 'v=spf1 -all', policy: null })
    expect(r.records).toHaveLength(2)
  })

  it('reports a syntax error as permerror without walking', async () => {
    const dns = createFakeDns({ 'bad.example': { TXT: ['v=spf1 include:x.example ip4:999.1.1.1 -all'] } })
    const r = await checkSpf(dns, 'bad.example')
    expect(r).toMatchObject({ status: 'permerror', found: true, recordValid: false, dnsLookups: 0 })
    expect(dns.calls).toHaveLength(1)
  })

  it('takes the policy from a redirect target when there is no all', async () => {
    const zone: FakeZone = {
      'r.example': { TXT: ['v=spf1 ip4:192.0.2.1 redirect=_spf.r.example'] },
      '_spf.r.example': { TXT: ['v=spf1 include:_inc.r.example ~all'] },
      '_inc.r.example': { TXT: ['v=spf1 ip4:192.0.2.9 -all'] },
    }
    const r = await checkSpf(createFakeDns(zone), 'r.example')
    expect(r).toMatchObject({ status: 'ok', policy: 'softfail', policySource: 'redirect', dnsLookups: 2 })
  })

  it('ignores redirect when the record has all, and defaults to neutral without either', async () => {
    const withAll = await checkSpf(createFakeDns({ 'w.example': { TXT: ['v=spf1 redirect=w.example -all'] } }), 'w.example')
    expect(withAll).toMatchObject({ status: 'ok', policy: 'fail', dnsLookups: 0 })
    const bare = await checkSpf(createFakeDns({ 'n.example': { TXT: ['v=spf1 ip4:192.0.2.1'] } }), 'n.example')
    expect(bare).toMatchObject({ status: 'ok', policy: 'neutral', policySource: 'default' })
  })

  it('guards against include and redirect loops', async () => {
    const loop = await checkSpf(
      createFakeDns({ 'l1.example': { TXT: ['v=spf1 include:l2.example -all'] }, 'l2.example': { TXT: ['v=spf1 include:l1.example -all'] } }),
      'l1.example',
    )
    expect(loop.status).toBe('permerror')
    expect(loop.problems.map((p) => p.code)).toEqual(['include_loop'])
    const self = await checkSpf(createFakeDns({ 's.example': { TXT: ['v=spf1 redirect=S.example.'] } }), 's.example')
    expect(self.problems.map((p) => p.code)).toEqual(['redirect_loop'])
  })

  it('include/redirect targets without a record are permerrors', async () => {
    const r = await checkSpf(createFakeDns({ 'i.example': { TXT: ['v=spf1 include:none.example -all'] }, 'none.example': { A: ['192.0.2.1'] } }), 'i.example')
    expect(r.problems.map((p) => p.code)).toEqual(['include_no_record'])
    expect(r.voidLookups).toBe(1)
    const red = await checkSpf(createFakeDns({ 'rr.example': { TXT: ['v=spf1 redirect=gone.example'] } }), 'rr.example')
    expect(red).toMatchObject({ status: 'permerror', policy: null, policySource: 'redirect' })
  })

  it('counts macro and ptr terms without resolving them', async () => {
    const dns = createFakeDns({ 'm.example': { TXT: ['v=spf1 exists:%{i}._spf.%{d} ptr include:%{d2}.x.example -all'] } })
    const r = await checkSpf(dns, 'm.example')
    expect(r).toMatchObject({ status: 'ok', dnsLookups: 3 })
    expect(dns.calls).toHaveLength(1)
  })

  it('more than 10 MX records for an mx term is a permerror', async () => {
    const mx = Array.from({ length: 11 }, (_, i) => ({ priority: i, exchange: `mx${i}.big.example` }))
    const r = await checkSpf(createFakeDns({ 'big.example': { TXT: ['v=spf1 mx -all'], MX: mx } }), 'big.example')
    expect(r.problems.map((p) => p.code)).toEqual(['too_many_mx'])
  })

  it('flags a + include of a record ending in +all', async () => {
    const zone: FakeZone = { 'p.example': { TXT: ['v=spf1 include:open.example -all'] }, 'open.example': { TXT: ['v=spf1 +all'] } }
    const r = await checkSpf(createFakeDns(zone), 'p.example')
    expect(r).toMatchObject({ status: 'ok', policy: 'fail', passAllViaInclude: true })
  })

  it('a DNS failure is temperror (unknown), but a permerror elsewhere wins', async () => {
    const top = await checkSpf(createFakeDns({ 't.example': { behaviour: 'timeout' } }), 't.example')
    expect(top).toMatchObject({ status: 'temperror', found: false, record: null })
    const inc = await checkSpf(createFakeDns({ 'u.example': { TXT: ['v=spf1 include:slow.example -all'] }, 'slow.example': { behaviour: 'servfail' } }), 'u.example')
    expect(inc).toMatchObject({ status: 'temperror', policy: 'fail', found: true })
    const both = await checkSpf(
      createFakeDns({ 'v.example': { TXT: ['v=spf1 include:slow.example include:none.example -all'] }, 'slow.example': { behaviour: 'timeout' } }),
      'v.example',
    )
    expect(both.status).toBe('permerror')
  })

  it('no record and invalid domains are none', async () => {
    expect((await checkSpf(createFakeDns({ 'x.example': { TXT: ['hello'] } }), 'x.example')).status).toBe('none')
    expect((await checkSpf(createFakeDns({}), 'gone.example')).status).toBe('none')
    const dns = createFakeDns({})
    expect((await checkSpf(dns, 'localhost')).status).toBe('none')
    expect((await checkSpf(dns, `${'a'.repeat(64)}.example`)).status).toBe('none')
    expect(dns.calls).toHaveLength(0)
  })

  it('honours custom limits', async () => {
    const zone: FakeZone = { 'c.example': { TXT: ['v=spf1 a a a -all'], A: ['192.0.2.1'] } }
    expect((await checkSpf(createFakeDns(zone), 'c.example', { lookupLimit: 2 })).tooManyLookups).toBe(true)
    expect((await checkSpf(createFakeDns({ 'd.example': { TXT: ['v=spf1 a -all'] } }), 'd.example', { voidLookupLimit: 0 })).tooManyVoidLookups).toBe(true)
  })
})

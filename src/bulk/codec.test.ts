import { describe, expect, it } from 'vitest'
import { detailsCodec } from './codec.js'

const ip = {
  ip: '8.8.8.8',
  version: 4,
  location: { country: 'United States', country_code: 'US', region: null, city: null, postal: null, lat: -1.5, lon: 2, timezone: null, continent: 'North America' },
  network: { asn: 15169, as_name: 'Google LLC', isp: null, org: null, connection_type: 'datacenter' },
  flags: { is_vpn: false, is_proxy: false, is_tor: false, is_datacenter: true, is_cloud: true, is_bogon: false, vpn_provider: null, cloud_provider: 'gcp', on_blocklists: ['a', 'b'] },
  reverse_dns: 'dns.google',
  lists: [{ list_id: 'lst_1', name: 'n', kind: 'block', item_type: 'asn', value: 'AS15169' }],
}

describe('detailsCodec', () => {
  it('packs details of the documented shape as their leaf values and unpacks them equal', () => {
    const c = detailsCodec('ip')
    const packed = c.pack(ip)
    expect(Array.isArray(packed)).toBe(true)
    expect(JSON.stringify(packed).length).toBeLessThan(JSON.stringify(ip).length * 0.7)
    expect(c.unpack(JSON.parse(JSON.stringify(packed)))).toEqual(ip)
  })

  it('keeps anything else as the object: missing or extra keys, nested objects where a leaf belongs, undefined', () => {
    const c = detailsCodec('ip')
    const cases = [
      { ...ip, extra: 1 },
      { ...ip, reverse_dns: undefined },
      { ...ip, location: { ...ip.location, city: { name: 'x' } } },
      (({ reverse_dns: _r, ...rest }) => rest)(ip),
      { anything: 'else' },
    ]
    for (const d of cases) {
      expect(c.pack(d as Record<string, unknown>)).toBe(d)
      expect(c.unpack(d as Record<string, unknown>)).toBe(d)
    }
  })
})

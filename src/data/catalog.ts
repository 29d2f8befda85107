/**
 * The updatable data sources: one definition each (name, upstream, license, how often it changes, the maximum age
 * before `riskcheck data status` calls it stale, and the name answers carry in `metadata.data_sources`). The update,
 * the status, the IP and email lookups and the table of docs/data.md (`npm run readme`) all read this catalog.
 */
import { TOR_BULK_EXIT_LIST } from './ip-lists.js'

/** Names of the updatable sources, as `riskcheck data update --only` and `--source NAME=…` take them. */
export const DATA_SOURCE_NAMES = ['tor', 'vpn', 'datacenter', 'cloud', 'disposable', 'dbip-city', 'asn'] as const
/** One of {@link DATA_SOURCE_NAMES}. */
export type DataSourceName = (typeof DATA_SOURCE_NAMES)[number]

/** How a source is fetched and checked. */
export type DataSourceKind = 'ip-lists' | 'disposable' | 'city-mmdb' | 'asn-csv'

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** One updatable source. */
export interface DataSourceInfo {
  name: DataSourceName
  kind: DataSourceKind
  /** the name in `metadata.data_sources` (followed by `@version`) */
  label: string
  /** what it is, in a few words */
  title: string
  /** where `data update` fetches it from by default (a URL pattern or the first file) */
  upstream: string
  /** license of the data as published */
  license: string
  /** how often the upstream changes */
  changes: string
  /** older than this (by the data's own date) is stale */
  maxAgeMs: number
  /** what `--source NAME=…` must point at */
  override: string
  /** largest accepted download of one file, in bytes (a runaway mirror cannot fill the disk) */
  maxBytes: number
}

/** Base of X4BNet/lists_vpn and lord-alfred/ipranges (raw GitHub files; see ./ip-lists.ts for every file). */
const LIST_REPOS = 'https://raw.githubusercontent.com/X4BNet/lists_vpn/main/…, https://raw.githubusercontent.com/lord-alfred/ipranges/main/…'

/** Default upstream locations (the update takes overrides of these for tests and mirrors). */
export const DEFAULT_UPSTREAMS = {
  /** ivolo/disposable-email-domains on GitHub: `index.json` (exact domains) and `wildcard.json` */
  disposableBase: 'https://raw.githubusercontent.com/ivolo/disposable-email-domains/master/',
  /** DB-IP's free downloads; the month (`YYYY-MM`) is filled in */
  dbipCityPattern: 'https://download.db-ip.com/free/dbip-city-lite-{month}.mmdb.gz',
  /** jsDelivr's npm CDN for `@ip-location-db/asn` (`{version}` filled in) */
  asnCdnPattern: 'https://cdn.jsdelivr.net/npm/@ip-location-db/asn@{version}/',
  /** jsDelivr's package API: the latest version and the SHA-256 of every file */
  jsdelivrApi: 'https://data.jsdelivr.com/v1/packages/npm/',
}

/** Upstream locations a caller may replace (tests point them at a loopback server). */
export type UpstreamUrls = typeof DEFAULT_UPSTREAMS

/** The catalog, in update order. */
export const DATA_SOURCES: Readonly<Record<DataSourceName, DataSourceInfo>> = {
  tor: {
    name: 'tor',
    kind: 'ip-lists',
    label: 'tor-exits',
    title: 'Tor exit relays (is_tor)',
    upstream: TOR_BULK_EXIT_LIST,
    license: 'published by the Tor Project for this use; no explicit license found (fetched by you, not redistributed)',
    changes: 'continuously (exits change hourly)',
    maxAgeMs: DAY,
    override: 'a list file or URL: one address per line, or the TorDNSEL exit-addresses format',
    maxBytes: 64 * 1024 * 1024,
  },
  vpn: {
    name: 'vpn',
    kind: 'ip-lists',
    label: 'vpn-ranges',
    title: 'VPN ranges and single-company VPN ASNs (is_vpn, vpn_provider)',
    upstream: LIST_REPOS,
    license: 'MIT (X4BNet), CC0 1.0 (lord-alfred)',
    changes: 'weekly',
    maxAgeMs: 14 * DAY,
    override: 'a directory or base URL holding the files in the layout of data/ip/lists/',
    maxBytes: 64 * 1024 * 1024,
  },
  datacenter: {
    name: 'datacenter',
    kind: 'ip-lists',
    label: 'datacenter-ranges',
    title: 'datacenter/hosting ranges and hosting ASNs (is_datacenter)',
    upstream: LIST_REPOS,
    license: 'MIT (X4BNet), CC0 1.0 (lord-alfred)',
    changes: 'weekly',
    maxAgeMs: 14 * DAY,
    override: 'a directory or base URL holding the files in the layout of data/ip/lists/',
    maxBytes: 64 * 1024 * 1024,
  },
  cloud: {
    name: 'cloud',
    kind: 'ip-lists',
    label: 'cloud-ranges',
    title: 'public cloud ranges by provider (is_cloud, cloud_provider)',
    upstream: 'https://raw.githubusercontent.com/lord-alfred/ipranges/main/…',
    license: 'CC0 1.0 (lord-alfred, compiled from the providers’ own feeds)',
    changes: 'daily to weekly',
    maxAgeMs: 14 * DAY,
    override: 'a directory or base URL holding the files in the layout of data/ip/lists/',
    maxBytes: 64 * 1024 * 1024,
  },
  disposable: {
    name: 'disposable',
    kind: 'disposable',
    label: 'disposable-email-domains',
    title: 'disposable email domains (is_disposable; the free-provider list loses any domain found here)',
    upstream: `${DEFAULT_UPSTREAMS.disposableBase}index.json, wildcard.json`,
    license: 'MIT',
    changes: 'weekly',
    maxAgeMs: 14 * DAY,
    override: 'a directory or base URL holding index.json (and wildcard.json), or one .json/.txt list file',
    maxBytes: 64 * 1024 * 1024,
  },
  'dbip-city': {
    name: 'dbip-city',
    kind: 'city-mmdb',
    label: 'dbip-city-lite',
    title: 'DB-IP IP to City Lite (location)',
    upstream: DEFAULT_UPSTREAMS.dbipCityPattern.replace('{month}', 'YYYY-MM'),
    license: 'CC BY 4.0 — attribution "IP Geolocation by DB-IP" (https://db-ip.com) required',
    changes: 'monthly',
    maxAgeMs: 45 * DAY,
    override: 'an MMDB file or URL (gzip-compressed or not) in the DB-IP or MaxMind City schema',
    maxBytes: 1024 * 1024 * 1024,
  },
  asn: {
    name: 'asn',
    kind: 'asn-csv',
    label: 'ip-location-db-asn',
    title: 'ASN and AS organization (network.asn, as_name; hosting/VPN ASN flags)',
    upstream: `${DEFAULT_UPSTREAMS.asnCdnPattern.replace('{version}', 'latest')}asn-ipv4-num.csv, asn-ipv6-num.csv (SHA-256 from jsDelivr's package API)`,
    license: 'CC BY 4.0 (RouteViews, DB-IP ASN Lite); NRO delegation data',
    changes: 'daily (routes), monthly (DB-IP names)',
    maxAgeMs: 35 * DAY,
    override: 'a directory or base URL holding asn-ipv4-num.csv and asn-ipv6-num.csv',
    maxBytes: 256 * 1024 * 1024,
  },
}

/** True for a name of the catalog. */
export function isDataSourceName(name: string): name is DataSourceName {
  return (DATA_SOURCE_NAMES as readonly string[]).includes(name)
}

/**
 * Parses a duration such as `6h`, `30m`, `1d`, `90s` or `1h30m` into milliseconds; null when it is not one.
 *
 * @example parseDuration('6h') // 21600000
 */
export function parseDuration(text: string): number | null {
  const t = text.trim().toLowerCase()
  if (t === '' || t.length > 32) return null
  const re = /(\d{1,6})(ms|s|m|h|d)/y
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: HOUR, d: DAY }
  let total = 0
  let pos = 0
  while (pos < t.length) {
    re.lastIndex = pos
    const m = re.exec(t)
    if (!m) return null
    total += Number(m[1]) * (unit[m[2] as string] as number)
    pos = re.lastIndex
  }
  return total > 0 ? total : null
}

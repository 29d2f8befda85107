/**
 * The catalog of open IP range lists compiled into the flags database (`flags.mmdb`, see ./build-ip-flags.ts): where
 * each file lives upstream, where it goes in a list directory (the layout of `data/ip/lists/`), which data source
 * (`datacenter`, `cloud`, `vpn`, `tor`) it belongs to, and what it means.
 *
 * Sources and licenses (see data/ip/SOURCES.md):
 * - X4BNet/lists_vpn — MIT ("the list itself (source files and generated output)")
 * - lord-alfred/ipranges — CC0 1.0
 * - the Tor Project's bulk exit list (fetched by `riskcheck data update`; not redistributed)
 * - SecOps-Institute/Tor-IP-Addresses — MIT (the bundled Tor snapshot)
 */

/** What a list says about the addresses in it. */
export type ListRole =
  | { kind: 'datacenter' }
  | { kind: 'cloud'; provider: string }
  | { kind: 'vpn'; provider: string | null }
  | { kind: 'tor' }
  | { kind: 'hosting-asns' }
  | { kind: 'vpn-asns' }

/** The updatable data sources that the flags database is compiled from, in build order. */
export const IP_LIST_SOURCES = ['datacenter', 'cloud', 'vpn', 'tor'] as const
/** One of {@link IP_LIST_SOURCES}. */
export type IpListSource = (typeof IP_LIST_SOURCES)[number]

/** One file of the catalog. */
export interface ListFile {
  /** the data source it belongs to */
  source: IpListSource
  /** path inside a list directory */
  path: string
  /** upstream URL (plain text) */
  url: string
  role: ListRole
  /** false: the build goes on without it (some providers publish no IPv6 list) */
  required: boolean
}

const X4B = 'https://raw.githubusercontent.com/X4BNet/lists_vpn/main'
const LORD = 'https://raw.githubusercontent.com/lord-alfred/ipranges/main'
const SECOPS_TOR = 'https://raw.githubusercontent.com/SecOps-Institute/Tor-IP-Addresses/master'
/** The Tor Project's current exit list: one IPv4 address per line, regenerated continuously. */
export const TOR_BULK_EXIT_LIST = 'https://check.torproject.org/torbulkexitlist'

/**
 * lord-alfred/ipranges folders that are public clouds (anyone can rent a machine there) → `is_cloud` +
 * `cloud_provider` (and `is_datacenter`). Names are riskcheck's stable provider names.
 */
export const CLOUD_PROVIDERS: Readonly<Record<string, string>> = {
  amazon: 'aws',
  google: 'google_cloud', // Google Cloud + the rest of Google's published ranges (goog.json)
  microsoft: 'azure', // Azure service tags + Microsoft public IPs
  oracle: 'oracle',
  digitalocean: 'digitalocean',
  linode: 'linode',
  vultr: 'vultr',
  cloudflare: 'cloudflare', // edge, Workers and WARP egress
}

/**
 * lord-alfred/ipranges folders that are company infrastructure, crawlers or monitoring, not rentable clouds and not
 * people → `is_datacenter` only.
 */
export const DATACENTER_ONLY: readonly string[] = ['github', 'facebook', 'telegram', 'twitter', 'openai', 'bing', 'googlebot']

/** lord-alfred/ipranges folders that are VPN / privacy-relay egress, with the provider name reported. */
export const VPN_FOLDERS: Readonly<Record<string, string>> = {
  protonvpn: 'protonvpn',
  'apple-proxy': 'icloud_private_relay',
}

/** X4BNet per-provider VPN lists (input/vpn/ips/<file>) → provider name. */
export const X4B_VPN_PROVIDERS: Readonly<Record<string, string>> = {
  'apple.txt': 'icloud_private_relay',
  'mullvadvpn.txt': 'mullvad',
  'pia.txt': 'private_internet_access',
  'protonvpn.txt': 'protonvpn',
}

/**
 * VPN ASNs of X4BNet's input/vpn/ASN.txt that belong to exactly one VPN company, with its name. The other ASNs of
 * that file (hosting networks used by many VPNs, e.g. M247) get no provider name; their ranges are in
 * output/vpn already.
 */
export const VPN_ASN_PROVIDERS: Readonly<Record<number, string>> = {
  209854: 'surfshark',
  136787: 'nordvpn',
  207137: 'nordvpn',
  50525: 'privadovpn',
  208172: 'protonvpn',
}

/** Every file, in build order (later lists refine earlier ones: a provider name wins over a bare flag). */
export const IP_LISTS: readonly ListFile[] = [
  // datacenter / hosting networks (X4BNet: "not an eyeball network"; includes the VPN ASNs by design)
  { source: 'datacenter', path: 'x4bnet-lists_vpn/output/datacenter/ipv4.txt', url: `${X4B}/output/datacenter/ipv4.txt`, role: { kind: 'datacenter' }, required: true },
  { source: 'datacenter', path: 'x4bnet-lists_vpn/output/datacenter/ipv6.txt', url: `${X4B}/output/datacenter/ipv6.txt`, role: { kind: 'datacenter' }, required: false },
  { source: 'datacenter', path: 'x4bnet-lists_vpn/input/datacenter/ASN.txt', url: `${X4B}/input/datacenter/ASN.txt`, role: { kind: 'hosting-asns' }, required: true },
  ...DATACENTER_ONLY.flatMap((dir) =>
    ['ipv4', 'ipv6'].map(
      (v): ListFile => ({
        source: 'datacenter',
        path: `lord-alfred-ipranges/${dir}/${v}_merged.txt`,
        url: `${LORD}/${dir}/${v}_merged.txt`,
        role: { kind: 'datacenter' },
        required: false,
      }),
    ),
  ),
  // public clouds
  ...Object.entries(CLOUD_PROVIDERS).flatMap(([dir, provider]) =>
    ['ipv4', 'ipv6'].map(
      (v): ListFile => ({
        source: 'cloud',
        path: `lord-alfred-ipranges/${dir}/${v}_merged.txt`,
        url: `${LORD}/${dir}/${v}_merged.txt`,
        role: { kind: 'cloud', provider },
        required: v === 'ipv4',
      }),
    ),
  ),
  // VPNs: the generic list first, then the per-provider lists that name the provider
  { source: 'vpn', path: 'x4bnet-lists_vpn/output/vpn/ipv4.txt', url: `${X4B}/output/vpn/ipv4.txt`, role: { kind: 'vpn', provider: null }, required: true },
  { source: 'vpn', path: 'x4bnet-lists_vpn/output/vpn/ipv6.txt', url: `${X4B}/output/vpn/ipv6.txt`, role: { kind: 'vpn', provider: null }, required: false },
  { source: 'vpn', path: 'x4bnet-lists_vpn/input/vpn/ASN.txt', url: `${X4B}/input/vpn/ASN.txt`, role: { kind: 'vpn-asns' }, required: true },
  ...Object.entries(X4B_VPN_PROVIDERS).map(
    ([file, provider]): ListFile => ({
      source: 'vpn',
      path: `x4bnet-lists_vpn/input/vpn/ips/${file}`,
      url: `${X4B}/input/vpn/ips/${file}`,
      role: { kind: 'vpn', provider },
      required: false,
    }),
  ),
  {
    source: 'vpn',
    path: 'x4bnet-lists_vpn/input/datacenter/ips/protonvpn.txt',
    url: `${X4B}/input/datacenter/ips/protonvpn.txt`,
    role: { kind: 'vpn', provider: 'protonvpn' },
    required: false,
  },
  ...Object.entries(VPN_FOLDERS).flatMap(([dir, provider]) =>
    ['ipv4', 'ipv6'].map(
      (v): ListFile => ({
        source: 'vpn',
        path: `lord-alfred-ipranges/${dir}/${v}_merged.txt`,
        url: `${LORD}/${dir}/${v}_merged.txt`,
        role: { kind: 'vpn', provider },
        required: false,
      }),
    ),
  ),
  // Tor exit relays: the Tor Project's current list (one address per line; TorDNSEL `ExitAddress` lines also read)
  { source: 'tor', path: 'torproject/torbulkexitlist', url: TOR_BULK_EXIT_LIST, role: { kind: 'tor' }, required: true },
]

/**
 * The Tor exit snapshot bundled in `data/ip/lists/` (SecOps-Institute/Tor-IP-Addresses, MIT, 2024-02-27; IPv4 and
 * IPv6). `riskcheck data update` replaces it with the Tor Project's current list.
 */
export const BUNDLED_TOR_LIST: ListFile = {
  source: 'tor',
  path: 'secops-tor-ip-addresses/tor-exit-nodes.lst',
  url: `${SECOPS_TOR}/tor-exit-nodes.lst`,
  role: { kind: 'tor' },
  required: true,
}

/** The files of one source as the upstream publishes them (the Tor Project's list for `tor`). */
export function listFilesOf(source: IpListSource): ListFile[] {
  return IP_LISTS.filter((f) => f.source === source)
}

/** The files of one source in the bundled list directory (`data/ip/lists/`). */
export function bundledListFilesOf(source: IpListSource): ListFile[] {
  return source === 'tor' ? [BUNDLED_TOR_LIST] : listFilesOf(source)
}

/** TorDNSEL exit-list keywords whose lines carry no address. */
const TORDNSEL_KEYWORDS = new Set(['ExitNode', 'Published', 'LastStatus'])

/**
 * The lines of a list file that carry data: `#` starts a comment, blank lines are skipped, the first
 * whitespace-separated token is kept (`AS9009 # M247` → `AS9009`). The Tor Project's TorDNSEL format
 * (`check.torproject.org/exit-addresses`) is read too: `ExitAddress 192.0.2.1 2026-11-23 06:12:01` → `192.0.2.1`;
 * its `ExitNode`, `Published` and `LastStatus` lines are skipped.
 */
export function readListLines(text: string): string[] {
  const out: string[] = []
  for (const raw of text.split('\n')) {
    const hash = raw.indexOf('#')
    const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim()
    if (!line) continue
    const tokens = line.split(/\s+/, 2)
    const first = tokens[0] as string
    if (TORDNSEL_KEYWORDS.has(first)) continue
    const token = first === 'ExitAddress' ? tokens[1] : first
    if (token) out.push(token)
  }
  return out
}

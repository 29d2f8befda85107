/**
 * The catalog of open IP range lists that `scripts/build-ip-data.ts` compiles into `data/ip/flags.mmdb`, and that
 * `scripts/refresh-ip-lists.ts` downloads: where each file lives upstream, where it goes in a list directory (the same
 * layout as the snapshot in ../shared/fixtures/ip-lists), and what it means.
 *
 * Sources and licenses (see data/ip/SOURCES.md):
 * - X4BNet/lists_vpn — MIT ("the list itself (source files and generated output)")
 * - lord-alfred/ipranges — CC0 1.0
 * - SecOps-Institute/Tor-IP-Addresses — MIT
 */

/** What a list says about the addresses in it. */
export type ListRole =
  | { kind: 'datacenter' }
  | { kind: 'cloud'; provider: string }
  | { kind: 'vpn'; provider: string | null }
  | { kind: 'tor' }
  | { kind: 'hosting-asns' }
  | { kind: 'vpn-asns' }

/** One file of the catalog. */
export interface ListFile {
  /** path inside a list directory */
  path: string
  /** upstream URL (plain text) */
  url: string
  role: ListRole
  /** false: the build goes on without it (some providers publish no IPv6 list) */
  required: boolean
  /** only downloaded when asked for (`--with-torproject`): its terms are not an explicit open license */
  optIn?: boolean
}

const X4B = 'https://raw.githubusercontent.com/X4BNet/lists_vpn/main'
const LORD = 'https://raw.githubusercontent.com/lord-alfred/ipranges/main'
const TOR = 'https://raw.githubusercontent.com/SecOps-Institute/Tor-IP-Addresses/master'

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
  { path: 'x4bnet-lists_vpn/output/datacenter/ipv4.txt', url: `${X4B}/output/datacenter/ipv4.txt`, role: { kind: 'datacenter' }, required: true },
  { path: 'x4bnet-lists_vpn/output/datacenter/ipv6.txt', url: `${X4B}/output/datacenter/ipv6.txt`, role: { kind: 'datacenter' }, required: false },
  { path: 'x4bnet-lists_vpn/input/datacenter/ASN.txt', url: `${X4B}/input/datacenter/ASN.txt`, role: { kind: 'hosting-asns' }, required: true },
  ...DATACENTER_ONLY.flatMap((dir) =>
    ['ipv4', 'ipv6'].map(
      (v): ListFile => ({ path: `lord-alfred-ipranges/${dir}/${v}_merged.txt`, url: `${LORD}/${dir}/${v}_merged.txt`, role: { kind: 'datacenter' }, required: false }),
    ),
  ),
  // public clouds
  ...Object.entries(CLOUD_PROVIDERS).flatMap(([dir, provider]) =>
    ['ipv4', 'ipv6'].map(
      (v): ListFile => ({
        path: `lord-alfred-ipranges/${dir}/${v}_merged.txt`,
        url: `${LORD}/${dir}/${v}_merged.txt`,
        role: { kind: 'cloud', provider },
        required: v === 'ipv4',
      }),
    ),
  ),
  // VPNs: the generic list first, then the per-provider lists that name the provider
  { path: 'x4bnet-lists_vpn/output/vpn/ipv4.txt', url: `${X4B}/output/vpn/ipv4.txt`, role: { kind: 'vpn', provider: null }, required: true },
  { path: 'x4bnet-lists_vpn/output/vpn/ipv6.txt', url: `${X4B}/output/vpn/ipv6.txt`, role: { kind: 'vpn', provider: null }, required: false },
  { path: 'x4bnet-lists_vpn/input/vpn/ASN.txt', url: `${X4B}/input/vpn/ASN.txt`, role: { kind: 'vpn-asns' }, required: true },
  ...Object.entries(X4B_VPN_PROVIDERS).map(
    ([file, provider]): ListFile => ({
      path: `x4bnet-lists_vpn/input/vpn/ips/${file}`,
      url: `${X4B}/input/vpn/ips/${file}`,
      role: { kind: 'vpn', provider },
      required: false,
    }),
  ),
  {
    path: 'x4bnet-lists_vpn/input/datacenter/ips/protonvpn.txt',
    url: `${X4B}/input/datacenter/ips/protonvpn.txt`,
    role: { kind: 'vpn', provider: 'protonvpn' },
    required: false,
  },
  ...Object.entries(VPN_FOLDERS).flatMap(([dir, provider]) =>
    ['ipv4', 'ipv6'].map(
      (v): ListFile => ({ path: `lord-alfred-ipranges/${dir}/${v}_merged.txt`, url: `${LORD}/${dir}/${v}_merged.txt`, role: { kind: 'vpn', provider }, required: false }),
    ),
  ),
  // Tor exit relays (IPv4 and IPv6 addresses)
  { path: 'secops-tor-ip-addresses/tor-exit-nodes.lst', url: `${TOR}/tor-exit-nodes.lst`, role: { kind: 'tor' }, required: true },
  // The Tor Project's own current exit list (one IPv4 per line); opt-in, see data/ip/SOURCES.md
  { path: 'torproject/torbulkexitlist', url: 'https://check.torproject.org/torbulkexitlist', role: { kind: 'tor' }, required: false, optIn: true },
]

/** License files fetched beside the lists (kept with a refreshed snapshot). */
export const LICENSE_FILES: readonly { path: string; url: string }[] = [
  { path: 'lord-alfred-ipranges/LICENSE', url: `${LORD}/LICENSE` },
  { path: 'secops-tor-ip-addresses/License.md', url: `${TOR}/License.md` },
  { path: 'x4bnet-lists_vpn/README.md', url: `${X4B}/README.md` },
]

/**
 * The lines of a list file that carry data: `#` starts a comment, blank lines are skipped, the first
 * whitespace-separated token is kept (`AS9009 # M247` → `AS9009`).
 */
export function readListLines(text: string): string[] {
  const out: string[] = []
  for (const raw of text.split('\n')) {
    const hash = raw.indexOf('#')
    const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim()
    if (!line) continue
    const token = line.split(/\s+/, 1)[0]
    if (token) out.push(token)
  }
  return out
}

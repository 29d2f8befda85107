/**
 * SSRF protection for webhook deliveries, in two layers: {@link validateWebhookUrl} judges the URL at creation and
 * before every delivery, {@link createGuardedLookup} the address actually connected to. What is blocked and why:
 * docs/decisions.md, "Webhooks" → "URL checks" and "blocked addresses".
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import type { LookupFunction } from 'node:net'
import { parse as parseDomain } from 'tldts'
import { getSpecialPurposeRange } from '../sources/ip/bogon.js'
import { parseIp, type ParsedIp } from '../sources/ip/parse.js'

/** Longest webhook URL accepted (characters). */
export const MAX_WEBHOOK_URL_LENGTH = 2048

/**
 * Ports refused in webhook URLs: the WHATWG Fetch standard's "bad ports" (https://fetch.spec.whatwg.org/#port-blocking),
 * the ports browsers refuse so HTTP cannot be aimed at SMTP, IRC, SSH… Any other port 1–65535 is allowed: a receiver on
 * 8443 is legitimate, and the address check — not the port — is what keeps deliveries off internal networks.
 */
export const BLOCKED_WEBHOOK_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
])

/**
 * Host-name suffixes that are never public, whatever the public-suffix list says: RFC 6761/6762/8375/9476 special-use
 * names and common private-network conventions. `localhost` and `*.localhost` are refused unless `allowLoopback`.
 */
const NON_PUBLIC_SUFFIXES: readonly string[] = [
  'local',
  'internal',
  'localdomain',
  'lan',
  'home',
  'corp',
  'intranet',
  'private',
  'test',
  'invalid',
  'example',
  'onion',
  'alt',
  'arpa',
]

/** Why {@link validateWebhookUrl} refused a URL (closed vocabulary; the message says more). */
export type WebhookUrlRefusal =
  | 'invalid_url'
  | 'scheme_not_https'
  | 'credentials_in_url'
  | 'port_not_allowed'
  | 'host_not_public'
  | 'address_not_public'

/** Result of {@link validateWebhookUrl}. */
export type WebhookUrlCheck =
  | {
      ok: true
      /** the normalised URL: store and deliver to `url.href` */
      url: URL
    }
  | { ok: false; reason: WebhookUrlRefusal; message: string }

/** Options of the URL and address checks. */
export interface WebhookSsrfOptions {
  /**
   * Also permit loopback (127.0.0.0/8, ::1, `localhost`) and plain `http://` to it. For tests and local development
   * only; production never sets it.
   */
  allowLoopback?: boolean
}

const refuse = (reason: WebhookUrlRefusal, message: string): WebhookUrlCheck => ({ ok: false, reason, message })

function isLoopback(ip: ParsedIp): boolean {
  if (ip.version === 4) return ip.value >>> 24 === 127
  const [a, b, c, d] = ip.words
  return a === 0 && b === 0 && c === 0 && d === 1
}

/**
 * Why a connection to `address` must be refused, or null when it may be used. `address` is an IP address as text
 * (IPv4-mapped IPv6 is judged as the IPv4 address inside); anything that is not strictly one address is refused (fails
 * closed). See the module comment for the block list.
 *
 * @example
 * getBlockedAddressReason('8.8.8.8')            // null
 * getBlockedAddressReason('::ffff:127.0.0.1')   // 'Loopback (127.0.0.0/8, RFC 1122)'
 * getBlockedAddressReason('127.0.0.1', { allowLoopback: true }) // null
 */
export function getBlockedAddressReason(address: string, options: WebhookSsrfOptions = {}): string | null {
  const ip = parseIp(address)
  if (!ip) return 'not an IP address'
  return getBlockedParsedReason(ip, options)
}

/**
 * Public addresses that are cloud-provider virtual endpoints reachable only from inside their cloud (the others —
 * 169.254.169.254, fd00:ec2::254, 100.100.100.200, 192.0.0.192 — are already in special-purpose ranges).
 */
const CLOUD_INTERNAL_V4: ReadonlyMap<string, string> = new Map([['168.63.129.16', 'Azure platform endpoint (WireServer)']])

function getBlockedParsedReason(ip: ParsedIp, options: WebhookSsrfOptions): string | null {
  if (options.allowLoopback === true && isLoopback(ip)) return null
  if (ip.version === 4) {
    const cloud = CLOUD_INTERNAL_V4.get(ip.address)
    if (cloud) return cloud
  }
  if (ip.version === 6) {
    const [w0, w1] = ip.words
    if (w0 >>> 16 === 0x2002) return 'IPv6 transition address (6to4 2002::/16)'
    if (w0 === 0x20010000) return 'IPv6 transition address (Teredo 2001::/32)'
    if (w0 === 0x0064ff9b && (w1 === 0 || w1 >>> 16 === 1)) return 'IPv6 transition address (NAT64 64:ff9b::/96, 64:ff9b:1::/48)'
  }
  const range = getSpecialPurposeRange(ip)
  if (range) {
    const inner = range.embedded ? ` inside ${ip.address}` : ''
    return `${range.name} (${range.cidr}, ${range.rfc})${inner}`
  }
  return null
}

/**
 * True when a webhook may connect to `address` (see {@link getBlockedAddressReason}).
 *
 * @example isAllowedWebhookAddress('10.0.0.1') // false
 */
export function isAllowedWebhookAddress(address: string, options: WebhookSsrfOptions = {}): boolean {
  return getBlockedAddressReason(address, options) === null
}

function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost')
}

/**
 * The raw authority of a URL string: after the scheme's `:` and any run of `/` or `\`, up to the next `/`, `\`, `?`
 * or `#` (how WHATWG delimits it for special schemes; `https:@host` has an authority too). No regex; linear.
 */
function rawAuthority(input: string): string {
  const colon = input.indexOf(':')
  if (colon < 0) return ''
  let start = colon + 1
  while (start < input.length && (input.charCodeAt(start) === 0x2f || input.charCodeAt(start) === 0x5c)) start++
  let end = input.length
  for (let i = start; i < input.length; i++) {
    const c = input.charCodeAt(i)
    if (c === 0x2f || c === 0x5c || c === 0x3f || c === 0x23) {
      end = i
      break
    }
  }
  return input.slice(start, end)
}

/**
 * Checks a webhook endpoint URL before it is stored (422 INVALID_INPUT on refusal) and before each delivery: `https://`
 * with a public DNS name or public IP literal, no userinfo, no port of {@link BLOCKED_WEBHOOK_PORTS}; `allowLoopback`
 * also takes loopback over http(s). It resolves nothing ({@link createGuardedLookup} checks DNS at delivery). Never
 * throws (docs/decisions.md, "Webhooks" → "URL checks").
 *
 * @example
 * validateWebhookUrl('https://2130706433/') // { ok: false, reason: 'address_not_public', … } (127.0.0.1)
 */
export function validateWebhookUrl(input: unknown, options: WebhookSsrfOptions = {}): WebhookUrlCheck {
  const allowLoopback = options.allowLoopback === true
  const text = input instanceof URL ? input.href : input
  if (typeof text !== 'string' || text.length === 0) return refuse('invalid_url', 'url must be a non-empty string')
  if (text.length > MAX_WEBHOOK_URL_LENGTH) return refuse('invalid_url', `url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`)
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c <= 0x20 || c === 0x7f) return refuse('invalid_url', 'url contains whitespace or control characters')
  }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return refuse('invalid_url', 'url is not a valid absolute URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return refuse('scheme_not_https', 'url must use https://')
  if (url.username !== '' || url.password !== '' || rawAuthority(text).includes('@')) {
    return refuse('credentials_in_url', 'url must not contain credentials (user:password@)')
  }
  if (url.port !== '' && BLOCKED_WEBHOOK_PORTS.has(Number(url.port))) {
    return refuse('port_not_allowed', `port ${url.port} is not allowed for webhooks`)
  }
  let host = url.hostname
  const bracketed = host.startsWith('[') && host.endsWith(']')
  if (bracketed) host = host.slice(1, -1)
  else if (host.endsWith('.')) host = host.slice(0, -1)
  if (host.length === 0) return refuse('invalid_url', 'url has no host')

  const ip = bracketed || host.includes(':') || /^[0-9.]+$/.test(host) ? parseIp(host) : null
  if (ip) {
    const blocked = getBlockedParsedReason(ip, options)
    if (blocked) return refuse('address_not_public', `url points at a non-public address: ${blocked}`)
    if (url.protocol === 'http:' && !(allowLoopback && isLoopback(ip))) return refuse('scheme_not_https', 'url must use https://')
    return { ok: true, url }
  }
  if (bracketed) return refuse('invalid_url', 'url has an unreadable IPv6 literal')

  if (isLocalhostName(host)) {
    if (!allowLoopback) return refuse('host_not_public', `host ${host} is not public`)
    return { ok: true, url }
  }
  if (url.protocol === 'http:') return refuse('scheme_not_https', 'url must use https://')
  const labels = host.split('.')
  const last = labels[labels.length - 1] ?? ''
  if (NON_PUBLIC_SUFFIXES.includes(last)) return refuse('host_not_public', `host ${host} is not public (.${last})`)
  const parsed = parseDomain(host)
  if (parsed.isIp === true) return refuse('host_not_public', `host ${host} is not public`)
  if (parsed.isIcann !== true || parsed.domain === null) {
    return refuse('host_not_public', `host ${host} is not a public DNS name (no registrable domain under a public suffix)`)
  }
  return { ok: true, url }
}

/** Error handed to the socket when every address of a host is refused. */
export class WebhookAddressBlockedError extends Error {
  /** `ERR_WEBHOOK_ADDRESS_BLOCKED` */
  readonly code = 'ERR_WEBHOOK_ADDRESS_BLOCKED'
  /** the host name that was resolved */
  readonly hostname: string
  /** every address DNS answered, with why it was refused */
  readonly refused: ReadonlyArray<{ address: string; reason: string }>

  constructor(hostname: string, refused: ReadonlyArray<{ address: string; reason: string }>) {
    const first = refused[0]
    super(
      first
        ? `refused to connect to ${hostname}: ${first.address} is ${first.reason}`
        : `refused to connect to ${hostname}: no address`,
    )
    this.name = 'WebhookAddressBlockedError'
    this.hostname = hostname
    this.refused = refused
  }
}

/** Options of {@link createGuardedLookup}. */
export interface GuardedLookupOptions extends WebhookSsrfOptions {
  /**
   * The resolver to guard (default `dns.lookup`, i.e. getaddrinfo). Tests pass a fake that maps names to addresses;
   * whatever it answers is checked.
   */
  lookup?: LookupFunction
  /** Only loopback addresses pass (used for `http://` deliveries under `allowLoopback`). */
  loopbackOnly?: boolean
}

/**
 * A `lookup` function for `http.request`, `https.request`, `net.connect` or an `Agent`: resolves like `dns.lookup`,
 * drops every refused address (see {@link getBlockedAddressReason}) and fails the connection with a
 * {@link WebhookAddressBlockedError} when none is left. It works with Node's `autoSelectFamily` (`all: true`) and
 * single-address calls alike. Every call checks the fresh answer — nothing is cached.
 *
 * Not covered: Node does not call `lookup` for IP-literal hosts; check those with {@link validateWebhookUrl}.
 *
 * @example
 * https.request(url, { method: 'POST', lookup: createGuardedLookup(), agent: false })
 */
export function createGuardedLookup(options: GuardedLookupOptions = {}): LookupFunction {
  const base: LookupFunction = options.lookup ?? (dnsLookup as unknown as LookupFunction)
  const policy: WebhookSsrfOptions = { allowLoopback: options.allowLoopback === true || options.loopbackOnly === true }
  const loopbackOnly = options.loopbackOnly === true
  return (hostname, lookupOptions, callback) => {
    const opts: LookupOptions = { ...(lookupOptions ?? {}), all: true }
    base(hostname, opts, (err, result) => {
      if (err) {
        callback(err, '', 0)
        return
      }
      const answers: LookupAddress[] = Array.isArray(result)
        ? result
        : typeof result === 'string'
          ? [{ address: result, family: result.includes(':') ? 6 : 4 }]
          : []
      const allowed: LookupAddress[] = []
      const refused: Array<{ address: string; reason: string }> = []
      for (const a of answers) {
        const ip = parseIp(a.address)
        let reason = ip ? getBlockedParsedReason(ip, policy) : 'not an IP address'
        if (reason === null && loopbackOnly && ip && !isLoopback(ip)) reason = 'not loopback (plain http is only allowed to loopback)'
        if (reason === null) allowed.push({ address: a.address, family: a.family === 6 || a.address.includes(':') ? 6 : 4 })
        else refused.push({ address: a.address, reason })
      }
      const first = allowed[0]
      if (!first) {
        callback(new WebhookAddressBlockedError(hostname, refused), '', 0)
        return
      }
      if (lookupOptions?.all === true) callback(null, allowed)
      else callback(null, first.address, first.family)
    })
  }
}

/**
 * Every setting of `createRiskcheck`, defined once: option path, type, default, bounds, description and CLI flag. The
 * library's validation (`resolveOptions`, ./options.ts), the CLI's lookup flags (src/cli/shared.ts), `serve`'s
 * environment variables (src/cli/serve-settings.ts) and docs/options.md (scripts/readme-blocks.ts) all come from it.
 * Object and function settings are listed with `kind: 'value'`; ./options.ts checks their shape.
 */
import { isIP, isIPv4, isIPv6 } from 'node:net'
import { badOption, describeBounds, withinBounds } from './option-checks.js'
import { SMTP_DEFAULTS } from './sources/smtp/defaults.js'
import { defaultMailFrom, HOST_LABEL_MAX, HOST_NAME_MAX, heloNameProblem, mailFromProblem } from './sources/smtp/source-options.js'
import { DNS_DEFAULTS } from './sources/dns.js'
import { CACHE_TTL_MS } from './cache.js'
import { DEFAULT_BULK_CONCURRENCY, MAX_BULK_INPUTS } from './bulk/limits.js'

/** One setting. */
export interface Setting {
  /** Option path: `dns.timeoutMs` is `createRiskcheck({ dns: { timeoutMs } })`. */
  path: string
  /**
   * `integer` (with min/max), `boolean`, `string` (non-empty, at most `maxLength`), `enum` (one of `values`),
   * `list` (non-empty array of strings, each checked by `item`), `value` (an object or function; documented only).
   */
  kind: 'integer' | 'boolean' | 'string' | 'enum' | 'list' | 'value'
  /** The default (null: none, or one computed at run time — see `defaultText`). */
  default: number | boolean | string | null
  /** The default in words, where the value alone says too little. */
  defaultText?: string
  /** The flag's default in words, where it is not {@link defaultText} (that one speaks of the library's option). */
  flagDefaultText?: string
  min?: number
  max?: number
  maxLength?: number
  values?: readonly string[]
  /** A `list` must have at least this many items (default 0). */
  minItems?: number
  /** Checks one item of a `list` or a `string` further; returns why it is wrong, or null. */
  item?: (value: string) => string | null
  /** One line: what it does. */
  description: string
  /** The CLI flag, without dashes (`dns-timeout`); `serve` reads it as `RISKCHECK_DNS_TIMEOUT` too. */
  flag?: string
  /** The flag's value in help (`MS`, `N`, `PATH`); none for a boolean flag. */
  flagValue?: string
  /** A boolean flag that sets the option to this value (`--no-rdap` sets `rdap.enabled` to false). */
  flagSets?: boolean
  /** What the flag does, where it is not the description (a flag that turns the setting off). */
  flagDescription?: string
}

/** Why `s` is not a DNS server address Node's resolver takes, or null when it is one. */
function dnsServerProblem(s: string): string | null {
  return isDnsServer(s) ? null : 'must be an IP address with an optional port: 1.1.1.1, 1.1.1.1:53, ::1 or [::1]:53'
}

/**
 * Whether `s` is a DNS server address Node's resolver takes: an IP address, optionally with a port 1–65535 (`1.1.1.1`,
 * `1.1.1.1:53`, `::1`, `[::1]:53`). Checked here because Node's own parser takes host names only to fail at the first
 * query, and aborts the process on port 0.
 */
export function isDnsServer(s: string): boolean {
  if (s.length > 64) return false
  const portOk = (p: string | undefined) => p === undefined || (/^[1-9][0-9]{0,4}$/.test(p) && Number(p) <= 65535)
  const bracketed = /^\[([^\]]+)\](?::([0-9]+))?$/.exec(s)
  if (bracketed) return isIP(bracketed[1]!) !== 0 && portOk(bracketed[2])
  if (isIPv6(s)) return true
  const v4 = /^([^:]+)(?::([0-9]+))?$/.exec(s)
  return v4 !== null && isIPv4(v4[1]!) && portOk(v4[2])
}

const urlProblem = (s: string): string | null => {
  try {
    new URL(s)
    return null
  } catch {
    return 'must be an absolute URL'
  }
}

const mmdb = (key: string, flag: string, what: string): Setting => ({
  path: `ip.${key}`,
  kind: 'string',
  default: null,
  defaultText: 'bundled open data',
  maxLength: 4096,
  description: `path to a MaxMind-schema (GeoIP2/GeoLite2) ${what} MMDB file`,
  flag,
  flagValue: 'PATH',
})

/** The settings, in the order docs/options.md and `--help` list them. */
export const SETTINGS: readonly Setting[] = [
  { path: 'mode', kind: 'enum', default: 'live', values: ['live', 'test'], description: '`test`: deterministic answers for the documented magic inputs, no network, no credits', flag: 'mode', flagValue: 'live|test' },
  {
    path: 'offline',
    kind: 'boolean',
    default: false,
    description: 'no network at all: DNS/SMTP/RDAP/live-carrier fields are null or `unavailable`, nothing billed for skipped parts; answers cached under a key of their own',
    flag: 'offline',
  },
  // DNS
  {
    path: 'dns.servers',
    kind: 'list',
    default: null,
    defaultText: "the system's resolvers",
    minItems: 1,
    item: dnsServerProblem,
    description: 'DNS resolvers as `IP` or `IP:PORT` (`[v6]:port` for IPv6), e.g. `1.1.1.1`, `[::1]:5353`',
    flag: 'dns-server',
    flagValue: 'IP[:PORT]',
  },
  { path: 'dns.timeoutMs', kind: 'integer', default: DNS_DEFAULTS.timeoutMs, min: 1, max: 120_000, description: 'timeout of one try of one DNS query, in ms', flag: 'dns-timeout', flagValue: 'MS' },
  { path: 'dns.tries', kind: 'integer', default: DNS_DEFAULTS.tries, min: 1, max: 10, description: 'tries per DNS query', flag: 'dns-tries', flagValue: 'N' },
  {
    path: 'dns.cacheTtlSeconds',
    kind: 'integer',
    default: DNS_DEFAULTS.cacheTtlSeconds,
    min: 0,
    max: 86_400,
    description: 'TTL of cached DNS answers whose own TTL is not available, in seconds',
    flag: 'dns-cache-ttl',
    flagValue: 'S',
  },
  {
    path: 'dns.maxInFlight',
    kind: 'integer',
    default: DNS_DEFAULTS.maxInFlight,
    min: 1,
    max: 10_000,
    description: 'DNS queries in flight at once (the rest queue)',
    flag: 'dns-max-in-flight',
    flagValue: 'N',
  },
  // SMTP
  { path: 'smtp.enabled', kind: 'boolean', default: true, description: "run the SMTP mailbox check (a lookup's `smtp: false` skips it; CLI: `riskcheck email --no-smtp`)" },
  { path: 'smtp.port', kind: 'integer', default: SMTP_DEFAULTS.port, min: 1, max: 65_535, description: 'port of the receiving mail servers', flag: 'smtp-port', flagValue: 'N' },
  {
    path: 'smtp.heloName',
    kind: 'string',
    default: SMTP_DEFAULTS.heloName,
    maxLength: HOST_NAME_MAX,
    item: heloNameProblem,
    description: `name sent with EHLO: set it to a name that resolves to your sending host (at most ${HOST_NAME_MAX} characters, labels at most ${HOST_LABEL_MAX}; ${254 - defaultMailFrom('').length} without \`smtp.mailFrom\`), or an address literal such as \`[192.0.2.1]\``,
    flag: 'helo',
    flagValue: 'NAME',
  },
  {
    path: 'smtp.mailFrom',
    kind: 'string',
    default: null,
    defaultText: '`verify@` + heloName',
    maxLength: 320,
    // checked here, not only when the SMTP source is first built: there a bad one made every mailbox check "unknown"
    item: mailFromProblem,
    description: 'address sent with MAIL FROM: `local@domain`, at most 254 bytes, no spaces, control characters or angle brackets',
    flag: 'mail-from',
    flagValue: 'ADDR',
  },
  { path: 'smtp.timeoutMs', kind: 'integer', default: SMTP_DEFAULTS.timeoutMs, min: 1, max: 300_000, description: 'timeout of each SMTP connect and reply, in ms', flag: 'smtp-timeout', flagValue: 'MS' },
  {
    path: 'smtp.totalTimeoutMs',
    kind: 'integer',
    default: SMTP_DEFAULTS.totalTimeoutMs,
    min: 1,
    max: 600_000,
    description: "time budget of one address's mailbox check, all MX hosts together, in ms (out of it: `smtp_check: 'unavailable'`, free)",
    flag: 'smtp-total-timeout',
    flagValue: 'MS',
  },
  {
    path: 'smtp.maxConnectionsPerHost',
    kind: 'integer',
    default: SMTP_DEFAULTS.maxConnectionsPerHost,
    min: 1,
    max: 100,
    description: 'connections at once to one mail server, counted per IP address (and per proxy); fewer to a server that refused more',
    flag: 'smtp-max-connections',
    flagValue: 'N',
  },
  {
    path: 'smtp.maxRejectionsPerSession',
    kind: 'integer',
    default: SMTP_DEFAULTS.maxRejectionsPerSession,
    min: 1,
    max: 1_000,
    description: 'rejected recipients after which a fresh SMTP session is opened (Postfix slows down after 10 errors)',
    flag: 'smtp-max-rejections',
    flagValue: 'N',
  },
  {
    path: 'smtp.proxy',
    kind: 'list',
    default: null,
    defaultText: 'connect directly',
    description: 'SOCKS5 proxy `socks5://[user:password@]host[:port]` for the mailbox check, or a list used in turn',
    flag: 'smtp-proxy',
    flagValue: 'URL',
  },
  {
    path: 'smtp.allowPrivateHosts',
    kind: 'boolean',
    default: false,
    description: 'allow MX hosts on private, loopback or special-purpose addresses (local testing only)',
    flag: 'smtp-allow-private-hosts',
  },
  // RDAP
  {
    path: 'rdap.enabled',
    kind: 'boolean',
    default: true,
    description: 'ask RDAP (off: domain age unknown, email `domain_age_days` null)',
    flag: 'no-rdap',
    flagSets: false,
    flagDescription: 'do not ask RDAP: domain age unknown, email `domain_age_days` null',
  },
  {
    path: 'rdap.bootstrapUrl',
    kind: 'string',
    default: null,
    defaultText: "IANA's",
    maxLength: 2048,
    item: urlProblem,
    description: 'URL of the IANA RDAP bootstrap file (`dns.json`)',
    flag: 'rdap-bootstrap-url',
    flagValue: 'URL',
  },
  { path: 'rdap.bootstrapData', kind: 'value', default: null, description: 'the bootstrap data itself (IANA `dns.json` shape); takes precedence over `bootstrapUrl`' },
  { path: 'rdap.fetch', kind: 'value', default: null, defaultText: 'global `fetch`', description: 'the fetch used for RDAP requests' },
  { path: 'rdap.timeoutMs', kind: 'integer', default: 8000, min: 1, max: 120_000, description: 'timeout of one RDAP lookup, in ms', flag: 'rdap-timeout', flagValue: 'MS' },
  // IP data
  mmdb('cityDb', 'city-db', 'City'),
  mmdb('countryDb', 'country-db', 'Country'),
  mmdb('asnDb', 'asn-db', 'ASN'),
  mmdb('ispDb', 'isp-db', 'ISP'),
  mmdb('anonymousDb', 'anonymous-db', 'Anonymous IP'),
  mmdb('connectionTypeDb', 'connection-type-db', 'Connection Type'),
  { path: 'ip.blocklists', kind: 'value', default: null, defaultText: 'none', description: 'local blocklists by name: `{ name: [cidr, …] }` or `{ name: "path/to/file" }` (one CIDR or address per line)' },
  { path: 'ip.dnsbl', kind: 'list', default: null, defaultText: 'none', description: 'DNSBL zones asked through DNS (e.g. `zen.spamhaus.org`), online only', flag: 'dnsbl', flagValue: 'ZONE' },
  { path: 'ip.defaults', kind: 'boolean', default: true, description: 'use the bundled open data where no MMDB path is given' },
  // phone
  { path: 'phone.carrierSource', kind: 'value', default: null, defaultText: 'numbering plan only', description: 'a live carrier source for US/CA numbers, e.g. `createTwilioCarrierSource({ accountSid, authToken })`' },
  { path: 'phone.carrierTimeoutMs', kind: 'integer', default: 5000, min: 1, max: 120_000, description: 'timeout of the live carrier source, in ms' },
  // cache, credits, clock, policy
  { path: 'cache', kind: 'value', default: null, defaultText: 'in memory', description: 'the result cache: a `ResultCache` (sync or async `get`/`set`), `false` to disable, or `{ maxEntries, ttlSeconds }`' },
  { path: 'cache.maxEntries', kind: 'integer', default: 10_000, min: 1, max: 10_000_000, description: 'entries of the in-memory cache' },
  { path: 'cache.ttlSeconds', kind: 'integer', default: CACHE_TTL_MS / 1000, min: 1, max: 31_536_000, description: 'lifetime of a cached answer in the in-memory cache, in seconds (7 days)' },
  {
    path: 'cacheTimeoutMs',
    kind: 'integer',
    default: 1000,
    min: 1,
    max: 60_000,
    description: "longest wait for the result cache's `get`, `set` or `close`, in ms: a `get` not answered by then is a miss, a `set` not finished by then no longer holds the answer, a `close` no longer holds `rc.close()`",
    flag: 'cache-timeout',
    flagValue: 'MS',
  },
  { path: 'credits', kind: 'value', default: null, defaultText: 'unmetered', description: 'a number (an in-memory balance) or a `CreditLedger`; with none, `credits_remaining` is `null`' },
  { path: 'now', kind: 'value', default: null, defaultText: '`() => new Date()`', flagDefaultText: 'the current time', description: 'the clock (ages, timestamps, cache expiry)', flag: 'now', flagValue: 'ISO-8601' },
  { path: 'scoring', kind: 'value', default: null, defaultText: 'the default policy', description: 'overrides of weights, thresholds, actions, rules, contexts (CLI: `--policy FILE`)' },
  // the caller's own signals (docs/lists-and-velocity.md, docs/outcomes.md)
  { path: 'lists', kind: 'value', default: null, defaultText: 'none', description: 'your allow/block lists: the lists, or a function that returns them (or a promise of them); `rc.reloadLists()` reloads (CLI: `--lists FILE`)' },
  { path: 'outcomes', kind: 'value', default: null, defaultText: 'none', description: 'what happened after your answers (fraud, chargebacks, bounces …): the entries, or a function that returns them; `rc.reloadOutcomes()` reloads (CLI: `--outcomes FILE`)' },
  { path: 'velocity', kind: 'value', default: null, defaultText: 'off', description: '`true` (counted in this process) or `{ secret, store, timeoutMs }`: how many checks in the last hour and day had the same IP, network, email domain, email and phone' },
  { path: 'partTimeoutMs', kind: 'integer', default: 15_000, min: 1, max: 600_000, description: 'time limit of each part of `rc.check`, in ms', flag: 'part-timeout', flagValue: 'MS' },
  // bulk
  { path: 'bulk', kind: 'value', default: null, defaultText: 'in-memory store', description: '`{ store, concurrency, maxInputs, onCompleted(job), resume }` for `rc.bulk`' },
  { path: 'bulk.concurrency', kind: 'integer', default: DEFAULT_BULK_CONCURRENCY, min: 1, max: 1024, description: 'lookups at once of one bulk job' },
  { path: 'bulk.maxInputs', kind: 'integer', default: MAX_BULK_INPUTS, min: 1, max: MAX_BULK_INPUTS, description: 'most inputs of one bulk job' },
  // data and warnings
  {
    path: 'dataDir',
    kind: 'string',
    default: null,
    defaultText: 'the bundled data',
    maxLength: 4096,
    description: 'a data directory kept fresh by `riskcheck data update`: IP and email lookups answer from its current set and switch to a new one without a restart (CLI default: `$RISKCHECK_DATA_DIR`)',
    flag: 'data-dir',
    flagValue: 'DIR',
  },
  {
    path: 'dataCheckIntervalMs',
    kind: 'integer',
    default: 60_000,
    min: 0,
    max: 86_400_000,
    description: 'how often `dataDir` is checked for a newly installed set (one `stat`), in ms; 0: only on `rc.reloadData()`',
    flag: 'data-check-interval',
    flagValue: 'MS',
  },
  {
    path: 'onWarning',
    kind: 'value',
    default: null,
    defaultText: '`process.emitWarning`',
    description: 'called once per distinct warning about this host or network, `{ code, message }` (`dns_resolver_broken`, `smtp_port_blocked`, `smtp_proxy_failed`, `data_set_missing`, `data_set_unusable`, `ip_data_not_installed`)',
  },
]

const BY_PATH = new Map(SETTINGS.map((s) => [s.path, s]))

/** The setting of an option path; throws for an unknown one (a programming error). */
export function setting(path: string): Setting {
  const s = BY_PATH.get(path)
  if (!s) throw new Error(`riskcheck: no setting ${path}`)
  return s
}

/** Why `value` is not valid for `s` (a phrase after "must …"), or null when it is. */
export function settingProblem(s: Setting, value: unknown): string | null {
  switch (s.kind) {
    case 'integer':
      return withinBounds(value, { min: s.min, max: s.max }) ? null : `must be ${describeBounds({ min: s.min, max: s.max })}`
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be a boolean'
    case 'enum':
      return s.values!.includes(value as string) ? null : `must be one of ${s.values!.map((v) => `'${v}'`).join(', ')}`
    case 'string': {
      const max = s.maxLength ?? 255
      if (typeof value !== 'string' || value.length === 0 || value.length > max) return `must be a non-empty string of at most ${max} characters`
      return s.item ? s.item(value) : null
    }
    case 'list':
      if (!Array.isArray(value) || value.length < (s.minItems ?? 0) || !value.every((v) => typeof v === 'string'))
        return `must be ${s.minItems ? 'a non-empty array' : 'an array'} of strings`
      return null
    case 'value':
      return null
  }
}

/**
 * The value of a scalar setting: its default when `value` is undefined, the value when valid, else a TypeError naming
 * the option ("riskcheck: option `dns.timeoutMs` must be a whole number from 1 to 120000"). A list's items are
 * checked one by one, each named (`dns.servers[1]`).
 */
export function readSetting<T = unknown>(path: string, value: unknown): T {
  const s = setting(path)
  if (value === undefined) return s.default as T
  const problem = settingProblem(s, value)
  if (problem) badOption(path, problem)
  if (s.kind === 'list') {
    ;(value as string[]).forEach((v, i) => {
      const p = s.item ? s.item(v) : v === '' ? 'must not be empty' : null
      if (p) badOption(`${path}[${i}]`, `${p} (got ${JSON.stringify(v.slice(0, 80))})`)
    })
  }
  return value as T
}

/** The settings that have a CLI flag. */
export function flaggedSettings(): Setting[] {
  return SETTINGS.filter((s) => s.flag !== undefined)
}

/** A setting's default as documentation shows it: `3000`, `'live'`, `false`, or its words. */
export function defaultLabel(s: Setting): string {
  if (s.defaultText !== undefined) return s.defaultText
  if (s.default === null) return '—'
  return typeof s.default === 'string' ? `\`'${s.default}'\`` : `\`${String(s.default)}\``
}

/** The default of a setting's flag (and `serve` variable) in help and docs: `the current time`, `3000`, `'live'`. */
export function flagDefaultLabel(s: Setting): string {
  return s.flagDefaultText ?? defaultLabel(s)
}

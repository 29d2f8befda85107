/**
 * Options of `createRiskcheck`, their validation and their defaults. Bad options throw a TypeError naming the option,
 * at construction — never later, at lookup time.
 */
import type { PolicyOverrides } from './scoring/engine.js'
import type { ResultCache } from './cache.js'
import type { CreditLedger } from './credits.js'
import type { PhoneCarrierSource } from './sources/phone/carrier-source.js'
import type { BulkOptions } from './bulk/types.js'
import type { ListsOption } from './lists/types.js'
import type { OutcomesOption } from './outcomes/holder.js'
import type { VelocityOptions } from './velocity/counter.js'
import { parseSmtpProxies } from './sources/smtp/proxy.js'
import { defaultMailFrom, heloNameWithMailFromProblem } from './sources/smtp/source-options.js'
import { badOption } from './option-checks.js'
import { readSetting } from './settings.js'

/** DNS options (`dns`). */
export interface DnsOptions {
  /** Resolver addresses as `host` or `host:port` (`[v6]:port` for IPv6). Default: the system's resolvers. */
  servers?: string[]
  /** Timeout of one try of one query, in ms (default 3000). */
  timeoutMs?: number
  /** Tries per query (default 2). */
  tries?: number
  /** TTL used when the server's TTL is not available, in seconds (default 300). */
  cacheTtlSeconds?: number
  /** Queries in flight at once (default 64: every question of one lookup goes out in the same round). */
  maxInFlight?: number
}

/** SMTP mailbox-check options (`smtp`). */
export interface SmtpOptions {
  /** Run the SMTP mailbox check by default (default true; a lookup's `smtp: false` overrides). */
  enabled?: boolean
  /** Port of the receiving servers (default 25). */
  port?: number
  /** Name sent in EHLO (default: `riskcheck.invalid` — set it to a name that resolves to your sending host). */
  heloName?: string
  /** Address sent in MAIL FROM (default: `verify@` + heloName). */
  mailFrom?: string
  /** Timeout for connecting and for each reply, in ms (default 10000). */
  timeoutMs?: number
  /**
   * Time budget of one mailbox check, all MX hosts together (waiting for a free connection, connecting, every reply),
   * in ms (default 15000). A check that runs out of it answers `smtp_check: 'unavailable'` (partial, free of charge).
   */
  totalTimeoutMs?: number
  /**
   * Connections at once to one mail server, counted per IP address (several MX names on one address share them) and
   * per proxy (default 2). A server that refuses an extra connection at the greeting (`421 too many connections`)
   * gets no more than it accepted, for 10 minutes; the addresses wait for its sessions.
   */
  maxConnectionsPerHost?: number
  /**
   * Rejected recipients after which a session is closed and the next address gets a fresh one (default 5). Strict
   * servers slow down after 10 errors in a session and hang up after 20 (Postfix's defaults).
   */
  maxRejectionsPerSession?: number
  /**
   * SOCKS5 proxy for the mailbox check, `socks5://[user:password@]host[:port]`, or a list used in turn (one per check).
   * For hosts whose outbound port 25 is blocked. Default: connect directly.
   */
  proxy?: string | string[]
  /**
   * Allow mail servers on private, loopback or otherwise special-purpose addresses (default false: a domain's MX
   * cannot point the checker at hosts inside your network). For tests against a loopback SMTP server.
   */
  allowPrivateHosts?: boolean
}

/** RDAP (domain age) options (`rdap`). */
export interface RdapOptions {
  /** Ask RDAP at all (default true): domain-age lookups and the email lookup's `domain_age_days`. */
  enabled?: boolean
  /** URL of the IANA bootstrap file (default: IANA's). */
  bootstrapUrl?: string
  /** The bootstrap data itself (IANA dns.json shape); takes precedence over bootstrapUrl. */
  bootstrapData?: unknown
  /** The fetch used for RDAP requests (default: global fetch). */
  fetch?: typeof fetch
  /** Timeout of one RDAP lookup, in ms (default 8000). */
  timeoutMs?: number
}

/** IP data options (`ip`): paths to MMDB files in MaxMind's standard schemas; bundled open data is used otherwise. */
export interface IpOptions {
  cityDb?: string
  countryDb?: string
  asnDb?: string
  ispDb?: string
  anonymousDb?: string
  connectionTypeDb?: string
  /** Local blocklists by name: CIDR lists, or a path to a file with one CIDR/address per line. */
  blocklists?: Record<string, string[] | string>
  /** DNSBL zones queried through DNS (e.g. `zen.spamhaus.org`), online only. */
  dnsbl?: string[]
  /** Use the bundled open data where no path is given (default true). */
  defaults?: boolean
}

/** Phone options (`phone`). */
export interface PhoneOptions {
  /** A live carrier source used for US and Canadian numbers (e.g. `createTwilioCarrierSource`). */
  carrierSource?: PhoneCarrierSource
  /** Timeout of the live carrier source, in ms (default 5000). */
  carrierTimeoutMs?: number
}

/** A condition of this host or network that makes some answers less useful, reported once per instance. */
export interface RiskcheckWarning {
  /**
   * Stable machine code: `dns_resolver_broken` (the resolver denies a real top-level domain, so its NXDOMAIN answers
   * are not trusted), `smtp_port_blocked` (outbound connections to mail servers fail while DNS works),
   * `smtp_proxy_failed` (a configured SOCKS5 proxy cannot be used: unreachable, bad credentials, port not allowed),
   * `ip_data_not_installed` (the optional IP location and ASN data packages are not installed).
   */
  code: 'dns_resolver_broken' | 'smtp_port_blocked' | 'smtp_proxy_failed' | 'ip_data_not_installed' | (string & {})
  /** A human sentence naming what is wrong and what to do. */
  message: string
}

/** Options of `createRiskcheck`. All optional; the defaults work with no configuration. */
export interface RiskcheckOptions {
  /** `test`: deterministic answers for documented magic inputs, no network, no credits. Default `live`. */
  mode?: 'live' | 'test'
  /**
   * No network at all: network-only fields are null (`smtp_check: 'unavailable'`), nothing is billed for the skipped
   * parts, and the answers are complete for this configuration (not partial), cached under their own key.
   */
  offline?: boolean
  dns?: DnsOptions
  smtp?: SmtpOptions
  rdap?: RdapOptions
  ip?: IpOptions
  phone?: PhoneOptions
  /** The result cache: an implementation, `false` to disable, or settings of the in-memory one. */
  cache?: ResultCache | false | { maxEntries?: number; ttlSeconds?: number }
  /** The clock (default `() => new Date()`). */
  now?: () => Date
  /** Overrides of the scoring policy (weights, thresholds, rules, contexts …). */
  scoring?: PolicyOverrides
  /** A credit balance: a number starts an in-memory ledger; an object is your own ledger. Default: unmetered. */
  credits?: number | CreditLedger
  /** Time limit of each part of a combined check, in ms (default 15000). */
  partTimeoutMs?: number
  /**
   * Longest wait for the result cache's `get`, `set` or `close`, in ms (default 1000): a `get` not answered by then is a
   * miss, a `set` not finished by then no longer holds the answer, a `close` no longer holds `close()`. For a cache of
   * your own (a Redis or SQL one).
   */
  cacheTimeoutMs?: number
  /** The bulk engine (`rc.bulk`): store, concurrency, completion callback. */
  bulk?: BulkOptions
  /**
   * Called once per instance for each distinct warning (a broken resolver, a blocked outbound port 25). Default:
   * `process.emitWarning` (printed to stderr once by Node). The CLI prints it; the server logs it.
   */
  onWarning?: (warning: RiskcheckWarning) => void
  /**
   * A data directory kept fresh by `riskcheck data update` (docs/data.md): the IP and email
   * lookups answer from its current data set and switch to a newly installed set without a restart. Default: the
   * bundled data. (The CLI and `riskcheck serve` also read the `RISKCHECK_DATA_DIR` environment variable.)
   */
  dataDir?: string
  /** How often the data directory is checked for a newly installed set, in ms (default 60000; 0: never). */
  dataCheckIntervalMs?: number
  /**
   * Your allow/block lists (docs/lists-and-velocity.md): the lists, or a function that loads them (called again by
   * `rc.reloadLists()`). Every answer reports the lists its input is on in `details.lists`; a block match blocks, an
   * allow match approves unless a block list matches too.
   */
  lists?: ListsOption
  /**
   * Your outcomes (docs/outcomes.md "In the library"): what happened after earlier answers — entries `{ input, type,
   * outcome, note?, at? }`, or a function that loads them (called again by `rc.reloadOutcomes()`). Answers for an
   * input whose latest delivery outcome is `bounced` carry `email_bounced_before`; for one whose current risk outcome is
   * fraud, chargeback or account takeover, `reported_fraud_before`. Entries by `request_id` are ignored offline.
   */
  outcomes?: OutcomesOption
  /**
   * Velocity (docs/lists-and-velocity.md): count how many checks had the same IP, network, email domain, email and
   * phone in the last hour and day (`details.velocity`, velocity factors past the policy's thresholds). `true`: in
   * memory, for this process; or a store shared by several (`createRedisVelocityStore`) with its secret.
   */
  velocity?: boolean | VelocityOptions
}

/** Options after validation and defaults. */
export interface ResolvedOptions {
  mode: 'live' | 'test'
  offline: boolean
  dns: Required<Pick<DnsOptions, 'timeoutMs' | 'tries' | 'cacheTtlSeconds' | 'maxInFlight'>> & { servers: string[] | null }
  smtp: Required<Omit<SmtpOptions, 'proxy'>> & { proxy: string[] }
  rdap: { enabled: boolean; bootstrapUrl: string | null; bootstrapData: unknown; fetch: typeof fetch | null; timeoutMs: number }
  ip: IpOptions & { defaults: boolean }
  phone: { carrierSource: unknown; carrierTimeoutMs: number }
  now: () => Date
  partTimeoutMs: number
  cacheTimeoutMs: number
  /** Reports a warning; each distinct code + message once per instance. */
  warn: (warning: RiskcheckWarning) => void
  /** The data directory (null: the bundled data). */
  dataDir: string | null
  dataCheckIntervalMs: number
}

const KNOWN = new Set([
  'mode', 'offline', 'dns', 'smtp', 'rdap', 'ip', 'phone', 'cache', 'now', 'scoring', 'credits', 'partTimeoutMs', 'cacheTimeoutMs', 'bulk', 'onWarning',
  'dataDir', 'dataCheckIntervalMs', 'lists', 'outcomes', 'velocity',
])

function bad(option: string, why: string): never {
  return badOption(option, why)
}

function obj(name: string, v: unknown, keys: readonly string[]): Record<string, unknown> {
  if (v === undefined) return {}
  if (v === null || typeof v !== 'object' || Array.isArray(v)) bad(name, 'must be an object')
  for (const k of Object.keys(v)) if (!keys.includes(k)) bad(`${name}.${k}`, `is not an option (known: ${keys.join(', ')})`)
  return v as Record<string, unknown>
}

/** The value of the setting at `path` (./settings.ts), read from the object `from` holding its last key. */
const read = <T>(path: string, from: Record<string, unknown>): T => readSetting<T>(path, from[path.slice(path.lastIndexOf('.') + 1)])

/** Validates options and fills in defaults. Throws a TypeError naming the first bad option. */
export function resolveOptions(options: RiskcheckOptions = {}): ResolvedOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) bad('options', 'must be an object')
  for (const k of Object.keys(options)) if (!KNOWN.has(k)) bad(k, `is not an option (known: ${[...KNOWN].join(', ')})`)
  const top = options as Record<string, unknown>

  const dns = obj('dns', options.dns, ['servers', 'timeoutMs', 'tries', 'cacheTtlSeconds', 'maxInFlight'])
  const smtp = obj('smtp', options.smtp, [
    'enabled', 'port', 'heloName', 'mailFrom', 'timeoutMs', 'totalTimeoutMs', 'maxConnectionsPerHost', 'maxRejectionsPerSession', 'proxy', 'allowPrivateHosts',
  ])
  const heloName = read<string>('smtp.heloName', smtp)
  const mailFrom = readSetting<string | null>('smtp.mailFrom', smtp.mailFrom) ?? defaultMailFrom(heloName)
  // the default MAIL FROM (verify@ + heloName) must fit too: the SMTP source, built at first use, would refuse it
  // there, and every mailbox check would fail
  const heloWhy = heloNameWithMailFromProblem(heloName, smtp.mailFrom !== undefined)
  if (heloWhy) bad('smtp.heloName', heloWhy)
  parseSmtpProxies(smtp.proxy, 'smtp.proxy') // throws a TypeError naming the entry (never echoing credentials)
  const smtpProxy = smtp.proxy === undefined ? [] : typeof smtp.proxy === 'string' ? [smtp.proxy] : [...(smtp.proxy as string[])]

  const rdap = obj('rdap', options.rdap, ['enabled', 'bootstrapUrl', 'bootstrapData', 'fetch', 'timeoutMs'])
  if (rdap.fetch !== undefined && typeof rdap.fetch !== 'function') bad('rdap.fetch', 'must be a function')
  if (rdap.bootstrapData !== undefined && (rdap.bootstrapData === null || typeof rdap.bootstrapData !== 'object'))
    bad('rdap.bootstrapData', 'must be an object (IANA dns.json shape)')

  const ip = obj('ip', options.ip, ['cityDb', 'countryDb', 'asnDb', 'ispDb', 'anonymousDb', 'connectionTypeDb', 'blocklists', 'dnsbl', 'defaults'])
  for (const k of ['cityDb', 'countryDb', 'asnDb', 'ispDb', 'anonymousDb', 'connectionTypeDb'] as const) read(`ip.${k}`, ip)
  if (ip.blocklists !== undefined) {
    if (ip.blocklists === null || typeof ip.blocklists !== 'object' || Array.isArray(ip.blocklists)) bad('ip.blocklists', 'must be an object of name → CIDR list or file path')
    for (const [name, list] of Object.entries(ip.blocklists))
      if (!(typeof list === 'string' || (Array.isArray(list) && list.every((x) => typeof x === 'string'))))
        bad(`ip.blocklists.${name}`, 'must be an array of CIDR strings or a file path')
  }
  read('ip.dnsbl', ip)

  const phone = obj('phone', options.phone, ['carrierSource', 'carrierTimeoutMs'])
  if (phone.carrierSource !== undefined) {
    const cs = phone.carrierSource as { lookup?: unknown } | null
    if (!cs || typeof cs !== 'object' || typeof cs.lookup !== 'function') bad('phone.carrierSource', 'must be an object with a lookup(e164) method')
  }

  if (options.now !== undefined) {
    if (typeof options.now !== 'function') bad('now', 'must be a function returning a Date')
    const d = options.now()
    if (!(d instanceof Date) || Number.isNaN(d.getTime())) bad('now', 'must return a valid Date')
  }
  if (options.onWarning !== undefined && typeof options.onWarning !== 'function') bad('onWarning', 'must be a function')
  if (options.cache !== undefined && options.cache !== false) {
    const c = options.cache as Record<string, unknown>
    if (c === null || typeof c !== 'object') bad('cache', 'must be a ResultCache, false, or { maxEntries, ttlSeconds }')
    if (!(typeof c.get === 'function' && typeof c.set === 'function')) {
      obj('cache', c, ['maxEntries', 'ttlSeconds'])
      read('cache.maxEntries', c)
      read('cache.ttlSeconds', c)
    }
  }
  if (options.credits !== undefined) {
    const c = options.credits as unknown
    if (typeof c === 'number') {
      if (!Number.isSafeInteger(c) || c < 0) bad('credits', 'must be a whole number ≥ 0 or a ledger')
    } else if (
      !(
        c &&
        typeof c === 'object' &&
        typeof (c as CreditLedger).reserve === 'function' &&
        typeof (c as CreditLedger).refund === 'function' &&
        typeof (c as CreditLedger).balance === 'function'
      )
    )
      bad('credits', 'must be a number or a ledger with reserve(), refund() and balance()')
  }

  return {
    mode: readSetting('mode', options.mode),
    offline: readSetting('offline', options.offline),
    dns: {
      servers: read('dns.servers', dns),
      timeoutMs: read('dns.timeoutMs', dns),
      tries: read('dns.tries', dns),
      cacheTtlSeconds: read('dns.cacheTtlSeconds', dns),
      maxInFlight: read('dns.maxInFlight', dns),
    },
    smtp: {
      enabled: read('smtp.enabled', smtp),
      port: read('smtp.port', smtp),
      heloName,
      mailFrom,
      timeoutMs: read('smtp.timeoutMs', smtp),
      totalTimeoutMs: read('smtp.totalTimeoutMs', smtp),
      maxConnectionsPerHost: read('smtp.maxConnectionsPerHost', smtp),
      maxRejectionsPerSession: read('smtp.maxRejectionsPerSession', smtp),
      proxy: smtpProxy,
      allowPrivateHosts: read('smtp.allowPrivateHosts', smtp),
    },
    rdap: {
      enabled: read('rdap.enabled', rdap),
      bootstrapUrl: read('rdap.bootstrapUrl', rdap),
      bootstrapData: rdap.bootstrapData ?? null,
      fetch: (rdap.fetch as typeof fetch | undefined) ?? null,
      timeoutMs: read('rdap.timeoutMs', rdap),
    },
    ip: { ...(ip as IpOptions), defaults: read('ip.defaults', ip) },
    phone: {
      carrierSource: phone.carrierSource ?? null,
      carrierTimeoutMs: read('phone.carrierTimeoutMs', phone),
    },
    now: options.now ?? (() => new Date()),
    partTimeoutMs: readSetting('partTimeoutMs', top.partTimeoutMs),
    cacheTimeoutMs: readSetting('cacheTimeoutMs', top.cacheTimeoutMs),
    warn: warnOnce(options.onWarning ?? emitProcessWarning),
    dataDir: readSetting('dataDir', top.dataDir),
    dataCheckIntervalMs: readSetting('dataCheckIntervalMs', top.dataCheckIntervalMs),
  }
}

function emitProcessWarning(w: RiskcheckWarning): void {
  process.emitWarning(w.message, { code: `RISKCHECK_${w.code.toUpperCase()}` })
}

/** Wraps a warning sink so each distinct code + message reaches it once; a throwing sink never breaks a lookup. */
export function warnOnce(sink: (warning: RiskcheckWarning) => void): (warning: RiskcheckWarning) => void {
  const seen = new Set<string>()
  return (w) => {
    const key = `${w.code}\u0000${w.message}`
    if (seen.has(key)) return
    seen.add(key)
    try {
      sink({ code: w.code, message: w.message })
    } catch {
      // a logging failure must not turn into a lookup failure
    }
  }
}

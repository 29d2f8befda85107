/** Options of the SMTP source, their validation (a TypeError at creation) and their defaults. */
import { isIPv4, isIPv6 } from 'node:net'
import { isSendable, randomLocalPart as defaultRandomLocalPart } from './address.js'
import { SMTP_DEFAULTS } from './defaults.js'
import { badOption, numberOption } from '../../option-checks.js'
import { parseSmtpProxies, type SmtpProxy } from './proxy.js'
import { resolveWithSystem, type ResolveHost } from './resolve-host.js'
import type { SmtpWarning } from './types.js'

/** Options of `createSmtpSource`; all optional. */
export interface SmtpSourceOptions {
  /** TCP port of the mail servers (default 25). */
  port?: number
  /** Name sent with EHLO/HELO (default `riskcheck.invalid`; use a name whose address is your sending host's). */
  heloName?: string
  /** Reverse-path for MAIL FROM (default `verify@` + heloName; `''` sends the null sender `<>`). */
  mailFrom?: string
  /** TCP connect timeout in ms (default 10,000). */
  connectTimeoutMs?: number
  /** Timeout of every reply (banner included) in ms (default 10,000). */
  replyTimeoutMs?: number
  /**
   * Time budget of one verify() call in ms, all MX hosts together: waiting for a free connection, connecting, every
   * reply (default 15,000). Each step's own timeout is cut short by what is left of it.
   */
  totalTimeoutMs?: number
  /** Most simultaneous sessions per mail-server IP address — per proxy when proxies are used (default 2). */
  maxConnectionsPerHost?: number
  /** Rejected recipients after which a session is closed and the next address gets a fresh one (default 5). */
  maxRejectionsPerSession?: number
  /** RCPT commands after which a session is closed and a new one opened (default 50). */
  maxRecipientsPerSession?: number
  /**
   * An idle session is closed (QUIT) after this many ms (default 10,000). Idle sessions do not keep the process
   * alive (their sockets are unref'd), but call close() when done to say QUIT promptly.
   */
  idleMs?: number
  /** Most MX hosts tried per address (default 3). */
  maxMxHosts?: number
  /** How long a catch-all answer is kept per domain, in ms (default 600,000). */
  catchAllTtlMs?: number
  /** How long a server that could not be reached, or refused us at the greeting, is not asked again, in ms (default 30,000). */
  hostFailureTtlMs?: number
  /**
   * How long a mail server's connection limit, learned from a refused extra connection, is kept, in ms (default
   * 600,000; 0 keeps nothing, so every extra connection is tried again and refused again).
   */
  connectionLimitTtlMs?: number
  /** Local part for the catch-all probe (default: 16 random lower-case letters and digits). */
  randomLocalPart?: () => string
  /**
   * Resolves an MX host name to the IP to connect to, or null when it has none. Default: the operating system's
   * resolver (`dns.lookup`). The facade passes `createDnsHostResolver` over its DNS source.
   */
  resolveHost?: ResolveHost
  /**
   * Connect to MX hosts whose address is private, loopback, link-local or otherwise special-purpose (default false:
   * such hosts count as unreachable, so a domain whose MX points into your network cannot make riskcheck talk to
   * it). Tests against a loopback SMTP server set it.
   */
  allowPrivateHosts?: boolean
  /**
   * SOCKS5 proxies (`socks5://[user:password@]host[:port]`), one or a list used in turn (one per check). MX names are
   * resolved here; the proxy is asked to connect to the server's IP address.
   */
  proxy?: string | string[]
  /** Domains whose every mail server was unreachable (and no connect succeeded) before a blocked port is reported (default 3). */
  portBlockedAfterDomains?: number
  /** Receives `smtp_port_blocked` and `smtp_proxy_failed` warnings (once each per route). Default: none. */
  onWarning?: (warning: SmtpWarning) => void
  /** Clock in ms (default `Date.now`), for the caches. Time budgets use timers, not this clock. */
  now?: () => number
}

/** Options after validation. */
export interface SmtpSettings {
  port: number
  heloName: string
  mailFrom: string
  connectTimeoutMs: number
  replyTimeoutMs: number
  totalTimeoutMs: number
  maxPerHost: number
  maxRejections: number
  maxRecipients: number
  idleMs: number
  maxMxHosts: number
  catchAllTtlMs: number
  hostFailureTtlMs: number
  connectionLimitTtlMs: number
  randomLocalPart: () => string
  resolveHost: ResolveHost
  allowPrivateHosts: boolean
  proxies: SmtpProxy[]
  portBlockedAfterDomains: number
  onWarning: (warning: SmtpWarning) => void
  now: () => number
}

/**
 * Why `address` cannot be sent as the MAIL FROM reverse-path (a phrase after "must …"), or null when it can: the rule
 * `verify()` applies to every address. `createRiskcheck` and the CLI check `smtp.mailFrom` with it (src/settings.ts).
 */
export function mailFromProblem(address: string): string | null {
  return isSendable(address) ? null : 'must be an email address (local@domain, at most 254 bytes, no spaces, control characters or angle brackets)'
}

/** Longest host name (RFC 1035: 255 octets on the wire, 253 characters as text) and longest label of one. */
export const HOST_NAME_MAX = 253
export const HOST_LABEL_MAX = 63

/**
 * Why `name` cannot be sent with EHLO/HELO (a phrase after "must …"), or null when it can: a host name of at most
 * {@link HOST_NAME_MAX} characters whose dot-separated labels are 1 to {@link HOST_LABEL_MAX} letters, digits or
 * hyphens, or an address literal (`[192.0.2.1]`, `[IPv6:2001:db8::1]`, RFC 5321 section 4.1.3).
 */
export function heloNameProblem(name: string): string | null {
  if (name.startsWith('[')) {
    const inner = name.endsWith(']') ? name.slice(1, -1) : ''
    const v6 = /^ipv6:/i.test(inner) ? inner.slice(5) : null
    return (v6 === null ? isIPv4(inner) : isIPv6(v6)) ? null : 'must be an address literal such as [192.0.2.1] or [IPv6:2001:db8::1], or a host name'
  }
  if (name.length === 0 || name.length > HOST_NAME_MAX) return `must be a host name of 1 to ${HOST_NAME_MAX} characters (got ${name.length})`
  for (const label of name.split('.')) {
    if (label.length === 0) return 'must be a host name: no empty label (two dots in a row, or a dot at either end)'
    if (label.length > HOST_LABEL_MAX) return `must be a host name whose labels are at most ${HOST_LABEL_MAX} characters (one has ${label.length})`
    if (!/^[A-Za-z0-9-]+$/.test(label)) return 'must be a host name' // letters, digits, hyphens and dots
  }
  return null
}

/** The MAIL FROM sent when none is set: `verify@` + the EHLO name. */
export const defaultMailFrom = (heloName: string): string => `verify@${heloName}`

/**
 * Why `heloName` cannot be sent, read with the MAIL FROM it implies when `smtp.mailFrom` is not set (the default
 * `verify@` + heloName must fit 254 bytes too), or null when both can. `createRiskcheck` and the source share it.
 */
export function heloNameWithMailFromProblem(heloName: string, mailFromSet: boolean): string | null {
  const why = heloNameProblem(heloName)
  if (why || mailFromSet || mailFromProblem(defaultMailFrom(heloName)) === null) return why
  return `must be at most ${254 - defaultMailFrom('').length} characters without \`smtp.mailFrom\` (the default MAIL FROM, ${defaultMailFrom('')} + heloName, is at most 254)`
}

/** Validates the source options and fills in defaults; throws a TypeError naming the first bad one. */
export function resolveSmtpSettings(opts: SmtpSourceOptions): SmtpSettings {
  const heloName = opts.heloName ?? SMTP_DEFAULTS.heloName
  const heloWhy = typeof heloName === 'string' ? heloNameWithMailFromProblem(heloName, opts.mailFrom !== undefined) : 'must be a string'
  if (heloWhy) badOption('smtp.heloName', heloWhy)
  const mailFrom = opts.mailFrom ?? defaultMailFrom(heloName)
  const mailFromWhy = mailFrom === '' ? null : mailFromProblem(mailFrom)
  if (mailFromWhy) badOption('smtp.mailFrom', `${mailFromWhy} or "" (the null sender)`)
  return {
    port: numberOption('smtp.port', opts.port, SMTP_DEFAULTS.port, { integer: false }),
    heloName,
    mailFrom,
    connectTimeoutMs: numberOption('smtp.connectTimeoutMs', opts.connectTimeoutMs, SMTP_DEFAULTS.timeoutMs, { integer: false }),
    replyTimeoutMs: numberOption('smtp.replyTimeoutMs', opts.replyTimeoutMs, SMTP_DEFAULTS.timeoutMs, { integer: false }),
    totalTimeoutMs: numberOption('smtp.totalTimeoutMs', opts.totalTimeoutMs, SMTP_DEFAULTS.totalTimeoutMs, { integer: false }),
    maxPerHost: Math.floor(numberOption('smtp.maxConnectionsPerHost', opts.maxConnectionsPerHost, SMTP_DEFAULTS.maxConnectionsPerHost, { integer: false })),
    maxRejections: Math.floor(numberOption('smtp.maxRejectionsPerSession', opts.maxRejectionsPerSession, SMTP_DEFAULTS.maxRejectionsPerSession, { integer: false })),
    maxRecipients: Math.floor(numberOption('smtp.maxRecipientsPerSession', opts.maxRecipientsPerSession, SMTP_DEFAULTS.maxRecipientsPerSession, { integer: false })),
    idleMs: numberOption('smtp.idleMs', opts.idleMs, SMTP_DEFAULTS.idleMs, { min: 0, integer: false }),
    maxMxHosts: Math.floor(numberOption('smtp.maxMxHosts', opts.maxMxHosts, SMTP_DEFAULTS.maxMxHosts, { integer: false })),
    catchAllTtlMs: numberOption('smtp.catchAllTtlMs', opts.catchAllTtlMs, SMTP_DEFAULTS.catchAllTtlMs, { min: 0, integer: false }),
    hostFailureTtlMs: numberOption('smtp.hostFailureTtlMs', opts.hostFailureTtlMs, SMTP_DEFAULTS.hostFailureTtlMs, { min: 0, integer: false }),
    connectionLimitTtlMs: numberOption('smtp.connectionLimitTtlMs', opts.connectionLimitTtlMs, SMTP_DEFAULTS.connectionLimitTtlMs, { min: 0, integer: false }),
    randomLocalPart: opts.randomLocalPart ?? defaultRandomLocalPart,
    resolveHost: opts.resolveHost ?? resolveWithSystem,
    allowPrivateHosts: opts.allowPrivateHosts === true,
    proxies: parseSmtpProxies(opts.proxy, 'smtp.proxy'),
    portBlockedAfterDomains: Math.floor(numberOption('smtp.portBlockedAfterDomains', opts.portBlockedAfterDomains, SMTP_DEFAULTS.portBlockedAfterDomains, { integer: false })),
    onWarning: opts.onWarning ?? (() => undefined),
    now: opts.now ?? Date.now,
  }
}

/**
 * The SMTP source: asks a domain's mail servers whether a mailbox exists, over a real socket (node:net),
 * without sending mail. EHLO (HELO fallback) → MAIL FROM → RCPT TO the address → RCPT TO a random local part
 * at the same domain (catch-all probe) → RSET for the next address on the same session → QUIT when idle.
 *
 * Sessions are pooled per MX host (at most `maxConnectionsPerHost` at once, a FIFO queue beyond), reused for
 * later addresses (RSET between them) and closed after `idleMs` without work. The catch-all answer is cached
 * per domain, so many addresses at one domain cost one probe.
 *
 * It never sends DATA, never uses STARTTLS/AUTH, and never rejects: every failure is a result
 * (`unknown` when a server was reached but gave no definite answer, `unavailable` when none could be reached).
 */
import net from 'node:net'
import { randomBytes } from 'node:crypto'
import { lookup as dnsLookup } from 'node:dns/promises'
import type { DnsSource } from './dns-types.js'
import { isSpecialPurposeAddress } from './ip/bogon.js'

/** Outcome of one mailbox check, as the email lookup reports it in `smtp_check` (minus `skipped`). */
export type SmtpOutcome = 'deliverable' | 'undeliverable' | 'catch_all' | 'unknown' | 'unavailable'

/** Result of {@link SmtpSource.verify}. */
export interface SmtpVerifyResult {
  smtp_check: SmtpOutcome
  /** The SMTP reply code that decided the outcome, or null when none (connection failure, timeout). */
  code: number | null
  /** The enhanced status code (RFC 3463, e.g. `5.1.1`) of that reply, or null. */
  enhancedCode: string | null
  /** The reply text (or a description of the failure); for people, never parsed by callers. */
  message: string
  /** The MX host that answered, or null when none did. */
  mxHost: string | null
  /** Whether the domain accepts any local part: true/false when probed (or known), null when not known. */
  catchAll: boolean | null
}

/** Counters of an SMTP source (monotonic). */
export interface SmtpStats {
  /** TCP connections established to mail servers. */
  connectionsOpened: number
  /** Connection attempts that failed (refused, timeout, unresolvable host). */
  connectionsFailed: number
  /** Times an already open session served another address. */
  sessionsReused: number
  /** SMTP commands written (EHLO, HELO, MAIL, RCPT, RSET, QUIT). */
  commandsSent: number
  /** Catch-all probes sent (RCPT TO a random local part). */
  catchAllProbes: number
  /** Addresses whose catch-all answer came from the per-domain cache (or a probe already running). */
  catchAllCacheHits: number
  /** verify() calls. */
  verifications: number
}

/** The SMTP source contract. */
export interface SmtpSource {
  /**
   * Checks one mailbox. `address` must already be syntax-checked with its domain in ASCII (punycode);
   * `mxHosts` are tried in the given order (sort by preference first). Never rejects.
   */
  verify(address: string, mxHosts: string[]): Promise<SmtpVerifyResult>
  /** Counters so far. */
  stats(): SmtpStats
  /** Sends QUIT on idle sessions, drops busy ones; later verify() calls answer `unknown`. */
  close(): Promise<void>
}

/** Options of {@link createSmtpSource}; all optional. */
export interface SmtpSourceOptions {
  /** TCP port of the mail servers (default 25). */
  port?: number
  /** Name sent with EHLO/HELO (default `'localhost'`; use a name whose reverse DNS matches the sending IP). */
  heloName?: string
  /** Reverse-path for MAIL FROM (default `''`, the null sender `<>`, as Exim's callout verification uses). */
  mailFrom?: string
  /** TCP connect timeout in ms (default 10,000). */
  connectTimeoutMs?: number
  /** Timeout of every reply (banner included) in ms (default 15,000). */
  replyTimeoutMs?: number
  /** Most simultaneous sessions per MX host (default 2). */
  maxConnectionsPerHost?: number
  /**
   * An idle session is closed (QUIT) after this many ms (default 10,000). Idle sessions do not keep the process
   * alive (their sockets are unref'd), but call close() when done to say QUIT promptly.
   */
  idleMs?: number
  /** RCPT commands after which a session is closed and a new one opened (default 1,000). */
  maxRecipientsPerSession?: number
  /** Most MX hosts tried per address (default 3). */
  maxMxHosts?: number
  /** How long a catch-all answer is kept per domain, in ms (default 600,000). */
  catchAllTtlMs?: number
  /** How long a host that could not be reached, or refused us at the greeting, is not asked again, in ms (default 30,000). */
  hostFailureTtlMs?: number
  /** Local part for the catch-all probe (default: 16 random lower-case letters and digits). */
  randomLocalPart?: () => string
  /**
   * Resolves an MX host name to the IP to connect to, or null when it has none. Default: the operating system's
   * resolver (`dns.lookup`). The facade should pass {@link createDnsHostResolver} over its DNS source.
   */
  resolveHost?: (host: string) => Promise<string | null>
  /**
   * Connect to MX hosts whose address is private, loopback, link-local or otherwise special-purpose (default false:
   * such hosts count as unreachable, so a domain whose MX points into your network cannot make riskcheck talk to
   * it). Tests against a loopback SMTP server set it.
   */
  allowPrivateHosts?: boolean
  /** Clock in ms (default `Date.now`), for the caches. */
  now?: () => number
}

/**
 * A `resolveHost` for {@link createSmtpSource} backed by a DNS source: the first A record of the MX host, else its
 * first AAAA record, else null. An IP literal is returned as is. Lets the SMTP check use the same (configured,
 * cached) resolver as the MX lookup instead of the operating system's.
 *
 * @example
 * const dns = createDnsSource({ servers: ['127.0.0.1:5353'] })
 * const smtp = createSmtpSource({ resolveHost: createDnsHostResolver(dns) })
 */
export function createDnsHostResolver(dns: Pick<DnsSource, 'resolve4' | 'resolve6'>): (host: string) => Promise<string | null> {
  return async (host) => {
    if (net.isIP(host) !== 0) return host
    const a = await dns.resolve4(host)
    if (a.status === 'ok' && a.records[0]) return a.records[0]
    const aaaa = await dns.resolve6(host)
    if (aaaa.status === 'ok' && aaaa.records[0]) return aaaa.records[0]
    return null
  }
}

/** Resolves a host name with the operating system's resolver (IP literals pass through). */
async function defaultResolveHost(host: string): Promise<string | null> {
  if (net.isIP(host) !== 0) return host
  try {
    return (await dnsLookup(host)).address
  } catch {
    return null
  }
}

/** One parsed SMTP reply. */
export interface SmtpReply {
  code: number
  enhancedCode: string | null
  /** The text of every line, enhanced code stripped, joined with a space. */
  text: string
}

/** How a reply to RCPT TO reads. */
export type SmtpReplyClass =
  /** 250/251: the server takes mail for the address */
  | 'accepted'
  /** 5xx saying the mailbox does not exist or is disabled */
  | 'no_mailbox'
  /** 5xx or 4xx about us (IP blocked, listed, policy, rate limit, relaying, reverse DNS …), not the mailbox */
  | 'blocked'
  /** 4xx: try later (greylisting, local error, mailbox busy/full) */
  | 'temporary'
  /** any other 5xx: permanent but not clearly about the mailbox */
  | 'rejected_other'

const MAX_REPLY_LINE = 2048
const MAX_REPLY_LINES = 64
const MAX_TEXT_SCAN = 1024
const ENHANCED_RE = /^([245])\.(\d{1,3})\.(\d{1,3})(?: |$)/

/** Phrases that mean "it is about you, the client", not the mailbox (lower-case; checked first). */
const BLOCK_PHRASES = [
  'block',
  'blacklist',
  'black list',
  'denylist',
  'spamhaus',
  'spamcop',
  'barracuda',
  'sorbs',
  'dnsbl',
  ' rbl',
  'listed on',
  'listed at',
  'listed in',
  'is listed',
  'reputation',
  'policy',
  'rate limit',
  'rate-limit',
  'ratelimit',
  'too many',
  'try again',
  'try later',
  'greylist',
  'graylist',
  'grey-list',
  'gray-list',
  'temporar',
  'banned',
  'access denied',
  'not authorized',
  'unauthorized',
  'relay',
  'reverse dns',
  'reverse hostname',
  'rdns',
  'ptr record',
  'client host',
  'your ip',
  'your host',
  'sender address',
  'sender domain',
  'spam',
  'abuse',
  'proofpoint',
  'mimecast',
  'sbrs',
  'authentication required',
  'helo',
  'ehlo',
]

/** Phrases that mean the mailbox does not exist or cannot receive mail (lower-case). */
const NO_MAILBOX_PHRASES = [
  'user unknown',
  'unknown user',
  'no such user',
  'no such mailbox',
  'no such recipient',
  'no such address',
  'unknown recipient',
  'recipient unknown',
  'recipient not found',
  'recipient rejected',
  'recipient address rejected',
  'address rejected',
  'invalid recipient',
  'invalid mailbox',
  'invalid address',
  'mailbox unavailable',
  'mailbox not found',
  'mailbox does not exist',
  'mailbox is disabled',
  'mailbox disabled',
  'mailbox unknown',
  'not a valid mailbox',
  'no mailbox',
  'does not exist',
  'doesn\'t exist',
  'unknown local part',
  'unknown address',
  'address unknown',
  'user not found',
  'account disabled',
  'account has been disabled',
  'account is disabled',
  'unrouteable address',
  'undeliverable address',
  'no longer available',
  'could not be found',
  'not our customer',
  'utilisateur inconnu',
  'unbekannt',
]

/**
 * Reads one reply to RCPT TO. The text is judged before the code: a "550 5.1.1 your IP is blocked" is about
 * the client, not the mailbox. Only 5xx replies whose text or enhanced code (5.1.x except sender codes
 * 5.1.7/5.1.8, and 5.2.1 disabled) says the mailbox does not exist read as `no_mailbox`.
 *
 * @example
 * classifyRcptReply({ code: 550, enhancedCode: '5.1.1', text: 'No such user' }) // 'no_mailbox'
 * classifyRcptReply({ code: 554, enhancedCode: null, text: 'Client host blocked using zen.spamhaus.org' }) // 'blocked'
 */
export function classifyRcptReply(reply: SmtpReply): SmtpReplyClass {
  if (reply.code === 250 || reply.code === 251) return 'accepted'
  const text = reply.text.slice(0, MAX_TEXT_SCAN).toLowerCase()
  const blocked = BLOCK_PHRASES.some((p) => text.includes(p))
  const enhanced = reply.enhancedCode
  if (reply.code >= 400 && reply.code < 500) return blocked ? 'blocked' : 'temporary'
  if (reply.code < 500 || reply.code > 599) return 'rejected_other'
  if (blocked) return 'blocked'
  if (enhanced?.startsWith('5.7.')) return 'blocked'
  if (NO_MAILBOX_PHRASES.some((p) => text.includes(p))) return 'no_mailbox'
  if (enhanced !== null && /^5\.1\.(?:[0-6]|9|10)$/.test(enhanced)) return 'no_mailbox'
  if (enhanced === '5.2.1') return 'no_mailbox'
  return 'rejected_other'
}

/** Parses the lines of one complete reply. */
function parseReply(lines: string[]): SmtpReply {
  const code = Number(lines[0]?.slice(0, 3) ?? '0')
  let enhancedCode: string | null = null
  const texts: string[] = []
  for (const line of lines) {
    let t = line.slice(4)
    const m = ENHANCED_RE.exec(t)
    if (m) {
      enhancedCode ??= `${m[1]}.${Number(m[2])}.${Number(m[3])}`
      t = t.slice(m[0].length)
    }
    texts.push(t.trim())
  }
  return { code, enhancedCode, text: texts.join(' ').trim() }
}

/** A failure of the conversation itself (not a reply): timeout, disconnect, protocol garbage. */
class SessionError extends Error {
  constructor(
    message: string,
    readonly kind: 'timeout' | 'disconnect' | 'protocol',
  ) {
    super(message)
  }
}

/** One open SMTP connection with a reply reader. */
interface Session {
  host: string
  socket: net.Socket
  extensions: Set<string>
  transactions: number
  recipients: number
  /** Set when a RCPT for the current address has been written (a failure after it is not a stale session). */
  rcptSent: boolean
  idleTimer: NodeJS.Timeout | null
  dead: boolean
  /** Reads the next reply (queued or awaited) within `timeoutMs`. */
  read(timeoutMs: number): Promise<SmtpReply>
  /** Writes one command line. */
  write(line: string): void
}

function createSession(host: string, socket: net.Socket): Session {
  const replies: SmtpReply[] = []
  let current: string[] = []
  let buffer = ''
  let failure: SessionError | null = null
  let waiter: { resolve: (r: SmtpReply) => void; reject: (e: SessionError) => void; timer: NodeJS.Timeout } | null = null

  const session: Session = {
    host,
    socket,
    extensions: new Set(),
    transactions: 0,
    recipients: 0,
    rcptSent: false,
    idleTimer: null,
    dead: false,
    read(timeoutMs) {
      const queued = replies.shift()
      if (queued) return Promise.resolve(queued)
      if (failure) return Promise.reject(failure)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          fail(new SessionError(`no reply within ${timeoutMs} ms`, 'timeout'))
          socket.destroy()
        }, timeoutMs)
        waiter = { resolve, reject, timer }
      })
    },
    write(line) {
      if (!socket.destroyed) socket.write(`${line}\r\n`)
    },
  }

  function fail(err: SessionError): void {
    session.dead = true
    if (!failure) failure = err
    if (waiter) {
      clearTimeout(waiter.timer)
      const w = waiter
      waiter = null
      w.reject(err)
    }
  }

  function deliver(reply: SmtpReply): void {
    if (reply.code === 421) session.dead = true // service closing
    if (waiter) {
      clearTimeout(waiter.timer)
      const w = waiter
      waiter = null
      w.resolve(reply)
    } else replies.push(reply)
  }

  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    buffer += chunk
    for (;;) {
      const nl = buffer.indexOf('\n')
      if (nl < 0) break
      const line = buffer.slice(0, nl).replace(/\r$/, '')
      buffer = buffer.slice(nl + 1)
      if (line.length > MAX_REPLY_LINE || !/^[2-5]\d\d(?:[ -]|$)/.test(line)) {
        fail(new SessionError('malformed reply line', 'protocol'))
        socket.destroy()
        return
      }
      current.push(line)
      if (line.charAt(3) === '-') {
        if (current.length > MAX_REPLY_LINES) {
          fail(new SessionError('reply has too many lines', 'protocol'))
          socket.destroy()
          return
        }
        continue
      }
      const lines = current
      current = []
      deliver(parseReply(lines))
    }
    if (buffer.length > MAX_REPLY_LINE) {
      fail(new SessionError('reply line too long', 'protocol'))
      socket.destroy()
    }
  })
  socket.on('error', (err) => fail(new SessionError(`connection error: ${err.message}`, 'disconnect')))
  socket.on('close', () => fail(new SessionError('connection closed by the server', 'disconnect')))
  return session
}

interface HostPool {
  idle: Session[]
  /** sessions open or being opened (the per-host limit applies to this) */
  slots: number
  /** waiters get a session, `null` (a free slot: open one yourself) or `'closed'` */
  waiters: Array<(lease: Session | null | 'closed') => void>
}

interface CatchAllEntry {
  value: boolean | null
  expiresAt: number
}

type HostAttempt =
  | { kind: 'result'; result: SmtpVerifyResult }
  | { kind: 'connect_failed'; message: string }
  | { kind: 'refused'; reply: SmtpReply | null; message: string }

function toAsciiSafe(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7e) return false
  return true
}

/** Characters that may never reach a command line (CR, LF, NUL, controls, angle brackets, spaces). */
function isSendable(address: string): boolean {
  if (address.length === 0 || Buffer.byteLength(address, 'utf8') > 254) return false
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i)
    if (c <= 0x20 || c === 0x7f || c === 0x3c || c === 0x3e) return false
  }
  const at = address.lastIndexOf('@')
  return at > 0 && at < address.length - 1
}

function defaultRandomLocalPart(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  const bytes = randomBytes(16)
  let s = ''
  for (const b of bytes) s += alphabet[b % alphabet.length]
  return s
}

function num(value: number | undefined, fallback: number, name: string, min = 1): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) throw new TypeError(`smtp.${name} must be a number ≥ ${min}`)
  return value
}

/**
 * Creates the SMTP source. Bad options throw a `TypeError` here.
 *
 * @example
 * const smtp = createSmtpSource({ port: 2525, heloName: 'verify.example.org', mailFrom: 'bounce@example.org' })
 * const r = await smtp.verify('jane@example.com', ['mx1.example.com', 'mx2.example.com'])
 * // { smtp_check: 'deliverable', code: 250, enhancedCode: '2.1.5', message: 'Accepted', mxHost: 'mx1.example.com', catchAll: false }
 * await smtp.close()
 */
export function createSmtpSource(opts: SmtpSourceOptions = {}): SmtpSource {
  const port = num(opts.port, 25, 'port')
  const heloName = opts.heloName ?? 'localhost'
  const mailFrom = opts.mailFrom ?? ''
  if (!/^[A-Za-z0-9.:[\]-]{1,255}$/.test(heloName)) throw new TypeError('smtp.heloName must be a host name')
  if (mailFrom !== '' && !isSendable(mailFrom)) throw new TypeError('smtp.mailFrom must be an address or ""')
  const connectTimeoutMs = num(opts.connectTimeoutMs, 10_000, 'connectTimeoutMs')
  const replyTimeoutMs = num(opts.replyTimeoutMs, 15_000, 'replyTimeoutMs')
  const maxPerHost = Math.floor(num(opts.maxConnectionsPerHost, 2, 'maxConnectionsPerHost'))
  const idleMs = num(opts.idleMs, 10_000, 'idleMs', 0)
  const maxRecipients = Math.floor(num(opts.maxRecipientsPerSession, 1_000, 'maxRecipientsPerSession'))
  const maxMxHosts = Math.floor(num(opts.maxMxHosts, 3, 'maxMxHosts'))
  const catchAllTtlMs = num(opts.catchAllTtlMs, 600_000, 'catchAllTtlMs', 0)
  const hostFailureTtlMs = num(opts.hostFailureTtlMs, 30_000, 'hostFailureTtlMs', 0)
  const randomLocalPart = opts.randomLocalPart ?? defaultRandomLocalPart
  const resolveHost = opts.resolveHost ?? defaultResolveHost
  const allowPrivateHosts = opts.allowPrivateHosts === true
  const now = opts.now ?? Date.now

  const pools = new Map<string, HostPool>()
  const catchAll = new Map<string, CatchAllEntry>()
  const probing = new Map<string, Promise<boolean | null>>()
  const hostFailures = new Map<string, { until: number; message: string }>()
  /** Hosts that refused us at the greeting (e.g. "554 your IP is blocked"): not asked again for a while. */
  const hostRefusals = new Map<string, { until: number; reply: SmtpReply | null; message: string }>()
  const busy = new Set<Session>()
  const stats: SmtpStats = {
    connectionsOpened: 0,
    connectionsFailed: 0,
    sessionsReused: 0,
    commandsSent: 0,
    catchAllProbes: 0,
    catchAllCacheHits: 0,
    verifications: 0,
  }
  let closed = false

  function poolOf(host: string): HostPool {
    let p = pools.get(host)
    if (!p) {
      p = { idle: [], slots: 0, waiters: [] }
      pools.set(host, p)
    }
    return p
  }

  /** A session from the idle list, a slot to open one, or a place in the queue. */
  function acquire(pool: HostPool): Promise<Session | null | 'closed'> {
    if (closed) return Promise.resolve('closed')
    for (;;) {
      const s = pool.idle.pop()
      if (!s) break
      if (s.idleTimer) clearTimeout(s.idleTimer)
      s.idleTimer = null
      if (s.dead) {
        destroy(s)
        pool.slots--
        continue
      }
      stats.sessionsReused++
      s.socket.ref()
      return Promise.resolve(s)
    }
    if (pool.slots < maxPerHost) {
      pool.slots++
      return Promise.resolve(null)
    }
    return new Promise((resolve) => pool.waiters.push(resolve))
  }

  /** Gives up a slot (its session is gone): hand it to a waiter or free it. */
  function freeSlot(pool: HostPool): void {
    const w = pool.waiters.shift()
    if (w) w(null)
    else pool.slots--
  }

  /** Returns a healthy session after a transaction. */
  function release(pool: HostPool, s: Session): void {
    busy.delete(s)
    if (closed || s.dead || s.recipients >= maxRecipients) {
      quit(s)
      freeSlot(pool)
      return
    }
    const w = pool.waiters.shift()
    if (w) {
      stats.sessionsReused++
      busy.add(s)
      w(s)
      return
    }
    pool.idle.push(s)
    s.socket.unref()
    s.idleTimer = setTimeout(() => {
      const i = pool.idle.indexOf(s)
      if (i >= 0) {
        pool.idle.splice(i, 1)
        quit(s)
        freeSlot(pool)
      }
    }, idleMs)
    s.idleTimer.unref?.()
  }

  function destroy(s: Session): void {
    s.dead = true
    busy.delete(s)
    if (s.idleTimer) clearTimeout(s.idleTimer)
    s.socket.destroy()
  }

  /** QUIT politely, then close the socket whatever the server says. */
  function quit(s: Session): void {
    if (s.idleTimer) clearTimeout(s.idleTimer)
    s.idleTimer = null
    if (s.dead || s.socket.destroyed) {
      s.socket.destroy()
      return
    }
    s.dead = true
    stats.commandsSent++
    s.write('QUIT')
    s.socket.end()
    const t = setTimeout(() => s.socket.destroy(), 1_000)
    t.unref?.()
    s.socket.once('close', () => clearTimeout(t))
  }

  async function command(s: Session, line: string): Promise<SmtpReply> {
    stats.commandsSent++
    s.write(line)
    return s.read(replyTimeoutMs)
  }

  /** Opens a TCP connection and greets the server. */
  async function open(
    host: string,
  ): Promise<{ session: Session } | { connectFailed: string } | { refused: SmtpReply | null; message: string }> {
    let target: string | null
    try {
      target = await resolveHost(host)
    } catch {
      target = null
    }
    if (!target || net.isIP(target) === 0) {
      stats.connectionsFailed++
      return { connectFailed: `cannot resolve ${host}` }
    }
    if (!allowPrivateHosts && isSpecialPurposeAddress(target)) {
      stats.connectionsFailed++
      return { connectFailed: `${host} resolves to a non-public address (${target}); not connecting` }
    }
    const socket = await new Promise<net.Socket | string>((resolve) => {
      const sock = net.connect({ host: target as string, port })
      const timer = setTimeout(() => {
        sock.destroy()
        resolve(`connect timeout after ${connectTimeoutMs} ms`)
      }, connectTimeoutMs)
      sock.once('connect', () => {
        clearTimeout(timer)
        sock.removeAllListeners('error')
        resolve(sock)
      })
      sock.once('error', (err) => {
        clearTimeout(timer)
        sock.destroy()
        resolve(`connect failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`)
      })
    })
    if (typeof socket === 'string') {
      stats.connectionsFailed++
      return { connectFailed: socket }
    }
    stats.connectionsOpened++
    socket.setNoDelay(true)
    const s = createSession(host, socket)
    try {
      const banner = await s.read(replyTimeoutMs)
      if (banner.code !== 220) {
        quit(s)
        return { refused: banner, message: `banner ${banner.code} ${banner.text}` }
      }
      let hello = await command(s, `EHLO ${heloName}`)
      if (hello.code === 250) {
        for (const ext of hello.text.split(' ')) s.extensions.add(ext.toUpperCase())
      } else if (hello.code >= 500) {
        hello = await command(s, `HELO ${heloName}`)
      }
      if (hello.code !== 250) {
        quit(s)
        return { refused: hello, message: `greeting refused: ${hello.code} ${hello.text}` }
      }
      return { session: s }
    } catch (err) {
      // Connected, but the greeting timed out or the server hung up: a server is there, it just did not answer.
      destroy(s)
      return { refused: null, message: `greeting failed: ${(err as Error).message}` }
    }
  }

  /** Finds (or probes) whether `domain` accepts any local part, on session `s`. */
  async function catchAllOf(s: Session, domain: string): Promise<boolean | null> {
    const cached = catchAll.get(domain)
    if (cached && cached.expiresAt > now()) {
      stats.catchAllCacheHits++
      return cached.value
    }
    const running = probing.get(domain)
    if (running) {
      stats.catchAllCacheHits++
      return running
    }
    const probe = (async (): Promise<boolean | null> => {
      stats.catchAllProbes++
      const reply = await command(s, `RCPT TO:<${randomLocalPart()}@${domain}>`)
      s.recipients++
      const cls = classifyRcptReply(reply)
      if (cls === 'accepted') return true
      if (cls === 'no_mailbox' || cls === 'rejected_other') return false
      return null
    })()
    // Others wait for this probe instead of sending their own; a failed probe tells them nothing (null).
    probing.set(
      domain,
      probe.catch(() => null),
    )
    try {
      const value = await probe
      catchAll.set(domain, { value, expiresAt: now() + catchAllTtlMs })
      return value
    } catch {
      // The address was accepted; only the probe failed. Report that and drop the session.
      s.dead = true
      return null
    } finally {
      probing.delete(domain)
    }
  }

  function rememberNotCatchAll(domain: string): void {
    if (!catchAll.has(domain)) catchAll.set(domain, { value: false, expiresAt: now() + catchAllTtlMs })
  }

  /** One address on one open session: RSET (if used) → MAIL → RCPT → catch-all probe. */
  async function transact(s: Session, address: string, domain: string, utf8: boolean): Promise<SmtpVerifyResult> {
    const base = { mxHost: s.host }
    if (s.transactions > 0) {
      const rset = await command(s, 'RSET')
      if (rset.code !== 250) throw new SessionError(`RSET refused: ${rset.code}`, 'protocol')
    }
    s.transactions++
    s.rcptSent = false
    const mail = await command(s, `MAIL FROM:<${mailFrom}>${utf8 ? ' SMTPUTF8' : ''}`)
    if (mail.code !== 250) {
      if (mail.code === 421) s.dead = true
      return { ...base, smtp_check: 'unknown', code: mail.code, enhancedCode: mail.enhancedCode, message: `MAIL FROM refused: ${mail.text}`, catchAll: null }
    }
    s.rcptSent = true
    const rcpt = await command(s, `RCPT TO:<${address}>`)
    s.recipients++
    const cls = classifyRcptReply(rcpt)
    const fromReply = { code: rcpt.code, enhancedCode: rcpt.enhancedCode, message: rcpt.text }
    switch (cls) {
      case 'accepted': {
        const isCatchAll = await catchAllOf(s, domain)
        return { ...base, ...fromReply, smtp_check: isCatchAll === true ? 'catch_all' : 'deliverable', catchAll: isCatchAll }
      }
      case 'no_mailbox':
        rememberNotCatchAll(domain)
        return { ...base, ...fromReply, smtp_check: 'undeliverable', catchAll: false }
      default: {
        const known = catchAll.get(domain)
        return { ...base, ...fromReply, smtp_check: 'unknown', catchAll: known && known.expiresAt > now() ? known.value : null }
      }
    }
  }

  /** Tries one MX host: a pooled or new session, one transaction (one retry if a reused session was stale). */
  async function tryHost(host: string, address: string, domain: string, utf8: boolean): Promise<HostAttempt> {
    const pool = poolOf(host)
    for (let attempt = 0; attempt < 2; attempt++) {
      const lease = await acquire(pool)
      if (lease === 'closed') return { kind: 'result', result: closedResult() }
      let s: Session
      let reused = false
      if (lease === null) {
        const failedUntil = hostFailures.get(host)
        if (failedUntil && failedUntil.until > now()) {
          freeSlot(pool)
          return { kind: 'connect_failed', message: failedUntil.message }
        }
        const refusedUntil = hostRefusals.get(host)
        if (refusedUntil && refusedUntil.until > now()) {
          freeSlot(pool)
          return { kind: 'refused', reply: refusedUntil.reply, message: refusedUntil.message }
        }
        const opened = await open(host)
        if ('connectFailed' in opened) {
          freeSlot(pool)
          if (hostFailureTtlMs > 0) hostFailures.set(host, { until: now() + hostFailureTtlMs, message: opened.connectFailed })
          return { kind: 'connect_failed', message: opened.connectFailed }
        }
        if ('refused' in opened) {
          freeSlot(pool)
          if (hostFailureTtlMs > 0) hostRefusals.set(host, { until: now() + hostFailureTtlMs, reply: opened.refused, message: opened.message })
          return { kind: 'refused', reply: opened.refused, message: opened.message }
        }
        hostFailures.delete(host)
        hostRefusals.delete(host)
        s = opened.session
        if (closed) {
          quit(s)
          freeSlot(pool)
          return { kind: 'result', result: closedResult() }
        }
      } else {
        s = lease
        reused = true
      }
      busy.add(s)
      if (utf8 && !s.extensions.has('SMTPUTF8')) {
        release(pool, s)
        return {
          kind: 'result',
          result: { smtp_check: 'unknown', code: null, enhancedCode: null, message: 'the server does not support SMTPUTF8 addresses', mxHost: host, catchAll: null },
        }
      }
      try {
        const result = await transact(s, address, domain, utf8)
        release(pool, s)
        return { kind: 'result', result }
      } catch (err) {
        destroy(s)
        freeSlot(pool)
        // A reused session the server had already dropped fails at its first command: retry on a fresh one.
        if (reused && attempt === 0 && !s.rcptSent && err instanceof SessionError && err.kind !== 'timeout') continue
        const e = err as SessionError
        return {
          kind: 'result',
          result: { smtp_check: 'unknown', code: null, enhancedCode: null, message: e.message, mxHost: host, catchAll: null },
        }
      }
    }
    return { kind: 'result', result: { smtp_check: 'unknown', code: null, enhancedCode: null, message: 'session lost twice', mxHost: host, catchAll: null } }
  }

  function closedResult(): SmtpVerifyResult {
    return { smtp_check: 'unknown', code: null, enhancedCode: null, message: 'SMTP source closed', mxHost: null, catchAll: null }
  }

  return {
    async verify(address, mxHosts) {
      stats.verifications++
      if (closed) return closedResult()
      if (typeof address !== 'string' || !isSendable(address)) {
        return { smtp_check: 'unknown', code: null, enhancedCode: null, message: 'address cannot be sent in an SMTP command', mxHost: null, catchAll: null }
      }
      const at = address.lastIndexOf('@')
      const domain = address.slice(at + 1).toLowerCase()
      const normalizedAddress = `${address.slice(0, at)}@${domain}`
      const utf8 = !toAsciiSafe(address)
      if (!toAsciiSafe(domain)) {
        return { smtp_check: 'unknown', code: null, enhancedCode: null, message: 'domain must be given in ASCII (punycode)', mxHost: null, catchAll: null }
      }
      const hosts = [...new Set((Array.isArray(mxHosts) ? mxHosts : []).filter((h) => typeof h === 'string' && h !== '').map((h) => h.toLowerCase().replace(/\.$/, '')))].slice(0, maxMxHosts)
      if (hosts.length === 0) {
        return { smtp_check: 'unavailable', code: null, enhancedCode: null, message: 'no mail server to ask', mxHost: null, catchAll: null }
      }
      let refused: { reply: SmtpReply | null; host: string; message: string } | null = null
      const failures: string[] = []
      for (const host of hosts) {
        const attempt = await tryHost(host, normalizedAddress, domain, utf8)
        if (attempt.kind === 'result') return attempt.result
        if (attempt.kind === 'refused') refused = { reply: attempt.reply, host, message: attempt.message }
        else failures.push(`${host}: ${attempt.message}`)
      }
      if (refused) {
        // A server answered but would not talk to us (blocked IP, busy): we could not tell.
        return {
          smtp_check: 'unknown',
          code: refused.reply?.code ?? null,
          enhancedCode: refused.reply?.enhancedCode ?? null,
          message: refused.message,
          mxHost: refused.host,
          catchAll: null,
        }
      }
      return { smtp_check: 'unavailable', code: null, enhancedCode: null, message: failures.join('; '), mxHost: null, catchAll: null }
    },
    stats() {
      return { ...stats }
    },
    async close() {
      if (closed) return
      closed = true
      const sockets: net.Socket[] = []
      for (const pool of pools.values()) {
        for (const w of pool.waiters.splice(0)) w('closed')
        for (const s of pool.idle.splice(0)) {
          sockets.push(s.socket)
          // Idle sockets are unref'd; while we wait for QUIT to complete they must keep the process alive, or a
          // caller awaiting close() with nothing else pending would see Node exit with the promise unsettled.
          s.socket.ref()
          quit(s)
        }
      }
      for (const s of busy) {
        sockets.push(s.socket)
        destroy(s)
      }
      catchAll.clear()
      hostFailures.clear()
      hostRefusals.clear()
      await Promise.all(
        sockets.map((sock) => (sock.closed ? Promise.resolve() : new Promise<void>((resolve) => sock.once('close', () => resolve())))),
      )
    },
  }
}

/**
 * The SMTP source: asks a domain's mail servers whether a mailbox exists, without sending mail. EHLO (HELO fallback)
 * → MAIL FROM → RCPT TO the address → RCPT TO a random local part (catch-all probe) → RSET for the next address on
 * the same session → QUIT when idle. It never sends DATA, never uses STARTTLS/AUTH, and never rejects.
 *
 * Composition: MX names resolve to IP addresses; sessions are pooled per route (direct or a SOCKS5 proxy) and
 * mail-server IP address, because receiving servers limit connections per client IP; a session is renewed after a
 * few rejected recipients (strict servers tarpit and hang up after more) and a recipient that meets a 421 is retried
 * once on a new connection; each verify() has a time budget across all MX hosts; close() ends everything at once.
 */
import net from 'node:net'
import { isSpecialPurposeAddress } from '../ip/bogon.js'
import { isAscii, isSendable, normalizeMxHosts } from './address.js'
import { createCatchAllMemo } from './catch-all.js'
import type { ConnectFailureKind } from './connect.js'
import { checkMailbox, type MailboxDeps, type MailboxRequest } from './mailbox.js'
import { createSessionPool } from './pool.js'
import { createRoutes, type Route } from './routes.js'
import { createSmtpSession, SessionError, type SmtpSession } from './session.js'
import { resolveSmtpSettings, type SmtpSourceOptions } from './source-options.js'
import { createTtlCache } from './ttl-cache.js'
import type { SmtpReply, SmtpSource, SmtpStats, SmtpVerifyResult } from './types.js'

/** How trying one MX host ended, when it gave no answer. */
type HostOutcome =
  | { kind: 'answer'; result: SmtpVerifyResult }
  /** never connected (the IP, when the name resolved, and why) */
  | { kind: 'connect_failed'; ip: string | null; failure: ConnectFailureKind | 'unresolved' | 'private'; message: string }
  /** the server refused us with a reply at the greeting (banner or EHLO) */
  | { kind: 'refused'; reply: SmtpReply; message: string }
  /** connected, but the conversation ended without a reply that decides (timeout, hang-up) */
  | { kind: 'no_answer'; message: string }
  /** cut short: the time budget ran out, or close() */
  | { kind: 'aborted' }
  /** the name resolved to a server this check already asked */
  | { kind: 'same_server' }

/** A failure remembered per route and server address for `hostFailureTtlMs`. */
type RememberedFailure = Extract<HostOutcome, { kind: 'connect_failed' | 'refused' | 'no_answer' }>

/** Failures at connect that a blocked outbound port produces. */
const PORT_BLOCK_FAILURES = new Set<string>(['refused', 'timeout', 'reset', 'unreachable'])

const ABORT_CLOSED = 'closed'
const ABORT_BUDGET = 'budget'

const noAnswer = (smtp_check: 'unknown' | 'unavailable', message: string, mxHost: string | null = null): SmtpVerifyResult => ({
  smtp_check,
  code: null,
  enhancedCode: null,
  message,
  mxHost,
  catchAll: null,
})

/**
 * Creates the SMTP source. Bad options throw a `TypeError` here.
 *
 * @example
 * const smtp = createSmtpSource({ heloName: 'verify.example.org', mailFrom: 'bounce@example.org', proxy: 'socks5://10.0.0.5:1080' })
 * const r = await smtp.verify('jane@example.com', ['mx1.example.com', 'mx2.example.com'])
 * // { smtp_check: 'deliverable', code: 250, enhancedCode: '2.1.5', message: 'Accepted', mxHost: 'mx1.example.com', catchAll: false }
 * await smtp.close()
 */
export function createSmtpSource(opts: SmtpSourceOptions = {}): SmtpSource {
  const cfg = resolveSmtpSettings(opts)
  const stats: SmtpStats = {
    connectionsOpened: 0,
    connectionsFailed: 0,
    sessionsReused: 0,
    sessionsRenewed: 0,
    retriesAfter421: 0,
    budgetExceeded: 0,
    commandsSent: 0,
    catchAllProbes: 0,
    catchAllCacheHits: 0,
    verifications: 0,
  }
  const pool = createSessionPool<SmtpSession>({ maxPerKey: cfg.maxPerHost, idleMs: cfg.idleMs })
  const catchAll = createCatchAllMemo({ ttlMs: cfg.catchAllTtlMs, now: cfg.now, onHit: () => stats.catchAllCacheHits++ })
  const failures = createTtlCache<RememberedFailure>({ ttlMs: cfg.hostFailureTtlMs, now: cfg.now })
  const routes = createRoutes({ proxies: cfg.proxies, port: cfg.port, portBlockedAfterDomains: cfg.portBlockedAfterDomains, warn: cfg.onWarning })
  const mailboxDeps: MailboxDeps = {
    mailFrom: cfg.mailFrom,
    replyTimeoutMs: cfg.replyTimeoutMs,
    catchAll,
    randomLocalPart: cfg.randomLocalPart,
    onProbe: () => stats.catchAllProbes++,
  }
  /** Every check in flight (close() aborts them) and every session not yet closed (close() waits for them). */
  const inFlight = new Map<AbortController, Promise<SmtpVerifyResult>>()
  const sessions = new Set<SmtpSession>()
  let closed = false

  /** Connects through `route` and greets; a failure is remembered for the server unless it was ours (abort, proxy). */
  async function open(route: Route, host: string, ip: string, signal: AbortSignal): Promise<{ session: SmtpSession } | HostOutcome> {
    const c = await route.connect({ ip, port: cfg.port, timeoutMs: cfg.connectTimeoutMs, signal })
    if (!c.ok) {
      if (c.kind === 'aborted') return { kind: 'aborted' }
      stats.connectionsFailed++
      if (c.kind === 'proxy') route.proxyFailed(c.message)
      return { kind: 'connect_failed', ip, failure: c.kind, message: c.message }
    }
    stats.connectionsOpened++
    route.portBlock.connected()
    c.socket.setNoDelay(true)
    const session = createSmtpSession(c.socket, { onCommand: () => stats.commandsSent++ })
    sessions.add(session)
    session.closed.then(() => sessions.delete(session))
    const onAbort = () => session.destroy()
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      const hello = await session.greet(cfg.heloName, cfg.replyTimeoutMs)
      return hello.ok ? { session } : { kind: 'refused', reply: hello.reply, message: hello.message }
    } catch (err) {
      session.destroy()
      if (signal.aborted) return { kind: 'aborted' }
      return { kind: 'no_answer', message: `greeting failed: ${(err as Error).message}` }
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  /** Tries one MX host: a pooled or new session, one transaction; retries once after a stale session or a 421. */
  async function tryHost(
    route: Route,
    host: string,
    req: Omit<MailboxRequest, 'mxHost'>,
    tried: Set<string>,
    signal: AbortSignal,
  ): Promise<HostOutcome> {
    const ip = await untilAborted(safeResolve(host), signal)
    if (signal.aborted) return { kind: 'aborted' }
    if (!ip || net.isIP(ip) === 0) {
      stats.connectionsFailed++
      return { kind: 'connect_failed', ip: null, failure: 'unresolved', message: `cannot resolve ${host}` }
    }
    if (!cfg.allowPrivateHosts && isSpecialPurposeAddress(ip)) {
      stats.connectionsFailed++
      return { kind: 'connect_failed', ip, failure: 'private', message: `${host} resolves to a non-public address (${ip}); not connecting` }
    }
    if (tried.has(ip)) return { kind: 'same_server' }
    tried.add(ip)
    const key = `${route.id}|${ip}`
    let staleRetried = false
    let retried421 = false
    for (;;) {
      const lease = await pool.acquire(key, signal)
      if (lease.kind === 'closed' || lease.kind === 'aborted') return { kind: 'aborted' }
      let session: SmtpSession
      if (lease.kind === 'slot') {
        const remembered = failures.get(key)
        if (remembered) {
          pool.freeSlot(key)
          return remembered
        }
        const opened = await open(route, host, ip, signal)
        if (!('session' in opened)) {
          pool.freeSlot(key)
          if (opened.kind === 'refused' || opened.kind === 'no_answer' || (opened.kind === 'connect_failed' && opened.failure !== 'proxy')) failures.set(key, opened)
          return opened
        }
        failures.delete(key)
        session = opened.session
        pool.adopt(key, session)
      } else {
        session = lease.session
        stats.sessionsReused++
      }
      if (req.utf8 && !session.extensions.has('SMTPUTF8')) {
        pool.release(key, session)
        return { kind: 'answer', result: noAnswer('unknown', 'the server does not support SMTPUTF8 addresses', host) }
      }
      const onAbort = () => session.destroy()
      signal.addEventListener('abort', onAbort, { once: true })
      const recipientsBefore = session.recipients
      try {
        const answer = await checkMailbox(session, { ...req, mxHost: host }, mailboxDeps)
        if (answer.kind === 'closing') {
          pool.discard(key, session)
          if (!retried421) {
            retried421 = true
            stats.retriesAfter421++
            continue
          }
          const r = answer.reply
          return { kind: 'answer', result: { smtp_check: 'unknown', code: r.code, enhancedCode: r.enhancedCode, message: r.text, mxHost: host, catchAll: null } }
        }
        const renew = session.rejections >= cfg.maxRejections
        if (renew) stats.sessionsRenewed++
        pool.release(key, session, renew || session.recipients >= cfg.maxRecipients)
        return answer
      } catch (err) {
        pool.discard(key, session)
        if (signal.aborted) return { kind: 'aborted' }
        const e = err instanceof SessionError ? err : new SessionError(String(err), 'protocol')
        // A pooled session the server had already dropped fails at its first command: retry once on a fresh one.
        if (lease.kind === 'reused' && !staleRetried && session.recipients === recipientsBefore && e.kind !== 'timeout') {
          staleRetried = true
          continue
        }
        return { kind: 'no_answer', message: e.message }
      } finally {
        signal.removeEventListener('abort', onAbort)
      }
    }
  }

  async function safeResolve(host: string): Promise<string | null> {
    try {
      return await cfg.resolveHost(host)
    } catch {
      return null
    }
  }

  /** Tries the MX hosts in order within the budget; sums up what they said. */
  async function check(address: string, domain: string, utf8: boolean, hosts: string[], signal: AbortSignal): Promise<SmtpVerifyResult> {
    const route = routes.next()
    let refused: { reply: SmtpReply; host: string; message: string } | null = null
    const problems: string[] = []
    const blockedAt: string[] = []
    let onlyBlockedPort = true
    const tried = new Set<string>()
    for (const host of hosts) {
      if (signal.aborted) break
      const outcome = await tryHost(route, host, { address, domain, utf8 }, tried, signal)
      if (outcome.kind === 'answer') return outcome.result
      if (outcome.kind === 'aborted') break
      if (outcome.kind === 'same_server') continue
      if (outcome.kind === 'refused') refused = { reply: outcome.reply, host, message: outcome.message }
      else problems.push(`${host}: ${outcome.message}`)
      if (outcome.kind === 'connect_failed' && outcome.ip !== null && PORT_BLOCK_FAILURES.has(outcome.failure)) blockedAt.push(outcome.ip)
      else onlyBlockedPort = false
    }
    if (signal.reason === ABORT_CLOSED) return noAnswer('unavailable', 'SMTP source closed')
    if (signal.aborted) {
      stats.budgetExceeded++
      problems.push(`no answer within the time budget of ${cfg.totalTimeoutMs} ms`)
    } else if (onlyBlockedPort && blockedAt.length > 0) route.portBlock.domainUnreachable(domain, blockedAt)
    if (refused) {
      // A server answered but would not talk to us (blocked IP, busy): we could not tell.
      const { reply, host, message } = refused
      return { smtp_check: 'unknown', code: reply.code, enhancedCode: reply.enhancedCode, message, mxHost: host, catchAll: null }
    }
    const via = route.proxyLabel === null ? '' : ` (through ${route.proxyLabel})`
    return noAnswer('unavailable', `no mail server answered${via}: ${problems.join('; ')}`)
  }

  return {
    async verify(address, mxHosts) {
      stats.verifications++
      if (closed) return noAnswer('unavailable', 'SMTP source closed')
      if (typeof address !== 'string' || !isSendable(address)) return noAnswer('unknown', 'address cannot be sent in an SMTP command')
      const at = address.lastIndexOf('@')
      const domain = address.slice(at + 1).toLowerCase()
      if (!isAscii(domain)) return noAnswer('unknown', 'domain must be given in ASCII (punycode)')
      const hosts = normalizeMxHosts(mxHosts, cfg.maxMxHosts)
      if (hosts.length === 0) return noAnswer('unavailable', 'no mail server to ask')
      const controller = new AbortController()
      const budget = setTimeout(() => controller.abort(ABORT_BUDGET), cfg.totalTimeoutMs)
      const running = check(`${address.slice(0, at)}@${domain}`, domain, !isAscii(address), hosts, controller.signal).finally(() => {
        clearTimeout(budget)
        inFlight.delete(controller)
      })
      inFlight.set(controller, running)
      return running
    },
    stats() {
      return { ...stats }
    },
    async close() {
      if (closed) return
      closed = true
      const running = [...inFlight.values()]
      for (const controller of inFlight.keys()) controller.abort(ABORT_CLOSED)
      await Promise.allSettled(running)
      await pool.close()
      for (const s of sessions) s.destroy() // refused at the greeting and still saying QUIT
      await Promise.all([...sessions].map((s) => s.closed))
      catchAll.clear()
      failures.clear()
    },
  }
}

/** `promise`'s value, or null as soon as `signal` aborts (the promise itself is left to settle on its own). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return Promise.resolve(null)
  return new Promise((resolve) => {
    const onAbort = () => resolve(null)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      () => {
        signal.removeEventListener('abort', onAbort)
        resolve(null)
      },
    )
  })
}

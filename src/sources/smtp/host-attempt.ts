/**
 * Trying one MX host of one check: resolve its name to an IP address, take a pooled session for the route and that
 * address (or open one: connect, greet), run the mailbox transaction, and give the session back — renewed after a few
 * rejected recipients, retried once on a new connection after a stale session or a 421. Failures to connect or to be
 * greeted are remembered per route and address for a while, so the next addresses at that server do not wait again.
 */
import net from 'node:net'
import { isSpecialPurposeAddress } from '../ip/bogon.js'
import type { ConnectFailureKind } from './connect.js'
import { checkMailbox, type MailboxDeps, type MailboxRequest } from './mailbox.js'
import type { SessionPool } from './pool.js'
import type { Route } from './routes.js'
import { createSmtpSession, SessionError, type SmtpSession } from './session.js'
import type { SmtpSettings } from './source-options.js'
import type { TtlCache } from './ttl-cache.js'
import type { SmtpReply, SmtpStats, SmtpVerifyResult } from './types.js'

/** How trying one MX host ended. */
export type HostOutcome =
  /** a reply decided (or the server could not take the address): the check's answer */
  | { kind: 'answer'; result: SmtpVerifyResult }
  /** never connected (the IP, when the name resolved, and why) */
  | { kind: 'connect_failed'; ip: string | null; failure: ConnectFailureKind | 'unresolved' | 'private'; message: string }
  /** the server refused us with a reply at the greeting (banner or EHLO) */
  | { kind: 'refused'; reply: SmtpReply; message: string }
  /** connected, but the conversation ended without a reply that decides (timeout, hang-up) */
  | { kind: 'no_answer'; message: string }
  /** cut short: the time budget ran out, or close() — `connecting` when it was still connecting */
  | { kind: 'aborted'; connecting: boolean }
  /** the name resolved to a server this check already asked */
  | { kind: 'same_server' }

/** A failure remembered per route and server address for `hostFailureTtlMs`. */
export type RememberedFailure = Extract<HostOutcome, { kind: 'connect_failed' | 'refused' | 'no_answer' }>

/** What trying a host needs from the source. */
export interface HostAttemptDeps {
  cfg: SmtpSettings
  pool: SessionPool<SmtpSession>
  failures: TtlCache<RememberedFailure>
  stats: SmtpStats
  mailbox: MailboxDeps
  /** Every session opened, so close() can wait for it. */
  track(session: SmtpSession): void
}

/** Tries one MX host for one check. */
export type TryHost = (route: Route, host: string, req: Omit<MailboxRequest, 'mxHost'>, tried: Set<string>, signal: AbortSignal) => Promise<HostOutcome>

/**
 * Creates the host attempt of a source.
 *
 * @example
 * const tryHost = createHostAttempt({ cfg, pool, failures, stats, mailbox, track })
 * const outcome = await tryHost(routes.next(), 'mx1.example.com', { address, domain, utf8: false }, new Set(), signal)
 */
export function createHostAttempt(deps: HostAttemptDeps): TryHost {
  const { cfg, pool, failures, stats } = deps

  /** Connects through `route` and greets; a failure is remembered for the server unless it was ours (abort, proxy). */
  async function open(route: Route, host: string, ip: string, signal: AbortSignal): Promise<{ session: SmtpSession } | HostOutcome> {
    const c = await route.connect({ ip, port: cfg.port, timeoutMs: cfg.connectTimeoutMs, signal })
    if (!c.ok) {
      if (c.kind === 'aborted') return { kind: 'aborted', connecting: true }
      stats.connectionsFailed++
      if (c.kind === 'proxy') route.proxyFailed(c.message)
      return { kind: 'connect_failed', ip, failure: c.kind, message: c.message }
    }
    stats.connectionsOpened++
    route.portBlock.connected()
    c.socket.setNoDelay(true)
    const session = createSmtpSession(c.socket, { onCommand: () => stats.commandsSent++ })
    deps.track(session)
    const onAbort = () => session.destroy()
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      const hello = await session.greet(cfg.heloName, cfg.replyTimeoutMs)
      return hello.ok ? { session } : { kind: 'refused', reply: hello.reply, message: hello.message }
    } catch (err) {
      session.destroy()
      if (signal.aborted) return { kind: 'aborted', connecting: false }
      return { kind: 'no_answer', message: `greeting failed: ${(err as Error).message}` }
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  async function safeResolve(host: string): Promise<string | null> {
    try {
      return await cfg.resolveHost(host)
    } catch {
      return null
    }
  }

  /** Tries one MX host: a pooled or new session, one transaction; retries once after a stale session or a 421. */
  return async function tryHost(route, host, req, tried, signal) {
    const ip = await untilAborted(safeResolve(host), signal)
    if (signal.aborted) return { kind: 'aborted', connecting: false }
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
      if (lease.kind === 'closed' || lease.kind === 'aborted') return { kind: 'aborted', connecting: false }
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
        const message = 'the server does not support SMTPUTF8 addresses'
        return { kind: 'answer', result: { smtp_check: 'unknown', code: null, enhancedCode: null, message, mxHost: host, catchAll: null } }
      }
      const onAbort = () => session.destroy()
      signal.addEventListener('abort', onAbort, { once: true })
      const recipientsBefore = session.recipients
      try {
        const answer = await checkMailbox(session, { ...req, mxHost: host }, deps.mailbox)
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
        if (signal.aborted) return { kind: 'aborted', connecting: false }
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

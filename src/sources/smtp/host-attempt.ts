/**
 * Trying one MX host of one check: resolve its name, take a pooled session for the route and address (or open one), run
 * the mailbox transaction and give the session back — renewed after a few rejected recipients, retried once on a new
 * connection after a stale session or a 421. Failures to connect are remembered per route and address
 * (docs/decisions.md, "Sources and limits" → "SMTP sessions" and "a refused extra connection").
 */
import net from 'node:net'
import { isSpecialPurposeAddress } from '../ip/bogon.js'
import { isTransientRefusal } from './classify.js'
import type { ConnectFailureKind } from './connect.js'
import { checkMailbox, type MailboxDeps, type MailboxRequest } from './mailbox.js'
import type { SessionPool } from './pool.js'
import type { Route } from './routes.js'
import { createSmtpSession, SessionError, type SmtpSession } from './session.js'
import type { SmtpSettings } from './source-options.js'
import { createTtlCache, type TtlCache } from './ttl-cache.js'
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

type Refused = Extract<HostOutcome, { kind: 'refused' }>

/** What taking a slot came to: a session, the server's refusal of an extra connection, or the host's outcome. */
type SlotResult = { kind: 'session'; session: SmtpSession } | { kind: 'busy'; refusal: Refused } | HostOutcome

/** Extra connections one check may have refused (each one lowers the limit) before it gives up on the host. */
const MAX_BUSY_REFUSALS = 3
/**
 * A connection refused with a 4xx within LINGER_WINDOW_MS of our last session to that server closing is tried again
 * after a pause (100 ms, 200 ms, 300 ms): the server may still count the session that closed.
 */
const LINGER_WINDOW_MS = 2_000
const LINGER_PAUSES = 3
const LINGER_PAUSE_MS = 100

/** What trying a host needs from the source. */
export interface HostAttemptDeps {
  cfg: SmtpSettings
  pool: SessionPool<SmtpSession>
  failures: TtlCache<RememberedFailure>
  /** Connection limits learned per route and server address (the pool reads them as its `limitOf`). */
  limits: TtlCache<number>
  stats: SmtpStats
  mailbox: MailboxDeps
  /** Every session opened, so close() can wait for it. */
  track(session: SmtpSession): void
}

/** What opening a session needs: the source's parts, and the keys whose last session closed a moment ago. */
type SlotDeps = HostAttemptDeps & { recentlyClosed: TtlCache<true> }

/** Tries one MX host for one check. */
export type TryHost = (route: Route, host: string, req: Omit<MailboxRequest, 'mxHost'>, tried: Set<string>, signal: AbortSignal) => Promise<HostOutcome>

/**
 * Creates the host attempt of a source.
 *
 * @example
 * const tryHost = createHostAttempt({ cfg, pool, failures, limits, stats, mailbox, track })
 * const outcome = await tryHost(routes.next(), 'mx1.example.com', { address, domain, utf8: false }, new Set(), signal)
 */
export function createHostAttempt(deps: HostAttemptDeps): TryHost {
  const { cfg, pool, stats } = deps
  /** The source's parts, and the keys whose last session closed within LINGER_WINDOW_MS. */
  const slotDeps: SlotDeps = { ...deps, recentlyClosed: createTtlCache<true>({ ttlMs: LINGER_WINDOW_MS, now: cfg.now }) }

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
    /** The server's last refusal of an extra connection for this check, and how many it made. */
    let busy: Refused | null = null
    let busyRefusals = 0
    for (;;) {
      const lease = await pool.acquire(key, signal)
      if (lease.kind === 'aborted' && busy) {
        // the time budget ran out waiting for a session the server accepted: no answer about the mailbox
        return { kind: 'no_answer', message: `an extra connection was refused (${busy.message}) and no session to the server was free in time` }
      }
      if (lease.kind === 'closed' || lease.kind === 'aborted') return { kind: 'aborted', connecting: false }
      let session: SmtpSession
      if (lease.kind === 'slot') {
        const got = await openOnSlot(slotDeps, route, ip, key, signal)
        if (got.kind === 'busy') {
          busy = got.refusal
          if (++busyRefusals < MAX_BUSY_REFUSALS) continue
          // sessions keep coming and going while it refuses more: no answer here (the next MX host may give one)
          return { kind: 'no_answer', message: `${busyRefusals} extra connections refused (${busy.message})` }
        }
        if (got.kind !== 'session') return got
        session = got.session
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

/** True after `ms`, false as soon as `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false)
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer)
      resolve(false)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve(true)
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/** Connects through `route` and greets. */
async function open(deps: SlotDeps, route: Route, ip: string, signal: AbortSignal): Promise<{ session: SmtpSession } | HostOutcome> {
  const { cfg, stats } = deps
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

/**
 * On a slot of `key`: the remembered failure, or a new session (adopted by the pool). A 4xx at the greeting while other
 * slots of the key are held lowers the limit to them and answers `busy`; just after a session of ours closed it is
 * retried after a short pause (docs/decisions.md, "Sources and limits" → "a refused extra connection"). Other failures
 * are remembered for the server unless they were ours (abort, proxy).
 */
async function openOnSlot(deps: SlotDeps, route: Route, ip: string, key: string, signal: AbortSignal): Promise<SlotResult> {
  const { pool, failures, limits, stats, recentlyClosed } = deps
  const remembered = failures.get(key)
  if (remembered) {
    pool.freeSlot(key)
    return remembered
  }
  for (let pauses = 0; ; pauses++) {
    const opened = await open(deps, route, ip, signal)
    if ('session' in opened) {
      failures.delete(key)
      pool.adopt(key, opened.session)
      void opened.session.closed.then(() => recentlyClosed.set(key, true))
      return { kind: 'session', session: opened.session }
    }
    if (opened.kind === 'refused' && isTransientRefusal(opened.reply)) {
      const others = pool.counts(key).slots - 1
      if (others > 0) {
        stats.connectionsRefusedAsBusy++
        limits.set(key, Math.min(others, limits.get(key) ?? others))
        pool.freeSlot(key)
        return { kind: 'busy', refusal: opened }
      }
      if (recentlyClosed.get(key) && pauses < LINGER_PAUSES) {
        stats.connectionsRefusedAsBusy++
        if (await pause(LINGER_PAUSE_MS * (pauses + 1), signal)) continue
        pool.freeSlot(key)
        return { kind: 'aborted', connecting: false }
      }
    }
    pool.freeSlot(key)
    if (opened.kind === 'refused' || opened.kind === 'no_answer' || (opened.kind === 'connect_failed' && opened.failure !== 'proxy')) failures.set(key, opened)
    return opened
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

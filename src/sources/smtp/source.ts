/**
 * The SMTP source: asks a domain's mail servers whether a mailbox exists, without sending mail (EHLO → MAIL FROM →
 * RCPT TO the address → RCPT TO a random local part → RSET … QUIT; never DATA, STARTTLS or AUTH), and never
 * rejects. How sessions are pooled and limited: docs/decisions.md, "Sources and limits" → "SMTP sessions".
 */
import { isAscii, isSendable, normalizeMxHosts } from './address.js'
import { createCatchAllMemo } from './catch-all.js'
import { createHostAttempt, type RememberedFailure } from './host-attempt.js'
import { createSessionPool } from './pool.js'
import { createRoutes } from './routes.js'
import type { SmtpSession } from './session.js'
import { resolveSmtpSettings, type SmtpSourceOptions } from './source-options.js'
import { createTtlCache } from './ttl-cache.js'
import type { SmtpReply, SmtpSource, SmtpStats, SmtpVerifyResult } from './types.js'

/** Failures at connect that a blocked outbound port produces. */
const PORT_BLOCK_FAILURES = new Set<string>(['refused', 'timeout', 'reset', 'unreachable'])

const ABORT_CLOSED = 'closed'
const ABORT_BUDGET = 'budget'

/** A result no reply decided. */
const noAnswer = (smtp_check: 'unknown' | 'unavailable', message: string): SmtpVerifyResult => ({
  smtp_check,
  code: null,
  enhancedCode: null,
  message,
  mxHost: null,
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
    connectionsRefusedAsBusy: 0,
    budgetExceeded: 0,
    commandsSent: 0,
    catchAllProbes: 0,
    catchAllCacheHits: 0,
    verifications: 0,
  }
  const failures = createTtlCache<RememberedFailure>({ ttlMs: cfg.hostFailureTtlMs, now: cfg.now })
  const limits = createTtlCache<number>({ ttlMs: cfg.connectionLimitTtlMs, now: cfg.now })
  const pool = createSessionPool<SmtpSession>({ maxPerKey: cfg.maxPerHost, idleMs: cfg.idleMs, limitOf: (key) => limits.get(key) })
  const catchAll = createCatchAllMemo({ ttlMs: cfg.catchAllTtlMs, now: cfg.now, onHit: () => stats.catchAllCacheHits++ })
  const routes = createRoutes({ proxies: cfg.proxies, port: cfg.port, portBlockedAfterDomains: cfg.portBlockedAfterDomains, warn: cfg.onWarning })
  /** Every check in flight (close() aborts them) and every session not yet closed (close() waits for them). */
  const inFlight = new Map<AbortController, Promise<SmtpVerifyResult>>()
  const sessions = new Set<SmtpSession>()
  let closed = false
  const tryHost = createHostAttempt({
    cfg,
    pool,
    failures,
    limits,
    stats,
    mailbox: { mailFrom: cfg.mailFrom, replyTimeoutMs: cfg.replyTimeoutMs, catchAll, randomLocalPart: cfg.randomLocalPart, onProbe: () => stats.catchAllProbes++ },
    track(session) {
      sessions.add(session)
      session.closed.then(() => sessions.delete(session))
    },
  })

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
      if (outcome.kind === 'aborted') {
        // a connect cut short by the budget is what a port that drops packets looks like
        if (!outcome.connecting) onlyBlockedPort = false
        break
      }
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
    }
    if (onlyBlockedPort && blockedAt.length > 0) route.portBlock.domainUnreachable(domain, blockedAt)
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
      limits.clear()
    },
  }
}


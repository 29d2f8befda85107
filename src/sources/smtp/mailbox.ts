/**
 * One address on one open session: RSET (when the session was used before) → MAIL FROM → RCPT TO the address → RCPT
 * TO a random local part at the same domain (catch-all probe, once per domain thanks to the memo). Counts rejected
 * recipients on the session, and reports a `421` (the server is closing the channel) so the caller can retry on a new
 * connection. Throws a SessionError when the conversation itself fails (timeout, hang-up).
 */
import type { CatchAllMemo } from './catch-all.js'
import { classifyRcptReply, isRejection, isServiceClosing } from './classify.js'
import { SessionError, type SmtpSession } from './session.js'
import type { SmtpReply, SmtpVerifyResult } from './types.js'

/** The address to check. */
export interface MailboxRequest {
  /** The address, domain lower-cased. */
  address: string
  /** Its ASCII domain. */
  domain: string
  /** Whether the address needs SMTPUTF8. */
  utf8: boolean
  /** The MX host name the session belongs to (reported in the result). */
  mxHost: string
}

/** What the check needs besides the session. */
export interface MailboxDeps {
  mailFrom: string
  replyTimeoutMs: number
  catchAll: CatchAllMemo
  randomLocalPart: () => string
  /** Called when a catch-all probe is sent. */
  onProbe?: () => void
}

/** The session's answer, or a `421` that ended the session before one. */
export type MailboxAnswer = { kind: 'answer'; result: SmtpVerifyResult } | { kind: 'closing'; reply: SmtpReply }

/**
 * Checks one address on `session`.
 *
 * @example
 * const a = await checkMailbox(session, { address: 'jane@example.com', domain: 'example.com', utf8: false, mxHost: 'mx.example.com' }, deps)
 * if (a.kind === 'answer') console.log(a.result.smtp_check)
 */
export async function checkMailbox(session: SmtpSession, req: MailboxRequest, deps: MailboxDeps): Promise<MailboxAnswer> {
  const ask = (line: string) => session.command(line, deps.replyTimeoutMs)
  const base = { mxHost: req.mxHost }
  if (session.transactions > 0) {
    const rset = await ask('RSET')
    if (isServiceClosing(rset)) return { kind: 'closing', reply: rset }
    if (rset.code !== 250) throw new SessionError(`RSET refused: ${rset.code}`, 'protocol')
  }
  session.transactions++
  const mail = await ask(`MAIL FROM:<${deps.mailFrom}>${req.utf8 ? ' SMTPUTF8' : ''}`)
  if (isServiceClosing(mail)) return { kind: 'closing', reply: mail }
  if (mail.code !== 250) {
    const result: SmtpVerifyResult = { ...base, smtp_check: 'unknown', code: mail.code, enhancedCode: mail.enhancedCode, message: `MAIL FROM refused: ${mail.text}`, catchAll: null }
    return { kind: 'answer', result }
  }
  session.recipients++
  const rcpt = await ask(`RCPT TO:<${req.address}>`)
  if (isRejection(rcpt)) session.rejections++
  if (isServiceClosing(rcpt)) return { kind: 'closing', reply: rcpt }
  const fromReply = { ...base, code: rcpt.code, enhancedCode: rcpt.enhancedCode, message: rcpt.text }
  switch (classifyRcptReply(rcpt)) {
    case 'accepted': {
      const probe = await deps.catchAll.probe(req.domain, () => probeCatchAll(session, req.domain, deps))
      if (probe.failed) session.markDead() // the address was accepted; only the probe failed: drop the session
      const isCatchAll = probe.value
      return { kind: 'answer', result: { ...fromReply, smtp_check: isCatchAll === true ? 'catch_all' : 'deliverable', catchAll: isCatchAll } }
    }
    case 'no_mailbox':
      deps.catchAll.rememberNotCatchAll(req.domain)
      return { kind: 'answer', result: { ...fromReply, smtp_check: 'undeliverable', catchAll: false } }
    default:
      return { kind: 'answer', result: { ...fromReply, smtp_check: 'unknown', catchAll: deps.catchAll.known(req.domain) ?? null } }
  }
}

/** RCPT TO a random local part: accepted → catch-all; refused as no mailbox → not; anything else → not known. */
async function probeCatchAll(session: SmtpSession, domain: string, deps: MailboxDeps): Promise<boolean | null> {
  deps.onProbe?.()
  session.recipients++
  const reply = await session.command(`RCPT TO:<${deps.randomLocalPart()}@${domain}>`, deps.replyTimeoutMs)
  if (isRejection(reply)) session.rejections++
  const cls = classifyRcptReply(reply)
  if (cls === 'accepted') return true
  if (cls === 'no_mailbox' || cls === 'rejected_other') return false
  return null
}

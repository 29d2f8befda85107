/**
 * Classifying a reply to RCPT TO: does the server say the mailbox exists, does not exist, or is it talking about us
 * (a blocked IP, a policy, a rate limit)? The text is judged before the code, because servers put blocks in 550
 * replies with user-unknown codes. Pure: no I/O.
 */
import type { SmtpReply, SmtpReplyClass } from './types.js'

const MAX_TEXT_SCAN = 1024

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

/** A reply that counts as a rejected recipient in the server's error counter (Postfix counts every 4xx/5xx). */
export function isRejection(reply: SmtpReply): boolean {
  return reply.code >= 400
}

/** `421`: the server is closing the connection (too many errors, shutting down, overloaded). */
export function isServiceClosing(reply: SmtpReply): boolean {
  return reply.code === 421
}

/**
 * A refusal at the greeting (banner, EHLO/HELO) that says "not now" — `421 too many connections from that IP
 * address`, a busy server — rather than "not you" (a 5xx block): any 4xx.
 */
export function isTransientRefusal(reply: SmtpReply): boolean {
  return reply.code >= 400 && reply.code < 500
}

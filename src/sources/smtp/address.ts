/** What may go on an SMTP command line, and the catch-all probe's random local part. Pure. */
import { randomBytes } from 'node:crypto'

/** True when every character is printable ASCII (no SMTPUTF8 needed). */
export function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7e) return false
  return true
}

/**
 * True when `address` can be written in `MAIL FROM:<…>`/`RCPT TO:<…>` without breaking the command line: no CR, LF,
 * NUL, other controls, spaces or angle brackets; a local part and a domain; at most 254 octets.
 */
export function isSendable(address: string): boolean {
  if (address.length === 0 || Buffer.byteLength(address, 'utf8') > 254) return false
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i)
    if (c <= 0x20 || c === 0x7f || c === 0x3c || c === 0x3e) return false
  }
  const at = address.lastIndexOf('@')
  return at > 0 && at < address.length - 1
}

/** 16 random lower-case letters and digits: a local part no real mailbox has. */
export function randomLocalPart(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  let s = ''
  for (const b of randomBytes(16)) s += alphabet[b % alphabet.length]
  return s
}

/** MX host names as given, lower-cased, trailing dot dropped, duplicates and non-strings removed, at most `max`. */
export function normalizeMxHosts(mxHosts: unknown, max: number): string[] {
  const list = Array.isArray(mxHosts) ? mxHosts : []
  const hosts = list.filter((h): h is string => typeof h === 'string' && h !== '').map((h) => h.toLowerCase().replace(/\.$/, ''))
  return [...new Set(hosts)].slice(0, max)
}

/**
 * Reading SMTP replies (RFC 5321 §4.2): an incremental parser that turns received text into complete replies
 * (multi-line replies joined, the RFC 3463 enhanced code split off), with caps on line length and line count so a
 * hostile server cannot make us buffer without bound. Pure: no I/O.
 */
import type { SmtpReply } from './types.js'

/** Longest reply line accepted (RFC 5321 allows 512 octets; real servers send longer texts). */
export const MAX_REPLY_LINE = 2048
/** Most lines in one multi-line reply (EHLO lists a few dozen extensions at most). */
export const MAX_REPLY_LINES = 64

const ENHANCED_RE = /^([245])\.(\d{1,3})\.(\d{1,3})(?: |$)/
const REPLY_LINE_RE = /^[2-5]\d\d(?:[ -]|$)/

/** The server sent something that is not an SMTP reply. */
export class SmtpProtocolError extends Error {}

/** Parses the lines of one complete reply (first line's code; the first enhanced code found). */
export function parseReply(lines: readonly string[]): SmtpReply {
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

/** Incremental reply reader: feed it text as it arrives, get complete replies back. */
export interface ReplyReader {
  /** Adds received text; returns the replies it completed. Throws {@link SmtpProtocolError} on garbage. */
  push(chunk: string): SmtpReply[]
}

/**
 * Creates a reply reader.
 *
 * @example
 * const reader = createReplyReader()
 * reader.push('250-mx.example.com\r\n250 SMTP') // []
 * reader.push('UTF8\r\n') // [{ code: 250, enhancedCode: null, text: 'mx.example.com SMTPUTF8' }]
 */
export function createReplyReader(): ReplyReader {
  let buffer = ''
  let current: string[] = []
  return {
    push(chunk) {
      buffer += chunk
      const out: SmtpReply[] = []
      for (;;) {
        const nl = buffer.indexOf('\n')
        if (nl < 0) break
        const line = buffer.slice(0, nl).replace(/\r$/, '')
        buffer = buffer.slice(nl + 1)
        if (line.length > MAX_REPLY_LINE || !REPLY_LINE_RE.test(line)) throw new SmtpProtocolError('malformed reply line')
        current.push(line)
        if (line.charAt(3) === '-') {
          if (current.length > MAX_REPLY_LINES) throw new SmtpProtocolError('reply has too many lines')
          continue
        }
        out.push(parseReply(current))
        current = []
      }
      if (buffer.length > MAX_REPLY_LINE) throw new SmtpProtocolError('reply line too long')
      return out
    },
  }
}

/**
 * One SMTP client session over any Duplex stream (a TCP socket, a SOCKS tunnel, or a PassThrough pair in tests):
 * reads replies with a per-reply timeout, writes command lines, greets (EHLO with a HELO fallback) and says QUIT.
 * It knows nothing about pools, MX hosts or mailboxes; it never rejects except with a {@link SessionError}.
 */
import type { Duplex } from 'node:stream'
import { createReplyReader, SmtpProtocolError } from './reply.js'
import type { SmtpReply } from './types.js'

/** Why a session failed: no reply in time, the server hung up, it sent garbage, or we cut it short. */
export type SessionErrorKind = 'timeout' | 'disconnect' | 'protocol' | 'aborted'

/** A failure of the conversation itself (not a reply). */
export class SessionError extends Error {
  constructor(
    message: string,
    readonly kind: SessionErrorKind,
  ) {
    super(message)
  }
}

/** How the greeting went: a usable session, or the reply that refused us. */
export type GreetResult = { ok: true } | { ok: false; reply: SmtpReply; message: string }

/** Options of {@link createSmtpSession}. */
export interface SmtpSessionOptions {
  /** Called with the verb of every command written (EHLO, MAIL, RCPT …), for counters. */
  onCommand?: (verb: string) => void
  /** How long QUIT waits for the server to hang up before the stream is destroyed, in ms (default 1000). */
  quitGraceMs?: number
}

/** An open SMTP session. */
export interface SmtpSession {
  /** EHLO keywords the server announced (upper case), e.g. `SMTPUTF8`, `PIPELINING`. */
  readonly extensions: ReadonlySet<string>
  /** True once the session cannot be used again (a failure, a 421, QUIT, destroy). */
  readonly dead: boolean
  /** Transactions (MAIL FROM) started on this session. */
  transactions: number
  /** RCPT TO commands sent on this session. */
  recipients: number
  /** RCPT TO commands the server rejected (4xx/5xx) on this session. */
  rejections: number
  /** The next reply (already received, or awaited for at most `timeoutMs`). */
  read(timeoutMs: number): Promise<SmtpReply>
  /** Writes one command line and reads its reply. */
  command(line: string, timeoutMs: number): Promise<SmtpReply>
  /** Reads the banner and says EHLO (HELO if EHLO is refused with 5xx). Rejects with a SessionError if no reply comes. */
  greet(heloName: string, timeoutMs: number): Promise<GreetResult>
  /** Marks the session unusable for further transactions (it is closed when released). */
  markDead(): void
  /** Says QUIT and closes the stream whatever the server answers (destroyed after the grace time). */
  quit(): void
  /** Closes the stream now; a pending read fails with a SessionError of kind `aborted`. */
  destroy(reason?: string): void
  /** An idle session does not keep the process alive (TCP sockets are unref'd); a busy one does. */
  setIdle(idle: boolean): void
  /** Settles when the stream has closed. */
  readonly closed: Promise<void>
}

type Waiter = { resolve: (r: SmtpReply) => void; reject: (e: SessionError) => void; timer: NodeJS.Timeout }

/**
 * Starts a session on a connected stream (nothing is sent until greet() or command()).
 *
 * @example
 * const session = createSmtpSession(socket)
 * const hello = await session.greet('verify.example.org', 10_000)
 * if (hello.ok) console.log((await session.command('MAIL FROM:<>', 10_000)).code)
 * session.quit()
 */
export function createSmtpSession(stream: Duplex, options: SmtpSessionOptions = {}): SmtpSession {
  const reader = createReplyReader()
  const replies: SmtpReply[] = []
  const extensions = new Set<string>()
  const quitGraceMs = options.quitGraceMs ?? 1_000
  let failure: SessionError | null = null
  let waiter: Waiter | null = null
  let dead = false
  let quitTimer: NodeJS.Timeout | null = null

  const closed = new Promise<void>((resolve) => {
    if (stream.closed) resolve()
    else stream.once('close', () => resolve())
  })
  closed.then(() => {
    if (quitTimer) clearTimeout(quitTimer)
    quitTimer = null
  })

  function fail(err: SessionError): void {
    dead = true
    failure ??= err
    if (waiter) {
      const w = waiter
      waiter = null
      clearTimeout(w.timer)
      w.reject(err)
    }
  }

  function deliver(reply: SmtpReply): void {
    if (reply.code === 421) dead = true // the server is closing the channel
    if (waiter) {
      const w = waiter
      waiter = null
      clearTimeout(w.timer)
      w.resolve(reply)
    } else replies.push(reply)
  }

  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    let got
    try {
      got = reader.push(chunk)
    } catch (e) {
      fail(new SessionError(e instanceof SmtpProtocolError ? e.message : 'unreadable reply', 'protocol'))
      stream.destroy()
      return
    }
    for (const reply of got) deliver(reply)
  })
  stream.on('error', (err: Error) => fail(new SessionError(`connection error: ${err.message}`, 'disconnect')))
  stream.on('end', () => {
    fail(new SessionError('connection closed by the server', 'disconnect'))
    stream.destroy()
  })
  stream.on('close', () => fail(new SessionError('connection closed', 'disconnect')))

  function write(line: string): void {
    if (!stream.destroyed && !stream.writableEnded) stream.write(`${line}\r\n`)
    options.onCommand?.(line.split(' ', 1)[0]!.toUpperCase())
  }

  const session: SmtpSession = {
    extensions,
    get dead() {
      return dead
    },
    transactions: 0,
    recipients: 0,
    rejections: 0,
    read(timeoutMs) {
      const queued = replies.shift()
      if (queued) return Promise.resolve(queued)
      if (failure) return Promise.reject(failure)
      return new Promise<SmtpReply>((resolve, reject) => {
        const timer = setTimeout(() => {
          fail(new SessionError(`no reply within ${timeoutMs} ms`, 'timeout'))
          stream.destroy()
        }, timeoutMs)
        waiter = { resolve, reject, timer }
      })
    },
    command(line, timeoutMs) {
      write(line)
      return session.read(timeoutMs)
    },
    async greet(heloName, timeoutMs) {
      const banner = await session.read(timeoutMs)
      if (banner.code !== 220) {
        session.quit()
        return { ok: false, reply: banner, message: `banner ${banner.code} ${banner.text}` }
      }
      let hello = await session.command(`EHLO ${heloName}`, timeoutMs)
      if (hello.code === 250) {
        for (const word of hello.text.split(' ')) extensions.add(word.toUpperCase())
      } else if (hello.code >= 500) {
        hello = await session.command(`HELO ${heloName}`, timeoutMs)
      }
      if (hello.code !== 250) {
        session.quit()
        return { ok: false, reply: hello, message: `greeting refused: ${hello.code} ${hello.text}` }
      }
      return { ok: true }
    },
    markDead() {
      dead = true
    },
    quit() {
      if (dead || stream.destroyed || stream.writableEnded) {
        dead = true
        stream.destroy()
        return
      }
      dead = true
      write('QUIT')
      stream.end()
      quitTimer = setTimeout(() => stream.destroy(), quitGraceMs)
      quitTimer.unref() // the stream itself keeps the process alive while it is ref'd
    },
    destroy(reason) {
      fail(new SessionError(reason ?? 'session closed', 'aborted'))
      stream.destroy()
    },
    setIdle(idle) {
      const s = stream as Duplex & { ref?: () => unknown; unref?: () => unknown }
      if (idle) s.unref?.()
      else s.ref?.()
    },
    closed,
  }
  return session
}

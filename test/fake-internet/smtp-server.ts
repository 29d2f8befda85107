/**
 * A loopback SMTP server (the `smtp-server` package) whose answer to each RCPT TO the test decides.
 * For tests and benchmarks only: it never accepts DATA and has no TLS or AUTH.
 *
 * It can also behave like a strict Postfix (`strict`: slows every reply down after `smtpd_soft_error_limit` errors
 * and answers `421 4.7.0 Error: too many errors` and hangs up after `smtpd_hard_error_limit`), or like a tarpit
 * (`tarpit`: accepts the connection and never says a word), or like a server that limits connections per client
 * address (`maxConnectionsPerClient`: Exim's `smtp_accept_max_per_host`). It counts connections (all, open, most open
 * at once) and records the client address of each, so a test can tell direct connections from proxied ones.
 *
 * @example
 * const smtp = await startSmtpServer({ onRcpt: (a) => (a.startsWith('jane@') ? 'accept' : 'reject') })
 * const source = createSmtpSource({ port: smtp.port })
 * ...
 * await smtp.close()
 */
import net from 'node:net'
import { SMTPServer } from 'smtp-server'
import type { SMTPServerAddress, SMTPServerSession } from 'smtp-server'

/** How the server answers one RCPT TO. */
export type RcptDecision =
  /** 250 Accepted */
  | 'accept'
  /** 550 5.1.1 user unknown */
  | 'reject'
  /** 450 4.2.1 greylisted, try again later */
  | 'greylist'
  /** 554 5.7.1 your IP is blocked (listed on a blocklist) */
  | 'block'
  /** closes the connection without a reply */
  | 'drop'
  /** waits, then answers with `then` (default 'accept') */
  | { delayMs: number; then?: Exclude<RcptDecision, { delayMs: number }> }
  /** any reply */
  | { code: number; message: string }

/** Context of one RCPT TO. */
export interface RcptContext {
  /** 1-based number of the connection this RCPT arrived on. */
  connection: number
  /** the MAIL FROM address ('' for the null sender) */
  mailFrom: string
}

/** Options of {@link startSmtpServer}. */
export interface FakeSmtpOptions {
  /** Port (default 0: a free one). */
  port?: number
  /** Address to listen on (default 127.0.0.1). */
  host?: string
  /** More loopback addresses to listen on, same port (one fake server standing in for many mail servers). */
  extraHosts?: string[]
  /** Decides every RCPT TO (default: accept all). */
  onRcpt?: (address: string, ctx: RcptContext) => RcptDecision
  /** Refuse connections at the greeting with this reply (e.g. `{ code: 554, message: 'your IP is blocked' }`). */
  greeting?: { code: number; message: string }
  /** Hide SMTPUTF8 from EHLO. */
  hideSmtpUtf8?: boolean
  /** Answer EHLO with 502 (an old server): clients must fall back to HELO. */
  disableEhlo?: boolean
  /** Accept connections and never reply, not even with a banner. */
  tarpit?: boolean
  /**
   * Behave like Postfix's error limits: every rejected MAIL/RCPT is an error of the connection; after `softErrorLimit`
   * errors (Postfix default 10) every MAIL/RCPT reply is delayed by `delayMs` (Postfix: 1 s) and counted in
   * `delayedReplies`; once `hardErrorLimit` errors (Postfix default 20) were made, the next MAIL/RCPT is answered
   * `421 4.7.0 Error: too many errors` and the connection is closed.
   */
  strict?: { softErrorLimit?: number; hardErrorLimit?: number; delayMs?: number }
  /**
   * Most sessions at once from one client address (Exim's `smtp_accept_max_per_host`): a connection beyond them is
   * answered `421 too many connections from that IP address` instead of a banner, and closed. Refused connections
   * are counted in `connections` and `refusedConnections`, never in the open ones.
   */
  maxConnectionsPerClient?: number
  /**
   * With `maxConnectionsPerClient`: a session still counts for this many ms after its connection closed (Exim counts
   * it until it has reaped the session's process, a moment after the client saw the connection close).
   */
  lingerMs?: number
}

/** A running fake SMTP server with counters. */
export interface FakeSmtpServer {
  host: string
  port: number
  /** Connections accepted so far. */
  readonly connections: number
  /** Connections open now. */
  readonly openConnections: number
  /** Most connections open at the same time so far. */
  readonly maxOpenConnections: number
  /** Most connections open at the same time to any one of the addresses it listens on. */
  readonly maxOpenConnectionsPerAddress: number
  /** RCPT TO commands received. */
  readonly rcptCount: number
  /** MAIL FROM commands received. */
  readonly mailCount: number
  /** Every RCPT TO address, in order. */
  readonly recipients: string[]
  /** The client address of every connection, in order (e.g. a SOCKS proxy's outgoing address). */
  readonly remoteAddresses: string[]
  /** Replies the strict mode delayed (the client met the soft error limit). */
  readonly delayedReplies: number
  /** `421 too many errors` replies the strict mode sent (the client met the hard error limit). */
  readonly tooManyErrors: number
  /** Connections refused with `421 too many connections` (`maxConnectionsPerClient`). */
  readonly refusedConnections: number
  /** Hangs up on every open connection (as a server does to idle clients). */
  dropConnections(): void
  /** Replaces the RCPT handler. */
  setOnRcpt(fn: (address: string, ctx: RcptContext) => RcptDecision): void
  close(): Promise<void>
}

function smtpError(code: number, message: string): Error {
  const err = new Error(message) as Error & { responseCode: number }
  err.responseCode = code
  return err
}

/** Starts the server on loopback. */
export async function startSmtpServer(options: FakeSmtpOptions = {}): Promise<FakeSmtpServer> {
  let onRcpt = options.onRcpt ?? ((): RcptDecision => 'accept')
  let connections = 0
  let open = 0
  let maxOpen = 0
  let rcptCount = 0
  let mailCount = 0
  const recipients: string[] = []
  const remoteAddresses: string[] = []
  const connectionNumber = new Map<string, number>()
  const openAt = new Map<string, number>()
  const addressOf = new Map<string, string>()
  let maxOpenAt = 0
  const errors = new Map<string, number>()
  const timers = new Set<NodeJS.Timeout>()
  let delayedReplies = 0
  let tooManyErrors = 0
  let refusedConnections = 0
  const openFrom = new Map<string, number>()
  const clientOf = new Map<string, string>()
  const strict = options.strict ? { softErrorLimit: 10, hardErrorLimit: 20, delayMs: 1000, ...options.strict } : null

  /** Postfix's error limits around one MAIL/RCPT reply: 421 past the hard limit, a delay past the soft one. */
  function strictly(session: SMTPServerSession, callback: (err?: Error | null) => void, decide: (done: (err?: Error | null) => void) => void): void {
    if (!strict) return decide(callback)
    const made = errors.get(session.id) ?? 0
    if (made >= strict.hardErrorLimit) {
      tooManyErrors++
      return callback(smtpError(421, 'fake MX Error: too many errors'))
    }
    const count = (err?: Error | null) => {
      if (err && ((err as Error & { responseCode?: number }).responseCode ?? 550) >= 400) errors.set(session.id, (errors.get(session.id) ?? 0) + 1)
      callback(err)
    }
    if (made < strict.softErrorLimit) return decide(count)
    delayedReplies++
    const t = setTimeout(() => {
      timers.delete(t)
      decide(count)
    }, strict.delayMs)
    timers.add(t)
  }

  const server: SMTPServer = new SMTPServer({
    disabledCommands: options.disableEhlo ? ['AUTH', 'STARTTLS', 'EHLO'] : ['AUTH', 'STARTTLS'],
    hideSTARTTLS: true,
    hideSMTPUTF8: options.hideSmtpUtf8 ?? false,
    hideENHANCEDSTATUSCODES: false,
    authOptional: true,
    disableReverseLookup: true,
    logger: false,
    banner: 'fake MX',
    socketTimeout: 30_000,
    closeTimeout: 200,
    onConnect(session: SMTPServerSession, callback: (err?: Error | null) => void) {
      connections++
      const client = session.remoteAddress
      if (options.maxConnectionsPerClient !== undefined && (openFrom.get(client) ?? 0) >= options.maxConnectionsPerClient) {
        refusedConnections++
        remoteAddresses.push(client)
        return callback(smtpError(421, 'too many connections from that IP address'))
      }
      openFrom.set(client, (openFrom.get(client) ?? 0) + 1)
      clientOf.set(session.id, client)
      open++
      maxOpen = Math.max(maxOpen, open)
      connectionNumber.set(session.id, connections)
      remoteAddresses.push(session.remoteAddress)
      const local = session.localAddress
      addressOf.set(session.id, local)
      openAt.set(local, (openAt.get(local) ?? 0) + 1)
      maxOpenAt = Math.max(maxOpenAt, openAt.get(local)!)
      if (options.tarpit) return // never call back: no banner, ever
      if (options.greeting) return callback(smtpError(options.greeting.code, options.greeting.message))
      callback()
    },
    onClose(session: SMTPServerSession) {
      if (connectionNumber.delete(session.id)) open--
      const client = clientOf.get(session.id)
      clientOf.delete(session.id)
      if (client !== undefined) {
        const leave = () => openFrom.set(client, (openFrom.get(client) ?? 1) - 1)
        if (!options.lingerMs) leave()
        else {
          const t = setTimeout(() => {
            timers.delete(t)
            leave()
          }, options.lingerMs)
          timers.add(t)
        }
      }
      const local = addressOf.get(session.id)
      if (local !== undefined) openAt.set(local, (openAt.get(local) ?? 1) - 1)
      addressOf.delete(session.id)
      errors.delete(session.id)
    },
    onMailFrom(_address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      mailCount++
      strictly(session, callback, (done) => done())
    },
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      rcptCount++
      recipients.push(address.address)
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : ''
      const decision = onRcpt(address.address, { connection: connectionNumber.get(session.id) ?? 0, mailFrom })
      strictly(session, callback, (done) => answer(decision, session, done))
    },
    onData(stream, _session, callback) {
      stream.resume()
      stream.on('end', () => callback(smtpError(554, 'no mail accepted here')))
    },
  })

  function answer(decision: RcptDecision, session: SMTPServerSession, callback: (err?: Error | null) => void): void {
    if (typeof decision === 'object' && 'delayMs' in decision) {
      const t = setTimeout(() => {
        timers.delete(t)
        answer(decision.then ?? 'accept', session, callback)
      }, decision.delayMs)
      timers.add(t)
      return
    }
    if (typeof decision === 'object') return callback(smtpError(decision.code, decision.message))
    switch (decision) {
      case 'accept':
        return callback()
      case 'reject':
        return callback(smtpError(550, '<recipient>: Recipient address rejected: User unknown in virtual mailbox table'))
      case 'greylist':
        return callback(smtpError(450, '<recipient>: Recipient address rejected: Greylisted, please try again later'))
      case 'block':
        return callback(smtpError(554, 'Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org'))
      case 'drop':
        for (const c of liveConnections()) if (c.session?.id === session.id) c._socket?.destroy()
        return
    }
  }

  function liveConnections(): Array<{ session?: SMTPServerSession; _socket?: { destroy(): void } }> {
    return [...server.connections] as unknown as Array<{ session?: SMTPServerSession; _socket?: { destroy(): void } }>
  }

  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  server.on('error', () => undefined)
  const address = server.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  // Extra listeners hand their sockets to the SMTP server, as its own listener does.
  const extra = await Promise.all(
    (options.extraHosts ?? []).map(
      (h) =>
        new Promise<net.Server>((resolve, reject) => {
          const l = net.createServer((socket) => server.server.emit('connection', socket))
          l.once('error', reject)
          l.listen(port, h, () => resolve(l))
        }),
    ),
  )

  return {
    host,
    port,
    get connections() {
      return connections
    },
    get openConnections() {
      return open
    },
    get maxOpenConnections() {
      return maxOpen
    },
    get maxOpenConnectionsPerAddress() {
      return maxOpenAt
    },
    get rcptCount() {
      return rcptCount
    },
    get mailCount() {
      return mailCount
    },
    recipients,
    remoteAddresses,
    get delayedReplies() {
      return delayedReplies
    },
    get tooManyErrors() {
      return tooManyErrors
    },
    get refusedConnections() {
      return refusedConnections
    },
    dropConnections() {
      for (const c of liveConnections()) c._socket?.destroy()
    },
    setOnRcpt(fn) {
      onRcpt = fn
    },
    close() {
      for (const t of timers) clearTimeout(t)
      timers.clear()
      if (options.tarpit) for (const c of liveConnections()) c._socket?.destroy()
      for (const l of extra) l.close()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

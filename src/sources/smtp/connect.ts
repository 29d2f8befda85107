/**
 * Opening TCP connections to mail servers: directly, or through a SOCKS5 proxy (the `socks` package does the
 * handshake over a socket we open, so one timeout and one abort signal cover the whole way). Never rejects: a failure
 * says what kind it was, which tells a blocked port (refused/timed out at connect) from a failed proxy.
 */
import net from 'node:net'
import { SocksClient } from 'socks'
import type { SmtpProxy } from './proxy.js'

/** Why a connection could not be opened. */
export type ConnectFailureKind =
  /** the server (or, through a proxy, the proxy on its behalf) refused the connection */
  | 'refused'
  /** no answer within the connect timeout */
  | 'timeout'
  /** reset while connecting */
  | 'reset'
  /** no route to the server */
  | 'unreachable'
  /** the proxy itself failed: unreachable, bad credentials, or it will not connect to that port */
  | 'proxy'
  /** the caller gave up (time budget, close()) */
  | 'aborted'
  /** anything else */
  | 'error'

/** An open connection, or why there is none. */
export type ConnectResult = { ok: true; socket: net.Socket } | { ok: false; kind: ConnectFailureKind; message: string }

/** Where to connect and how long to try. */
export interface ConnectRequest {
  ip: string
  port: number
  timeoutMs: number
  signal: AbortSignal
}

/** Opens a connection to a mail server. */
export type Connector = (request: ConnectRequest) => Promise<ConnectResult>

const ERRNO_KINDS: Record<string, ConnectFailureKind> = {
  ECONNREFUSED: 'refused',
  ETIMEDOUT: 'timeout',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EADDRNOTAVAIL: 'unreachable',
}

/** A TCP connection to host:port within `timeoutMs`, cut short when `signal` aborts. */
function openTcp(host: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<ConnectResult> {
  if (signal.aborted) return Promise.resolve({ ok: false, kind: 'aborted', message: 'connect cancelled' })
  return new Promise((resolve) => {
    const sock = net.connect({ host, port })
    const finish = (result: ConnectResult) => {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      sock.removeListener('error', onError)
      sock.removeListener('connect', onConnect)
      if (!result.ok) sock.destroy()
      resolve(result)
    }
    const onAbort = () => finish({ ok: false, kind: 'aborted', message: 'connect cancelled' })
    const onError = (err: NodeJS.ErrnoException) =>
      finish({ ok: false, kind: ERRNO_KINDS[err.code ?? ''] ?? 'error', message: `connect failed: ${err.code ?? err.message}` })
    const onConnect = () => finish({ ok: true, socket: sock })
    const timer = setTimeout(() => finish({ ok: false, kind: 'timeout', message: `connect timeout after ${timeoutMs} ms` }), timeoutMs)
    signal.addEventListener('abort', onAbort, { once: true })
    sock.once('error', onError)
    sock.once('connect', onConnect)
  })
}

/**
 * Connects straight to the mail server.
 *
 * @example
 * const r = await connectDirect({ ip: '192.0.2.25', port: 25, timeoutMs: 10_000, signal })
 */
export const connectDirect: Connector = ({ ip, port, timeoutMs, signal }) => openTcp(ip, port, timeoutMs, signal)

/** Reads a `socks` error message: the proxy's reply code (RFC 1928 §6) tells what happened at the far end. */
function socksFailureKind(message: string): ConnectFailureKind {
  if (/ConnectionRefused/.test(message)) return 'refused'
  if (/HostUnreachable|NetworkUnreachable|- Failure/.test(message)) return 'unreachable'
  if (/TTLExpired/.test(message)) return 'timeout'
  return 'proxy' // authentication failed, NotAllowed (its rules forbid the port), a garbled or closed handshake
}

/**
 * A connector through a SOCKS5 proxy: TCP to the proxy, then the SOCKS5 handshake (username/password when the proxy
 * has them) asking it to connect to the mail server's IP address. The timeout covers both steps.
 *
 * @example
 * const connect = createSocksConnector(parseSmtpProxyUrl('socks5://me:secret@10.0.0.5:1080', 'smtp.proxy'))
 */
export function createSocksConnector(proxy: SmtpProxy): Connector {
  return async ({ ip, port, timeoutMs, signal }) => {
    const tcp = await openTcp(proxy.host, proxy.port, timeoutMs, signal)
    if (!tcp.ok) {
      if (tcp.kind === 'aborted') return tcp
      return { ok: false, kind: 'proxy', message: `SOCKS5 proxy ${proxy.label} unreachable: ${tcp.message}` }
    }
    const sock = tcp.socket
    let why: 'timeout' | 'aborted' | null = null
    const timer = setTimeout(() => {
      why = 'timeout'
      sock.destroy()
    }, timeoutMs)
    const onAbort = () => {
      why = 'aborted'
      sock.destroy()
    }
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      await SocksClient.createConnection({
        proxy: {
          host: proxy.host,
          port: proxy.port,
          type: 5,
          ...(proxy.username !== null ? { userId: proxy.username, password: proxy.password ?? '' } : {}),
        },
        command: 'connect',
        destination: { host: ip, port },
        existing_socket: sock,
        timeout: timeoutMs,
      })
      return { ok: true, socket: sock }
    } catch (e) {
      sock.destroy()
      const message = e instanceof Error ? e.message : String(e) // the message only: the error object carries the credentials
      if (why === 'aborted') return { ok: false, kind: 'aborted', message: 'connect cancelled' }
      if (why === 'timeout') return { ok: false, kind: 'timeout', message: `connect through ${proxy.label} timed out after ${timeoutMs} ms` }
      return { ok: false, kind: socksFailureKind(message), message: `through ${proxy.label}: ${message}` }
    } finally {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
    }
  }
}

/**
 * Why a request over the network failed, in words a person can act on — a DNS failure, a refused or unreachable
 * connection, a timeout, a TLS failure or an HTTP status — naming the host: `DNS lookup of data.iana.org failed
 * (ENOTFOUND)`, `connection to 127.0.0.1:9 refused (ECONNREFUSED)`, `rdap.example answered HTTP 503`. The RDAP
 * source and the data downloads explain their failures with it.
 */

/** What kind of failure it was. */
export type NetworkFailureKind =
  /** the host name did not resolve (`ENOTFOUND`, `EAI_AGAIN` …) */
  | 'dns'
  /** nothing listens on the port (`ECONNREFUSED`) */
  | 'refused'
  /** no route to the host or network (`ENETUNREACH`, `EHOSTUNREACH` …) */
  | 'unreachable'
  /** the connection broke (`ECONNRESET`, `EPIPE`, closed by the other side) */
  | 'reset'
  /** no answer in time */
  | 'timeout'
  /** the TLS handshake or certificate check failed */
  | 'tls'
  /** the server answered with an HTTP error status */
  | 'http'
  /** anything else */
  | 'other'

/** One network failure. */
export interface NetworkFailure {
  kind: NetworkFailureKind
  /** the host (and port, when not the default) that was asked */
  host: string
  /** the system error code (`ENOTFOUND`, `ECONNREFUSED` …), or null */
  code: string | null
  /** the HTTP status (kind `http`), else null */
  status: number | null
  /** one clause naming the host and the cause */
  message: string
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA'])
const UNREACHABLE_CODES = new Set(['ENETUNREACH', 'EHOSTUNREACH', 'ENETDOWN', 'EHOSTDOWN', 'EADDRNOTAVAIL'])
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'])
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])

/** The host (with a non-default port) of a URL, or the text itself when it is no URL. */
function hostOf(url: string | URL): string {
  try {
    return (typeof url === 'string' ? new URL(url) : url).host || String(url)
  } catch {
    return String(url)
  }
}

/** The first system error code on the error or its causes (undici puts it on `cause`; Happy Eyeballs on `errors`). */
function codeOf(error: unknown): string | null {
  let e: unknown = error
  for (let depth = 0; depth < 5 && e !== null && typeof e === 'object'; depth++) {
    const o = e as { code?: unknown; cause?: unknown; errors?: unknown }
    if (typeof o.code === 'string' && o.code !== '') return o.code
    e = o.cause ?? (Array.isArray(o.errors) ? o.errors[0] : undefined)
  }
  return null
}

function isTimeout(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name
  return name === 'TimeoutError'
}

function innermostMessage(error: unknown): string {
  let e: unknown = error
  let message = error instanceof Error ? error.message : String(error)
  for (let depth = 0; depth < 5 && e !== null && typeof e === 'object'; depth++) {
    const o = e as { message?: unknown; cause?: unknown }
    if (typeof o.message === 'string' && o.message !== '') message = o.message
    e = o.cause
  }
  return message.slice(0, 200)
}

/**
 * The failure of a request to `url` that rejected with `error` (a fetch `TypeError: fetch failed` with its cause, a
 * socket error, an abort). `timeoutMs` is the deadline that applied, for the message of a timeout.
 *
 * @example
 * networkFailureOf(fetchError, 'https://data.iana.org/rdap/dns.json').message // 'DNS lookup of data.iana.org failed (ENOTFOUND)'
 */
export function networkFailureOf(error: unknown, url: string | URL, timeoutMs?: number): NetworkFailure {
  const host = hostOf(url)
  const code = codeOf(error)
  const fail = (kind: NetworkFailureKind, message: string): NetworkFailure => ({ kind, host, code, status: null, message })
  if (isTimeout(error) || (code !== null && TIMEOUT_CODES.has(code))) {
    const after = timeoutMs !== undefined ? ` after ${formatSeconds(timeoutMs)}` : ''
    return fail('timeout', `${host} timed out${after}${code !== null && !isTimeout(error) ? ` (${code})` : ''}`)
  }
  if (code === null) return fail('other', `${host}: ${innermostMessage(error)}`)
  if (DNS_CODES.has(code)) return fail('dns', `DNS lookup of ${host.replace(/:\d+$/, '')} failed (${code})`)
  if (code === 'ECONNREFUSED') return fail('refused', `connection to ${host} refused (${code})`)
  if (UNREACHABLE_CODES.has(code)) return fail('unreachable', `${host} is unreachable (${code})`)
  if (RESET_CODES.has(code)) return fail('reset', `connection to ${host} broke: ${innermostMessage(error)} (${code})`)
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT') || code === 'EPROTO' || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE')
    return fail('tls', `TLS with ${host} failed (${code})`)
  return fail('other', `${host}: ${innermostMessage(error)} (${code})`)
}

/**
 * The failure of a request to `url` answered with HTTP `status`.
 *
 * @example httpFailureOf(503, 'https://rdap.verisign.com/com/v1/domain/x.com').message // 'rdap.verisign.com answered HTTP 503'
 */
export function httpFailureOf(status: number, url: string | URL): NetworkFailure {
  const host = hostOf(url)
  return { kind: 'http', host, code: null, status, message: `${host} answered HTTP ${status}` }
}

/**
 * True when the host could not be reached at all (DNS failure, refused, unreachable): asking it again at once cannot
 * succeed, so callers fail without retrying.
 */
export function isUnreachable(failure: NetworkFailure): boolean {
  return failure.kind === 'dns' || failure.kind === 'refused' || failure.kind === 'unreachable'
}

function formatSeconds(ms: number): string {
  const s = ms / 1000
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`
}

/**
 * SOCKS5 proxies for the mailbox check (`smtp.proxy`): parsing and validating `socks5://[user:password@]host[:port]`
 * URLs. Credentials never appear in an error message, a label or a log line: a proxy is named by its `label`
 * (`socks5://host:port`) everywhere.
 */

/** A validated SOCKS5 proxy. */
export interface SmtpProxy {
  /** `socks5://host:port`, without credentials: safe to print. */
  label: string
  host: string
  port: number
  /** RFC 1929 username/password, when the URL has them. */
  username: string | null
  password: string | null
}

/** Default SOCKS port when the URL has none. */
export const DEFAULT_SOCKS_PORT = 1080

const HOST_RE = /^[A-Za-z0-9.-]{1,253}$|^\[[0-9A-Fa-f:.]{2,45}\]$/

/**
 * Parses one proxy URL; throws a TypeError naming `option` (never echoing the URL, which may hold a password).
 *
 * @example
 * parseSmtpProxyUrl('socks5://me:secret@10.0.0.5:1080', 'smtp.proxy')
 * // { label: 'socks5://10.0.0.5:1080', host: '10.0.0.5', port: 1080, username: 'me', password: 'secret' }
 */
export function parseSmtpProxyUrl(value: unknown, option: string): SmtpProxy {
  const fail = (why: string): never => {
    throw new TypeError(`riskcheck: option \`${option}\` ${why}`)
  }
  const shape = 'must be a socks5://[user:password@]host[:port] URL'
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return fail(shape)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return fail(shape)
  }
  if (url.protocol !== 'socks5:') return fail(`${shape} (only SOCKS5 is supported; the scheme was ${JSON.stringify(url.protocol.slice(0, 16))})`)
  if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '') return fail(`${shape} (no path, query or fragment)`)
  if (!HOST_RE.test(url.hostname)) return fail(`${shape} (no valid host)`)
  const port = url.port === '' ? DEFAULT_SOCKS_PORT : Number(url.port)
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return fail(`${shape} (port 1–65535)`)
  let username: string | null = null
  let password: string | null = null
  try {
    if (url.username !== '') username = decodeURIComponent(url.username)
    if (url.password !== '') password = decodeURIComponent(url.password)
  } catch {
    return fail(`${shape} (credentials must be percent-encoded)`)
  }
  if (password !== null && username === null) return fail(`${shape} (a password needs a user name)`)
  if ((username !== null && Buffer.byteLength(username) > 255) || (password !== null && Buffer.byteLength(password) > 255))
    return fail(`${shape} (user name and password at most 255 bytes each)`)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return { label: `socks5://${url.hostname}:${port}`, host, port, username, password }
}

/**
 * Parses `smtp.proxy`: one URL or a list (used in turn). Undefined or an empty list means no proxy.
 *
 * @example
 * parseSmtpProxies(['socks5://a:1080', 'socks5://b:1080'], 'smtp.proxy').map((p) => p.label)
 */
export function parseSmtpProxies(value: unknown, option: string): SmtpProxy[] {
  if (value === undefined || value === null) return []
  if (typeof value === 'string') return [parseSmtpProxyUrl(value, option)]
  if (!Array.isArray(value) || value.length > 100)
    throw new TypeError(`riskcheck: option \`${option}\` must be a socks5:// URL or a list of at most 100 of them`)
  return value.map((v, i) => parseSmtpProxyUrl(v, `${option}[${i}]`))
}

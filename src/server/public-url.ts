/**
 * The server's public URL (`serve --public-url`, RISKCHECK_PUBLIC_URL, `createServer({ publicUrl })`): where
 * people and clients reach it from outside. It is the OpenAPI document's server URL and the base of every link in
 * the dashboard's mails. Links are never built from a request's Host or X-Forwarded-* headers: those are the
 * client's to choose, and a forged one would mail a victim a link to the attacker's site.
 */

/**
 * The canonical form of a public URL — `http(s)://host[:port]` plus an optional path prefix, without trailing
 * slashes — or a TypeError that says what is wrong: not absolute, not http(s), credentials, a query or a fragment,
 * whitespace or control characters (which the URL parser would silently drop).
 */
export function parsePublicUrl(value: string): string {
  const shown = JSON.stringify(value.slice(0, 100))
  if (/[\s\u0000-\u001f\u007f]/.test(value)) throw new TypeError(`must be an absolute http(s) URL without whitespace or control characters (got ${shown})`)
  let u: URL
  try {
    u = new URL(value)
  } catch {
    throw new TypeError(`must be an absolute URL such as https://riskcheck.example.com (got ${shown})`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError(`must start with http:// or https:// (got ${u.protocol}//)`)
  if (u.username || u.password) throw new TypeError('must not carry credentials (user:password@)')
  if (u.search || value.includes('?')) throw new TypeError('must not have a query (?…)')
  if (u.hash || value.includes('#')) throw new TypeError('must not have a fragment (#…)')
  let path = u.pathname
  while (path.endsWith('/')) path = path.slice(0, -1)
  return `${u.origin}${path}`
}

/** The URL of a listening socket's address (`http://127.0.0.1:8080`, `http://[::1]:8080`). */
export function listenUrl(address: { address: string; port: number; family?: string | number }): string {
  const host = address.address.includes(':') ? `[${address.address}]` : address.address
  return `http://${host}:${address.port}`
}

/** Whether a listening address is a wildcard (0.0.0.0, ::): not an address anyone can open a link to. */
export function isWildcardAddress(address: string): boolean {
  return address === '0.0.0.0' || address === '::' || address === '::0' || address === '0:0:0:0:0:0:0:0'
}

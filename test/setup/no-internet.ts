/**
 * Test guard: no test may reach anything but loopback. Installed for every test file (vitest `setupFiles`).
 *
 * - TCP/TLS sockets (net, http, https, SMTP): an IP literal outside loopback is refused before connecting; a host name
 *   is checked on the socket's `lookup` event, i.e. on the address actually resolved.
 * - DNS: node:dns resolvers may only use loopback servers (the system resolvers would be the real internet).
 * - fetch: only loopback URLs.
 *
 * A refusal throws/destroys with an error naming the target, so the offending test fails loudly. Files share a
 * process (vitest `isolate: false`): the guard is installed once per process.
 */
import dns from 'node:dns'
import net from 'node:net'

const isLoopback = (address: string): boolean => {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase()
  return a === '::1' || a === 'localhost' || a.startsWith('127.') || a.startsWith('::ffff:127.')
}

const refuse = (what: string) => new Error(`no-internet guard: a test tried to reach ${what}; tests may only use loopback servers`)

const INSTALLED = Symbol.for('riskcheck.test.no-internet')
const scope = globalThis as { [INSTALLED]?: true }
if (!scope[INSTALLED]) {
  scope[INSTALLED] = true
  const originalConnect = net.Socket.prototype.connect
  net.Socket.prototype.connect = function patchedConnect(this: net.Socket, ...args: unknown[]) {
    const first = args[0]
    let host: string | undefined
    if (first && typeof first === 'object') {
      const o = first as { host?: string; path?: string }
      if (o.path === undefined) host = o.host
    } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
      host = typeof args[1] === 'string' ? (args[1] as string) : undefined
    }
    if (host !== undefined && net.isIP(host.replace(/^\[|\]$/g, '')) !== 0 && !isLoopback(host)) throw refuse(host)
    this.once('lookup', (err: Error | null, address: string) => {
      if (!err && address && !isLoopback(address)) this.destroy(refuse(`${host ?? '?'} (${address})`))
    })
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args)
  } as typeof net.Socket.prototype.connect

  for (const Resolver of [dns.Resolver, dns.promises.Resolver]) {
    const proto = Resolver.prototype as unknown as Record<string, unknown> & { getServers(): string[] }
    for (const name of ['resolve', 'resolve4', 'resolve6', 'resolveMx', 'resolveTxt', 'resolveNs', 'resolvePtr', 'resolveAny', 'resolveCname', 'resolveSrv', 'resolveSoa', 'resolveNaptr', 'resolveCaa', 'reverse']) {
      const original = proto[name] as ((...a: unknown[]) => unknown) | undefined
      if (typeof original !== 'function') continue
      proto[name] = function guarded(this: { getServers(): string[] }, ...a: unknown[]) {
        const servers = this.getServers()
        const outside = servers.find((s) => !isLoopback(s.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1')))
        if (outside !== undefined) throw refuse(`the DNS server ${outside} (query ${String(a[0])})`)
        return original.apply(this, a)
      }
    }
  }

  const originalFetch = globalThis.fetch
  globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url)
    if (!isLoopback(url.hostname)) throw refuse(url.href)
    return originalFetch(input, init)
  }) as typeof fetch
}

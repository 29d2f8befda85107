/**
 * The ways out to mail servers: straight from this host, or through each configured SOCKS5 proxy, used in turn. Each
 * route has its own connector, its own key prefix for the connection limits (a proxy is another client IP to the
 * receiving servers) and its own blocked-port detector; problems are reported once per route.
 */
import { connectDirect, createSocksConnector, type Connector } from './connect.js'
import { createPortBlockDetector, type PortBlockDetector } from './port-block.js'
import type { SmtpProxy } from './proxy.js'
import type { SmtpWarning } from './types.js'

/** One way out. */
export interface Route {
  /** Prefix of the pool keys: `direct`, `proxy0`, `proxy1` … (by position, so two proxies at one host stay apart). */
  id: string
  /** The proxy's printable label (no credentials), or null when direct. */
  proxyLabel: string | null
  connect: Connector
  portBlock: PortBlockDetector
  /** Reports, once, that the proxy itself cannot be used. */
  proxyFailed(message: string): void
}

/** Options of {@link createRoutes}. */
export interface RoutesOptions {
  proxies: readonly SmtpProxy[]
  port: number
  portBlockedAfterDomains: number
  warn: (warning: SmtpWarning) => void
}

/** The routes and a turn-taker. */
export interface Routes {
  /** The next route in turn (always `direct` when there is no proxy). */
  next(): Route
}

/**
 * Creates the routes.
 *
 * @example
 * const routes = createRoutes({ proxies: [], port: 25, portBlockedAfterDomains: 3, warn: console.warn })
 * routes.next().id // 'direct'
 */
export function createRoutes(options: RoutesOptions): Routes {
  const list: Route[] = options.proxies.length === 0 ? [makeRoute('direct', null, connectDirect, options)] : options.proxies.map((p, i) => makeRoute(`proxy${i}`, p.label, createSocksConnector(p), options))
  let turn = 0
  return {
    next() {
      const route = list[turn % list.length]!
      turn = (turn + 1) % list.length
      return route
    },
  }
}

function makeRoute(id: string, proxyLabel: string | null, connect: Connector, options: RoutesOptions): Route {
  const from = proxyLabel === null ? 'from this host' : `from the SOCKS5 proxy ${proxyLabel}`
  let proxyReported = false
  return {
    id,
    proxyLabel,
    connect,
    portBlock: createPortBlockDetector({
      threshold: options.portBlockedAfterDomains,
      onBlocked: ({ domains }) =>
        options.warn({
          code: 'smtp_port_blocked',
          message:
            `outbound SMTP connections (port ${options.port}) seem blocked ${from}: every mail server of ${domains.join(', ')} ` +
            'was unreachable (connection refused or timed out) while DNS answered, and no connection has succeeded. Many cloud ' +
            "providers and ISPs block outbound port 25. Mailbox checks answer smtp_check 'unavailable' (free of charge) until it " +
            'works; send them through a SOCKS5 proxy (smtp.proxy, --smtp-proxy) or turn them off (smtp.enabled: false, --no-smtp).',
        }),
    }),
    proxyFailed(message) {
      if (proxyReported || proxyLabel === null) return
      proxyReported = true
      options.warn({
        code: 'smtp_proxy_failed',
        message: `the SOCKS5 proxy ${proxyLabel} could not be used for a mailbox check (${message}); checks through it answer smtp_check 'unavailable' (free of charge).`,
      })
    },
  }
}

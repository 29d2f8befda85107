/**
 * Detecting a blocked outbound SMTP port. Most cloud providers and many ISPs drop or refuse outbound connections to
 * port 25; every mailbox check then fails at connect. When every mail server of several different domains was
 * unreachable at connect (refused, timed out, reset — while DNS answered, so the network itself works) and no
 * connection through that route ever succeeded, the route is reported once. Pure bookkeeping: no I/O, no clock.
 */

/** Options of {@link createPortBlockDetector}. */
export interface PortBlockDetectorOptions {
  /** Distinct domains (and as many distinct server addresses) that must fail before it is reported (default 3). */
  threshold?: number
  /** Called once, the first time the route looks blocked. */
  onBlocked: (evidence: { domains: string[]; servers: string[] }) => void
}

/** Tracks one route (direct, or one proxy). */
export interface PortBlockDetector {
  /** A connection through this route succeeded: the port is not blocked, now or later. */
  connected(): void
  /** Every mail server of `domain` (at `servers`, their IP addresses) was unreachable at connect. */
  domainUnreachable(domain: string, servers: readonly string[]): void
  /** Whether it has been reported. */
  readonly reported: boolean
}

/**
 * Creates a detector.
 *
 * @example
 * const d = createPortBlockDetector({ onBlocked: ({ domains }) => warn(`port 25 blocked? ${domains.join(', ')}`) })
 * d.domainUnreachable('a.example', ['192.0.2.1'])
 */
export function createPortBlockDetector(options: PortBlockDetectorOptions): PortBlockDetector {
  const threshold = options.threshold ?? 3
  const domains = new Set<string>()
  const servers = new Set<string>()
  let everConnected = false
  let reported = false
  return {
    connected() {
      everConnected = true
      domains.clear()
      servers.clear()
    },
    domainUnreachable(domain, ips) {
      if (everConnected || reported || ips.length === 0) return
      if (domains.size < threshold * 4) domains.add(domain)
      for (const ip of ips) if (servers.size < threshold * 4) servers.add(ip)
      if (domains.size >= threshold && servers.size >= threshold) {
        reported = true
        options.onBlocked({ domains: [...domains].slice(0, threshold), servers: [...servers].slice(0, threshold) })
      }
    },
    get reported() {
      return reported
    },
  }
}

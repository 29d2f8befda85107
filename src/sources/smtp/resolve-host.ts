/** Resolving an MX host name to the IP address the SMTP source connects to (and keys its limits by). */
import net from 'node:net'
import { lookup as dnsLookup } from 'node:dns/promises'
import type { DnsSource } from '../dns-types.js'

/** Resolves a host name to one IP address, or null when it has none. */
export type ResolveHost = (host: string) => Promise<string | null>

/**
 * A `resolveHost` for the SMTP source backed by a DNS source: the first A record of the MX host, else its first AAAA
 * record, else null. An IP literal is returned as is. Lets the SMTP check use the same (configured, cached) resolver
 * as the MX lookup instead of the operating system's.
 *
 * @example
 * const dns = createDnsSource({ servers: ['127.0.0.1:5353'] })
 * const smtp = createSmtpSource({ resolveHost: createDnsHostResolver(dns) })
 */
export function createDnsHostResolver(dns: Pick<DnsSource, 'resolve4' | 'resolve6'>): ResolveHost {
  return async (host) => {
    if (net.isIP(host) !== 0) return host
    const a = await dns.resolve4(host)
    if (a.status === 'ok' && a.records[0]) return a.records[0]
    const aaaa = await dns.resolve6(host)
    if (aaaa.status === 'ok' && aaaa.records[0]) return aaaa.records[0]
    return null
  }
}

/** Resolves a host name with the operating system's resolver (IP literals pass through). */
export async function resolveWithSystem(host: string): Promise<string | null> {
  if (net.isIP(host) !== 0) return host
  try {
    return (await dnsLookup(host)).address
  } catch {
    return null
  }
}

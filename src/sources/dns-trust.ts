/**
 * When to believe an NXDOMAIN: resolvers in private networks and sandboxes often answer NXDOMAIN for every name they
 * cannot resolve, and such an answer must never turn into "the domain does not exist". The rule:
 * docs/decisions.md, "Results" → "trusting NXDOMAIN".
 */
import { parse } from 'tldts'
import type { RiskcheckWarning } from '../options.js'
import type { DnsSource } from './dns-types.js'

/** What an NXDOMAIN for a name is worth. */
export type NxdomainTrust =
  /** believed: the resolver resolves the name's TLD, or the TLD is not a real one */
  | 'trusted'
  /** not believed: the question about the TLD got no answer (timeout, SERVFAIL …) */
  | 'unconfirmed'
  /** not believed: the resolver denies a real top-level domain */
  | 'resolver_broken'

/** The top-level domain (last label) of a name, lower-case, without a trailing dot; '' for none. */
export function topLevelDomainOf(name: string): string {
  let n = name.toLowerCase()
  while (n.endsWith('.')) n = n.slice(0, -1)
  return n.slice(n.lastIndexOf('.') + 1)
}

/** True when `tld` is a top-level domain of the ICANN section of the Public Suffix List (`com`, `uk`, `xn--p1ai` …). */
export function isIcannTopLevelDomain(tld: string): boolean {
  if (tld === '' || tld.length > 63 || tld.includes('.')) return false
  return parse(`x.${tld}`, { allowPrivateDomains: false }).isIcann === true
}

/** The warning for a resolver that denies real top-level domains. */
export function brokenResolverWarning(servers: readonly string[]): RiskcheckWarning {
  const who = servers.length > 0 ? `The DNS resolver ${servers.join(', ')}` : 'The system DNS resolver'
  return {
    code: 'dns_resolver_broken',
    message:
      `${who} answers NXDOMAIN even for top-level domains that exist (it denies every name it cannot resolve, as ` +
      'resolvers in private networks and sandboxes do). Its NXDOMAIN answers are not trusted: lookups that depend on ' +
      'them answer unknown (partial) instead of invalid. Set dns.servers (--dns-server) to a resolver that reaches the ' +
      'internet, or run offline.',
  }
}

/**
 * Decides whether an NXDOMAIN answer for `name` can be believed (see the module comment). Never rejects. Calls `warn`
 * with a `dns_resolver_broken` warning when the resolver denies a real top-level domain.
 *
 * @example
 * if ((await mx).status === 'nxdomain' && (await trustNxdomain(dns, 'gmail.com', warn)) !== 'trusted') {
 *   // unknown, partial — never invalid
 * }
 */
export async function trustNxdomain(
  dns: DnsSource,
  name: string,
  warn?: (warning: RiskcheckWarning) => void,
): Promise<NxdomainTrust> {
  const tld = topLevelDomainOf(name)
  if (!isIcannTopLevelDomain(tld)) return 'trusted'
  let status: string
  try {
    status = (await dns.resolveNs(tld)).status
  } catch {
    status = 'error'
  }
  if (status === 'ok' || status === 'nodata') return 'trusted'
  if (status !== 'nxdomain') return 'unconfirmed'
  let servers: string[] = []
  try {
    servers = dns.servers?.() ?? []
  } catch {
    // a replaced source without a server list: the warning names the system resolver
  }
  warn?.(brokenResolverWarning(servers))
  return 'resolver_broken'
}

/**
 * A loopback mail network for the SMTP tests that go through the facade: a fake DNS server whose zones the test
 * gives, fake SMTP servers, and `createRiskcheck` options pointing at them (RDAP off, no cache).
 */
import type { RiskcheckOptions } from '../src/options.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { startDnsServer, type FakeDnsServer, type Zones } from './fake-internet/dns-server.js'

/** The running network. */
export interface MailNet {
  dns: FakeDnsServer
  /** A riskcheck instance on this network; `smtp` options are merged over the network's. Closed by close(). */
  riskcheck(options?: RiskcheckOptions): Riskcheck
  close(): Promise<void>
}

/** MX records of `domain` pointing at `hosts`, in that order of preference. */
export function mxOf(...hosts: string[]): Array<{ priority: number; exchange: string }> {
  return hosts.map((exchange, i) => ({ priority: 10 * (i + 1), exchange }))
}

/** Starts the DNS server; every riskcheck instance sends SMTP to `smtpPort` and allows loopback mail servers. */
export async function startMailNet(zones: Zones, smtpPort: number): Promise<MailNet> {
  const dns = await startDnsServer({ zones })
  const instances: Riskcheck[] = []
  return {
    dns,
    riskcheck(options = {}) {
      const rc = createRiskcheck({
        cache: false,
        ...options,
        dns: { servers: [dns.address], timeoutMs: 500, tries: 1 },
        rdap: { enabled: false },
        smtp: { heloName: 'verifier.riskcheck-tests.org', allowPrivateHosts: true, ...options.smtp, port: smtpPort },
      })
      instances.push(rc)
      return rc
    },
    async close() {
      await Promise.all(instances.map((rc) => rc.close()))
      await dns.close()
    },
  }
}

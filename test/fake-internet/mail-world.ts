/**
 * A small fake mail internet for tests and benchmarks: the loopback DNS server, the loopback SMTP server, and a
 * check context whose sources point at them (the SMTP source resolves MX hosts through the same DNS source).
 */
import type { CheckContext } from '../../src/checks/types.js'
import { emailCheck, type EmailOptions } from '../../src/checks/email/index.js'
import { CACHE_TTL_MS } from '../../src/cache.js'
import { UNMETERED } from '../../src/credits.js'
import { runLookup, type LookupEnv } from '../../src/lookup.js'
import { resolveOptions, type RiskcheckOptions } from '../../src/options.js'
import type { EmailResult } from '../../src/schema.js'
import { DEFAULT_POLICY } from '../../src/scoring/rules.js'
import { createSources } from '../../src/sources/index.js'
import { createDnsHostResolver, createSmtpSource, type SmtpSourceOptions } from '../../src/sources/smtp/index.js'
import { startDnsServer, type FakeDnsServer, type Zones } from './dns-server.js'
import { startSmtpServer, type FakeSmtpOptions, type FakeSmtpServer } from './smtp-server.js'

/** Options of {@link startMailWorld}. */
export interface MailWorldOptions {
  zones: Zones
  smtpServer?: FakeSmtpOptions
  /** Options of the riskcheck context (dns.servers and smtp.port are filled in). */
  riskcheck?: RiskcheckOptions
  /** Extra options of the SMTP source (timeouts, limits). */
  smtpSource?: SmtpSourceOptions
}

/** The running world. */
export interface MailWorld {
  dnsServer: FakeDnsServer
  smtpServer: FakeSmtpServer
  ctx: CheckContext
  env: LookupEnv
  /** Runs the email lookup end to end (prepare → run → score → result), as the facade would. */
  email(input: unknown, opts?: EmailOptions): Promise<EmailResult>
  close(): Promise<void>
}

/** Starts the fake DNS and SMTP servers and a context wired to them. */
export async function startMailWorld(options: MailWorldOptions): Promise<MailWorld> {
  const dnsServer = await startDnsServer({ zones: options.zones })
  const smtpServer = await startSmtpServer(options.smtpServer ?? {})
  const resolved = resolveOptions({
    ...options.riskcheck,
    dns: { timeoutMs: 300, tries: 1, ...options.riskcheck?.dns, servers: [dnsServer.address] },
    smtp: { timeoutMs: 1000, heloName: 'verifier.riskcheck-tests.org', ...options.riskcheck?.smtp, port: smtpServer.port },
    // No test reaches the real IANA bootstrap: RDAP is off unless the test configures its loopback server.
    rdap: options.riskcheck?.rdap ?? { enabled: false },
  })
  const base = createSources(resolved)
  const dns = base.dns
  const smtp = createSmtpSource({
    port: resolved.smtp.port,
    heloName: resolved.smtp.heloName,
    mailFrom: resolved.smtp.mailFrom,
    connectTimeoutMs: resolved.smtp.timeoutMs,
    replyTimeoutMs: resolved.smtp.timeoutMs,
    totalTimeoutMs: resolved.smtp.totalTimeoutMs,
    maxConnectionsPerHost: resolved.smtp.maxConnectionsPerHost,
    maxRejectionsPerSession: resolved.smtp.maxRejectionsPerSession,
    proxy: resolved.smtp.proxy,
    onWarning: resolved.warn,
    resolveHost: createDnsHostResolver(dns),
    allowPrivateHosts: true,
    ...options.smtpSource,
  })
  const ctx: CheckContext = {
    now: resolved.now,
    mode: resolved.mode,
    offline: resolved.offline,
    options: resolved,
    sources: {
      dns,
      smtp,
      get rdap() {
        return base.rdap
      },
      get ip() {
        return base.ip
      },
      get phone() {
        return base.phone
      },
      get data() {
        return base.data
      },
    },
  }
  const env: LookupEnv = { ctx, cache: null, cacheTtlMs: CACHE_TTL_MS, ledger: UNMETERED, policy: DEFAULT_POLICY }
  return {
    dnsServer,
    smtpServer,
    ctx,
    env,
    email: (input, opts) => runLookup(env, emailCheck, input, opts ?? {}) as Promise<EmailResult>,
    async close() {
      await smtp.close()
      await base.close()
      await Promise.all([dnsServer.close(), smtpServer.close()])
    },
  }
}

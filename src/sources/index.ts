/**
 * Builds the sources of a riskcheck instance from its resolved options, lazily: a source (and its data) is created
 * the first time a check touches it, so an instance used only for phone numbers never loads IP databases.
 * Sources whose user-given configuration must be validated (MMDB paths) are created eagerly by the facade.
 */
import type { Sources } from '../checks/types.js'
import type { ResolvedOptions } from '../options.js'
import { createDnsSource } from './dns.js'
import { createDnsHostResolver, createSmtpSource } from './smtp/index.js'
import { createRdapSource } from './rdap.js'
import { createIpSource } from './ip/index.js'
import { createPhoneSource } from './phone/index.js'
import { createDataProvider } from '../data/provider.js'

/** The sources plus a way to release them. */
export interface SourceSet extends Sources {
  /** Creates the sources that must fail at construction on bad configuration (user-given MMDB files). */
  validate(): void
  close(): Promise<void>
}

type Built = { -readonly [K in keyof Sources]?: Sources[K] }

/** Creates the lazy source set for `o`. Nothing is opened until first use. */
export function createSources(o: ResolvedOptions): SourceSet {
  const built: Built = {}
  const nowMs = () => o.now().getTime()
  const factories: { [K in keyof Sources]: () => Sources[K] } = {
    dns: () =>
      createDnsSource({
        ...(o.dns.servers ? { servers: o.dns.servers } : {}),
        timeoutMs: o.dns.timeoutMs,
        tries: o.dns.tries,
        cacheTtlSeconds: o.dns.cacheTtlSeconds,
        maxInFlight: o.dns.maxInFlight,
        now: nowMs,
      }),
    smtp: () =>
      createSmtpSource({
        port: o.smtp.port,
        heloName: o.smtp.heloName,
        mailFrom: o.smtp.mailFrom,
        connectTimeoutMs: o.smtp.timeoutMs,
        replyTimeoutMs: o.smtp.timeoutMs,
        totalTimeoutMs: o.smtp.totalTimeoutMs,
        maxConnectionsPerHost: o.smtp.maxConnectionsPerHost,
        maxRejectionsPerSession: o.smtp.maxRejectionsPerSession,
        proxy: o.smtp.proxy,
        allowPrivateHosts: o.smtp.allowPrivateHosts,
        // MX host names resolve through the same DNS source (its servers, cache and limits), not the OS resolver.
        resolveHost: createDnsHostResolver(get('dns')),
        onWarning: o.warn,
        now: nowMs,
      }),
    rdap: () =>
      createRdapSource({
        ...(o.rdap.bootstrapUrl ? { bootstrapUrl: o.rdap.bootstrapUrl } : {}),
        ...(o.rdap.bootstrapData ? { bootstrapData: o.rdap.bootstrapData as object } : {}),
        ...(o.rdap.fetch ? { fetch: o.rdap.fetch } : {}),
        timeoutMs: o.rdap.timeoutMs,
        now: o.now,
      }),
    // the open IP data comes from the data set in force, asked once per lookup
    ip: () => createIpSource({ ...o.ip, data: () => get('data').current().ip }),
    phone: () => createPhoneSource(o.phone),
    data: () => createDataProvider({ dataDir: o.dataDir, checkIntervalMs: o.dataCheckIntervalMs, warn: o.warn }),
  }
  const get = <K extends keyof Sources>(k: K): Sources[K] => (built[k] ??= factories[k]()) as Sources[K]
  const set: SourceSet = {
    get dns() {
      return get('dns')
    },
    get smtp() {
      return get('smtp')
    },
    get rdap() {
      return get('rdap')
    },
    get ip() {
      return get('ip')
    },
    get phone() {
      return get('phone')
    },
    get data() {
      return get('data')
    },
    validate() {
      // a data directory is opened at once: its warnings (no set installed yet) come at construction
      if (o.dataDir !== null) get('data')
      const ip = o.ip
      if (ip.cityDb || ip.countryDb || ip.asnDb || ip.ispDb || ip.anonymousDb || ip.connectionTypeDb || ip.blocklists || ip.dnsbl) get('ip')
    },
    async close() {
      const all = Object.values(built) as Array<{ close?: () => unknown }>
      for (const k of Object.keys(built)) delete built[k as keyof Built]
      await Promise.all(all.map((s) => s.close?.()))
    },
  }
  return set
}

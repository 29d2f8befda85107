/**
 * Benchmark (b) of the email lookup: a bulk-shaped run — 10,000 addresses over 200 domains, shuffled — through the
 * full email lookup (DNS + SMTP) against the loopback DNS and SMTP servers of the test suite. Reports DNS queries
 * sent (bound: ≤ 4 per unique domain), SMTP connections open at once per mail-server address (bound: the per-server
 * limit), SMTP connections opened in all, catch-all probes, outcomes and wall time; then the same work without
 * session reuse and DNS caching on a 1,000-address sample, for the ratio.
 *
 * Every MX host has its own loopback address (127.1.x.y; the fake SMTP server listens on all of them), because the
 * connection limit applies per mail-server address: hosts sharing one address would share its two connections.
 *
 *   npx tsx scripts/bench/email-bulk.ts [--addresses 10000] [--domains 200] [--concurrency 200]
 *
 * Domains: 150 with their own MX host, 40 hosted on 5 shared providers (2 MX hosts each, like hosted mail),
 * 4 catch-all, 2 greylisting, 2 null MX, 2 without MX but with an A record; 1 in 5 local parts does not exist.
 * The fake SMTP server waits 100 ms before its greeting (smtp-server's early-talker delay), like real MTAs do.
 */
import { performance } from 'node:perf_hooks'
import type { RcptDecision } from '../../test/fake-internet/smtp-server.js'
import type { Zones } from '../../test/fake-internet/dns-server.js'
import { startMailWorld } from '../../test/fake-internet/mail-world.js'

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const ADDRESSES = arg('addresses', 10_000)
const DOMAINS = arg('domains', 200)
const CONCURRENCY = arg('concurrency', 200)
const PER_HOST = 2

/** Small seeded PRNG (mulberry32) for a reproducible shuffle. */
function rng(seed: number): () => number {
  let a = seed
  return () => {
    a |= 0
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface World {
  zones: Zones
  domains: string[]
  mxHosts: Set<string>
  catchAll: Set<string>
  greylist: Set<string>
  /** The mail servers' loopback addresses. */
  addresses: string[]
}

function buildWorld(domainCount: number): World {
  const zones: Zones = {}
  const domains: string[] = []
  const mxHosts = new Set<string>()
  const catchAll = new Set<string>()
  const greylist = new Set<string>()
  const addresses: string[] = []
  /** A fresh loopback address for a new mail server. */
  const nextAddress = () => {
    const n = addresses.length + 1
    const ip = `127.1.${n >> 8}.${n & 255}`
    addresses.push(ip)
    return ip
  }
  const providers = Array.from({ length: 5 }, (_, k) => [`mx1.hosting-${k}.net`, `mx2.hosting-${k}.net`] as const)
  for (const [a, b] of providers) {
    zones[a] = { A: [nextAddress()] }
    zones[b] = { A: [nextAddress()] }
  }
  for (let i = 0; i < domainCount; i++) {
    const d = `bulk-domain-${i}.com`
    domains.push(d)
    const kind = i % 50 // per 50 domains: 0–36 own MX, 37–46 shared, 47 catch-all, 48 greylist, 49 special
    const spf = { TXT: ['v=spf1 mx -all'] }
    zones[`_dmarc.${d}`] = { TXT: ['v=DMARC1; p=quarantine'] }
    if (kind === 49) {
      // alternate null MX and A-only (implicit MX)
      zones[d] = i % 100 === 49 ? { MX: [{ priority: 0, exchange: '' }], ...spf } : { A: [nextAddress()], ...spf }
      if (i % 100 !== 49) mxHosts.add(d)
      continue
    }
    if (kind >= 37 && kind <= 46) {
      const [a, b] = providers[i % providers.length]!
      zones[d] = { MX: [{ priority: 10, exchange: a }, { priority: 20, exchange: b }], ...spf }
      mxHosts.add(a)
      mxHosts.add(b)
    } else {
      const host = `mx.${d}`
      zones[d] = { MX: [{ priority: 10, exchange: host }], ...spf }
      zones[host] = { A: [nextAddress()] }
      mxHosts.add(host)
    }
    if (kind === 47) catchAll.add(d)
    if (kind === 48) greylist.add(d)
  }
  return { zones, domains, mxHosts, catchAll, greylist, addresses }
}

function buildAddresses(domains: string[], count: number, seed: number): string[] {
  const perDomain = Math.ceil(count / domains.length)
  const out: string[] = []
  for (const d of domains) for (let j = 0; j < perDomain && out.length < count; j++) out.push(`user${j}@${d}`)
  const random = rng(seed)
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

async function runPool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!
      await fn(item)
    }
  })
  await Promise.all(workers)
}

interface RunReport {
  wallMs: number
  outcomes: Record<string, number>
  dnsQueries: number
  smtpConnections: number
  maxOpenPerServer: number
  rcpt: number
  stats: Record<string, number>
}

async function run(w: World, addresses: string[], reuse: boolean): Promise<RunReport> {
  const onRcpt = (address: string): RcptDecision => {
    const [local = '', domain = ''] = address.split('@')
    if (w.catchAll.has(domain)) return 'accept'
    if (w.greylist.has(domain)) return 'greylist'
    // only user<N> mailboxes exist (so the random catch-all probe is rejected), and 1 in 5 of them does not
    if (!/^user\d{1,6}$/.test(local)) return 'reject'
    return Number(local.slice(4)) % 5 === 4 ? 'reject' : 'accept'
  }
  const world = await startMailWorld({
    zones: w.zones,
    smtpServer: { onRcpt, extraHosts: w.addresses },
    riskcheck: {
      dns: { timeoutMs: 2000, tries: 2, maxInFlight: 48, cacheTtlSeconds: reuse ? 300 : 0 },
      smtp: { timeoutMs: 5000, maxConnectionsPerHost: PER_HOST },
    },
    smtpSource: reuse ? {} : { maxRecipientsPerSession: 1, catchAllTtlMs: 0, maxConnectionsPerHost: PER_HOST },
  })
  const outcomes: Record<string, number> = {}
  const t0 = performance.now()
  await runPool(addresses, CONCURRENCY, async (a) => {
    const r = await world.email(a)
    const key = `${r.details.smtp_check}/${r.verdict.status}`
    outcomes[key] = (outcomes[key] ?? 0) + 1
  })
  const wallMs = performance.now() - t0
  const report: RunReport = {
    wallMs,
    outcomes,
    dnsQueries: world.dnsServer.queries.length,
    smtpConnections: world.smtpServer.connections,
    maxOpenPerServer: world.smtpServer.maxOpenConnectionsPerAddress,
    rcpt: world.smtpServer.rcptCount,
    stats: { ...world.ctx.sources.smtp.stats(), ...prefix('dns.', world.ctx.sources.dns.stats()) },
  }
  await world.close()
  return report
}

function prefix(p: string, o: object): Record<string, number> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [p + k, v as number]))
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

async function main(): Promise<void> {
  const w = buildWorld(DOMAINS)
  const addresses = buildAddresses(w.domains, ADDRESSES, 42)
  const uniqueDomains = new Set(addresses.map((a) => a.split('@')[1])).size
  console.log(`${fmt(addresses.length)} addresses over ${uniqueDomains} domains, ${w.mxHosts.size} MX hosts (incl. implicit), ` +
    `${CONCURRENCY} lookups in flight, per-host limit ${PER_HOST}, Node ${process.version}\n`)

  const r = await run(w, addresses, true)
  const dnsPerDomain = r.dnsQueries / uniqueDomains
  console.log('bulk run (session reuse, DNS cache, catch-all cache):')
  console.log(`  wall time                 ${fmt(r.wallMs)} ms  (${fmt((addresses.length / r.wallMs) * 1000)} addresses/s)`)
  console.log(`  DNS queries sent          ${fmt(r.dnsQueries)}  = ${dnsPerDomain.toFixed(2)} per unique domain (bound ≤ 4: ${dnsPerDomain <= 4 ? 'OK' : 'EXCEEDED'})`)
  console.log(`  SMTP connections at once  ${r.maxOpenPerServer} at most per mail-server address (bound ≤ ${PER_HOST}: ${r.maxOpenPerServer <= PER_HOST ? 'OK' : 'EXCEEDED'})`)
  console.log(`  SMTP connections opened   ${fmt(r.smtpConnections)}  (${w.mxHosts.size} MX hosts; sessions renewed ${fmt(r.stats.sessionsRenewed ?? 0)} times after rejected recipients)`)
  console.log(`  RCPT commands             ${fmt(r.rcpt)}  (catch-all probes ${fmt(r.stats.catchAllProbes ?? 0)}, sessions reused ${fmt(r.stats.sessionsReused ?? 0)}, SMTP commands ${fmt(r.stats.commandsSent ?? 0)})`)
  console.log(`  DNS source                cache hits ${fmt(r.stats['dns.cacheHits'] ?? 0)}, de-duplicated ${fmt(r.stats['dns.deduplicated'] ?? 0)}, timeouts ${r.stats['dns.timeouts'] ?? 0}`)
  console.log(`  outcomes (smtp_check/verdict) ${JSON.stringify(r.outcomes)}`)

  const sample = addresses.slice(0, Math.min(1000, addresses.length))
  const naive = await run(w, sample, false)
  const perAddrReuse = r.wallMs / addresses.length
  const perAddrNaive = naive.wallMs / sample.length
  console.log(`\nsame lookups without reuse (1 address per SMTP session, no DNS cache, no catch-all cache), ${fmt(sample.length)} addresses:`)
  console.log(`  wall time ${fmt(naive.wallMs)} ms, DNS queries ${fmt(naive.dnsQueries)} (${(naive.dnsQueries / sample.length).toFixed(2)} per address), ` +
    `SMTP connections ${fmt(naive.smtpConnections)}, RCPT ${fmt(naive.rcpt)}`)
  console.log(`\nratios (bulk run vs no reuse, per address): time ${(perAddrNaive / perAddrReuse).toFixed(1)}× faster, ` +
    `SMTP connections ${((naive.smtpConnections / sample.length) / (r.smtpConnections / addresses.length)).toFixed(0)}× fewer, ` +
    `DNS queries ${((naive.dnsQueries / sample.length) / (r.dnsQueries / addresses.length)).toFixed(0)}× fewer`)
  const failed = dnsPerDomain > 4 || r.maxOpenPerServer > PER_HOST
  if (failed) process.exitCode = 1
}

await main()

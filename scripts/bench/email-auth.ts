/**
 * Benchmark of the email-authentication lookup against the loopback DNS server (test/fake-internet/dns-server.ts).
 *
 *   npx tsx scripts/bench/email-auth.ts [--domains 1000] [--concurrency 1,16,64]
 *
 * The DNS server runs in a child process (this file with `--serve`), so its packet encoding does not share the
 * event loop with the lookups being measured.
 *
 * Prints, in one run:
 * 1. DNS questions one lookup sends (counted on the server), per kind of domain;
 * 2. that the questions of one lookup overlap in time (every answer delayed 20 ms by the server: wall time vs. the
 *    sum of the question times, and the peak number in flight);
 * 3. lookups per second for N domains at several concurrencies, against two baselines in the same run, on plain
 *    loopback (CPU-bound) and with the server answering after 5 ms (latency-bound, closer to a real resolver):
 *    - "sequential": the same check with its DNS questions forced one after another (a naive implementation),
 *    - "raw node:dns": only the same number of questions sent with node's own Resolver (Promise.all per domain, no
 *      parsing, no grading; bounded to 48 in flight like the riskcheck DNS source) — the floor of the DNS work.
 *    Timeouts are counted: flooding the single-threaded fake server makes it drop UDP packets.
 * 5. against a DNS server that never answers, how long one lookup waits: one time-out round (every question of the
 *    lookup is asked at once and each one's limit runs from when it was asked), not two.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { Resolver } from 'node:dns/promises'
import { fileURLToPath } from 'node:url'
import { inspectEmailAuth } from '../../src/checks/email-auth/index.js'
import { createDnsSource } from '../../src/sources/dns.js'
import type { DnsAnswer, DnsSource } from '../../src/sources/dns-types.js'
import { startDnsServer, type Zones } from '../../test/fake-internet/dns-server.js'

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? (process.argv[i + 1] as string) : def
}
const DOMAINS = Number(arg('domains', '1000'))
const CONCURRENCIES = arg('concurrency', '1,16,64').split(',').map(Number)

const KEY = 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAbenchkey'
type Template = 'A+' | 'B' | 'D' | 'F' | 'C-chain' | 'sub'
const TEMPLATES: Template[] = ['A+', 'B', 'D', 'F', 'C-chain', 'sub']

function zoneFor(d: string, t: Template): Zones {
  const z: Zones = {}
  const host = t === 'sub' ? `mail.${d}` : d
  z[host] = { MX: [{ priority: 10, exchange: `mx.${d}` }], TXT: [t === 'F' ? 'v=spf1 +all' : `v=spf1 include:_spf.${d} mx -all`] }
  z[`_spf.${d}`] = { TXT: [t === 'C-chain' ? `v=spf1 include:l1.${d} ~all` : `v=spf1 ip4:192.0.2.0/24 a:relay.${d} ~all`] }
  z[`relay.${d}`] = { A: ['192.0.2.25'] }
  if (t === 'C-chain') for (let i = 1; i <= 6; i++) z[`l${i}.${d}`] = { A: ['192.0.2.1'], TXT: [`v=spf1 a include:l${i + 1}.${d}`] }
  if (t !== 'D' && t !== 'F') z[`_dmarc.${d}`] = { TXT: [`v=DMARC1; p=${t === 'B' ? 'quarantine' : 'reject'}; rua=mailto:r@${d}`] }
  if (t !== 'F') z[`selector1._domainkey.${host}`] = { TXT: [KEY] }
  if (t === 'A+') z[`default._bimi.${d}`] = { TXT: [`v=BIMI1; l=https://${d}/logo.svg`] }
  return z
}

const domains = Array.from({ length: DOMAINS }, (_, i) => ({ domain: `d${i}.bench.test`, template: TEMPLATES[i % TEMPLATES.length] as Template }))
const target = (d: { domain: string; template: Template }) => ({
  host: d.template === 'sub' ? `mail.${d.domain}` : d.domain,
  org: d.domain,
})

/** The same kinds of domains under lat.test, where the server delays every answer by LATENCY_MS. */
const LATENCY_MS = 5
const latDomains = domains.slice(0, Math.min(DOMAINS, 200)).map((d, i) => ({ domain: `d${i}.lat.test`, template: d.template }))

/** The zones: every benchmark domain, the latency domains, and slow.bench.test (every answer delayed by 20 ms). */
function buildZones(): Zones {
  const zones: Zones = {}
  for (const d of domains) Object.assign(zones, zoneFor(d.domain, d.template))
  for (const d of latDomains) {
    for (const [name, entry] of Object.entries(zoneFor(d.domain, d.template))) zones[name] = { ...entry, behaviour: { delayMs: LATENCY_MS } }
    zones[`*.${d.domain}`] = { behaviour: { delayMs: LATENCY_MS } }
  }
  for (const [name, entry] of Object.entries(zoneFor('slow.bench.test', 'A+'))) zones[name] = { ...entry, behaviour: { delayMs: 20 } }
  zones['*._domainkey.slow.bench.test'] = { behaviour: { delayMs: 20 } }
  zones['*._bimi.slow.bench.test'] = { behaviour: { delayMs: 20 } }
  return zones
}

if (process.argv.includes('--serve')) {
  // child: serve the zones, report the address, answer "count" requests with the number of questions received
  const server = await startDnsServer({ zones: buildZones() })
  process.on('message', (m) => {
    if (m === 'count') process.send?.({ count: server.queries.length })
    if (m === 'close') void server.close().then(() => process.exit(0))
  })
  process.send?.({ address: server.address })
  await new Promise(() => {})
}

const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve', '--domains', String(DOMAINS)], { execArgv: process.execArgv })
const address = await new Promise<string>((resolve) => child.once('message', (m) => resolve((m as { address: string }).address)))
const countQueries = () =>
  new Promise<number>((resolve) => {
    child.once('message', (m) => resolve((m as { count: number }).count))
    child.send('count')
  })
const sourceOptions = { servers: [address], timeoutMs: 2000, tries: 1, cacheTtlSeconds: 0 }

/** Wraps a source: records each question's start/end, and optionally forces one question at a time. */
function instrument(inner: DnsSource, sequential = false) {
  const spans: Array<[number, number]> = []
  let chain: Promise<unknown> = Promise.resolve()
  let inFlight = 0
  let peak = 0
  const wrap =
    <A extends unknown[], T>(fn: (...a: A) => Promise<DnsAnswer<T>>) =>
    (...a: A): Promise<DnsAnswer<T>> => {
      const go = async () => {
        const start = performance.now()
        inFlight++
        peak = Math.max(peak, inFlight)
        try {
          return await fn(...a)
        } finally {
          inFlight--
          spans.push([start, performance.now()])
        }
      }
      if (!sequential) return go()
      const p = chain.then(go)
      chain = p.catch(() => undefined)
      return p
    }
  const source: DnsSource = {
    resolveMx: wrap(inner.resolveMx),
    resolveTxt: wrap(inner.resolveTxt),
    resolve4: wrap(inner.resolve4),
    resolve6: wrap(inner.resolve6),
    reverse: wrap(inner.reverse),
    resolveNs: wrap(inner.resolveNs),
    stats: () => inner.stats(),
    close: () => inner.close(),
  }
  return { source, spans, peak: () => peak }
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<number> {
  const started = performance.now()
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T)
    }),
  )
  return performance.now() - started
}

// ── 1. questions per lookup ────────────────────────────────────────────────────────────────────────────────────────
console.log(`# email-auth benchmark — ${DOMAINS} domains on the loopback DNS server ${address} (child process)\n`)
console.log('## 1. DNS questions per lookup (counted on the server)\n')
console.log('| domain kind | questions | grade | SPF dns_lookups |')
console.log('|---|---:|---|---:|')
const perTemplate = new Map<Template, number>()
{
  const dns = createDnsSource(sourceOptions)
  for (const t of TEMPLATES) {
    const d = domains.find((x) => x.template === t)
    if (!d) continue
    const { host, org } = target(d)
    const before = await countQueries()
    const r = await inspectEmailAuth(dns, host, org)
    const n = (await countQueries()) - before
    perTemplate.set(t, n)
    console.log(`| ${t === 'sub' ? 'subdomain (DMARC/BIMI from org)' : t === 'C-chain' ? 'C (SPF chain > 10)' : `grade ${t}`} | ${n} | ${r.grade.grade} | ${r.spf.dnsLookups} |`)
  }
  dns.close()
}

// ── 2. overlap ─────────────────────────────────────────────────────────────────────────────────────────────────────
console.log('\n## 2. The questions of one lookup overlap (server delays every answer by 20 ms)\n')
{
  for (const sequential of [false, true]) {
    const inst = instrument(createDnsSource({ ...sourceOptions, maxInFlight: 64 }), sequential)
    const started = performance.now()
    await inspectEmailAuth(inst.source, 'slow.bench.test', 'slow.bench.test')
    const wall = performance.now() - started
    const sum = inst.spans.reduce((s, [a, b]) => s + (b - a), 0)
    const firstEnd = Math.min(...inst.spans.map(([, b]) => b))
    const beforeFirstAnswer = inst.spans.filter(([a]) => a < firstEnd).length
    console.log(
      `${sequential ? 'sequential (baseline)' : 'riskcheck (concurrent)'}: ${inst.spans.length} questions, wall ${wall.toFixed(0)} ms, ` +
        `sum of question times ${sum.toFixed(0)} ms, peak in flight ${inst.peak()}, sent before the first answer ${beforeFirstAnswer}`,
    )
    inst.source.close()
  }
}

// ── 3. throughput ──────────────────────────────────────────────────────────────────────────────────────────────────
type BenchDomain = (typeof domains)[number]
const questionsOf = (t: Template) => perTemplate.get(t) ?? 54

/** Runs `fn` over `items` with at most `limit` running at once. */
function limiter(limit: number) {
  let active = 0
  const queue: Array<() => void> = []
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= limit) await new Promise<void>((r) => queue.push(r))
    else active++
    try {
      return await fn()
    } finally {
      const next = queue.shift()
      if (next) next()
      else active--
    }
  }
}

async function throughput(list: BenchDomain[], title: string): Promise<void> {
  console.log(`\n## ${title}\n`)
  console.log('| concurrency | riskcheck lookups/s | sequential-questions lookups/s | raw node:dns lookups/s | riskcheck ÷ sequential | riskcheck ÷ raw | riskcheck partial / DNS timeouts |')
  console.log('|---:|---:|---:|---:|---:|---:|---:|')
  for (const c of CONCURRENCIES) {
    const dns = createDnsSource(sourceOptions) // default bound: 48 questions in flight
    let partial = 0
    const ours = await pool(list, c, async (d) => {
      const { host, org } = target(d)
      const r = await inspectEmailAuth(dns, host, org)
      if (r.grade.partial) partial++
    })
    const timeouts = dns.stats().timeouts
    dns.close()

    // sequential questions (one chain per worker); slow with latency, so a slice is measured
    const slice = list.slice(0, Math.min(list.length, list === domains ? 300 : Math.max(10, c * 4)))
    const started = performance.now()
    let next = 0
    await Promise.all(
      Array.from({ length: Math.min(c, slice.length) }, async () => {
        const w = instrument(createDnsSource(sourceOptions), true)
        while (next < slice.length) {
          const { host, org } = target(slice[next++] as BenchDomain)
          await inspectEmailAuth(w.source, host, org)
        }
        w.source.close()
      }),
    )
    const seqMs = performance.now() - started

    // raw: the same number of TXT questions per domain, with node's Resolver, also bounded to 48 in flight
    const resolver = new Resolver({ timeout: 2000, tries: 1 })
    resolver.setServers([address])
    const limit = limiter(48)
    const raw = await pool(list, c, async (d) => {
      const names = Array.from({ length: questionsOf(d.template) }, (_, i) => `q${i}.${d.domain}`)
      await Promise.all(names.map((name) => limit(() => resolver.resolveTxt(name).catch(() => undefined))))
    })

    const oursRate = (list.length / ours) * 1000
    const seqRate = (slice.length / seqMs) * 1000
    const rawRate = (list.length / raw) * 1000
    console.log(
      `| ${c} | ${oursRate.toFixed(0)} | ${seqRate.toFixed(0)} | ${rawRate.toFixed(0)} | ${(oursRate / seqRate).toFixed(1)}× | ${(oursRate / rawRate).toFixed(2)}× | ${partial} / ${timeouts} |`,
    )
  }
}

await throughput(domains, `3. Lookups per second, ${domains.length} domains, loopback without latency (DNS cache off: every lookup asks all its questions)`)
await throughput(latDomains, `4. Lookups per second, ${latDomains.length} domains, the server answering after ${LATENCY_MS} ms (DNS cache off)`)

// 5. A DNS server that never answers: one lookup waits one time-out round (its questions are all asked at once and
// each one's limit runs from when it was asked), not two.
{
  const dead = await startDnsServer({ zones: {}, everyName: 'timeout' })
  const roundMs = 300
  const dns = createDnsSource({ servers: [dead.address], timeoutMs: roundMs, tries: 1, cacheTtlSeconds: 0 })
  const rounds: string[] = []
  for (const [host, org] of [['silent.test', 'silent.test'], ['mail.silent.test', 'silent.test']] as const) {
    const t0 = performance.now()
    const r = await inspectEmailAuth(dns, host, org)
    rounds.push(`${host}: ${(performance.now() - t0).toFixed(0)} ms (grade ${r.grade.grade})`)
  }
  dns.close()
  await dead.close()
  console.log(`\n5. A DNS server that never answers (one round = ${roundMs} ms): ${rounds.join('; ')}`)
}

const total = await countQueries()
child.send('close')
console.log(`\n(${total} questions answered by the loopback server in this run; node ${process.version})`)

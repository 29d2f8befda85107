/**
 * Benchmark of the bulk engine. Each case runs in its own child process, so every peak RSS is
 * that case's alone:
 *
 * - phone: 100,000 phone numbers offline (mixed countries and spellings, 5 % repeats, 3 % junk) through
 *   `bulk.create` → wait (the job: rows/s) → stream the whole CSV (timed separately); compared in the same run with the
 *   same inputs through single `rc.phone()` calls one after another (the single-lookup rate), 32 at a time (results
 *   collected), and through raw libphonenumber-js (parse + isValid + getType). Target: the job at ≥ 0.8× the
 *   single-lookup rate.
 * - ip: 100,000 IP addresses offline (IPv4 and IPv6, 5 % repeats) the same way; raw = maxmind reader `get()` on the
 *   bundled city database.
 * - email: 100,000 addresses over 1,000 domains (shuffled; 12 % of mailboxes do not exist, 2 % repeats) against the
 *   loopback DNS, SMTP and RDAP servers of the test suite, run in the parent process so the child's RSS is the
 *   engine's: DNS queries, SMTP connections, RCPT commands, RDAP requests, wall time; compared with single
 *   `rc.email()` calls in input order (32 at a time: no grouping by domain, results collected).
 *
 *   npx tsx scripts/bench/bulk.ts [--n 100000] [--domains 1000] [--only phone,ip,email] [--concurrency 32]
 *
 * Target: peak RSS under 500 MB for each bulk case.
 */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

const argv = process.argv.slice(2)
function arg(name: string): string | undefined {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 ? argv[i + 1] : undefined
}
const N = Number(arg('n') ?? 100_000)
const DOMAINS = Number(arg('domains') ?? 1_000)
const CONCURRENCY = Number(arg('concurrency') ?? 32)
const ONLY = (arg('only') ?? 'phone,ip,email').split(',')

/** Small seeded PRNG (mulberry32): the same inputs on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T
const digits = (r: () => number, n: number) => Array.from({ length: n }, () => Math.floor(r() * 10)).join('')

function phoneInputs(n: number): string[] {
  const r = rng(1)
  const out: string[] = []
  const areas = ['201', '212', '305', '312', '415', '503', '617', '646', '702', '808', '917', '971']
  for (let i = 0; i < n; i++) {
    const x = r()
    if (i > 0 && x < 0.05) out.push(out[Math.floor(r() * i)] as string)
    else if (x < 0.08) out.push(pick(r, ['12345', 'call me', '+999 1234', '0000000000000000000']))
    else if (x < 0.7) {
      const a = pick(r, areas)
      const ex = `${2 + Math.floor(r() * 8)}${digits(r, 2)}`
      const line = digits(r, 4)
      out.push(pick(r, [`+1 ${a} ${ex} ${line}`, `(${a}) ${ex}-${line}`, `${a}-${ex}-${line}`, `+1${a}${ex}${line}`]))
    } else if (x < 0.8) out.push(`+44 7${digits(r, 3)} ${digits(r, 6)}`)
    else if (x < 0.9) out.push(`+49 30 ${digits(r, 8)}`)
    else out.push(`+91 9${digits(r, 4)} ${digits(r, 5)}`)
  }
  return out
}

function ipInputs(n: number): string[] {
  const r = rng(2)
  const out: string[] = []
  for (let i = 0; i < n; i++) {
    const x = r()
    if (i > 0 && x < 0.05) out.push(out[Math.floor(r() * i)] as string)
    else if (x < 0.06) out.push('not-an-ip')
    else if (x < 0.9) out.push([0, 0, 0, 0].map(() => Math.floor(r() * 256)).join('.'))
    else out.push(`2${pick(r, ['a0', '60', '40', '00'])}${Math.floor(r() * 16).toString(16)}:${Array.from({ length: 7 }, () => Math.floor(r() * 65536).toString(16)).join(':')}`)
  }
  return out
}

const domainOf = (d: number) => `corp${d}.com`

function emailInputs(n: number, domains: number): string[] {
  const r = rng(3)
  const out: string[] = []
  for (let i = 0; i < n; i++) {
    const x = r()
    if (i > 0 && x < 0.02) out.push(out[Math.floor(r() * i)] as string)
    else out.push(`${x < 0.12 ? 'nobody' : 'user'}${i}@${domainOf(Math.floor(r() * domains))}`)
  }
  return out
}

interface CaseResult {
  name: string
  rows: number
  unique?: number
  wallMs: number
  /** CPU time of the case's process (user + system), for rates that a busy shared machine distorts less */
  cpuMs?: number
  peakRssMb: number
  csvBytes?: number
  notes?: Record<string, unknown>
}

const peakRssMb = () => Math.round(process.resourceUsage().maxRSS / 1024)

async function pool<T>(items: readonly T[], width: number, fn: (x: T) => Promise<unknown>): Promise<unknown[]> {
  const results = new Array<unknown>(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++
        try {
          results[i] = await fn(items[i] as T)
        } catch (e) {
          results[i] = { error: String(e) }
        }
      }
    }),
  )
  return results
}

// ─── child: one case ─────────────────────────────────────────────────────────────────────────────────────────────

async function runBulkCase(type: 'phone' | 'ip' | 'email', inputs: string[], env: import('../../src/lookup.js').LookupEnv, extra: object = {}) {
  const { createBulkEngine } = await import('../../src/bulk/index.js')
  const bulk = createBulkEngine(env, { concurrency: CONCURRENCY })
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  const job = await bulk.create({ type, inputs, ...extra })
  inputs.length = 0
  const done = await bulk.waitFor(job.id)
  const runMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  const runCpuMs = (cpu.user + cpu.system) / 1000
  const peakRssBeforeCsvMb = peakRssMb()
  let csvBytes = 0
  for await (const chunk of await bulk.resultsCsv(job.id)) csvBytes += (chunk as Buffer).length
  const wallMs = performance.now() - t0
  await bulk.close()
  return { done, runMs, runCpuMs, wallMs, csvBytes, peakRssBeforeCsvMb }
}

/** Riskcheck options pointing every source of the email lookup at the parent's loopback servers. */
function mailOptions(): import('../../src/options.js').RiskcheckOptions {
  const rdapUrl = arg('rdap-url')!
  return {
    dns: { servers: [arg('dns-address')!], timeoutMs: 2000, tries: 1 },
    smtp: { port: Number(arg('smtp-port')), timeoutMs: 5000, heloName: 'verifier.riskcheck-bench.org', allowPrivateHosts: true },
    rdap: {
      timeoutMs: 5000,
      bootstrapData: { version: '1.0', publication: '2026-11-01T00:00:00Z', description: 'loopback', services: [[['com'], [`${rdapUrl}/rdap/`]]] },
    },
    cache: { maxEntries: 10_000 },
  }
}

async function child(name: string): Promise<CaseResult> {
  const [kind, variant] = name.split(':') as ['phone' | 'ip' | 'email', 'bulk' | 'loop' | 'single' | 'raw']
  const inputs = kind === 'phone' ? phoneInputs(N) : kind === 'ip' ? ipInputs(N) : emailInputs(N, DOMAINS)
  const rows = inputs.length

  if (variant === 'raw' && kind === 'phone') {
    const { parsePhoneNumberFromString } = await import('libphonenumber-js/max')
    const t0 = performance.now()
    let valid = 0
    for (const s of inputs) {
      const p = parsePhoneNumberFromString(s, 'US')
      if (p?.isValid()) valid++
      p?.getType()
    }
    return { name, rows, wallMs: performance.now() - t0, peakRssMb: peakRssMb(), notes: { valid } }
  }
  if (variant === 'raw' && kind === 'ip') {
    const { Reader } = await import('maxmind')
    const { readFileSync } = await import('node:fs')
    const { getDefaultIpDataPaths } = await import('../../src/sources/ip/data-paths.js')
    const { isIP } = await import('node:net')
    const paths = getDefaultIpDataPaths()
    const t0 = performance.now()
    const v4 = new Reader(readFileSync(paths.cityV4))
    const v6 = new Reader(readFileSync(paths.cityV6))
    let found = 0
    for (const s of inputs) {
      const v = isIP(s)
      if (v === 0) continue
      if ((v === 4 ? v4 : v6).get(s)) found++
    }
    return { name, rows, wallMs: performance.now() - t0, peakRssMb: peakRssMb(), notes: { found, note: 'city lookup only, databases loaded in the timing' } }
  }

  if (kind === 'email') {
    const { createRiskcheck } = await import('../../src/riskcheck.js')
    const rc = createRiskcheck(mailOptions())
    const sources = rc.env.ctx.sources
    try {
      if (variant === 'bulk') {
        const r = await runBulkCase('email', inputs, rc.env)
        return {
          name,
          rows,
          unique: r.done.unique_inputs,
          wallMs: r.wallMs,
          peakRssMb: peakRssMb(),
          csvBytes: r.csvBytes,
          notes: { runMs: Math.round(r.runMs), peakRssBeforeCsvMb: r.peakRssBeforeCsvMb, results: r.done.results, smtp: sources.smtp.stats(), dns: sources.dns.stats() },
        }
      }
      const t0 = performance.now()
      const results = await pool(inputs, CONCURRENCY, (s) => rc.email(s))
      return {
        name,
        rows,
        wallMs: performance.now() - t0,
        peakRssMb: peakRssMb(),
        notes: { collected: results.length, smtp: sources.smtp.stats(), dns: sources.dns.stats() },
      }
    } finally {
      await rc.close()
    }
  }

  const { createRiskcheck } = await import('../../src/riskcheck.js')
  const rc = createRiskcheck({ offline: true })
  try {
    if (variant === 'bulk') {
      const r = await runBulkCase(kind, inputs, rc.env, kind === 'phone' ? { country: 'US' } : {})
      return {
        name,
        rows,
        unique: r.done.unique_inputs,
        wallMs: r.wallMs,
        peakRssMb: peakRssMb(),
        csvBytes: r.csvBytes,
        cpuMs: r.runCpuMs,
        notes: {
          jobRowsPerSec: Math.round(rows / (r.runMs / 1000)),
          jobRowsPerCpuSec: Math.round(rows / (r.runCpuMs / 1000)),
          runMs: Math.round(r.runMs),
          csvMs: Math.round(r.wallMs - r.runMs),
          peakRssBeforeCsvMb: r.peakRssBeforeCsvMb,
          results: r.done.results,
        },
      }
    }
    const t0 = performance.now()
    if (variant === 'single') {
      const cpu0 = process.cpuUsage()
      for (const s of inputs) {
        try {
          await (kind === 'phone' ? rc.phone(s, { country: 'US' }) : rc.ip(s))
        } catch {
          // INVALID_INPUT for the junk: counted like a lookup
        }
      }
      const cpu = process.cpuUsage(cpu0)
      return { name, rows, wallMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000, peakRssMb: peakRssMb() }
    }
    const results = await pool(inputs, CONCURRENCY, (s) => (kind === 'phone' ? rc.phone(s, { country: 'US' }) : rc.ip(s)))
    return { name, rows, wallMs: performance.now() - t0, peakRssMb: peakRssMb(), notes: { collected: results.length } }
  } finally {
    await rc.close()
  }
}

// ─── parent: spawn the cases, run the loopback servers, print the table ──────────────────────────────────────────

function spawnCase(name: string, extra: string[] = []): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--case', name, '--n', String(N), '--domains', String(DOMAINS), '--concurrency', String(CONCURRENCY), ...extra], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    p.stdout.on('data', (c) => (out += String(c)))
    p.on('error', reject)
    p.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_RESULT '))
      if (code !== 0 || !line) reject(new Error(`case ${name} exited ${code}: ${out.slice(-2000)}`))
      else resolve(JSON.parse(line.slice('BENCH_RESULT '.length)) as CaseResult)
    })
  })
}

async function parent(): Promise<void> {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
  const results: CaseResult[] = []
  const report = (r: CaseResult) => {
    results.push(r)
    const rate = r.rows / (r.wallMs / 1000)
    console.log(
      `${r.name.padEnd(12)} ${fmt(r.rows).padStart(8)} rows  ${(r.wallMs / 1000).toFixed(2).padStart(7)} s  ${fmt(rate).padStart(8)} rows/s  peak RSS ${String(r.peakRssMb).padStart(4)} MB` +
        (r.unique !== undefined ? `  unique ${fmt(r.unique)}` : '') +
        (r.csvBytes !== undefined ? `  csv ${(r.csvBytes / 1e6).toFixed(1)} MB` : ''),
    )
    if (r.notes) console.log(`             ${JSON.stringify(r.notes)}`)
  }
  console.log(`bulk benchmark: n=${fmt(N)}, concurrency ${CONCURRENCY}, node ${process.version}, each case in its own process\n`)
  for (const kind of ['phone', 'ip'] as const) {
    if (!ONLY.includes(kind)) continue
    for (const v of ['bulk', 'single', 'loop', 'raw']) report(await spawnCase(`${kind}:${v}`))
    const [b, one, l, w] = results.slice(-4) as [CaseResult, CaseResult, CaseResult, CaseResult]
    const jobRate = Number((b.notes as { jobRowsPerSec: number }).jobRowsPerSec)
    const singleRate = one.rows / (one.wallMs / 1000)
    const jobCpuRate = Number((b.notes as { jobRowsPerCpuSec: number }).jobRowsPerCpuSec)
    const singleCpuRate = one.rows / ((one.cpuMs ?? one.wallMs) / 1000)
    console.log(
      `  ${kind}: the job ${fmt(jobCpuRate)} rows per CPU-second = ${(jobCpuRate / singleCpuRate).toFixed(2)}× the single-lookup rate (${fmt(singleCpuRate)}/CPU-s; target ≥ 0.8×);` +
        ` wall ${fmt(jobRate)} vs ${fmt(singleRate)}/s = ${(jobRate / singleRate).toFixed(2)}×` +
        ` · job + CSV ${(b.wallMs / one.wallMs).toFixed(2)}× the single-lookups time · vs 32 at a time ${(b.wallMs / l.wallMs).toFixed(2)}×, RSS ${(b.peakRssMb / l.peakRssMb).toFixed(2)}×` +
        ` · bulk/raw-library time ${(b.wallMs / w.wallMs).toFixed(1)}× · bulk peak RSS ${b.peakRssMb < 500 ? 'under' : 'OVER'} 500 MB\n`,
    )
  }
  if (ONLY.includes('email')) {
    const { startDnsServer } = await import('../../test/fake-internet/dns-server.js')
    const { startSmtpServer } = await import('../../test/fake-internet/smtp-server.js')
    const { startRdapServer } = await import('../../test/fake-internet/rdap-server.js')
    const zones: import('../../test/fake-internet/dns-server.js').Zones = {}
    // each domain's mail server on its own loopback address: the SMTP connection limit applies per server address
    const serverAddress = (d: number) => `127.1.${(d + 1) >> 8}.${(d + 1) & 255}`
    for (let d = 0; d < DOMAINS; d++) {
      const dom = domainOf(d)
      zones[dom] = { MX: [{ priority: 10, exchange: `mx.${dom}` }], TXT: ['v=spf1 mx -all'] }
      zones[`mx.${dom}`] = { A: [serverAddress(d)] }
      zones[`_dmarc.${dom}`] = { TXT: ['v=DMARC1; p=reject'] }
    }
    const dns = await startDnsServer({ zones })
    const smtp = await startSmtpServer({
      onRcpt: (a) => (/^user\d+@/.test(a) ? 'accept' : 'reject'),
      extraHosts: Array.from({ length: DOMAINS }, (_, d) => serverAddress(d)),
    })
    const rdapDomains: Record<string, import('../../test/fake-internet/rdap-server.js').RdapDomainSpec> = {}
    for (let d = 0; d < DOMAINS; d++) rdapDomains[domainOf(d)] = { kind: 'domain', created: new Date(Date.UTC(2000 + (d % 25), d % 12, 1)) }
    const rdap = await startRdapServer({ domains: rdapDomains })
    try {
      for (const v of ['bulk', 'loop']) {
        const q0 = dns.queries.length
        const c0 = smtp.connections
        const r0 = smtp.rcptCount
        const h0 = rdap.requests.length
        const t0 = performance.now()
        const r = await spawnCase(`email:${v}`, ['--dns-address', dns.address, '--smtp-port', String(smtp.port), '--rdap-url', rdap.url])
        r.notes = {
          dnsQueries: dns.queries.length - q0,
          rdapRequests: rdap.requests.length - h0,
          smtpConnections: smtp.connections - c0,
          maxOpenSmtpConnections: smtp.maxOpenConnections,
          rcpt: smtp.rcptCount - r0,
          childWallS: ((performance.now() - t0) / 1000).toFixed(1),
          ...r.notes,
        }
        report(r)
      }
      const [b, l] = results.slice(-2) as [CaseResult, CaseResult]
      const n = (r: CaseResult, k: string) => Number((r.notes as Record<string, number>)[k])
      console.log(
        `  email: bulk/single-lookups time ${(b.wallMs / l.wallMs).toFixed(2)}×, DNS queries ${(n(b, 'dnsQueries') / n(l, 'dnsQueries')).toFixed(2)}×, ` +
          `SMTP connections ${(n(b, 'smtpConnections') / n(l, 'smtpConnections')).toFixed(2)}×, RSS ${(b.peakRssMb / l.peakRssMb).toFixed(2)}× · bulk peak RSS ${b.peakRssMb < 500 ? 'under' : 'OVER'} 500 MB\n`,
      )
    } finally {
      await rdap.close()
      await smtp.close()
      await dns.close()
    }
  }
  const file = join(tmpdir(), `riskcheck-bench-bulk-${Date.now()}.json`)
  writeFileSync(file, JSON.stringify(results, null, 2))
  console.log(`raw numbers: ${file}`)
}

const caseName = arg('case')
if (caseName) {
  const r = await child(caseName)
  process.stdout.write(`BENCH_RESULT ${JSON.stringify(r)}\n`)
  process.exit(0)
} else {
  await parent()
}

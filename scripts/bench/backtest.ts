/**
 * Benchmark: re-scoring 1,000,000 stored answers under a candidate policy (`backtest` over `readResults`, what
 * `riskcheck policy test` runs), against the bare cost of reading and parsing the same file, and against re-scoring
 * every answer with the engine's `evaluate()` one by one (the scoring path lookups use).
 *
 * Answers are realistic: templates come from real lookups in test mode (every documented email, IP and phone input,
 * as bulk rows with their details, and combined checks in every context); 1,000,000 answers are drawn from them
 * (deterministic PRNG, 70 % of draws from the clean approve answers, as in real traffic) with unique inputs, and
 * written once to temporary files:
 *   rows.jsonl    bulk rows as JSON lines (`riskcheck bulk` / the HTTP results pages)
 *   rows.csv      the same email rows as results.csv (with the factors column)
 *   checks.jsonl  combined-check results as JSON lines (`riskcheck check … --compact`), COUNT / 4 of them
 * 10 % of the inputs are labelled (fraud when the stored action is review or block, else good).
 *
 * Measured, per file, one after the other in one process (each after a warm-up on the first 50,000 lines):
 *   parse      read the file and JSON.parse each line (CSV: split each line) — the floor
 *   backtest   readResults + backtest(…, { labels }): parse, normalize, re-score, matrix, labels, histogram, sweep
 *   naive      what re-scoring costs without backtest: readline and JSON.parse of each whole line (CSV: the project's
 *              general CSV reader, whole rows), then evaluate() for every answer and the matrix
 * and, on answers already in memory, re-score + aggregate only: backtest vs evaluate per answer; last, the CLI end
 * to end (`riskcheck policy test --labels …` on the bulk rows, built dist/) in a child process whose heap is capped
 * at 128 MB — it streams, so a million answers fit.
 * Prints answers/s, seconds, the ratios backtest ÷ parse and naive ÷ backtest, and the process's peak RSS.
 *
 * Run: npx tsx scripts/bench/backtest.ts [count]   (default 1,000,000; needs ~1.5 GB of free disk in the temp dir)
 */
import { spawnSync } from 'node:child_process'
import { createReadStream, createWriteStream, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { once } from 'node:events'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { csvColumns, csvLine, csvRecord, readCsvRecords } from '../../src/bulk/csv.js'
import type { BulkRowRecord } from '../../src/bulk/types.js'
import { CHECKS } from '../../src/checks/registry.js'
import { createRiskcheck } from '../../src/riskcheck.js'
import { ACTIONS, CONTEXTS, type Action, type BulkResultRow, type BulkType, type LookupResult } from '../../src/schema.js'
import { backtest, createPolicy, evaluate, readResults, toStoredAnswer, type FactorCode, type Label, type StoredAnswer } from '../../src/scoring/index.js'
import { createInterface } from 'node:readline'
import { xorshift } from '../../test/xorshift.js'

const COUNT = Number(process.argv[2] ?? 1_000_000)
const WARMUP = 50_000

const next = xorshift(2026)
const rand = (): number => next() / 4294967296
const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)] as T

let peakRss = 0
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50)

// ─── templates from real lookups ──────────────────────────────────────────────────────────────────────────────────
const rc = createRiskcheck({ mode: 'test', now: () => new Date('2026-06-01T00:00:00Z') })
const rowTemplates: Array<{ type: BulkType; row: BulkResultRow }> = []
for (const type of ['email', 'ip', 'phone'] as const) {
  const job = await rc.bulk.create({ type, inputs: CHECKS[type].testInputs.map((t) => t.input) })
  await rc.bulk.waitFor(job.id)
  const page = await rc.bulk.results(job.id, { limit: 1000 })
  for (const row of page.data) rowTemplates.push({ type, row })
}
const checkTemplates: LookupResult[] = []
const emails = CHECKS.email.testInputs.map((t) => t.input).filter((e) => e.includes('@'))
const ips = CHECKS.ip.testInputs.map((t) => t.input).slice(0, 14)
for (const context of [null, ...CONTEXTS])
  for (const email of emails)
    for (const ip of ips.slice(0, 5)) checkTemplates.push(await rc.check({ email, ip, phone: rand() < 0.5 ? '+12015550102' : null, context }))
await rc.close()

const approvedRows = rowTemplates.filter((t) => t.row.action === 'approve')
const drawRow = () => (rand() < 0.7 ? pick(approvedRows) : pick(rowTemplates))
const approvedChecks = checkTemplates.filter((c) => c.recommendation.action === 'approve')
const drawCheck = () => (rand() < 0.7 ? pick(approvedChecks) : pick(checkTemplates))
const emailRows = rowTemplates.filter((t) => t.type === 'email')
const approvedEmailRows = emailRows.filter((t) => t.row.action === 'approve')
const labelOf = (action: Action | null): Label => (action === 'review' || action === 'block' ? 'fraud' : 'good')

// ─── files ────────────────────────────────────────────────────────────────────────────────────────────────────────
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bench-backtest-'))
const labels = new Map<string, Label>()

async function writeLines(path: string, n: number, line: (i: number) => string): Promise<void> {
  const out = createWriteStream(path, { highWaterMark: 1 << 20 })
  let buf = ''
  for (let i = 0; i < n; i++) {
    buf += line(i) + '\n'
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await once(out, 'drain')
      buf = ''
    }
  }
  out.end(buf)
  await once(out, 'close')
}

const t0 = performance.now()
const rssBefore = process.memoryUsage().rss
const rowsPath = join(dir, 'rows.jsonl')
await writeLines(rowsPath, COUNT, (i) => {
  const t = drawRow()
  const input = `${i}-${t.row.input}`
  if (i % 10 === 0) labels.set(input, labelOf(t.row.action))
  return JSON.stringify({ ...t.row, input })
})
const csvPath = join(dir, 'rows.csv')
await writeLines(csvPath, COUNT + 1, (i) => {
  if (i === 0) return csvColumns('email').join(',')
  const t = rand() < 0.7 ? pick(approvedEmailRows) : pick(emailRows)
  const row = { ...t.row, input: `${i - 1}-${t.row.input}`, index: i, state: 'done', retryable: false } as BulkRowRecord
  return csvLine(csvRecord('email', row)).trimEnd() // what riskcheck writes as results.csv
})
const checksPath = join(dir, 'checks.jsonl')
const CHECKS_COUNT = Math.floor(COUNT / 4)
await writeLines(checksPath, CHECKS_COUNT, (i) => {
  const c = drawCheck()
  const input = { ...(c.request.input as Record<string, unknown>), email: `${i}.${(c.request.input as { email: string }).email}` }
  return JSON.stringify({ ...c, request: { ...c.request, input } })
})
const mb = (p: string) => (statSync(p).size / 1e6).toFixed(0)
console.log(
  `wrote ${COUNT.toLocaleString('en-US')} rows (${mb(rowsPath)} MB JSON lines, ${mb(csvPath)} MB CSV) and ${CHECKS_COUNT.toLocaleString('en-US')} combined checks (${mb(checksPath)} MB) in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${labels.size.toLocaleString('en-US')} labels`,
)

// ─── measured paths ───────────────────────────────────────────────────────────────────────────────────────────────
const policy = createPolicy({
  weights: { email_disposable: 85, ip_vpn: 50, ip_datacenter: 20 },
  thresholds: { high: 70 },
  rules: ['unusable_input_blocks', { name: 'tor_blocks', when: { any: ['ip_tor'] }, action: 'block' }],
})

async function parseOnly(path: string, csv: boolean, limit = Infinity): Promise<number> {
  let n = 0
  let rest = ''
  for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
    const text = rest + chunk
    let start = 0
    for (let nl = text.indexOf('\n'); nl !== -1 && n < limit; nl = text.indexOf('\n', start)) {
      const line = text.slice(start, nl)
      start = nl + 1
      if (csv ? line.split(',').length > 0 : JSON.parse(line) !== undefined) n++
    }
    if (n >= limit) break
    rest = text.slice(start)
  }
  return n
}

async function* take(it: AsyncIterable<unknown>, limit: number): AsyncGenerator<unknown> {
  let n = 0
  for await (const x of it) {
    if (n++ >= limit) return
    yield x
  }
}

async function viaBacktest(path: string, limit = Infinity): Promise<number> {
  const r = await backtest(limit === Infinity ? readResults(path) : take(readResults(path), limit), policy, { labels, maxChanges: 100 })
  return r.read
}

/** What re-scoring costs without riskcheck's backtest: every whole line parsed, then evaluate() for each answer. */
async function viaEvaluate(path: string, csv: boolean, limit = Infinity): Promise<number> {
  const matrix = Object.fromEntries(ACTIONS.map((a) => [a, Object.fromEntries(ACTIONS.map((b) => [b, 0]))])) as Record<Action, Record<Action, number>>
  let n = 0
  const count = (item: unknown) => {
    n++
    const a = toStoredAnswer(item)
    if (typeof a === 'string' || !a.action) return
    matrix[a.action][evaluate(a.factors as FactorCode[], { policy, context: a.context ?? null }).action]++
  }
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 })
  if (csv) {
    // The project's general CSV reader (the one `riskcheck bulk` reads input files with), whole rows.
    let header: string[] | null = null
    for await (const cells of readCsvRecords(stream)) {
      if (n >= limit) break
      if (!header) {
        header = cells
        continue
      }
      const rec = Object.fromEntries(header.map((h, i) => [h, cells[i] ?? '']))
      count({ input: rec.input, action: rec.action || null, error: rec.error || null, factors: rec.factors ? String(rec.factors).split(';') : [] })
    }
    stream.destroy()
    return n
  }
  for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
    if (n >= limit) break
    count(JSON.parse(line))
  }
  stream.destroy()
  return n
}

interface Timing {
  n: number
  s: number
}
async function time(f: () => Promise<number>): Promise<Timing> {
  const start = performance.now()
  const n = await f()
  return { n, s: (performance.now() - start) / 1000 }
}
const rate = (t: Timing) => `${Math.round(t.n / t.s).toLocaleString('en-US')}/s (${t.s.toFixed(2)} s)`

for (const [name, path, csv] of [
  ['bulk rows, JSON lines', rowsPath, false],
  ['bulk rows, results.csv', csvPath, true],
  ['combined checks, JSON lines', checksPath, false],
] as const) {
  await parseOnly(path, csv, WARMUP)
  await viaBacktest(path, WARMUP)
  await viaEvaluate(path, csv, WARMUP)
  const parse = await time(() => parseOnly(path, csv))
  const bt = await time(() => viaBacktest(path))
  const ev = await time(() => viaEvaluate(path, csv))
  console.log(`\n${name} (${mb(path)} MB):`)
  console.log(`  parse only  ${rate(parse)}`)
  console.log(`  backtest    ${rate(bt)}  = ${(bt.s / parse.s).toFixed(2)}× parse`)
  console.log(`  naive       ${rate(ev)}  = ${(ev.s / bt.s).toFixed(2)}× backtest`)
}

const peakStreaming = peakRss

// The CLI end to end on the bulk rows, in a child process whose heap is capped at 128 MB: it streams.
const labelsPath = join(dir, 'labels.csv')
await writeLines(labelsPath, labels.size + 1, (() => {
  const it = labels.entries()
  return (i: number) => {
    if (i === 0) return 'input,label'
    const [input, label] = it.next().value as [string, Label]
    return `${JSON.stringify(input)},${label}`
  }
})())
const policyPath = join(dir, 'policy.json')
writeFileSync(policyPath, JSON.stringify({ weights: { email_disposable: 85, ip_vpn: 50, ip_datacenter: 20 }, thresholds: { high: 70 } }))
const cli = fileURLToPath(new URL('../../bin/riskcheck.js', import.meta.url))
if (existsSync(fileURLToPath(new URL('../../dist/cli.js', import.meta.url)))) {
  const start = performance.now()
  const run = spawnSync(process.execPath, ['--max-old-space-size=128', cli, 'policy', 'test', '--policy', policyPath, '--results', rowsPath, '--labels', labelsPath], { encoding: 'utf8', maxBuffer: 1 << 24 })
  const s = (performance.now() - start) / 1000
  if (run.status !== 0) console.log(`\nCLI failed (${run.status}): ${run.stderr.slice(0, 500)}`)
  else console.log(`\nriskcheck policy test (CLI, node --max-old-space-size=128) on ${COUNT.toLocaleString('en-US')} bulk rows with labels: ${s.toFixed(2)} s — ${run.stdout.split('\n')[1]}`)
} else console.log('\n(dist/ not built: npm run build, then rerun for the CLI end-to-end step)')

// Re-score + aggregate only, on answers already parsed.
const answers: StoredAnswer[] = []
for await (const item of take(readResults(rowsPath), COUNT)) {
  const a = toStoredAnswer(item)
  if (typeof a !== 'string') answers.push(a)
}
const inMemBt = await time(async () => (await backtest(answers, policy, { labels, maxChanges: 100 })).read)
const inMemBare = await time(async () => (await backtest(answers, policy, { maxChanges: 100 })).read)
const inMemEv = await time(async () => {
  const matrix = Object.fromEntries(ACTIONS.map((a) => [a, Object.fromEntries(ACTIONS.map((b) => [b, 0]))])) as Record<Action, Record<Action, number>>
  for (const a of answers) matrix[a.action!][evaluate(a.factors as FactorCode[], { policy, context: a.context ?? null }).action]++
  return answers.length
})
console.log(`\nin memory (${answers.length.toLocaleString('en-US')} parsed answers), re-score + aggregate only:`)
console.log(`  backtest, with labels     ${rate(inMemBt)}`)
console.log(`  backtest, without labels  ${rate(inMemBare)}`)
console.log(`  evaluate() each           ${rate(inMemEv)}  = ${(inMemEv.s / inMemBare.s).toFixed(2)}× backtest without labels`)

clearInterval(sampler)
console.log(
  `\npeak RSS ${(peakStreaming / 1e6).toFixed(0)} MB while streaming the files (${((peakStreaming - rssBefore) / 1e6).toFixed(0)} MB above the process with its templates and labels); ${(peakRss / 1e6).toFixed(0)} MB with all answers in memory`,
)
rmSync(dir, { recursive: true, force: true })

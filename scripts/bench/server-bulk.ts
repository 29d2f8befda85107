/**
 * Benchmark of bulk jobs and webhook deliveries through the HTTP server, the server in its own process.
 *
 *   npx tsx scripts/bench/server-bulk.ts [--rows 100000] [--events 2000]
 *
 * 1. Bulk end to end: `riskcheck serve --offline` on a temporary SQLite file (child process: node --import tsx);
 *    a live key of an org with enough credits; POST /v1/bulk/jobs with 100,000 unique phone numbers, poll
 *    GET /v1/bulk/jobs/{id} until completed, page through every result (limit 1000), download results.csv. Prints
 *    each phase, the wall time, and the server's peak RSS (VmHWM of the server process) — compared in the same run
 *    with the library's in-process bulk engine (`rc.bulk`, in-memory store) on the same inputs.
 * 2. Webhooks: a receiver on 127.0.0.1 (this process) answering 200, one endpoint registered through the API
 *    (server started with --unsafe-allow-loopback-webhooks), N credits.added events written to the outbox from this
 *    process (`admin credits add` does the same): deliveries per second from the first write until the receiver has
 *    every one (outbox pump + SQLite queue + signing + HTTP), compared with raw signed POSTs of the same bodies by
 *    `deliverWebhook` at the same concurrency (8).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { createRiskcheck } from '../../src/riskcheck.js'
import { issueApiKey } from '../../src/accounts/keys.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { buildCreditsAddedEvent } from '../../src/webhooks/events.js'
import { buildDelivery, deliverWebhook } from '../../src/webhooks/deliver.js'

const { values } = parseArgs({ options: { rows: { type: 'string' }, events: { type: 'string' } } })
const ROWS = Number(values.rows ?? 100_000)
const EVENTS = Number(values.events ?? 2000)
const root = new URL('../../', import.meta.url).pathname

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-bench-bulk-'))
const db = join(dir, 'bench.sqlite')
const ms = (t: number) => `${t.toFixed(0)} ms`
const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`

/** Peak and current RSS of a process in kB (Linux /proc). */
function rssOf(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const num = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return { peak: num('VmHWM'), now: num('VmRSS') }
}

async function startServer(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'src/cli/bin.ts'), 'serve', '--db', db, '--port', '0', '--json', '--offline', '--log-level', 'warn', '--unsafe-allow-loopback-webhooks'],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const lines = createInterface({ input: child.stdout! })
  const url = await new Promise<string>((resolve, reject) => {
    lines.once('line', (l) => resolve((JSON.parse(l) as { url: string }).url))
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
  })
  return { url, child }
}

// ─── setup: org and key on the database, before the server opens it ────────────────────────────────────────────────
const store = createSqliteStore(db)
const t0 = Date.now()
const org = store.createOrg({ name: 'Bench', planId: 'scale' }, t0)
store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: ROWS * 2, ratePerSecond: 100_000 }, t0)
const key = (await issueApiKey(store, { orgId: org.id, scopes: ['bulk', 'webhooks', 'account:read'] }, t0)).secret

const inputs = Array.from({ length: ROWS }, (_, i) => `+447400${String(i).padStart(6, '0')}`)

const { url, child } = await startServer()
const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })
  return res
}
const idleRss = rssOf(child.pid!)

// ─── 1. bulk through HTTP ─────────────────────────────────────────────────────────────────────────────────────────────
const start = performance.now()
const created = await api('POST', '/v1/bulk/jobs', { type: 'phone', inputs })
const job = ((await created.json()) as { data: { id: string } }).data
if (created.status !== 202) throw new Error(`create: ${created.status}`)
const tCreate = performance.now() - start
let status = ''
let polls = 0
while (status !== 'completed') {
  await new Promise((r) => setTimeout(r, 200))
  const j = (await (await api('GET', `/v1/bulk/jobs/${job.id}`)).json()) as { data: { status: string } }
  status = j.data.status
  polls++
  if (status === 'failed' || status === 'cancelled') throw new Error(`job ${status}`)
}
const tRun = performance.now() - start
let rowsSeen = 0
let cursor: string | null = null
let pages = 0
do {
  const r = (await (await api('GET', `/v1/bulk/jobs/${job.id}/results?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)).json()) as {
    data: unknown[]
    next_cursor: string | null
  }
  rowsSeen += r.data.length
  cursor = r.next_cursor
  pages++
} while (cursor)
const tPages = performance.now() - start
const csvRes = await api('GET', `/v1/bulk/jobs/${job.id}/results.csv`)
let csvBytes = 0
let csvLines = 0
for await (const chunk of csvRes.body as unknown as AsyncIterable<Uint8Array>) {
  csvBytes += chunk.length
  for (const b of chunk) if (b === 10) csvLines++
}
const tTotal = performance.now() - start
const bulkRss = rssOf(child.pid!)
if (rowsSeen !== ROWS || csvLines !== ROWS + 1) throw new Error(`rows ${rowsSeen}, csv lines ${csvLines}`)

// The library in-process on the same inputs (in-memory store), for the ratio.
const rc = createRiskcheck({ offline: true })
const lib0 = performance.now()
const libJob = await rc.bulk.create({ type: 'phone', inputs })
await rc.bulk.waitFor(libJob.id)
const tLib = performance.now() - lib0
await rc.close()

// ─── 2. webhooks through the server's queue ───────────────────────────────────────────────────────────────────────
let received = 0
let allIn: () => void = () => undefined
const done = new Promise<void>((r) => (allIn = r))
let target = EVENTS
const receiver = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200).end('ok')
    if (++received === target) allIn()
  })
})
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
const ep = (await (await api('POST', '/v1/webhook-endpoints', { url: hookUrl, events: ['credits.added'] })).json()) as {
  data: { secret: string }
}
// Wait for the bulk.completed event to be pumped (not subscribed) so the measurement starts clean.
await new Promise((r) => setTimeout(r, 1500))
const w0 = performance.now()
for (let i = 0; i < EVENTS; i++) store.addCredits(org.id, 1, 'top_up', Date.now())
const tWrite = performance.now() - w0
await done
const tHooks = performance.now() - w0

// Raw: the same number of signed POSTs with deliverWebhook, 8 at a time.
received = 0
target = EVENTS
const rawDone = new Promise<void>((r) => (allIn = r))
const r0 = performance.now()
let next = 0
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (next < EVENTS) {
      next++
      const event = buildCreditsAddedEvent({ orgId: org.id, now: new Date(), amount: 1, balance: 1, reason: 'top_up' })
      const d = buildDelivery(event, { secret: ep.data.secret, format: 'json' }, { deliveryId: `dlv_${next}`, now: new Date() })
      await deliverWebhook({ url: hookUrl, body: d.body, headers: d.headers, allowLoopback: true })
    }
  }),
)
await rawDone
const tRaw = performance.now() - r0
const finalRss = rssOf(child.pid!)

child.kill('SIGTERM')
await new Promise((r) => child.once('exit', r))
receiver.close()
store.close()
rmSync(dir, { recursive: true, force: true })

console.log(`bulk job of ${ROWS.toLocaleString('en-US')} phone inputs through the HTTP API (server in its own process, offline, SQLite file)`)
console.log(`  create (POST, ${(JSON.stringify({ type: 'phone', inputs }).length / 1e6).toFixed(1)} MB body, 202)   ${ms(tCreate)}`)
console.log(`  until completed (${polls} polls)                 ${ms(tRun)}  → ${((ROWS / tRun) * 1000).toFixed(0)} rows/s`)
console.log(`  + page through all results (${pages} pages)      ${ms(tPages)}  (paging ${ms(tPages - tRun)})`)
console.log(`  + download results.csv (${(csvBytes / 1e6).toFixed(1)} MB)          ${ms(tTotal)}  (csv ${ms(tTotal - tPages)})`)
console.log(`  wall time end to end                           ${ms(tTotal)}`)
console.log(`  server RSS: idle ${mb(idleRss.now)}, peak ${mb(bulkRss.peak)} (VmHWM after the bulk run)`)
console.log(`  library in-process (rc.bulk, in-memory store) ${ms(tLib)}  → HTTP end to end / in-process = ${(tTotal / tLib).toFixed(2)}×, run only ${(tRun / tLib).toFixed(2)}×`)
console.log(`webhooks: ${EVENTS} credits.added events → one loopback endpoint`)
console.log(`  through the server (outbox → SQLite queue → signed POST) ${ms(tHooks)} → ${((EVENTS / tHooks) * 1000).toFixed(0)} deliveries/s (events written in ${ms(tWrite)})`)
console.log(`  raw deliverWebhook, 8 at a time                          ${ms(tRaw)} → ${((EVENTS / tRaw) * 1000).toFixed(0)} deliveries/s`)
console.log(`  server / raw throughput = ${(tRaw / tHooks).toFixed(2)}×; server peak RSS at the end ${mb(finalRss.peak)}`)

/**
 * A production-shaped outage run: two `riskcheck serve` instances and a `riskcheck worker` on a private PostgreSQL
 * cluster and a private Redis, billed clients that retry each request with its own Idempotency-Key until it is
 * answered 200, a 20,000-input bulk job, and in turn: Redis killed, PostgreSQL crashed, PostgreSQL hung (a frozen
 * TCP proxy: connections stay open, nothing answers) and an instance SIGKILLed. Prints the statuses seen in each
 * phase, the longest time a client waited for its answer, the log lines, and the balance check.
 *
 *   npx tsx scripts/chaos/production-run.ts [--phase-seconds 10] [--clients 16] [--bulk 20000] [--pg-port 55490]
 *     [--log-dir DIR]
 *
 * --log-dir writes each process's log lines (stderr, prefixed with the phase) to DIR/NAME.log.
 *
 * Needs Debian's postgresql-15 (pg_createcluster) and redis-server; runs as root or as the postgres owner. Everything
 * it starts is its own and is removed at the end.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import net from 'node:net'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { issueApiKey } from '../../src/accounts/keys.js'
import { createPostgresStore } from '../../src/server/store/postgres/store.js'

const { values: flags } = parseArgs({
  options: {
    'phase-seconds': { type: 'string', default: '10' },
    clients: { type: 'string', default: '16' },
    bulk: { type: 'string', default: '20000' },
    'pg-port': { type: 'string', default: '55490' },
    'log-dir': { type: 'string' },
  },
})
const PHASE_MS = Number(flags['phase-seconds']) * 1000
const CLIENTS = Number(flags.clients)
const BULK = Number(flags.bulk)
const PG_PORT = Number(flags['pg-port'])
const PROXY_PORT = PG_PORT + 1
const REDIS_PORT = PG_PORT + 2
// one cluster per port, so two runs on different ports never touch each other's
const CLUSTER = `rc_chaos_${PG_PORT}`
const bin = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString()

// ---- PostgreSQL behind a proxy that can freeze (a partition), and Redis ----
function startPostgres(): void {
  try {
    sh('pg_dropcluster', ['--stop', '15', CLUSTER])
  } catch {
    /* none left over */
  }
  sh('pg_createcluster', ['15', CLUSTER, '-p', String(PG_PORT), '--', '--auth-host=trust', '--auth-local=trust'])
  sh('pg_ctlcluster', ['15', CLUSTER, 'start'])
}
const pgStop = () => sh('pg_ctlcluster', ['15', CLUSTER, 'stop', '-m', 'immediate'])
const pgStart = () => sh('pg_ctlcluster', ['15', CLUSTER, 'start'])

let frozen = false
const held: Array<() => void> = []
const proxy = net.createServer((client) => {
  const connect = () => {
    const upstream = net.connect(PG_PORT, '127.0.0.1')
    const forward = (from: net.Socket, to: net.Socket) =>
      from.on('data', (d) => {
        if (!frozen) to.write(d)
        // while frozen the bytes are dropped, as a partition loses them; both sides keep waiting
      })
    forward(client, upstream)
    forward(upstream, client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  }
  if (frozen) held.push(connect)
  else connect()
})

let redis: ChildProcess | undefined
function startRedis(): void {
  redis = spawn('redis-server', ['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
}
async function killRedis(): Promise<void> {
  const r = redis
  if (!r || r.exitCode !== null) return
  const gone = new Promise((resolve) => r.once('close', resolve))
  r.kill('SIGKILL')
  await gone
}

// ---- the service's processes ----
interface Proc {
  name: string
  child: ChildProcess
  url: string
  log: string[]
}
const procs: Proc[] = []
const env = () => ({
  ...process.env,
  RISKCHECK_DATABASE_URL: `postgres://postgres@127.0.0.1:${PROXY_PORT}/postgres`,
  RISKCHECK_REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}`,
})
function start(name: string, command: 'serve' | 'worker'): Promise<Proc> {
  const args = command === 'serve' ? ['serve', '--port', '0', '--json'] : ['worker']
  const child = spawn(process.execPath, ['--import', 'tsx', bin, ...args, '--offline', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'], env: env() })
  const p: Proc = { name, child, url: '', log: [] }
  let partial = ''
  child.stderr!.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n')
    partial = lines.pop() ?? ''
    for (const l of lines) if (l.trim()) p.log.push(`${phase} ${l}`)
  })
  // an exit nobody asked for (a crash) is part of the result
  child.once('exit', (code, signal) => {
    if (!killed.has(child)) p.log.push(`${phase} [${name} exited by itself: code ${code}, signal ${signal}]`)
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const json = out.split('\n').find((l) => l.startsWith('{'))
      if ((command === 'serve' && json) || (command === 'worker' && out.includes('riskcheck worker running'))) {
        if (json) p.url = (JSON.parse(json) as { url: string }).url
        procs.push(p)
        resolve(p)
      }
    })
    child.once('close', (code) => reject(new Error(`${name} exited ${code} before it ran: ${p.log.join('\n')}`)))
  })
}
const killed = new Set<ChildProcess>()
async function sigkill(p: Proc): Promise<void> {
  killed.add(p.child)
  const gone = new Promise((resolve) => p.child.once('close', resolve))
  p.child.kill('SIGKILL')
  await gone
}

// ---- clients ----
let phase = 'setup'
const attempts = new Map<string, Map<string, number>>() // phase → status → count
const waits = new Map<string, number>() // phase → longest wait (ms) of a request answered in it
const readyz = new Map<string, Map<string, number>>()
let answeredCredits = 0
let answered = 0
let stopping = false
const count = (m: Map<string, Map<string, number>>, status: string) => {
  const row = m.get(phase) ?? new Map<string, number>()
  row.set(status, (row.get(status) ?? 0) + 1)
  m.set(phase, row)
}
const apiUrls = () => procs.filter((p) => p.url && p.child.exitCode === null && p.child.signalCode === null).map((p) => p.url)

async function client(secret: string, n: number): Promise<void> {
  let pick = n
  while (!stopping) {
    const key = randomUUID()
    const ip = `${1 + (Math.random() * 222) | 0}.${(Math.random() * 255) | 0}.${(Math.random() * 255) | 0}.${1 + ((Math.random() * 250) | 0)}`
    const began = Date.now()
    for (;;) {
      const urls = apiUrls()
      const url = urls[pick++ % Math.max(1, urls.length)]
      let status = 'no instance'
      let body: { data?: { metadata?: { credits_used?: number } }; error?: { code?: string } } | undefined
      if (url) {
        try {
          const res = await fetch(`${url}/v1/ip`, {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ ip }),
            signal: AbortSignal.timeout(60_000),
          })
          body = (await res.json().catch(() => undefined)) as typeof body
          status = res.status === 200 ? '200' : `${res.status} ${body?.error?.code ?? ''}`.trim()
        } catch (e) {
          status = `network ${(e as { cause?: { code?: string } }).cause?.code ?? (e as Error).name}`
        }
      }
      count(attempts, status)
      if (status === '200') {
        const wait = Date.now() - began
        waits.set(phase, Math.max(waits.get(phase) ?? 0, wait))
        answeredCredits += body?.data?.metadata?.credits_used ?? 0
        answered++
        break
      }
      await sleep(250)
    }
  }
}

async function probeReadiness(): Promise<void> {
  while (!stopping) {
    const url = apiUrls()[0]
    if (url) {
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5000) })
        count(readyz, String(res.status))
      } catch {
        count(readyz, 'no answer')
      }
    }
    await sleep(500)
  }
}

async function runPhase(name: string, begin?: () => unknown, end?: () => unknown): Promise<void> {
  phase = name
  process.stderr.write(`phase ${name}\n`)
  await begin?.()
  await sleep(PHASE_MS)
  await end?.()
}

async function main(): Promise<void> {
  startPostgres()
  await new Promise<void>((r) => proxy.listen(PROXY_PORT, '127.0.0.1', () => r()))
  startRedis()
  await sleep(300)
  const store = await createPostgresStore({ connectionString: `postgres://postgres@127.0.0.1:${PG_PORT}/postgres` })
  const now = Date.now()
  const org = await store.createOrg({ name: 'Chaos', planId: 'scale' }, now)
  const CREDITS = 1_000_000
  await store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: CREDITS, ratePerSecond: 100_000 }, now)
  const { secret } = await issueApiKey(store, { orgId: org.id }, now)
  await store.close()

  const a = await start('A', 'serve')
  await start('B', 'serve')
  await start('W', 'worker')
  const inputs = Array.from({ length: BULK }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`.replace(/^10\./, '11.'))
  const job = await fetch(`${a.url}/v1/bulk/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'ip', inputs }),
  }).then((r) => r.json() as Promise<{ data: { id: string } }>)

  const clients = Array.from({ length: CLIENTS }, (_, i) => client(secret, i))
  const probe = probeReadiness()
  await runPhase('1 steady')
  await runPhase('2 redis killed', () => killRedis(), () => startRedis())
  await runPhase('3 after redis')
  await runPhase('4 postgres crashed', () => pgStop(), () => pgStart())
  await runPhase('5 after crash')
  await runPhase('6 postgres hung', () => void (frozen = true), () => {
    frozen = false
    for (const c of held.splice(0)) c()
  })
  await runPhase('7 after hang')
  // the killed instance is started again as an orchestrator would: a start that fails is tried again (up to 3 times)
  const restart = async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await start(`A${attempt + 1}`, 'serve')
      } catch (e) {
        if (attempt >= 3) throw e
        console.log(`restart ${attempt} of instance A failed; starting it again`)
      }
    }
  }
  await runPhase('8 instance A killed', () => sigkill(a), restart)
  await runPhase('9 after kill')
  phase = '10 draining clients'
  stopping = true
  await Promise.all(clients)
  await probe

  // the bulk job to its end, then the balance (from any instance that answers: one may hang)
  const read = async <T>(path: string): Promise<T | undefined> => {
    for (const url of apiUrls()) {
      try {
        const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${secret}` }, signal: AbortSignal.timeout(10_000) })
        if (res.ok) return ((await res.json()) as { data: T }).data
      } catch {
        // the next instance
      }
    }
    return undefined
  }
  let bulk: { status: string; credits_used: number; counts?: unknown } | undefined
  for (let i = 0; i < 600; i++) {
    bulk = (await read<typeof bulk>(`/v1/bulk/jobs/${job.data.id}`)) ?? bulk
    if (bulk && ['completed', 'failed', 'cancelled'].includes(bulk.status)) break
    await sleep(1000)
  }
  const account = { data: (await read<{ credits: { total_available: number }; usage: { all_time: { lookups: number; credits: number } } }>('/v1/account'))! }
  if (!account.data) console.log('no instance answered GET /v1/account')
  const drop = CREDITS - (account.data?.credits.total_available ?? NaN)

  console.log(`\nphase                 longest wait   attempts by status (a request's longest wait counts in the phase it was answered)`)
  const phases = [...new Set([...attempts.keys(), ...waits.keys()])]
  for (const p of phases) {
    const row = [...(attempts.get(p) ?? new Map<string, number>())].map(([s, n]) => `${n} × ${s}`).join(', ')
    console.log(`${p.padEnd(22)}${(waits.has(p) ? `${waits.get(p)} ms` : '-').padEnd(15)}${row}`)
  }
  console.log('\n/readyz of an API instance, by phase:')
  for (const [p, row] of readyz) console.log(`  ${p.padEnd(22)}${[...row].map(([s, n]) => `${n} × ${s}`).join(', ')}`)
  console.log('\nlog lines (stderr) by process and phase:')
  for (const p of procs) {
    const byPhase = new Map<string, number>()
    for (const l of p.log) byPhase.set(l.slice(0, l.indexOf(' ', 2)), (byPhase.get(l.slice(0, l.indexOf(' ', 2))) ?? 0) + 1)
    console.log(`  ${p.name}: ${p.log.length} lines (${[...byPhase].map(([ph, n]) => `phase ${ph}: ${n}`).join(', ')})`)
  }
  for (const p of procs) for (const l of p.log) if (l.includes('exited by itself')) console.log(`  ${l}`)
  if (flags['log-dir']) {
    mkdirSync(flags['log-dir'], { recursive: true })
    for (const p of procs) writeFileSync(join(flags['log-dir'], `${p.name}.log`), p.log.join('\n') + '\n')
    console.log(`  (the lines are in ${flags['log-dir']})`)
  }
  console.log(`\nbulk job: ${bulk?.status}, ${bulk?.credits_used} credits`)
  console.log(`answered single lookups: ${answered}, ${answeredCredits} credits`)
  console.log(`balance drop ${drop} = answered ${answeredCredits} + bulk ${bulk?.credits_used} ${drop === answeredCredits + (bulk?.credits_used ?? NaN) ? '✓' : `✗ (off by ${drop - answeredCredits - (bulk?.credits_used ?? 0)})`}`)
  console.log(`usage: ${account.data?.usage.all_time.lookups} lookups, ${account.data?.usage.all_time.credits} credits ${account.data?.usage.all_time.credits === drop ? '= drop ✓' : '≠ drop ✗'}`)
}

async function cleanup(): Promise<void> {
  stopping = true
  for (const p of procs) {
    killed.add(p.child)
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
  }
  await killRedis()
  proxy.close()
  try {
    sh('pg_dropcluster', ['--stop', '15', CLUSTER])
  } catch {
    /* already gone */
  }
}

main()
  .catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
  .finally(() => cleanup().then(() => process.exit()))

/**
 * What the server benchmarks share: a caller whose credits and rate limit stay out of the way, and autocannon (in a
 * process of its own, so the load generator never shares the server's event loop) POSTing one body or a list in turn.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { xorshift } from '../../../test/xorshift.js'
import { issueApiKey } from '../../../src/accounts/keys.js'
import type { Store } from '../../../src/server/store/contracts/store.js'

const require = createRequire(import.meta.url)
const AUTOCANNON = join(require.resolve('autocannon/package.json'), '..', 'autocannon.js')
const BODIES_RUNNER = fileURLToPath(new URL('./autocannon-bodies.mjs', import.meta.url))

/** A new org on the `scale` plan with 100,000,000 credits and 1,000,000 requests a second, and a live key of it. */
export async function benchCaller(store: Store, name = 'Bench'): Promise<{ orgId: string; secret: string }> {
  const now = Date.now()
  const org = await store.createOrg({ name, planId: 'scale' }, now)
  await store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: 100_000_000, ratePerSecond: 1_000_000 }, now)
  const { secret } = await issueApiKey(store, { orgId: org.id }, now)
  return { orgId: org.id, secret }
}

/** The parts of autocannon's JSON summary the benchmarks read. */
export interface LoadSummary {
  requests: { average: number; total: number; sent: number }
  latency: { p50: number; p99: number }
  non2xx: number
  errors: number
}

/**
 * `count` request bodies `{ ip, ...extra }`, each with an IPv4 address of its own (none in 0/8, 10/8, 127/8 or
 * 224/3), the same for the same `seed`: a stream of callers, as a service sees, rather than one caller whose
 * velocity counts would turn every answer from the 50th into a block.
 */
export function addressBodies<E extends object>(count: number, extra: E, seed = 11): Array<{ ip: string } & E> {
  const rnd = xorshift(seed)
  const seen = new Set<number>()
  const out: Array<{ ip: string } & E> = []
  while (out.length < count) {
    const a = 1 + (rnd() % 223)
    if (a === 10 || a === 127) continue
    const n = ((a << 24) | ((rnd() & 0xffffff) >>> 0)) >>> 0
    if (seen.has(n)) continue
    seen.add(n)
    out.push({ ip: `${a}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`, ...extra })
  }
  return out
}

/**
 * Request bodies sent in turn, from `next` on (a run moves it past the bodies it sent, so the next run sends others).
 * `file`: the list, written once by {@link bodyStream}.
 */
export interface Bodies {
  readonly list: readonly unknown[]
  readonly file: string
  next: number
}

const written = new WeakMap<readonly unknown[], string>()

/**
 * A stream of `list`'s bodies from the first. The list is written to a file (JSON texts, one per body) once per list,
 * here, not in a run: a benchmark that counts its process's CPU during a run counts none of it.
 */
export function bodyStream(list: readonly unknown[]): Bodies {
  let file = written.get(list)
  if (file === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-load-'))
    file = join(dir, 'bodies.json')
    writeFileSync(file, JSON.stringify(list.map((b) => JSON.stringify(b))))
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    written.set(list, file)
  }
  return { list, file, next: 0 }
}

/** What every load names: where, with which key, how many connections, how long. */
interface Load {
  url: string
  secret: string
  connections: number | string
  seconds: number | string
}

/**
 * `connections` callers POSTing JSON to `url` with `secret` for `seconds`: `body` every time (autocannon's CLI), or
 * each of `bodies` in turn (one stream for all connections, ./autocannon-bodies.mjs). Rejects when autocannon fails.
 */
export async function autocannon(o: Load & ({ body: unknown } | { bodies: Bodies })): Promise<LoadSummary> {
  if ('bodies' in o) {
    const { file, list, next } = o.bodies
    const summary = await run([BODIES_RUNNER, JSON.stringify({ url: o.url, secret: o.secret, file, start: next, connections: Number(o.connections), seconds: Number(o.seconds) })])
    o.bodies.next = (next + summary.requests.sent) % list.length
    return summary
  }
  return run([
    AUTOCANNON, '-c', String(o.connections), '-d', String(o.seconds), '-m', 'POST', '-j',
    '-H', `authorization=Bearer ${o.secret}`, '-H', 'content-type=application/json', '-b', JSON.stringify(o.body), o.url,
  ])
}

/** Runs node with `args` and reads the JSON summary it prints. */
function run(args: string[]): Promise<LoadSummary> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (err += c.toString()))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as LoadSummary) : reject(new Error(`autocannon exited ${code}: ${err}`))))
  })
}

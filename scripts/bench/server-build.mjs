/**
 * The billed `POST /v1/ip` of the server as users run it — the built `dist/` (no tsx transform: `npx tsx` wraps each
 * function in a `__name` call, which the build does not) — on SQLite, against the same lookup behind a bare Fastify
 * route; the CPU of this process per request, each side. It uses only the package's public API, so `--dist` may
 * point at the build of any checkout (`git worktree add DIR REV && cd DIR && npx tsup`): versions compare in one run.
 *
 *   node scripts/bench/server-build.mjs [--dist DIR] [--velocity sqlite|memory|off] [--addresses 200000] [--seconds 4] [--rounds 2] [--label TEXT]
 *
 * - Server: `createServer` on a temporary SQLite file, offline lookups, a live key of an org with credits and a rate
 *   limit out of the way. `--velocity`: counts in the SQLite file (the default of a SQLite server), in this process's
 *   memory (`createMemoryVelocityStore`: what the counting costs without the file), or off. A build that predates
 *   velocity takes `--velocity sqlite` and runs without it.
 * - Load: autocannon in a process of its own (./support/autocannon-bodies.mjs), 16 connections, `bypass_cache: true`,
 *   another address each request (`--addresses 1`: 8.8.8.8 every time), bare route and server taking turns.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const require = createRequire(import.meta.url)
const Fastify = require('fastify')
const RUNNER = fileURLToPath(new URL('./support/autocannon-bodies.mjs', import.meta.url))

const { values } = parseArgs({
  options: { dist: { type: 'string' }, velocity: { type: 'string' }, addresses: { type: 'string' }, seconds: { type: 'string' }, rounds: { type: 'string' }, label: { type: 'string' } },
})
const DIST = resolve(values.dist ?? fileURLToPath(new URL('../../dist', import.meta.url)))
const VELOCITY = values.velocity ?? 'sqlite'
if (!['sqlite', 'memory', 'off'].includes(VELOCITY)) throw new Error('--velocity must be sqlite, memory or off')
const ADDRESSES = Number(values.addresses ?? 200_000)
const SECONDS = Number(values.seconds ?? 4)
const ROUNDS = Number(values.rounds ?? 2)

const server = await import(join(DIST, 'server/index.js'))
const lib = await import(join(DIST, 'index.js'))
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-build-bench-'))
const velocity = VELOCITY === 'off' ? { velocity: false } : VELOCITY === 'memory' ? { velocity: { store: lib.createMemoryVelocityStore(), secret: 'bench-velocity-secret-0123456789' } } : {}
const app = server.createServer({ db: join(dir, 'bench.sqlite'), riskcheck: { offline: true }, purgeIntervalMs: 0, ...velocity })
const rc = lib.createRiskcheck({ offline: true, cache: { maxEntries: 100_000 } })
const bare = Fastify()
bare.post('/v1/ip', async (req) => ({ success: true, data: await rc.ip(req.body.ip, { bypassCache: req.body.bypass_cache === true }) }))

// the addresses in turn, one JSON text each, written once before any run (xorshift32, seed 11)
let x = 11
const rnd = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x >>> 0)
const address = () => `${1 + (rnd() % 223)}.${rnd() % 256}.${rnd() % 256}.${rnd() % 256}`
const bodies = Array.from({ length: ADDRESSES }, () => JSON.stringify({ ip: ADDRESSES === 1 ? '8.8.8.8' : address(), bypass_cache: true }))
const file = join(dir, 'bodies.json')
writeFileSync(file, JSON.stringify(bodies))

let next = 0
/** One run of autocannon against `port` for `seconds`; its JSON summary. */
function load(port, secret, seconds) {
  return new Promise((done, fail) => {
    const args = { url: `http://127.0.0.1:${port}/v1/ip`, secret, file, start: next, connections: 16, seconds }
    const child = spawn(process.execPath, [RUNNER, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.on('close', (code) => {
      if (code !== 0) return fail(new Error(`autocannon exited ${code}`))
      const summary = JSON.parse(out)
      next = (next + summary.requests.sent) % bodies.length
      done(summary)
    })
  })
}
const cpuUs = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

try {
  await app.listen({ host: '127.0.0.1', port: 0 })
  await bare.listen({ host: '127.0.0.1', port: 0 })
  const now = Date.now()
  const org = await app.store.createOrg({ name: 'Bench', planId: 'scale' }, now)
  await app.store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: 100_000_000, ratePerSecond: 1_000_000 }, now)
  const { secret } = await server.issueApiKey(app.store, { orgId: org.id }, now)
  const port = app.server.address().port
  const barePort = bare.server.address().port
  await load(port, secret, 2) // warm-up: JIT, the file's pages, the serializers
  await load(barePort, secret, 2)
  const side = { server: { us: 0, n: 0, errors: 0 }, bare: { us: 0, n: 0, errors: 0 } }
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, p] of [['bare', barePort], ['server', port]]) {
      const c0 = cpuUs()
      const s = await load(p, secret, SECONDS)
      side[name].us += cpuUs() - c0
      side[name].n += s.requests.total
      side[name].errors += s.non2xx + s.errors
    }
  }
  const per = (s) => s.us / Math.max(1, s.n)
  const label = values.label ?? `${DIST} velocity ${VELOCITY}`
  console.log(
    `${label}: server ${per(side.server).toFixed(0)} µs a request, bare route ${per(side.bare).toFixed(0)} µs, share ${((100 * per(side.bare)) / per(side.server)).toFixed(0)} %` +
      (side.server.errors + side.bare.errors > 0 ? ` (! ${side.server.errors} server and ${side.bare.errors} bare errors)` : ''),
  )
} finally {
  await app.close()
  await bare.close()
  await rc.close()
  rmSync(dir, { recursive: true, force: true })
}

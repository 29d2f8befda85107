/**
 * The billed `POST /v1/ip` of the server as users run it — the built `dist/` (which tsx loads as it is: `npx tsx` wraps
 * each function of `src/` in a `__name` call, which the build does not) — on SQLite, against the same lookup behind a bare Fastify
 * route; the CPU of this process per request, each side. It uses only the package's public API, so `--dist` may
 * point at the build of any checkout (`git worktree add DIR REV && cd DIR && npx tsup`): versions compare in one run.
 *
 *   npx tsx scripts/bench/server-build.ts [--dist DIR] [--velocity sqlite|memory|off] [--addresses 200000] [--seconds 4] [--rounds 2] [--label TEXT]
 *
 * - Server: `createServer` on a temporary SQLite file, offline lookups, a live key of an org with credits and a rate
 *   limit out of the way. `--velocity`: counts in the SQLite file (the default of a SQLite server), in this process's
 *   memory (`createMemoryVelocityStore`: what the counting costs without the file), or off. A build that predates
 *   velocity takes `--velocity sqlite` and runs without it.
 * - Load: autocannon in a process of its own (./support/server-load.ts), 16 connections, `bypass_cache: true`, another
 *   address each request (`addressBodies`; `--addresses 1`: 8.8.8.8 every time), bare route and server taking turns.
 */
import Fastify from 'fastify'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { addressBodies, autocannon, bodyStream } from './support/server-load.js'

const { values } = parseArgs({
  options: { dist: { type: 'string' }, velocity: { type: 'string' }, addresses: { type: 'string' }, seconds: { type: 'string' }, rounds: { type: 'string' }, label: { type: 'string' } },
})
const DIST = resolve(values.dist ?? fileURLToPath(new URL('../../dist', import.meta.url)))
const VELOCITY = values.velocity ?? 'sqlite'
if (!['sqlite', 'memory', 'off'].includes(VELOCITY)) throw new Error('--velocity must be sqlite, memory or off')
const ADDRESSES = Number(values.addresses ?? 200_000)
const SECONDS = Number(values.seconds ?? 4)
const ROUNDS = Number(values.rounds ?? 2)

// any checkout's build: its API as this one's, read untyped
const server = (await import(join(DIST, 'server/index.js'))) as any
const lib = (await import(join(DIST, 'index.js'))) as any
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-build-bench-'))
const velocity = VELOCITY === 'off' ? { velocity: false } : VELOCITY === 'memory' ? { velocity: { store: lib.createMemoryVelocityStore(), secret: 'bench-velocity-secret-0123456789' } } : {}
const app = server.createServer({ db: join(dir, 'bench.sqlite'), riskcheck: { offline: true }, purgeIntervalMs: 0, ...velocity })
const rc = lib.createRiskcheck({ offline: true, cache: { maxEntries: 100_000 } })
const bare = Fastify()
bare.post('/v1/ip', async (req) => {
  const b = req.body as { ip: string; bypass_cache?: boolean }
  return { success: true, data: await rc.ip(b.ip, { bypassCache: b.bypass_cache === true }) }
})

const bodies = bodyStream(ADDRESSES === 1 ? [{ ip: '8.8.8.8', bypass_cache: true }] : addressBodies(ADDRESSES, { bypass_cache: true }))
const load = (port: number, secret: string, seconds: number) => autocannon({ url: `http://127.0.0.1:${port}/v1/ip`, secret, bodies, connections: 16, seconds })
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
  const barePort = (bare.server.address() as { port: number }).port
  await load(port, secret, 2) // warm-up: JIT, the file's pages, the serializers
  await load(barePort, secret, 2)
  type Side = { port: number; us: number; n: number; errors: number }
  const side: Record<'bare' | 'server', Side> = { bare: { port: barePort, us: 0, n: 0, errors: 0 }, server: { port, us: 0, n: 0, errors: 0 } }
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of ['bare', 'server'] as const) {
      const c0 = cpuUs()
      const s = await load(side[name].port, secret, SECONDS)
      side[name].us += cpuUs() - c0
      side[name].n += s.requests.total
      side[name].errors += s.non2xx + s.errors
    }
  }
  const per = (s: Side) => s.us / Math.max(1, s.n)
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

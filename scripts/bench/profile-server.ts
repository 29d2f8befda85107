/**
 * Profiles the billed `POST /v1/ip` path (or its cache hits with `--cache`): the server of scripts/bench/server.ts
 * under autocannon load, warmed up first; with `--out` a CPU profile of the loaded phase alone (no start-up, no
 * module loading) is written there, readable by Chrome DevTools or `--cpu-prof` tooling.
 *
 *   npx tsx scripts/bench/profile-server.ts [--seconds 8] [--cache] [--connections 50] [--out /tmp/server.cpuprofile] [--no-velocity]
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createServer } from '../../src/server/app.js'
import { addressBodies, autocannon, benchCaller, bodyStream } from './support/server-load.js'

const { values } = parseArgs({ options: { seconds: { type: 'string' }, cache: { type: 'boolean' }, connections: { type: 'string' }, out: { type: 'string' }, 'no-velocity': { type: 'boolean' } } })
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-prof-'))
const app = createServer({ db: join(dir, 'p.sqlite'), riskcheck: { offline: true }, purgeIntervalMs: 0, velocity: values['no-velocity'] !== true })
await app.listen({ host: '127.0.0.1', port: 0 })
const { secret } = await benchCaller(app.store)
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1/ip`
// billed requests ask about another address each time (./support/server-load.ts, addressBodies); cache hits about one
const what = values.cache ? { body: { ip: '8.8.8.8' } } : { bodies: bodyStream(addressBodies(200_000, { bypass_cache: true })) }
const load = (seconds: string) => autocannon({ url, secret, ...what, connections: values.connections ?? '50', seconds })
await load('2') // warm-up: JIT, caches, the database's pages
const session = new Session()
if (values.out) {
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
}
const c0 = process.cpuUsage()
const r = await load(values.seconds ?? '8')
const cpu = process.cpuUsage(c0)
if (values.out) {
  const { profile } = await session.post('Profiler.stop')
  writeFileSync(values.out, JSON.stringify(profile))
}
console.log(`req/s ${r.requests.average} p50 ${r.latency.p50} p99 ${r.latency.p99} non2xx ${r.non2xx}; server CPU ${((cpu.user + cpu.system) / r.requests.total).toFixed(0)} µs per request`)
await app.close()

/**
 * Profiles the billed `POST /v1/ip` path: the server of scripts/bench/server.ts under autocannon load, with a CPU
 * profile of the server process written where `--cpu-prof-dir` points.
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx scripts/bench/profile-server.ts [--seconds 8] [--path /v1/ip]
 */
import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createServer } from '../../src/server/app.js'
import { issueApiKey } from '../../src/accounts/keys.js'

const { values } = parseArgs({ options: { seconds: { type: 'string' }, cache: { type: 'boolean' } } })
const require = createRequire(import.meta.url)
const AUTOCANNON = join(require.resolve('autocannon/package.json'), '..', 'autocannon.js')
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-prof-'))
const app = createServer({ db: join(dir, 'p.sqlite'), riskcheck: { offline: true }, purgeIntervalMs: 0 })
await app.listen({ host: '127.0.0.1', port: 0 })
const now = Date.now()
const org = await app.store.createOrg({ name: 'P', planId: 'scale' }, now)
await app.store.setOrgPlan(org.id, { planId: 'scale', monthlyCredits: 100_000_000, ratePerSecond: 1_000_000 }, now)
const { secret } = await issueApiKey(app.store, { orgId: org.id }, now)
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1/ip`
const body = JSON.stringify({ ip: '8.8.8.8', ...(values.cache ? {} : { bypass_cache: true }) })
const out = await new Promise<string>((resolve) => {
  let o = ''
  const c = spawn(process.execPath, [AUTOCANNON, '-c', '50', '-d', values.seconds ?? '8', '-m', 'POST', '-j', '-H', `authorization=Bearer ${secret}`, '-H', 'content-type=application/json', '-b', body, url])
  c.stdout.on('data', (d: Buffer) => (o += d))
  c.on('close', () => resolve(o))
})
const r = JSON.parse(out)
console.log(`req/s ${r.requests.average} p50 ${r.latency.p50} p99 ${r.latency.p99} non2xx ${r.non2xx}`)
await app.close()

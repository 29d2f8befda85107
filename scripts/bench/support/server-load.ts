/**
 * What the server benchmarks share: a caller whose credits and rate limit stay out of the way, and autocannon (its
 * CLI, in a process of its own, so the load generator never shares the server's event loop) POSTing one body.
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { issueApiKey } from '../../../src/accounts/keys.js'
import type { Store } from '../../../src/server/store/contracts/store.js'

const require = createRequire(import.meta.url)
const AUTOCANNON = join(require.resolve('autocannon/package.json'), '..', 'autocannon.js')

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
  requests: { average: number; total: number }
  latency: { p50: number; p99: number }
  non2xx: number
  errors: number
}

/** `connections` callers POSTing `body` (JSON) to `url` with `secret` for `seconds`; rejects when autocannon fails. */
export function autocannon(o: { url: string; secret: string; body: unknown; connections: number | string; seconds: number | string }): Promise<LoadSummary> {
  const args = [
    AUTOCANNON, '-c', String(o.connections), '-d', String(o.seconds), '-m', 'POST', '-j',
    '-H', `authorization=Bearer ${o.secret}`, '-H', 'content-type=application/json', '-b', JSON.stringify(o.body), o.url,
  ]
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

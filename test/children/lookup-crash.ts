/**
 * An API server in its own process, for test/lookup-crash-points.test.ts: SIGKILLs itself at the first billed
 * lookup's boundary named by RISKCHECK_CRASH_AT — `reserved` (its credits are held), `looked-up` (the answer is
 * ready, nothing settled), `settled` (the settlement committed) or `responding` (the last hook before the answer's
 * bytes are written) — and serves normally without it. Arguments: `sqlite FILE` or `postgres URL SCHEMA`; the lease
 * length in ms (RISKCHECK_LEASE_MS, default the server's). Prints `{"port":N}` once it listens, and a line of what it
 * did as it dies: `{"settled":true|false}` (whether its settlement closed its hold) or `{"status":N,"code":…}` (the
 * answer it was writing). RISKCHECK_STALL_MS blocks its event loop that long just before the settlement (a process
 * that stalls past its lease: another instance sweeps its hold meanwhile).
 */
import { createServer } from '../../src/server/app.js'
import { createPostgresStore } from '../../src/server/store/postgres/store.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import type { Store } from '../../src/server/store/contracts/store.js'

const [engine, target, schema] = process.argv.slice(2) as [string, string, string | undefined]
const crashAt = process.env.RISKCHECK_CRASH_AT ?? ''
const leaseMs = process.env.RISKCHECK_LEASE_MS ? Number(process.env.RISKCHECK_LEASE_MS) : undefined
const stallMs = Number(process.env.RISKCHECK_STALL_MS ?? 0)
/** Writes what A did (a pipe's writes are synchronous: the line is out before the kill), then dies at `crashAt`. */
const die = (at: string, report: Record<string, unknown> = {}) => {
  if (at !== crashAt) return
  process.stdout.write(`${JSON.stringify(report)}\n`)
  process.kill(process.pid, 'SIGKILL')
}

const store: Store = engine === 'sqlite' ? createSqliteStore(target) : await createPostgresStore({ connectionString: target, schema: schema! })
const leases = store.leases!
// The store's own object, its holds watched: the server cannot tell it from the store itself.
const watched: Store = {
  ...store,
  leases: {
    ...leases,
    async reserveHeld(...args) {
      const r = await leases.reserveHeld(...args)
      if (r) die('reserved')
      return r
    },
    async closeHeld(...args) {
      die('looked-up')
      if (stallMs > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, stallMs)
      const closed = await leases.closeHeld(...args)
      die('settled', { settled: closed })
      return closed
    },
  },
}
const app = createServer({
  db: watched,
  purgeIntervalMs: 0,
  webhookIntervalMs: 0,
  dashboard: false,
  ...(leaseMs ? { instanceLeaseMs: leaseMs } : {}),
  riskcheck: { offline: true },
})
app.addHook('onSend', async (request, reply, payload) => {
  if (request.method !== 'POST' || !request.url.startsWith('/v1/phone')) return
  const code = reply.statusCode === 200 ? undefined : (JSON.parse(String(payload)) as { error?: { code?: string } }).error?.code
  die('responding', { status: reply.statusCode, ...(code ? { code } : {}) })
})
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${JSON.stringify({ port: (app.server.address() as { port: number }).port })}\n`)

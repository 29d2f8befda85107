/**
 * An API server in its own process, for test/lookup-crash-points.test.ts: SIGKILLs itself at the first billed
 * lookup's boundary named by RISKCHECK_CRASH_AT — `reserved` (its credits are held), `looked-up` (the answer is
 * ready, nothing settled), `settled` (the settlement committed) or `responding` (the last hook before the answer's
 * bytes are written) — and serves normally without it. Arguments: `sqlite FILE` or `postgres URL SCHEMA`; the lease
 * length in ms (RISKCHECK_LEASE_MS, default the server's). Prints `{"port":N}` once it listens.
 */
import { createServer } from '../../src/server/app.js'
import { createPostgresStore } from '../../src/server/store/postgres/store.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import type { Store } from '../../src/server/store/contracts/store.js'

const [engine, target, schema] = process.argv.slice(2) as [string, string, string | undefined]
const crashAt = process.env.RISKCHECK_CRASH_AT ?? ''
const leaseMs = process.env.RISKCHECK_LEASE_MS ? Number(process.env.RISKCHECK_LEASE_MS) : undefined
const die = (at: string) => {
  if (at === crashAt) process.kill(process.pid, 'SIGKILL')
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
      const closed = await leases.closeHeld(...args)
      die('settled')
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
app.addHook('onSend', async (request) => {
  if (request.method === 'POST' && request.url.startsWith('/v1/phone')) die('responding')
})
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`${JSON.stringify({ port: (app.server.address() as { port: number }).port })}\n`)

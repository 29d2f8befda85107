/**
 * How long a client waits for its answer when the server instance running its request is SIGKILLed, with the
 * default instance lease (10 s): instance A (a child process) dies once the lookup has run but before it settled; the
 * client, retrying with its Idempotency-Key on instance B and following `Retry-After`, is answered once A's lease has
 * lapsed and B took the request over. Prints, per engine and run, the time from the crash to the answer, the
 * `Retry-After` values on the way, and the credits afterwards.
 *
 *   npx tsx scripts/bench/takeover.ts [--runs 3] [--database-url postgres://…]
 *
 * SQLite always; PostgreSQL with `--database-url` (a schema of its own per run, dropped after).
 */
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'

const { values } = parseArgs({ options: { runs: { type: 'string' }, 'database-url': { type: 'string' } } })
if (values['database-url']) process.env.RISKCHECK_TEST_DATABASE_URL = values['database-url']
const RUNS = Number(values.runs ?? 3)
// after the environment is set: the harness reads it when loaded
const { crashAndRetry, engines, removeFiles } = await import('../../test/lookup-crash-harness.js')

try {
  for (const engine of engines.filter((e) => e.enabled)) {
    for (let run = 1; run <= RUNS; run++) {
      const db = await engine.open()
      let crashed = 0
      let answered = 0
      try {
        const r = await crashAndRetry(db, 'looked-up', true, undefined, { crashed: () => (crashed = performance.now()), answered: () => (answered = performance.now()) })
        const charged = r.initial - (r.after.subscriptionCredits + r.after.purchasedCredits)
        console.log(
          `${engine.name} run ${run}: answered ${(answered - crashed).toFixed(0)} ms after the crash; Retry-After ${r.retryAfter.join(', ')} s; ` +
            `charged ${charged} credit(s) for ${r.after.usage.totalLookups} lookup(s), ${r.holds} hold(s) left`,
        )
      } finally {
        await db.drop()
      }
    }
  }
} finally {
  removeFiles()
}

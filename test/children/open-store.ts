/**
 * A process opening the SQLite file of its argument as `riskcheck serve` does, for the migration race of
 * src/server/store/sqlite/migrate.test.ts: prints `ready` once loaded, waits for a line on stdin (so that several
 * start at once), opens the service store, runs the dashboard's migrations and prints `{"ran":[…]}`, the versions
 * it applied.
 */
import { createInterface } from 'node:readline'
import { migrateDashboard } from '../../src/server/store/sqlite/dashboard.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'

const file = process.argv[2]!
process.stdout.write('ready\n')
const lines = createInterface({ input: process.stdin })
await new Promise<void>((resolve) => lines.once('line', () => resolve()))
lines.close()
const store = createSqliteStore(file, { backgroundCheckpoints: false })
const ran = migrateDashboard(store.db)
store.close()
process.stdout.write(`${JSON.stringify({ ran })}\n`)

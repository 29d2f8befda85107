/**
 * A bulk worker in its own process (riskcheck serve's server with the BullMQ workers, no port), for
 * test/redis-bulk-queue.test.ts to SIGKILL mid-job. Arguments: SQLite file, Redis URL, BullMQ prefix. Phone
 * lookups take 3 ms each (a slow carrier source), so a job of 1,000 runs long enough to be killed in the middle.
 */
import { createServer } from '../../src/server/app.js'
import { MOBILE_RECORD } from './slow-carrier.js'

const [file, redisUrl, prefix] = process.argv.slice(2) as [string, string, string]
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const app = createServer({
  db: file,
  purgeIntervalMs: 0,
  webhookIntervalMs: 0,
  bulkConcurrency: 4,
  queue: { redisUrl, prefix, workers: true, worker: { lockDuration: 1000, stalledInterval: 250 } },
  riskcheck: {
    now: () => new Date('2026-11-22T00:00:00Z'),
    cache: false,
    phone: {
      carrierSource: {
        name: 'slow-carrier',
        async lookup() {
          await sleep(3)
          return MOBILE_RECORD
        },
      },
    },
  },
})
await app.ready()
process.stdout.write('ready\n')

/**
 * A webhook delivery worker in its own process, for test/redis-delivery-queue.test.ts to SIGKILL mid-delivery.
 * Arguments: SQLite file, Redis URL, BullMQ prefix. Sweeps once (leasing what is due) and works until killed.
 */
import { createDeliveryQueue } from '../../src/server/queue/delivery-queue.js'
import { createSqliteDeliveryStore } from '../../src/server/store/sqlite/deliveries.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'

const [file, redisUrl, prefix] = process.argv.slice(2) as [string, string, string]
const store = createSqliteStore(file)
const queue = createDeliveryQueue({
  redisUrl,
  prefix,
  store: createSqliteDeliveryStore(store.db),
  allowLoopback: true,
  worker: { lockDuration: 1000, stalledInterval: 250 },
})
queue.startWorker()
await queue.sweep()
process.stdout.write('swept\n')

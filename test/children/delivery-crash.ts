/**
 * The webhook service in its own process, for test/delivery-crash-points.test.ts: SIGKILLs itself at the first
 * boundary named `point` of a delivery's life (the service's crash hook) and prints `survived` if it never got
 * there. Arguments: SQLite file, crash point, the clock (unix ms, fixed). Loopback deliveries allowed, one at a time.
 */
import { createWebhookService } from '../../src/server/webhook-service.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'

const [file, point, clock] = process.argv.slice(2) as [string, string, string]
const store = createSqliteStore(file)
const service = createWebhookService({
  db: store.db,
  nowMs: () => Number(clock),
  allowLoopback: true,
  intervalMs: 0,
  concurrency: 1,
  crashHook: (at) => {
    if (at === point) process.kill(process.pid, 'SIGKILL')
  },
})
for (let i = 0; i < 5; i++) await service.runOnce()
process.stdout.write('survived\n')
store.close()

/**
 * Webhooks of the server: the endpoints, outbox and delivery pump over the store's delivery tables, optionally
 * distributed by BullMQ (`ServerOptions.queue`). Its routes are ../routes/webhooks.ts; ./lifecycle.ts starts and
 * stops the pump with the server.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { ServerOptions } from '../app.js'
import type { ServerMetrics } from '../metrics.js'
import type { ServiceStorage } from '../store/contracts/service-storage.js'
import { createWebhookService, type WebhookService } from '../webhook-service.js'
import type { ServerSettings } from './context.js'

/** The webhook service of a server whose store has delivery tables. */
export function createServerWebhooks(o: {
  options: ServerOptions
  service: ServiceStorage
  nowMs: () => number
  settings: ServerSettings
  backgroundLog: () => FastifyBaseLogger | undefined
  metrics: ServerMetrics | undefined
}): WebhookService {
  const { options, metrics } = o
  const q = options.queue
  return createWebhookService({
    storage: o.service.webhooks,
    nowMs: o.nowMs,
    allowLoopback: options.unsafeAllowLoopbackWebhooks === true,
    intervalMs: o.settings.webhookEvery,
    log: o.backgroundLog,
    ...(options.webhookDeliver ? { deliver: options.webhookDeliver } : {}),
    ...(options.webhookConcurrency ? { concurrency: options.webhookConcurrency } : {}),
    ...(metrics ? { onAttempt: (ok: boolean) => metrics.delivery(ok ? 'succeeded' : 'failed') } : {}),
    ...(q
      ? {
          queue: {
            redisUrl: q.redisUrl,
            prefix: q.prefix ?? 'riskcheck',
            workers: q.workers !== false,
            ...(q.worker ? { worker: q.worker } : {}),
            ...(q.retryDelaysMs ? { retryDelaysMs: q.retryDelaysMs } : {}),
          },
        }
      : {}),
  })
}

/**
 * Prometheus metrics of the server (docs/deployment.md "Metrics"), with prom-client — the Node ecosystem's standard
 * client; its text exposition format and histogram buckets are what Prometheus expects, so nothing here is
 * hand-formatted. Each server has its own registry (two servers in one process do not mix their counts).
 *
 * Served by `riskcheck serve --metrics-port N` on a separate listener (off by default), never on the API port:
 * the API port faces clients, the metrics port faces the operator's scraper.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'

/** The server's metrics. */
export interface ServerMetrics {
  readonly registry: Registry
  /** One finished HTTP request: `route` is the route pattern (`/v1/bulk/jobs/:id`), `unmatched` for unknown paths. */
  request(method: string, route: string, status: number, seconds: number): void
  /** One answered lookup, by type (`email`, `ip`, … `check`) and whether it came from the result cache. */
  lookup(type: string, cacheHit: boolean, mode: 'live' | 'test'): void
  /** Credits billed (settled) for lookups of live keys. */
  billed(credits: number): void
  /** One webhook delivery attempt: `succeeded` or `failed`. */
  delivery(outcome: 'succeeded' | 'failed'): void
  /** The Prometheus text of every metric. */
  text(): Promise<string>
  readonly contentType: string
}

/**
 * Creates the metrics. `bulkQueueDepth` is asked at each scrape (bulk jobs queued or running); `process` adds Node's
 * default process metrics (CPU, memory, event-loop lag) under `riskcheck_`.
 */
export function createServerMetrics(
  options: { bulkQueueDepth?: () => number | Promise<number>; webhookBacklog?: () => number | Promise<number>; process?: boolean } = {},
): ServerMetrics {
  const registry = new Registry()
  if (options.process !== false) collectDefaultMetrics({ register: registry, prefix: 'riskcheck_' })
  const requests = new Counter({
    name: 'riskcheck_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  })
  const latency = new Histogram({
    name: 'riskcheck_http_request_duration_seconds',
    help: 'Time from the request arriving to the response sent, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  })
  const lookups = new Counter({
    name: 'riskcheck_lookups_total',
    help: 'Lookups answered over HTTP, by type, cache hit and key mode.',
    labelNames: ['type', 'cache_hit', 'mode'] as const,
    registers: [registry],
  })
  const credits = new Counter({ name: 'riskcheck_credits_billed_total', help: 'Credits billed for live lookups.', registers: [registry] })
  const deliveries = new Counter({
    name: 'riskcheck_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  })
  const bulkDepth = options.bulkQueueDepth
  new Gauge({
    name: 'riskcheck_bulk_queue_depth',
    help: 'Bulk jobs queued or running.',
    registers: [registry],
    async collect() {
      this.set(bulkDepth ? await bulkDepth() : 0)
    },
  })
  const backlog = options.webhookBacklog
  new Gauge({
    name: 'riskcheck_webhook_deliveries_pending',
    help: 'Webhook deliveries waiting to be sent or retried.',
    registers: [registry],
    async collect() {
      this.set(backlog ? await backlog() : 0)
    },
  })
  return {
    registry,
    request(method, route, status, seconds) {
      requests.inc({ method, route, status: String(status) })
      latency.observe({ method, route }, seconds)
    },
    lookup(type, cacheHit, mode) {
      lookups.inc({ type, cache_hit: String(cacheHit), mode })
    },
    billed(n) {
      if (n > 0) credits.inc(n)
    },
    delivery(outcome) {
      deliveries.inc({ outcome })
    },
    text: () => registry.metrics(),
    contentType: registry.contentType,
  }
}

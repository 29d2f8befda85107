/**
 * The operator's port of `riskcheck serve` and `riskcheck worker` (`--metrics-port N`): GET /metrics, the server's
 * Prometheus metrics, and GET /healthz, its liveness answer — on a listener of their own, never on the API port.
 */
import { createServer, type Server } from 'node:http'
import type { RiskcheckServer } from '../server/app.js'
import { listenUrl } from '../server/public-url.js'
import { messageOf, UsageError } from './shared.js'

/** The port of `--metrics-port` (0 picks a free one); a UsageError naming `what` for anything but 0–65535. */
export function metricsPortOf(value: unknown, what = '--metrics-port'): number {
  const port = Number(value)
  if (!/^[0-9]{1,5}$/.test(String(value)) || port > 65535) throw new UsageError(`${what} must be 0–65535 (got ${String(value)})`)
  return port
}

/**
 * Serves GET /metrics (the Prometheus text of `app.metrics`) and GET /healthz (what the API port's /healthz answers)
 * on `host`:`port`; any other request is a 404 naming the two. Resolves once it listens, with the metrics URL.
 */
export async function listenMetrics(app: RiskcheckServer, host: string, port: number): Promise<{ server: Server; url: string }> {
  const metrics = app.metrics
  if (!metrics) throw new Error('the server collects no metrics (createServer({ metrics: true }))')
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (req.method === 'GET' && path === '/metrics') {
      metrics.text().then(
        (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
        (e: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${messageOf(e)}\n`),
      )
      return
    }
    if (req.method === 'GET' && path === '/healthz') {
      app.inject({ method: 'GET', url: '/healthz' }).then(
        (r) => res.writeHead(r.statusCode, { 'content-type': String(r.headers['content-type'] ?? 'application/json') }).end(r.body),
        (e: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`healthz failed: ${messageOf(e)}\n`),
      )
      return
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics or GET /healthz\n')
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  server.unref()
  const address = server.address()
  const actual = typeof address === 'object' && address ? address.port : port
  return { server, url: `${listenUrl({ address: host, port: actual })}/metrics` }
}

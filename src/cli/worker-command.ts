/**
 * `riskcheck worker`: runs only the workers of a scaled deployment — bulk jobs and webhook deliveries taken from
 * BullMQ on Redis, over the PostgreSQL store — until SIGINT/SIGTERM, then drains (the jobs it runs write what they
 * did and hand their messages back; deliveries in flight finish). No API port: it logs every bulk job it takes and
 * gives up and every webhook attempt (ids and counts, never inputs), and `--metrics-port N` serves GET /metrics and
 * GET /healthz as `serve` does. docs/deployment.md "Workers".
 */
import { parseArgs } from 'node:util'
import type { RiskcheckOptions } from '../options.js'
import { resolveDeployment, type Deployment } from '../server/queue/deployment.js'
import { databaseVariables, pickDatabase, postgresLocation, safeUrl } from './database.js'
import { openPostgres, queueWorkerOf, stopRequested } from './serve-command.js'
import { DEFAULT_QUEUE_LOCK_MS, databaseTimeoutOf, queueLockOf, redisPrefixOf, withEnvironment, type Variable } from './serve-settings.js'
import { listenMetrics, metricsPortOf } from './metrics-listener.js'
import { EXIT, GLOBAL_FLAGS, messageOf, optionsFromFlags, UsageError, type CliCommand, type CliIO } from './shared.js'

const WORKER_HELP = `Usage: riskcheck worker --database-url postgres://… --redis-url redis://… [--redis-prefix NAME] [--queue-lock-timeout 30s]
                        [--database-timeout 5s] [--no-migrate] [--log-level LEVEL] [--metrics-port N [--host HOST]] [lookup flags]

Runs bulk jobs and webhook deliveries taken from the shared queue (BullMQ on Redis) until SIGINT or SIGTERM, then
finishes what it holds. Start as many as needed next to API instances (riskcheck serve --no-workers, or serve,
which runs workers too). Supported: PostgreSQL + Redis only; a SQLite store runs its workers inside riskcheck serve.
Logs (JSON on stderr, level info) one line per bulk job it takes and one when it finishes or hands it back, and one
per webhook delivery attempt: ids and counts, never the inputs.

  flag                  environment variable                  meaning
  --database-url URL    RISKCHECK_DATABASE_URL (or DATABASE_URL)  the PostgreSQL store (postgres://…; ?schema=NAME picks the schema)
  --redis-url URL       RISKCHECK_REDIS_URL (or REDIS_URL)        the Redis of the queue (redis://… or rediss://…)
  --redis-prefix NAME   RISKCHECK_REDIS_PREFIX                    prefix of the deployment's Redis keys and queues (default riskcheck)
  --queue-lock-timeout D
                        RISKCHECK_QUEUE_LOCK_TIMEOUT              how long a worker holds a job without renewing its lock before
                                                                  another takes it over (a worker that died), and how often
                                                                  workers look for such jobs (default 30s; at least 1s)
  --database-timeout D  RISKCHECK_DATABASE_TIMEOUT                how long a connection wait or a statement may take (default 5s)
  --no-migrate          RISKCHECK_NO_MIGRATE=1                    do not migrate at start; refuse a schema that is behind
  --log-level LEVEL     RISKCHECK_LOG_LEVEL                       fatal, error, warn, info (default), debug, trace, silent
  --metrics-port N      RISKCHECK_METRICS_PORT                    serve GET /metrics (Prometheus, as riskcheck serve) and
                                                                  GET /healthz on this port (off by default; 0 picks a free one)
  --host HOST           RISKCHECK_HOST (or HOST)                  address of the metrics port (default 127.0.0.1)
  --unsafe-allow-loopback-webhooks RISKCHECK_UNSAFE_ALLOW_LOOPBACK_WEBHOOKS=1
                                                                  deliver to webhook URLs on loopback (tests only)
  lookup flags          RISKCHECK_<FLAG>                          as for riskcheck serve
`

const WORKER_FLAGS = {
  'database-url': { type: 'string' },
  'redis-url': { type: 'string' },
  'redis-prefix': { type: 'string' },
  'queue-lock-timeout': { type: 'string' },
  'database-timeout': { type: 'string' },
  'no-migrate': { type: 'boolean' },
  db: { type: 'string' },
  'log-level': { type: 'string' },
  'metrics-port': { type: 'string' },
  host: { type: 'string' },
  'unsafe-allow-loopback-webhooks': { type: 'boolean' },
} as const

/** The variables of the worker's own flags (first non-empty wins; a flag wins over all); docs/deployment.md names each. */
export const WORKER_VARIABLES: readonly Variable[] = [
  ...databaseVariables(),
  { flag: 'redis-url', names: ['RISKCHECK_REDIS_URL', 'REDIS_URL'], type: 'string', multiple: false },
  { flag: 'redis-prefix', names: ['RISKCHECK_REDIS_PREFIX'], type: 'string', multiple: false },
  { flag: 'queue-lock-timeout', names: ['RISKCHECK_QUEUE_LOCK_TIMEOUT'], type: 'string', multiple: false },
  { flag: 'database-timeout', names: ['RISKCHECK_DATABASE_TIMEOUT'], type: 'string', multiple: false },
  { flag: 'log-level', names: ['RISKCHECK_LOG_LEVEL'], type: 'string', multiple: false },
  { flag: 'metrics-port', names: ['RISKCHECK_METRICS_PORT'], type: 'string', multiple: false },
  { flag: 'host', names: ['RISKCHECK_HOST', 'HOST'], type: 'string', multiple: false },
  { flag: 'unsafe-allow-loopback-webhooks', names: ['RISKCHECK_UNSAFE_ALLOW_LOOPBACK_WEBHOOKS'], type: 'boolean', multiple: false },
]

/**
 * Opens the server of a scaled deployment without a port: the PostgreSQL stores, and `createServer` with the queue's
 * workers and no dashboard (with metrics for `--metrics-port`). `app.ready()` starts what runs in the background
 * (the webhook pump, the bulk worker).
 */
async function openWorkerServer(
  deployment: Extract<Deployment, { mode: 'scaled' }>,
  options: { riskcheck: RiskcheckOptions; logLevel: string; migrate: boolean; redisPrefix: string; queueLockMs: number; databaseTimeoutMs: number | undefined; allowLoopbackWebhooks: boolean; metrics: boolean; io: CliIO },
) {
  const stores = await openPostgres(deployment.databaseUrl, options.migrate, options.databaseTimeoutMs)
  try {
    const { createServer } = await import('../server/app.js')
    const app = createServer({
      db: stores.store,
      orgPolicies: stores.orgPolicies,
      riskcheck: options.riskcheck,
      queue: { redisUrl: deployment.redisUrl, workers: true, prefix: options.redisPrefix, worker: queueWorkerOf(options.queueLockMs) },
      dashboard: false,
      ...(options.metrics ? { metrics: true } : {}),
      ...(options.allowLoopbackWebhooks ? { unsafeAllowLoopbackWebhooks: true } : {}),
      logger: { level: options.logLevel, stream: options.io.stderr as NodeJS.WritableStream & { write(s: string): boolean } },
    })
    try {
      await app.ready()
    } catch (e) {
      await app.close().catch(() => undefined)
      throw e
    }
    return {
      app,
      async close() {
        await app.close()
        await stores.close()
      },
    }
  } catch (e) {
    await stores.close().catch(() => undefined)
    throw e
  }
}

/** Runs `riskcheck worker`; exit 0 after a clean stop, 64 for bad usage (or an unsupported combination), 1 when it cannot start. */
export async function runWorker(args: string[], io: CliIO, options: { signal?: AbortSignal } = {}): Promise<number> {
  const env = io.env ?? process.env
  let deployment: Extract<Deployment, { mode: 'scaled' }>
  let redisPrefix = 'riskcheck'
  let queueLockMs = DEFAULT_QUEUE_LOCK_MS
  let metricsPort: number | null = null
  let databaseTimeoutMs: number | undefined
  let values: Record<string, unknown>
  let riskcheck: ReturnType<typeof optionsFromFlags>
  try {
    values = parseArgs({ args, options: { ...GLOBAL_FLAGS, ...WORKER_FLAGS }, allowPositionals: false, strict: true }).values as Record<string, unknown>
    if (values.help) {
      io.stdout.write(WORKER_HELP)
      return EXIT.ok
    }
    const merged = withEnvironment(values, env, WORKER_VARIABLES)
    values = merged.values
    const resolved = resolveDeployment({
      ...pickDatabase(values, merged.origin),
      redisUrl: values['redis-url'] as string | undefined,
      workers: true,
      api: false,
    })
    if (!resolved.ok) throw new UsageError(resolved.error)
    deployment = resolved.deployment as Extract<Deployment, { mode: 'scaled' }>
    redisPrefix = redisPrefixOf(values)
    queueLockMs = queueLockOf(values)
    if (values['metrics-port'] !== undefined) metricsPort = metricsPortOf(values['metrics-port'], merged.origin('metrics-port'))
    databaseTimeoutMs = databaseTimeoutOf(values)
    postgresLocation(deployment.databaseUrl)
    riskcheck = optionsFromFlags(values, env)
  } catch (e) {
    io.stderr.write(`riskcheck worker: ${messageOf(e)}\n`)
    return EXIT.usage
  }
  const stop = stopRequested(options.signal, env)
  try {
    let server: Awaited<ReturnType<typeof openWorkerServer>>
    try {
      server = await openWorkerServer(deployment, {
        riskcheck,
        logLevel: (values['log-level'] as string | undefined) ?? 'info',
        migrate: values['no-migrate'] !== true,
        redisPrefix,
        queueLockMs,
        databaseTimeoutMs,
        allowLoopbackWebhooks: values['unsafe-allow-loopback-webhooks'] === true,
        metrics: metricsPort !== null,
        io,
      })
    } catch (e) {
      io.stderr.write(`riskcheck worker: cannot start: ${messageOf(e)}\n`)
      return EXIT.failed
    }
    let metrics: Awaited<ReturnType<typeof listenMetrics>> | undefined
    if (metricsPort !== null) {
      try {
        metrics = await listenMetrics(server.app, (values.host as string | undefined) ?? '127.0.0.1', metricsPort)
      } catch (e) {
        io.stderr.write(`riskcheck worker: cannot start the metrics listener: ${messageOf(e)}\n`)
        await server.close()
        return EXIT.failed
      }
    }
    const runs = [...(server.app.bulk ? ['bulk jobs'] : []), ...(server.app.webhooks ? ['webhook deliveries'] : [])]
    if (runs.length < 2) {
      io.stderr.write(
        `riskcheck worker: warning: this build runs no ${['bulk jobs', 'webhook deliveries'].filter((r) => !runs.includes(r)).join(' and ')} on PostgreSQL\n`,
      )
    }
    io.stdout.write(`riskcheck worker running (${runs.join(', ') || 'nothing'}) on ${safeUrl(deployment.databaseUrl)}${metrics ? `; metrics on ${metrics.url}` : ''}\n`)
    await stop.stopped
    io.stdout.write('riskcheck worker shutting down: finishing the jobs it holds…\n')
    await server.close()
    metrics?.server.close()
    return EXIT.ok
  } finally {
    stop.dispose()
  }
}

/** The `worker` command (registered by the CLI). */
export const workerCommand: CliCommand = {
  name: 'worker',
  summary: 'run only the workers (bulk jobs, webhook deliveries) of a PostgreSQL + Redis deployment',
  run: (args, io) => runWorker(args, io),
}

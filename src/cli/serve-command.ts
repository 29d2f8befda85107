/**
 * `riskcheck serve`: runs the HTTP API until SIGINT/SIGTERM, then drains within --drain-timeout (docs/deployment.md).
 * `--metrics-port N` serves Prometheus metrics on a listener of its own (./metrics-listener.ts); every flag has an
 * environment variable (./serve-settings.ts), and a flag wins. `--policy FILE` scores orgs without a policy of their
 * own; `--refresh-data EVERY` runs `riskcheck data update` inside the server. The flags: `riskcheck serve --help`.
 */
import { parseArgs } from 'node:util'
import { DATA_SOURCE_NAMES, isDataSourceName, parseDuration, type DataSourceName } from '../data/catalog.js'
import { resolveOptions } from '../options.js'
import { DEFAULT_QUEUE_LOCK_MS, databaseTimeoutOf, queueLockOf, recheckOf, redisPrefixOf, SERVE_FLAGS, trustProxyOf, fastifyTrustProxy, withEnvironment, type TrustProxy } from './serve-settings.js'
import { DEFAULT_DB, pickDatabase, postgresLocation, safeUrl } from './database.js'
import { resolveDeployment, type Deployment } from '../server/queue/deployment.js'
import { MAX_COMPILED_ITEMS_LIMIT } from '../server/compiled-lists-bound.js'
import { checkDocsUrl } from '../server/error-docs.js'
import { isWildcardAddress, listenUrl } from '../server/public-url.js'
import { listenMetrics, metricsPortOf } from './metrics-listener.js'
import { EXIT, GLOBAL_FLAGS, messageOf, optionsFromFlags, policyFromFlags, UsageError, type CliCommand, type CliIO } from './shared.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

const SERVE_HELP = `Usage: riskcheck serve [--host 127.0.0.1] [--port 8080] [--db ./riskcheck.sqlite] [--json] [--log-level LEVEL]
                       [--database-url postgres://… --redis-url redis://… [--no-migrate] [--no-workers]
                        [--redis-prefix NAME] [--queue-lock-timeout 30s] [--database-timeout 5s]]
                       [--policy FILE] [--data-dir DIR] [--refresh-data EVERY] [--data-source NAME=URL|FILE …]
                       [--metrics-port N] [--drain-timeout 30s] [--trust-proxy HOPS|ADDRESSES]
                       [--mail-url smtp://HOST:PORT] [--public-url URL] [--velocity-secret SECRET | --no-velocity]
                       [lookup flags: --offline, --dns-server IP[:PORT], --dns-timeout MS, --smtp-port N, --helo NAME,
                        --mail-from ADDR, --smtp-proxy URL, --city-db PATH, --asn-db PATH, --rdap-bootstrap-url URL, --now ISO, …]

Runs the HTTP API (POST /v1/email, /v1/phone, /v1/phone/type, /v1/ip, /v1/domain/age, /v1/domain/email-auth,
/v1/check; bulk jobs under /v1/bulk/jobs; webhook endpoints under /v1/webhook-endpoints; GET /v1/account,
/v1/pricing, /v1/openapi.json; GET /healthz and /readyz unauthenticated) until SIGINT or SIGTERM, which drain:
in-flight requests, webhook deliveries and bulk checkpoints finish, then exit 0 (docs/deployment.md).
Supported: SQLite alone (--db, the default: one process runs the API, bulk jobs and webhook deliveries), or
PostgreSQL + Redis (--database-url and --redis-url: any number of API instances and riskcheck worker processes;
docs/service.md "Scaling out"). On PostgreSQL pending migrations run at start unless --no-migrate.
The team dashboard (sign-up, keys, usage, bulk jobs, webhooks) is at /dashboard (its address is printed at
start, under --public-url when set). Or create an org and a key with
riskcheck admin org create --name NAME; riskcheck admin key create --org ORG_ID
--policy FILE scores every org that has no policy of its own (riskcheck admin policy set --org ORG_ID FILE wins,
from the org's next request; no restart).

  flag                environment variable           meaning
  --host HOST         RISKCHECK_HOST (or HOST)       address to listen on (default 127.0.0.1)
  --port N            RISKCHECK_PORT (or PORT)       port (default 8080; 0 picks a free one)
  --db PATH           RISKCHECK_DB                   SQLite database (default ./riskcheck.sqlite; created and migrated on start)
  --database-url URL  RISKCHECK_DATABASE_URL (or DATABASE_URL)
                                                     postgres://… : the PostgreSQL database shared by every instance
                                                     (needs --redis-url); ?schema=NAME or
                                                     ?options=-c%20search_path%3DNAME picks the schema
  --no-migrate        RISKCHECK_NO_MIGRATE=1         PostgreSQL: do not migrate at start; refuse to start when the
                                                     schema is behind (run riskcheck admin migrate in a release step)
  --redis-url URL     RISKCHECK_REDIS_URL (or REDIS_URL)
                                                     redis://… : rate limits shared by every instance, bulk jobs and
                                                     webhook deliveries distributed by BullMQ (needs PostgreSQL)
  --redis-prefix NAME RISKCHECK_REDIS_PREFIX         prefix of this deployment's Redis keys and queues (default riskcheck):
                                                     deployments sharing one Redis use one each
  --queue-lock-timeout D
                      RISKCHECK_QUEUE_LOCK_TIMEOUT   how long a worker holds a bulk job or webhook delivery without
                                                     renewing its lock before another worker takes it over (a worker
                                                     that died), and how often workers look for such jobs (default
                                                     30s; at least 1s; needs --redis-url)
  --database-timeout D
                      RISKCHECK_DATABASE_TIMEOUT     PostgreSQL: how long a connection wait or a statement may take before
                                                     the request is answered 503 UPSTREAM_UNAVAILABLE (a database that
                                                     hangs; default 5s; 100ms–10m; migrations are not bound)
  --no-workers        RISKCHECK_NO_WORKERS=1         API only: bulk jobs and webhook deliveries run on other processes
                                                     (riskcheck worker); needs --redis-url
  --json              RISKCHECK_JSON=1               print the listening address as one JSON line
  --metrics-port N    RISKCHECK_METRICS_PORT         serve Prometheus metrics on GET /metrics of this port (same host;
                                                     off by default; 0 picks a free one), and GET /healthz. GET /healthz
                                                     and /readyz are on the API port too
  --drain-timeout D   RISKCHECK_DRAIN_TIMEOUT        on SIGTERM/SIGINT, how long in-flight requests, bulk jobs and
                                                     webhook deliveries get to finish (default 30s; e.g. 10s, 2m)
  --outcome-retention-days N
                      RISKCHECK_OUTCOME_RETENTION_DAYS
                                                     how long outcomes (POST /v1/outcomes) and the input hashes of
                                                     answered requests are kept (default 180; 1–3650)
  --lists-compiled-items N
                      RISKCHECK_LISTS_COMPILED_ITEMS
                                                     most allow/block list items this process keeps compiled, all orgs
                                                     together (default 4000000, about 100 bytes each); beyond, the
                                                     least recently used org's lists are compiled again when needed
  --recheck-delays D,D,…
                      RISKCHECK_RECHECK_DELAYS       when email answers a mail server deferred (4xx, greylisting) are
                                                     checked again, after the answer (default 5m,15m,60m; 1–10 ascending
                                                     durations); a definite verdict sends email.rechecked (docs/rechecks.md)
  --no-recheck        RISKCHECK_NO_RECHECK=1         do not recheck deferred email answers
  --log-level LEVEL   RISKCHECK_LOG_LEVEL            fatal, error, warn, info (default), debug, trace or silent; logs go to stderr
  --unsafe-allow-loopback-webhooks
                      RISKCHECK_UNSAFE_ALLOW_LOOPBACK_WEBHOOKS=1
                                                     let webhook endpoints and deliveries use http://127.0.0.1 (tests and
                                                     local development only; never in production)
  --mail-url URL      RISKCHECK_MAIL_URL             SMTP relay of the dashboard's mails (smtp://host:port, smtps://user:pass@host,
                                                     ?from=ADDR); without it verification and invite mails are not sent
  --public-url URL    RISKCHECK_PUBLIC_URL           where the server is reached from outside (https://host[:port][/prefix]):
                                                     the base of every link in the dashboard's mails and the OpenAPI
                                                     server URL (default: the address it listens on; never a request's
                                                     Host or X-Forwarded-* headers, trusted proxy or not)
  --trust-proxy T     RISKCHECK_TRUST_PROXY          behind a reverse proxy: true (every hop), a hop count, or comma-separated
                                                     proxy addresses/CIDR ranges; their X-Forwarded-For/-Proto give the
                                                     client address (rate and sign-in limits) and https (Secure cookies).
                                                     Default: none trusted
  --docs-url URL      RISKCHECK_DOCS_URL             base of docs_url in error answers (your error documentation; the code's
                                                     anchor is appended, #rate_limited); default: this server's own
                                                     GET /docs/errors under --public-url, else at its listen address
  --velocity-secret S RISKCHECK_VELOCITY_SECRET      key of the velocity hashes (16+ characters, the same on every
                                                     instance); default: derived from the database's own random secret
  --no-velocity       RISKCHECK_NO_VELOCITY=1        do not count velocity (details.velocity is null)
  lookup flags        RISKCHECK_<FLAG>               e.g. RISKCHECK_OFFLINE=1, RISKCHECK_DNS_SERVER=1.1.1.1,9.9.9.9,
                                                     RISKCHECK_SMTP_PORT=2525, RISKCHECK_HELO=mx.example.org
A flag wins over its variable. Booleans read 1/true/yes/on or 0/false/no/off.
`

/** The server's velocity option of --no-velocity and --velocity-secret (a UsageError for a short secret or both). */
function velocityOf(values: Record<string, unknown>): false | { secret: string } | undefined {
  const secret = values['velocity-secret'] as string | undefined
  if (values['no-velocity'] === true) {
    if (secret !== undefined) throw new UsageError('--velocity-secret and --no-velocity exclude each other')
    return false
  }
  if (secret === undefined) return undefined
  if (secret.length < 16) throw new UsageError('--velocity-secret must be at least 16 characters (the same on every instance)')
  return { secret }
}

/** The BullMQ worker settings of a `--queue-lock-timeout`: the lock, and the stalled-job check at the same period. */
export function queueWorkerOf(lockMs: number): { lockDuration: number; stalledInterval: number } {
  return { lockDuration: lockMs, stalledInterval: lockMs }
}

/** Options of {@link runServe} for embedding and tests. */
export interface RunServeOptions {
  /** Stops the server when aborted (default: SIGINT/SIGTERM of this process). */
  signal?: AbortSignal
  /** Called once the server listens, with its base URL. */
  onListening?: (url: string) => void
}

/**
 * Resolves when the server should stop: `signal` aborts, SIGINT/SIGTERM arrives, or — when npm started the process —
 * npm is gone. Listens from the moment it is called, so a signal sent as soon as the address is printed is not missed.
 * Why the npm case: docs/decisions.md, "Command line" → "`serve` shutdown".
 */
export function stopRequested(signal: AbortSignal | undefined, env: Record<string, string | undefined>): { stopped: Promise<void>; dispose(): void } {
  if (signal) {
    return {
      stopped: signal.aborted ? Promise.resolve() : new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
      dispose: () => undefined,
    }
  }
  let stop = () => undefined as void
  const stopped = new Promise<void>((resolve) => (stop = resolve))
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
  let watch: NodeJS.Timeout | undefined
  if (env.npm_lifecycle_event !== undefined) {
    const parent = process.ppid
    watch = setInterval(() => {
      if (process.ppid !== parent) stop()
    }, PARENT_CHECK_MS)
    watch.unref()
  }
  return {
    stopped,
    dispose() {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      if (watch) clearInterval(watch)
    },
  }
}

/** Default of --drain-timeout. */
const DEFAULT_DRAIN_MS = 30_000

/**
 * Graceful stop within `ms`: app.close() stops accepting connections (the listening socket closes, so new
 * connections are refused), lets in-flight requests finish (requests arriving on kept-alive connections get 503
 * MAINTENANCE with Connection: close, GET /readyz says not ready), then stops the webhook worker after its in-flight
 * deliveries, pauses bulk jobs at their next checkpoint (rows done so far are stored; the job resumes at next start)
 * and closes the store. Past `ms`, open connections are destroyed and this resolves false.
 */
async function drain(app: import('../server/app.js').RiskcheckServer, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const closed = app.close().then(() => true)
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => {
      app.server.closeAllConnections()
      resolve(false)
    }, ms)
    timer.unref()
  })
  try {
    return await Promise.race([closed, late])
  } finally {
    if (timer) clearTimeout(timer)
  }
}

/**
 * Opens the PostgreSQL stores of a scaled deployment (`riskcheck serve` and `riskcheck worker`): migrated at start
 * unless `migrate` is false, in which case a schema that is not current is refused (exit 1) with what to run.
 */
export async function openPostgres(databaseUrl: string, migrate: boolean, timeoutMs?: number) {
  const { openPostgresServerStores } = await import('../server/store/postgres/server.js')
  const { outageOf } = await import('../server/outage.js')
  // A database that does not answer at start (restarting with us, or a start slowed by a busy machine) is asked
  // again a few times, as it is during an outage, before the start fails.
  for (let attempt = 1; ; attempt++) {
    try {
      return await openPostgresServerStores(postgresLocation(databaseUrl), { migrate, ...(timeoutMs !== undefined ? { timeoutMs } : {}) })
    } catch (e) {
      if (attempt >= START_ATTEMPTS || outageOf(e) !== 'database') throw e
      await new Promise((r) => setTimeout(r, attempt * 1000))
    }
  }
}

/** How many times `serve` and `worker` try to open an unreachable PostgreSQL before they fail to start. */
const START_ATTEMPTS = 4

/** How often a server started by npm checks that npm is still there. */
const PARENT_CHECK_MS = 500

/**
 * Checks the dashboard's mail settings among the serve flags (a UsageError naming the flag): `--public-url` (made
 * canonical in `values`: the base of every link in a mail) and `--mail-url` (the SMTP relay).
 */
async function checkMailUrls(values: Record<string, unknown>): Promise<void> {
  if (values['public-url'] !== undefined) {
    const { parsePublicUrl } = await import('../server/public-url.js')
    try {
      values['public-url'] = parsePublicUrl(String(values['public-url']))
    } catch (e) {
      throw new UsageError(`--public-url ${messageOf(e)}`)
    }
  }
  if (values['mail-url'] !== undefined) {
    const { parseMailUrl } = await import('../dashboard/mail.js')
    try {
      parseMailUrl(String(values['mail-url']))
    } catch (e) {
      throw new UsageError(`--mail-url: ${messageOf(e)}`)
    }
  }
}

/** The `--data-source NAME=URL|FILE` flags as a map (a UsageError for an unknown name or an empty location). */
function dataSourcesOf(values: Record<string, unknown>): Partial<Record<DataSourceName, string>> {
  const sources: Partial<Record<DataSourceName, string>> = {}
  for (const item of (values['data-source'] as string[] | undefined) ?? []) {
    const eq = item.indexOf('=')
    const name = eq > 0 ? item.slice(0, eq) : ''
    if (!isDataSourceName(name) || eq === item.length - 1) throw new UsageError(`--data-source must be NAME=URL|FILE with NAME one of ${DATA_SOURCE_NAMES.join(', ')}`)
    sources[name] = item.slice(eq + 1)
  }
  return sources
}

/** What `serve` was asked to do: its flags and environment, checked. */
interface ServeSettings {
  values: Record<string, unknown>
  port: number
  riskcheck: ReturnType<typeof optionsFromFlags>
  refreshEvery: number | null
  metricsPort: number | null
  drainMs: number
  deployment: Deployment
  redisPrefix: string
  queueLockMs: number
  databaseTimeoutMs: number | undefined
  trustProxy: TrustProxy | undefined
  docsUrl: string | undefined
  /** The server's `velocity` option of --velocity-secret / --no-velocity. */
  velocity: false | { secret: string } | undefined
  outcomeRetentionDays: number | undefined
  listsCompiledItems: number | undefined
  recheck: { delaysMs: number[] } | false | undefined
  dataSources: Partial<Record<DataSourceName, string>>
}

/**
 * Runs `riskcheck serve` with `args` (after the command name) until `signal` aborts (or SIGINT/SIGTERM). Returns
 * the exit code: 0 after a clean shutdown, 64 for bad usage, 1 when the server cannot start.
 */
export async function runServe(args: string[], io: CliIO, options: RunServeOptions = {}): Promise<number> {
  const settings = await readServeSettings(args, io)
  if (typeof settings === 'number') return settings
  const { values, riskcheck, deployment } = settings
  const policy = await policyFromFlags(values, io, 'riskcheck serve')
  if (policy === null) return EXIT.usage
  if (policy) riskcheck.scoring = policy.overrides

  const stop = stopRequested(options.signal, io.env ?? process.env)
  try {
    const host = (values.host as string | undefined) ?? '127.0.0.1'
    const db = (deployment.mode === 'sqlite' && deployment.db) || DEFAULT_DB
    const started = await startServeApp(settings, io, host, db)
    if (!started) return EXIT.failed
    const { app, stores } = started
    const address = app.server.address()
    const actualPort = typeof address === 'object' && address ? address.port : settings.port
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`
    let metricsServer: import('node:http').Server | undefined
    let metricsUrl: string | undefined
    if (settings.metricsPort !== null && app.metrics) {
      try {
        ;({ server: metricsServer, url: metricsUrl } = await listenMetrics(app, host, settings.metricsPort))
      } catch (e) {
        io.stderr.write(`riskcheck serve: cannot start the metrics listener: ${messageOf(e)}\n`)
        await app.close()
        await stores?.close()
        return EXIT.failed
      }
    }
    const dashboardUrl = app.dashboard ? `${(values['public-url'] as string | undefined) ?? browsableUrl(host, actualPort)}/dashboard` : undefined
    const where = deployment.mode === 'scaled' ? { database_url: safeUrl(deployment.databaseUrl) } : { db }
    const policyInfo = policy ? { version: policy.version, file: values.policy as string } : null
    io.stdout.write(listeningMessage({ url, where, metricsUrl, policy: policyInfo, dashboardUrl, json: values.json === true }))
    const refresh = settings.refreshEvery !== null ? await startServerDataRefresh(app, riskcheck.dataDir as string, settings.refreshEvery, settings.dataSources) : null
    options.onListening?.(url)

    await stop.stopped
    if (!values.json) io.stdout.write('riskcheck API shutting down: finishing in-flight requests…\n')
    await refresh?.stop()
    const drained = await drain(app, settings.drainMs)
    metricsServer?.close()
    // After the server: its shutdown (bulk checkpoints, deliveries in flight) still writes to the database.
    if (drained) await stores?.close()
    else void stores?.close().catch(() => undefined)
    if (!drained) {
      io.stderr.write(`riskcheck serve: drain time (${settings.drainMs} ms) ran out; in-flight requests were cut off\n`)
      return EXIT.failed
    }
    return EXIT.ok
  } finally {
    stop.dispose()
  }
}

/**
 * The flags and environment of `serve`, checked. A number instead is the exit code to return at once: `--help`
 * printed (0), or a usage error written to stderr (64).
 */
async function readServeSettings(args: string[], io: CliIO): Promise<ServeSettings | number> {
  let origin: (flag: string) => string = (flag) => `--${flag}`
  try {
    const flags = parseArgs({ args, options: { ...GLOBAL_FLAGS, ...SERVE_FLAGS }, allowPositionals: false, strict: true }).values as Record<string, unknown>
    if (flags.help) {
      io.stdout.write(SERVE_HELP)
      return EXIT.ok
    }
    if (flags.mode !== undefined) throw new UsageError('--mode is decided per request by the key: svc_test_ keys get test answers, svc_live_ keys live ones')
    const env = withEnvironment(flags, io.env ?? process.env)
    const values = env.values
    origin = env.origin
    const port = values.port === undefined ? 8080 : Number(values.port)
    if (!/^[0-9]{1,5}$/.test(String(values.port ?? '8080')) || port > 65535) throw new UsageError(`${origin('port')} must be 0–65535 (got ${String(values.port)})`)
    const level = (values['log-level'] as string | undefined) ?? 'info'
    if (!LOG_LEVELS.includes(level)) throw new UsageError(`${origin('log-level')} must be ${LOG_LEVELS.slice(0, -1).join(', ')} or silent (got ${level})`)
    values['log-level'] = level
    const metricsPort = values['metrics-port'] !== undefined ? metricsPortOf(values['metrics-port']) : null
    let drainMs = DEFAULT_DRAIN_MS
    if (values['drain-timeout'] !== undefined) {
      const d = parseDuration(String(values['drain-timeout']))
      if (d === null || d < 1000) throw new UsageError(`--drain-timeout must be a duration of at least 1s, e.g. 30s or 2m (got ${String(values['drain-timeout'])})`)
      drainMs = d
    }
    const resolved = resolveDeployment({
      ...pickDatabase(values, origin),
      redisUrl: values['redis-url'] as string | undefined,
      workers: values['no-workers'] !== true,
    })
    if (!resolved.ok) throw new UsageError(resolved.error)
    const deployment = resolved.deployment
    const redisPrefix = redisPrefixOf(values)
    const queueLockMs = queueLockOf(values)
    const databaseTimeoutMs = databaseTimeoutOf(values)
    const trustProxy = trustProxyOf(values)
    if (deployment.mode === 'scaled') postgresLocation(deployment.databaseUrl)
    else if (databaseTimeoutMs !== undefined) throw new UsageError('--database-timeout is for PostgreSQL (--database-url): SQLite answers from this machine')
    else if (values['no-migrate'] === true) throw new UsageError('--no-migrate is for PostgreSQL (--database-url): a SQLite file is migrated when it is opened')
    else if (values['queue-lock-timeout'] !== undefined) throw new UsageError('--queue-lock-timeout is for the shared queue (--redis-url): a SQLite store runs its work in this process')
    const riskcheck = optionsFromFlags(values, io.env ?? process.env)
    resolveOptions(riskcheck) // a bad option (--dns-server nope::) is a usage error, not a failed start
    let refreshEvery: number | null = null
    if (values['refresh-data'] !== undefined) {
      refreshEvery = parseDuration(String(values['refresh-data']))
      if (refreshEvery === null || refreshEvery < 60_000) throw new UsageError(`--refresh-data must be a duration of at least 1m, e.g. 6h or 30m (got ${String(values['refresh-data'])})`)
      if (!riskcheck.dataDir) throw new UsageError('--refresh-data needs --data-dir DIR (or RISKCHECK_DATA_DIR)')
    }
    let docsUrl: string | undefined
    if (values['docs-url'] !== undefined) {
      try {
        docsUrl = checkDocsUrl(String(values['docs-url']), origin('docs-url'))
      } catch (e) {
        throw new UsageError(messageOf(e))
      }
    }
    await checkMailUrls(values)
    const dataSources = dataSourcesOf(values)
    const velocity = velocityOf(values)
    let outcomeRetentionDays: number | undefined
    if (values['outcome-retention-days'] !== undefined) {
      const text = String(values['outcome-retention-days'])
      outcomeRetentionDays = Number(text)
      if (!/^[0-9]{1,4}$/.test(text) || outcomeRetentionDays < 1 || outcomeRetentionDays > 3650) throw new UsageError(`--outcome-retention-days must be a number of days, 1–3650 (got ${text})`)
    }
    let listsCompiledItems: number | undefined
    if (values['lists-compiled-items'] !== undefined) {
      const text = String(values['lists-compiled-items'])
      listsCompiledItems = Number(text)
      if (!/^[0-9]{1,10}$/.test(text) || listsCompiledItems < 1 || listsCompiledItems > MAX_COMPILED_ITEMS_LIMIT)
        throw new UsageError(`--lists-compiled-items must be a number of items, 1–${MAX_COMPILED_ITEMS_LIMIT} (got ${text})`)
    }
    const recheck = recheckOf(values)
    return { values, port, riskcheck, refreshEvery, metricsPort, drainMs, deployment, redisPrefix, queueLockMs, databaseTimeoutMs, trustProxy, docsUrl, dataSources, velocity, outcomeRetentionDays, listsCompiledItems, recheck }
  } catch (e) {
    // A value from the environment is named by its variable, not by the flag the message speaks of.
    const message = messageOf(e).replace(/^--([a-z-]+)/, (whole, flag: string) => (origin(flag) === whole ? whole : origin(flag)))
    io.stderr.write(`riskcheck serve: ${message}\n`)
    return EXIT.usage
  }
}

/**
 * Creates the server on the deployment's storage and listens; null (the cause written to stderr, what was opened
 * closed again) when it cannot start.
 */
async function startServeApp(
  s: ServeSettings,
  io: CliIO,
  host: string,
  db: string,
): Promise<{ app: import('../server/app.js').RiskcheckServer; stores: import('../server/store/postgres/server.js').PostgresServerStores | undefined } | null> {
  const { values, deployment } = s
  // Loaded on demand so the lookup commands never load Fastify, SQLite or pg.
  const { createServer } = await import('../server/app.js')
  let stores: import('../server/store/postgres/server.js').PostgresServerStores | undefined
  let created: import('../server/app.js').RiskcheckServer | undefined
  try {
    if (deployment.mode === 'scaled') stores = await openPostgres(deployment.databaseUrl, values['no-migrate'] !== true, s.databaseTimeoutMs)
    const mail = values['mail-url'] !== undefined ? { mailUrl: String(values['mail-url']) } : {}
    const app = createServer({
      ...(stores ? { db: stores.store, orgPolicies: stores.orgPolicies, dashboard: { ...mail, teamStore: await stores.teamStore() } } : { db, dashboard: mail }),
      riskcheck: s.riskcheck,
      ...(values['public-url'] !== undefined ? { publicUrl: String(values['public-url']) } : {}),
      ...(values['unsafe-allow-loopback-webhooks'] === true ? { unsafeAllowLoopbackWebhooks: true } : {}),
      ...(deployment.mode === 'scaled'
        ? { queue: { redisUrl: deployment.redisUrl, workers: deployment.workers, prefix: s.redisPrefix, worker: queueWorkerOf(s.queueLockMs) } }
        : {}),
      ...(s.metricsPort !== null ? { metrics: true } : {}),
      ...(s.trustProxy !== undefined ? { trustProxy: fastifyTrustProxy(s.trustProxy) } : {}),
      ...(s.docsUrl !== undefined ? { docsUrl: s.docsUrl } : {}),
      ...(s.velocity !== undefined ? { velocity: s.velocity } : {}),
      ...(s.outcomeRetentionDays !== undefined ? { outcomeRetentionDays: s.outcomeRetentionDays } : {}),
      ...(s.listsCompiledItems !== undefined ? { listsCompiledItems: s.listsCompiledItems } : {}),
      ...(s.recheck !== undefined ? { recheck: s.recheck } : {}),
      logger: { level: values['log-level'] as string, stream: io.stderr as NodeJS.WritableStream & { write(s: string): boolean } },
    })
    created = app
    // The IP data loads on the first lookup that needs it, blocking every request meanwhile (0.7 s idle, seconds on a
    // loaded machine): a server loads it before it listens (docs/decisions.md "Sources and limits" → IP data).
    app.riskcheck.env.ctx.sources.ip.warm()
    await app.listen({ host, port: s.port })
    return { app, stores }
  } catch (e) {
    io.stderr.write(`riskcheck serve: cannot start: ${messageOf(e)}\n`)
    await created?.close().catch(() => undefined)
    await stores?.close().catch(() => undefined)
    return null
  }
}

/** The address a browser on this machine opens for a listen address: `localhost` for a wildcard one (0.0.0.0, ::). */
function browsableUrl(host: string, port: number): string {
  return isWildcardAddress(host) ? `http://localhost:${port}` : listenUrl({ address: host, port })
}

/**
 * What `serve` prints once it listens: the API's address and store (with the policy and the metrics URL), then
 * where the team dashboard opens — under --public-url when it is set. With --json, one JSON line of the same.
 */
function listeningMessage(o: {
  url: string
  where: { db: string } | { database_url: string }
  metricsUrl: string | undefined
  policy: { version: string; file: string } | null
  dashboardUrl: string | undefined
  json: boolean
}): string {
  if (o.json) {
    const line = { url: o.url, ...o.where, ...(o.metricsUrl ? { metrics_url: o.metricsUrl } : {}), ...(o.policy ? { policy: o.policy } : {}), ...(o.dashboardUrl ? { dashboard_url: o.dashboardUrl } : {}) }
    return `${JSON.stringify(line)}\n`
  }
  const store = 'db' in o.where ? `db ${o.where.db}` : `database ${o.where.database_url}`
  const policy = o.policy ? `, policy ${o.policy.version} from ${o.policy.file}` : ''
  const metrics = o.metricsUrl ? `; metrics on ${o.metricsUrl}` : ''
  return `riskcheck API listening on ${o.url} (${store}${policy})${metrics}\n${o.dashboardUrl ? `team dashboard: ${o.dashboardUrl}\n` : ''}`
}

/**
 * Runs `riskcheck data update` on a schedule inside the server (at once when the data in use is stale) and switches
 * the server to each newly installed set right away. Results go to the server's log.
 */
async function startServerDataRefresh(
  app: import('../server/app.js').RiskcheckServer,
  dataDir: string,
  everyMs: number,
  sources: Partial<Record<DataSourceName, string>>,
) {
  const [{ startDataRefresh }, { updateData }] = await Promise.all([import('../data/scheduler.js'), import('../data/update.js')])
  return startDataRefresh({
    everyMs,
    runAtStart: app.riskcheck.dataStatus().stale,
    update: () => updateData({ dataDir, sources }),
    onResult: async (r) => {
      for (const f of r.failed) app.log.warn({ data_source: f.name }, `data update: ${f.name} refused: ${f.reason}`)
      if (r.installed) {
        const switched = await app.riskcheck.reloadData()
        app.log.info({ data_set: r.installed, updated: r.updated.map((u) => `${u.name}@${u.version}`) }, `data update: installed data set ${r.installed}${switched.changed ? '' : ` (not in use: ${switched.error ?? 'unknown'})`}`)
      }
    },
    onError: (e) => app.log.warn({ err: e }, `data update failed: ${e.message}`),
  })
}

/** The `serve` command (registered by the CLI). */
export const serveCommand: CliCommand = {
  name: 'serve',
  summary: 'run the HTTP API (keys, credits, rate limits) on SQLite, or on PostgreSQL + Redis: serve [--host] [--port] [--db PATH | --database-url URL --redis-url URL] [lookup flags]; env RISKCHECK_*',
  run: (args, io) => runServe(args, io),
}


/**
 * `riskcheck serve`: runs the HTTP API until SIGINT/SIGTERM, then shuts down gracefully (in-flight requests finish,
 * then the riskcheck instance and the database are closed).
 *
 *   riskcheck serve [--host 127.0.0.1] [--port 8080] [--db ./riskcheck.sqlite] [--json] [--log-level info]
 *                   [--policy FILE] [--unsafe-allow-loopback-webhooks]
 *                   [the lookup flags: --offline, --dns-server HOST:PORT, --smtp-port N, --city-db PATH, …]
 *
 * `--policy FILE` applies a scoring policy file (JSON or YAML) to every request of every org; its version id is
 * printed with the listening address.
 */
import { parseArgs } from 'node:util'
import { DATA_SOURCE_NAMES, isDataSourceName, parseDuration, type DataSourceName } from '../data/catalog.js'
import type { CliCommand } from './commands.js'
import { GLOBAL_FLAGS, optionsFromFlags, policyFromFlags, type CliIO } from './main.js'

const SERVE_HELP = `Usage: riskcheck serve [--host 127.0.0.1] [--port 8080] [--db ./riskcheck.sqlite] [--json] [--log-level LEVEL]
                       [--data-dir DIR] [--refresh-data EVERY] [--data-source NAME=URL|FILE …]
                       [lookup flags: --offline, --dns-server HOST[:PORT], --dns-timeout MS, --smtp-port N, --helo NAME,
                        --mail-from ADDR, --smtp-proxy URL, --city-db PATH, --asn-db PATH, --rdap-bootstrap-url URL, --now ISO, …]

Runs the HTTP API (POST /v1/email, /v1/phone, /v1/phone/type, /v1/ip, /v1/domain/age, /v1/domain/email-auth,
/v1/check; bulk jobs under /v1/bulk/jobs; webhook endpoints under /v1/webhook-endpoints; GET /v1/account,
/v1/pricing, /v1/openapi.json) until SIGINT or SIGTERM. Webhook deliveries and bulk jobs run in this process.
Create an org and a key first: riskcheck admin org create --name NAME; riskcheck admin key create --org ORG_ID
  --host HOST        address to listen on (default 127.0.0.1)
  --port N           port (default 8080; 0 picks a free one)
  --db PATH          SQLite database (default ./riskcheck.sqlite; created and migrated on start)
  --json             print the listening address as one JSON line
  --log-level LEVEL  fatal, error, warn, info (default), debug, trace or silent; logs go to stderr
  --policy FILE      scoring policy file (JSON or YAML; check it with riskcheck policy check FILE) for every
                     request; its version id is printed at start
  --unsafe-allow-loopback-webhooks
                     let webhook endpoints and deliveries use http://127.0.0.1 (tests and local development
                     only; never in production)
  --data-dir DIR     answer from the data set "riskcheck data update" installs in DIR (default $RISKCHECK_DATA_DIR,
                     else the bundled data); a newly installed set is picked up without a restart
  --refresh-data EVERY
                     run "riskcheck data update" in this process every EVERY (e.g. 6h, 30m; at least 1m), and at
                     start when the data is stale; needs --data-dir
  --data-source NAME=URL|FILE
                     a mirror or local file for one source of the scheduled update (repeatable)
`

/** Options of {@link runServe} for embedding and tests. */
export interface RunServeOptions {
  /** Stops the server when aborted (default: SIGINT/SIGTERM of this process). */
  signal?: AbortSignal
  /** Called once the server listens, with its base URL. */
  onListening?: (url: string) => void
}

/**
 * Runs `riskcheck serve` with `args` (after the command name) until `signal` aborts (or SIGINT/SIGTERM). Returns
 * the exit code: 0 after a clean shutdown, 64 for bad usage, 1 when the server cannot start.
 */
export async function runServe(args: string[], io: CliIO, options: RunServeOptions = {}): Promise<number> {
  let values: Record<string, unknown>
  let port: number
  let riskcheck: ReturnType<typeof optionsFromFlags>
  let refreshEvery: number | null = null
  const dataSources: Partial<Record<DataSourceName, string>> = {}
  try {
    values = parseArgs({
      args,
      options: {
        ...GLOBAL_FLAGS,
        host: { type: 'string' },
        port: { type: 'string' },
        db: { type: 'string' },
        json: { type: 'boolean' },
        'log-level': { type: 'string' },
        'unsafe-allow-loopback-webhooks': { type: 'boolean' },
        'refresh-data': { type: 'string' },
        'data-source': { type: 'string', multiple: true },
      },
      allowPositionals: false,
      strict: true,
    }).values as Record<string, unknown>
    if (values.help) {
      io.stdout.write(SERVE_HELP)
      return 0
    }
    if (values.mode !== undefined) throw new Error('--mode is decided per request by the key: svc_test_ keys get test answers, svc_live_ keys live ones')
    port = values.port === undefined ? 8080 : Number(values.port)
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0–65535 (got ${String(values.port)})`)
    const level = (values['log-level'] as string | undefined) ?? 'info'
    if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(level)) throw new Error(`--log-level must be fatal, error, warn, info, debug, trace or silent (got ${level})`)
    values['log-level'] = level
    riskcheck = optionsFromFlags(values, io.env)
    if (values['refresh-data'] !== undefined) {
      refreshEvery = parseDuration(String(values['refresh-data']))
      if (refreshEvery === null || refreshEvery < 60_000) throw new Error(`--refresh-data must be a duration of at least 1m, e.g. 6h or 30m (got ${String(values['refresh-data'])})`)
      if (!riskcheck.dataDir) throw new Error('--refresh-data needs --data-dir DIR (or RISKCHECK_DATA_DIR)')
    }
    for (const item of (values['data-source'] as string[] | undefined) ?? []) {
      const eq = item.indexOf('=')
      const name = eq > 0 ? item.slice(0, eq) : ''
      if (!isDataSourceName(name) || eq === item.length - 1) throw new Error(`--data-source must be NAME=URL|FILE with NAME one of ${DATA_SOURCE_NAMES.join(', ')}`)
      dataSources[name] = item.slice(eq + 1)
    }
  } catch (e) {
    io.stderr.write(`riskcheck serve: ${(e as Error).message}\n`)
    return 64
  }
  const policy = await policyFromFlags(values, io, 'riskcheck serve')
  if (policy === null) return 64
  if (policy) riskcheck.scoring = policy.overrides

  const host = (values.host as string | undefined) ?? '127.0.0.1'
  const db = (values.db as string | undefined) ?? './riskcheck.sqlite'
  // Loaded on demand so the lookup commands never load Fastify or SQLite.
  const { createServer } = await import('../server/app.js')
  let app: Awaited<ReturnType<typeof createServer>>
  try {
    app = createServer({
      db,
      riskcheck,
      ...(values['unsafe-allow-loopback-webhooks'] === true ? { unsafeAllowLoopbackWebhooks: true } : {}),
      logger: { level: values['log-level'] as string, stream: io.stderr as NodeJS.WritableStream & { write(s: string): boolean } },
    })
    await app.listen({ host, port })
  } catch (e) {
    io.stderr.write(`riskcheck serve: cannot start: ${(e as Error).message}\n`)
    return 1
  }

  const address = app.server.address()
  const actualPort = typeof address === 'object' && address ? address.port : port
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`
  const policyInfo = policy ? { version: policy.version, file: values.policy as string } : null
  io.stdout.write(
    values.json
      ? `${JSON.stringify({ url, db, ...(policyInfo ? { policy: policyInfo } : {}) })}\n`
      : `riskcheck API listening on ${url} (db ${db}${policyInfo ? `, policy ${policyInfo.version} from ${policyInfo.file}` : ''})\n`,
  )
  const refresh = refreshEvery !== null ? await startServerDataRefresh(app, riskcheck.dataDir as string, refreshEvery, dataSources) : null
  options.onListening?.(url)

  await new Promise<void>((resolve) => {
    if (options.signal) {
      if (options.signal.aborted) return resolve()
      options.signal.addEventListener('abort', () => resolve(), { once: true })
      return
    }
    const stop = () => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
  if (!values.json) io.stdout.write('riskcheck API shutting down: finishing in-flight requests…\n')
  await refresh?.stop()
  await app.close()
  return 0
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
  summary: 'run the HTTP API (keys, credits, rate limits) on SQLite: serve [--host] [--port] [--db PATH] [lookup flags]',
  run: (args, io) => runServe(args, io),
}

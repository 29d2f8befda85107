/**
 * `riskcheck serve`: runs the HTTP API until SIGINT/SIGTERM, then shuts down gracefully (in-flight requests finish,
 * then the riskcheck instance and the database are closed).
 *
 *   riskcheck serve [--host 127.0.0.1] [--port 8080] [--db ./riskcheck.sqlite] [--json] [--log-level info]
 *                   [--unsafe-allow-loopback-webhooks] [the lookup flags: --offline, --dns-server HOST:PORT, --smtp-port N, --city-db PATH, …]
 */
import { parseArgs } from 'node:util'
import { GLOBAL_FLAGS, optionsFromFlags, type CliCommand, type CliIO } from './shared.js'

const SERVE_HELP = `Usage: riskcheck serve [--host 127.0.0.1] [--port 8080] [--db ./riskcheck.sqlite] [--json] [--log-level LEVEL]
                       [lookup flags: --offline, --dns-server HOST[:PORT], --dns-timeout MS, --smtp-port N, --helo NAME,
                        --mail-from ADDR, --city-db PATH, --asn-db PATH, --rdap-bootstrap-url URL, --now ISO, …]

Runs the HTTP API (POST /v1/email, /v1/phone, /v1/phone/type, /v1/ip, /v1/domain/age, /v1/domain/email-auth,
/v1/check; bulk jobs under /v1/bulk/jobs; webhook endpoints under /v1/webhook-endpoints; GET /v1/account,
/v1/pricing, /v1/openapi.json) until SIGINT or SIGTERM. Webhook deliveries and bulk jobs run in this process.
Create an org and a key first: riskcheck admin org create --name NAME; riskcheck admin key create --org ORG_ID
  --host HOST        address to listen on (default 127.0.0.1)
  --port N           port (default 8080; 0 picks a free one)
  --db PATH          SQLite database (default ./riskcheck.sqlite; created and migrated on start)
  --json             print the listening address as one JSON line
  --log-level LEVEL  fatal, error, warn, info (default), debug, trace or silent; logs go to stderr
  --unsafe-allow-loopback-webhooks
                     let webhook endpoints and deliveries use http://127.0.0.1 (tests and local development
                     only; never in production)
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
    riskcheck = optionsFromFlags(values)
  } catch (e) {
    io.stderr.write(`riskcheck serve: ${(e as Error).message}\n`)
    return 64
  }

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
  io.stdout.write(values.json ? `${JSON.stringify({ url, db })}\n` : `riskcheck API listening on ${url} (db ${db})\n`)
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
  await app.close()
  return 0
}

/** The `serve` command (registered by the CLI). */
export const serveCommand: CliCommand = {
  name: 'serve',
  summary: 'run the HTTP API (keys, credits, rate limits) on SQLite: serve [--host] [--port] [--db PATH] [lookup flags]',
  run: (args, io) => runServe(args, io),
}

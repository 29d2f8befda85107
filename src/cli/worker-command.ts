/**
 * `riskcheck worker`: runs only the workers of a scaled deployment — bulk jobs and webhook deliveries taken from
 * BullMQ on Redis, over the PostgreSQL store — until SIGINT/SIGTERM, then drains (the jobs it runs write what they
 * did and hand their messages back; deliveries in flight finish). No HTTP port. README "Scaling out".
 */
import { parseArgs } from 'node:util'
import { resolveDeployment, type Deployment } from '../server/queue/deployment.js'
import { stopRequested } from './serve-command.js'
import { EXIT, GLOBAL_FLAGS, messageOf, optionsFromFlags, UsageError, type CliCommand, type CliIO } from './shared.js'

const WORKER_HELP = `Usage: riskcheck worker --database-url postgres://… --redis-url redis://… [--log-level LEVEL] [lookup flags]

Runs bulk jobs and webhook deliveries taken from the shared queue (BullMQ on Redis) until SIGINT or SIGTERM, then
finishes what it holds. Start as many as needed next to API instances (riskcheck serve --no-workers, or serve,
which runs workers too). Supported: PostgreSQL + Redis only; a SQLite store runs its workers inside riskcheck serve.

  flag                  environment variable                  meaning
  --database-url URL    RISKCHECK_DATABASE_URL (or DATABASE_URL)  the PostgreSQL store (postgres://…)
  --redis-url URL       RISKCHECK_REDIS_URL (or REDIS_URL)        the Redis of the queue (redis://… or rediss://…)
  --log-level LEVEL     RISKCHECK_LOG_LEVEL                       fatal, error, warn, info (default), debug, trace, silent
  lookup flags          RISKCHECK_<FLAG>                          as for riskcheck serve
`

const WORKER_FLAGS = {
  'database-url': { type: 'string' },
  'redis-url': { type: 'string' },
  db: { type: 'string' },
  'log-level': { type: 'string' },
} as const

/** The variables of the worker's own flags (first non-empty wins; a flag wins over all). */
const ENV: Record<string, string[]> = {
  'database-url': ['RISKCHECK_DATABASE_URL', 'DATABASE_URL'],
  'redis-url': ['RISKCHECK_REDIS_URL', 'REDIS_URL'],
  db: ['RISKCHECK_DB'],
  'log-level': ['RISKCHECK_LOG_LEVEL'],
}

/**
 * Opens the server of a scaled deployment without a port. Set by the PostgreSQL store module (`--database-url`);
 * until a build has it, a worker cannot start and says so.
 */
let openWorkerServer: ((deployment: Extract<Deployment, { mode: 'scaled' }>, options: { riskcheck: object; logLevel: string; io: CliIO }) => Promise<{ close(): Promise<void> }>) | null = null

/** Lets the PostgreSQL store module provide {@link openWorkerServer}. */
export function setWorkerServerOpener(open: NonNullable<typeof openWorkerServer>): void {
  openWorkerServer = open
}

/** Runs `riskcheck worker`; exit 0 after a clean stop, 64 for bad usage (or an unsupported combination), 1 when it cannot start. */
export async function runWorker(args: string[], io: CliIO, options: { signal?: AbortSignal } = {}): Promise<number> {
  const env = io.env ?? process.env
  let deployment: Extract<Deployment, { mode: 'scaled' }>
  let values: Record<string, unknown>
  let riskcheck: ReturnType<typeof optionsFromFlags>
  try {
    values = parseArgs({ args, options: { ...GLOBAL_FLAGS, ...WORKER_FLAGS }, allowPositionals: false, strict: true }).values as Record<string, unknown>
    if (values.help) {
      io.stdout.write(WORKER_HELP)
      return EXIT.ok
    }
    for (const [flag, names] of Object.entries(ENV)) {
      if (values[flag] !== undefined) continue
      const name = names.find((n) => (env[n] ?? '').trim() !== '')
      if (name) values[flag] = (env[name] as string).trim()
    }
    const resolved = resolveDeployment({
      db: values.db as string | undefined,
      databaseUrl: values['database-url'] as string | undefined,
      redisUrl: values['redis-url'] as string | undefined,
      workers: true,
      api: false,
    })
    if (!resolved.ok) throw new UsageError(resolved.error)
    deployment = resolved.deployment as Extract<Deployment, { mode: 'scaled' }>
    riskcheck = optionsFromFlags(values, env)
  } catch (e) {
    io.stderr.write(`riskcheck worker: ${messageOf(e)}\n`)
    return EXIT.usage
  }
  if (!openWorkerServer) {
    io.stderr.write('riskcheck worker: cannot start: this build has no PostgreSQL store (--database-url)\n')
    return EXIT.failed
  }
  const stop = stopRequested(options.signal, env)
  try {
    let server: { close(): Promise<void> }
    try {
      server = await openWorkerServer(deployment, { riskcheck, logLevel: (values['log-level'] as string | undefined) ?? 'info', io })
    } catch (e) {
      io.stderr.write(`riskcheck worker: cannot start: ${messageOf(e)}\n`)
      return EXIT.failed
    }
    io.stdout.write('riskcheck worker running (bulk jobs, webhook deliveries)\n')
    await stop.stopped
    io.stdout.write('riskcheck worker shutting down: finishing the jobs it holds…\n')
    await server.close()
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

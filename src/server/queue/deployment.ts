/**
 * Which deployment a set of settings describes — SQLite alone (one process, everything in-process) or PostgreSQL +
 * Redis (any number of API instances and workers, work through BullMQ) — and the combinations refused with a usage
 * error (exit 64): Redis without PostgreSQL, PostgreSQL without Redis, `--db` with `--database-url`. Why:
 * docs/decisions.md, "Scaling out (Redis)" → "supported deployments".
 */

/** The settings that decide the deployment (parsed from flags and environment). */
export interface DeploymentSettings {
  /** `--db` when given explicitly (a SQLite file). */
  db?: string | undefined
  /** `--database-url` / `DATABASE_URL` (postgres://…). */
  databaseUrl?: string | undefined
  /** `--redis-url` / `REDIS_URL` (redis://… or rediss://…). */
  redisUrl?: string | undefined
  /** Whether this process runs workers: `serve` true, `serve --no-workers` false. */
  workers: boolean
  /** Whether this process serves the API: `serve` true, `riskcheck worker` false. */
  api?: boolean
}

/** A deployment this process may run. */
export type Deployment =
  | { mode: 'sqlite'; db: string | undefined; api: boolean; workers: true }
  | { mode: 'scaled'; databaseUrl: string; redisUrl: string; api: boolean; workers: boolean }

/** The outcome of {@link resolveDeployment}: the deployment, or a usage error (print it, exit 64). */
export type DeploymentResult = { ok: true; deployment: Deployment } | { ok: false; error: string }

const SUPPORTED = 'Supported: SQLite alone (--db, the default) or PostgreSQL + Redis (--database-url and --redis-url).'

function checkUrl(value: string, schemes: readonly string[], flag: string): string | null {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return `${flag} is not a URL (expected ${schemes.map((s) => `${s}//…`).join(' or ')})`
  }
  if (!schemes.includes(url.protocol)) return `${flag} must start with ${schemes.map((s) => `${s}//`).join(' or ')} (got ${url.protocol}//)`
  return null
}

/**
 * Resolves the deployment of one process, or the usage error to print.
 *
 * @example
 * resolveDeployment({ workers: true })                                   // { ok: true, deployment: { mode: 'sqlite', … } }
 * resolveDeployment({ redisUrl: 'redis://127.0.0.1:6379', workers: true }) // { ok: false, error: '--redis-url needs --database-url …' }
 */
export function resolveDeployment(s: DeploymentSettings): DeploymentResult {
  const api = s.api ?? true
  const fail = (error: string): DeploymentResult => ({ ok: false, error: `${error}. ${SUPPORTED}` })
  if (!api && !s.workers) return fail('nothing to run: a process runs the API, the workers or both')
  if (s.db !== undefined && s.databaseUrl !== undefined) return fail('--db and --database-url exclude each other')
  if (s.databaseUrl !== undefined) {
    const bad = checkUrl(s.databaseUrl, ['postgres:', 'postgresql:'], '--database-url')
    if (bad) return fail(bad)
  }
  if (s.redisUrl !== undefined) {
    const bad = checkUrl(s.redisUrl, ['redis:', 'rediss:'], '--redis-url')
    if (bad) return fail(bad)
  }
  if (s.databaseUrl !== undefined && s.redisUrl !== undefined) {
    return { ok: true, deployment: { mode: 'scaled', databaseUrl: s.databaseUrl, redisUrl: s.redisUrl, api, workers: s.workers } }
  }
  if (s.redisUrl !== undefined) return fail('--redis-url needs --database-url: a SQLite file cannot be shared by several instances')
  if (s.databaseUrl !== undefined) {
    return fail('--database-url needs --redis-url: the instances share rate limits, bulk work and webhook deliveries through Redis')
  }
  if (!s.workers) return fail('--no-workers needs --database-url and --redis-url: with SQLite the one process runs the workers')
  if (!api) return fail('`riskcheck worker` needs --database-url and --redis-url: with SQLite `riskcheck serve` runs the workers')
  return { ok: true, deployment: { mode: 'sqlite', db: s.db, api: true, workers: true } }
}

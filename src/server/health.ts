/**
 * Health and readiness of the server (docs/deployment.md "Health, readiness and metrics"):
 *
 * - `GET /healthz`: the process is up and its event loop answers. Always 200 while the server accepts requests.
 * - `GET /readyz`: every readiness check passes — the database answers a real `SELECT 1` and its schema is at this
 *   server's migration version, plus whatever checks the embedder adds (`createServer({ readinessChecks })`, e.g. a
 *   PostgreSQL pool or a Redis connection) — and the server is not draining. 503 with the same body otherwise.
 *   The freshness of the open data (`riskcheck data status`) is reported per source with the stale ones named;
 *   stale data does NOT make the server unready: old lists still answer, and taking every instance out of a load
 *   balancer because a Tor list is a day old would turn a quality problem into an outage.
 *
 * Both are outside /v1, unauthenticated, unbilled and not rate limited; they carry no secrets (a failed check says
 * which check failed and a one-line reason with any URL credentials removed).
 */
import type Database from 'better-sqlite3'
import type { DataStatus } from '../data/status.js'
import { MIGRATIONS } from './store/migrations.js'

/** One named readiness check: resolves when ready, throws (or rejects) with the reason when not. */
export interface ReadinessCheck {
  /** Short name shown in GET /readyz (`database`, `redis`, …). */
  name: string
  check(): Promise<void> | void
}

/** The outcome of one check in GET /readyz. */
export interface CheckResult {
  name: string
  ok: boolean
  /** Why it failed (absent when ok). */
  error?: string
}

/** The body of GET /readyz. */
export interface Readiness {
  status: 'ready' | 'not_ready'
  checks: CheckResult[]
  data: {
    /** true when a source is older than its maximum age (reported; does not fail readiness) */
    stale: boolean
    stale_sources: string[]
    set: string
    sources: Array<{ name: string; version: string; age_seconds: number | null; max_age_seconds: number; stale: boolean }>
  }
}

/** How long one readiness check may take before it counts as failed. */
export const READINESS_CHECK_TIMEOUT_MS = 2000

/** Removes `user:password@` from URLs and caps the length, so a driver's error message cannot leak a secret. */
export function safeReason(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e)
  return text.replace(/:\/\/[^@\s/]*@/g, '://***@').slice(0, 200)
}

async function runCheck(c: ReadinessCheck, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      Promise.resolve().then(() => c.check()),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      }),
    ])
    return { name: c.name, ok: true }
  } catch (e) {
    return { name: c.name, ok: false, error: safeReason(e) }
  } finally {
    if (timer) clearTimeout(timer)
  }
}

/** Runs every check at once and summarises them with the data status. */
export async function readiness(checks: readonly ReadinessCheck[], data: DataStatus, timeoutMs = READINESS_CHECK_TIMEOUT_MS): Promise<Readiness> {
  const results = await Promise.all(checks.map((c) => runCheck(c, timeoutMs)))
  return {
    status: results.every((r) => r.ok) ? 'ready' : 'not_ready',
    checks: results,
    data: {
      stale: data.stale,
      stale_sources: [...data.stale_sources],
      set: data.set,
      sources: data.sources.map((s) => ({ name: s.name, version: s.version, age_seconds: s.age_seconds, max_age_seconds: s.max_age_seconds, stale: s.stale })),
    },
  }
}

/**
 * The readiness check of the SQLite store: a real `SELECT 1` on its connection and its schema version
 * (`PRAGMA user_version`) at least this server's migration count.
 */
export function sqliteReadinessCheck(db: Database.Database, migrations = MIGRATIONS.length): ReadinessCheck {
  return {
    name: 'database',
    check() {
      const one = db.prepare('SELECT 1 AS one').get() as { one: number } | undefined
      if (one?.one !== 1) throw new Error('SELECT 1 did not answer 1')
      const version = db.pragma('user_version', { simple: true }) as number
      if (version < migrations) throw new Error(`schema at migration ${version}, this server needs ${migrations}; restart riskcheck serve to migrate (migrations run at start)`)
    },
  }
}

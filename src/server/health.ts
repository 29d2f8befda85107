/**
 * Liveness and readiness of the server (GET /healthz, GET /readyz; docs/deployment.md). Liveness reads nothing;
 * readiness runs the named checks (the store's round trip and schema version, plus `createServer({ readinessChecks })`)
 * concurrently, each within a time limit, and reports the age of the open data. What makes the server unready:
 * docs/decisions.md, "Outages of the database and Redis" → "readiness"; stale data does not (docs/decisions.md, "Data
 * updates" → "stale data and readiness").
 */
import type { DataStatus } from '../data/status.js'
import type { Availability } from './outage.js'
import type { Store } from './store/contracts/store.js'

/** One named readiness check. `run` throws or returns `{ ok: false }` when the dependency is not usable. */
export interface ReadinessCheck {
  /** Shown in the /readyz body (`database`, `migrations`, `redis`, …). */
  name: string
  run(): Promise<CheckOutcome> | CheckOutcome
  /**
   * A dependency the server answers without, in a lesser way (Redis: rate limits counted per instance): its failure
   * is reported (`ok: false, degraded: true`) but does not make the server unready.
   */
  degrades?: boolean
}

/** The outcome of a check: `message` says what is wrong (or a short fact when ok). */
export interface CheckOutcome {
  ok: boolean
  message?: string
}

/** A check's line in the /readyz body. */
export interface CheckReport {
  name: string
  ok: boolean
  /** The check failed, and the server answers without it (see {@link ReadinessCheck.degrades}). */
  degraded?: boolean
  message?: string
  duration_ms: number
}

/** The /readyz body. */
export interface Readiness {
  status: 'ready' | 'not_ready' | 'draining'
  checks: CheckReport[]
  data: {
    /** `bundled` or the id of the installed set in use */
    set: string
    /** a problem reading the data directory (an older or the bundled set answers), else null */
    problem: string | null
    stale: boolean
    stale_sources: string[]
    sources: Array<{ name: string; version: string; age_seconds: number | null; max_age_seconds: number; stale: boolean }>
  }
}

/** Time each check may take before it counts as failed (default of {@link readiness}). */
export const CHECK_TIMEOUT_MS = 2000

/**
 * The store's checks: `database` (reachable — and, during an outage the server saw, answering its availability's
 * probe again: for SQLite, a write) and `migrations` (the schema is the one this code expects — older means
 * `riskcheck admin migrate` has not run, newer means a newer riskcheck migrated it and this one must be upgraded).
 * A store without a probe gets a `database` check that reads the plan catalogue.
 */
export function storeChecks(store: Store, availability?: Availability): ReadinessCheck[] {
  const reachable = async (read: () => Promise<unknown>): Promise<CheckOutcome> => {
    const outage = await availability?.check()
    if (outage && !outage.ok) return outage
    await read()
    return { ok: true }
  }
  if (!store.probe) {
    return [{ name: 'database', run: () => reachable(async () => store.listPlans()) }]
  }
  const probe = async () => store.probe!()
  return [
    { name: 'database', run: () => reachable(probe) },
    {
      name: 'migrations',
      run: async () => {
        const { schemaVersion, expectedVersion } = await probe()
        if (schemaVersion === expectedVersion) return { ok: true, message: `schema version ${schemaVersion}` }
        return {
          ok: false,
          message:
            schemaVersion < expectedVersion
              ? `schema version ${schemaVersion} is behind this server's ${expectedVersion}: run riskcheck admin migrate`
              : `schema version ${schemaVersion} is newer than this server's ${expectedVersion}: upgrade riskcheck`,
        }
      },
    },
  ]
}

const timeLimit = <T>(p: Promise<T>, ms: number): Promise<T> => {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    timer.unref()
  })
  return Promise.race([p, limit]).finally(() => clearTimeout(timer))
}

/**
 * The message of a failed check: the error's first line (no stack), with any `user:password@` of a URL removed (a
 * driver's message may quote its connection URL), at most 200 characters.
 */
const firstLine = (e: unknown): string =>
  (e instanceof Error ? e.message : String(e))
    .split('\n')[0]!
    .replace(/:\/\/[^@\s/]*@/g, '://***@')
    .slice(0, 200)

/**
 * Runs every check concurrently, each within `timeoutMs`, and adds the data status.
 *
 * @example
 * const r = await readiness(storeChecks(store), rc.dataStatus(), { draining: false })
 * r.status // 'ready'
 */
export async function readiness(
  checks: readonly ReadinessCheck[],
  data: DataStatus,
  options: { draining: boolean; timeoutMs?: number; now?: () => number },
): Promise<Readiness> {
  const now = options.now ?? (() => performance.now())
  const reports = await Promise.all(
    checks.map(async (c): Promise<CheckReport> => {
      const started = now()
      let outcome: CheckOutcome
      try {
        outcome = await timeLimit(Promise.resolve().then(() => c.run()), options.timeoutMs ?? CHECK_TIMEOUT_MS)
      } catch (e) {
        outcome = { ok: false, message: firstLine(e) }
      }
      return {
        name: c.name,
        ok: outcome.ok,
        ...(!outcome.ok && c.degrades ? { degraded: true } : {}),
        ...(outcome.message ? { message: outcome.message } : {}),
        duration_ms: Math.round((now() - started) * 10) / 10,
      }
    }),
  )
  const ok = reports.every((r) => r.ok || r.degraded)
  return {
    status: options.draining ? 'draining' : ok ? 'ready' : 'not_ready',
    checks: reports,
    data: {
      set: data.set,
      problem: data.problem,
      stale: data.stale,
      stale_sources: [...data.stale_sources],
      sources: data.sources.map((s) => ({
        name: s.name,
        version: s.version,
        age_seconds: s.age_seconds,
        max_age_seconds: s.max_age_seconds,
        stale: s.stale,
      })),
    },
  }
}

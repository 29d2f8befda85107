/**
 * The server's view of its dependencies (./outage.ts): the database's availability (the PostgreSQL store's own, else
 * one probed here — a write for SQLite, since a full disk or a read-only file still reads), Redis's (with
 * `--redis-url`), the one log line at the start and at the end of each outage, and the reporting of failures the
 * server's parts meet, so that no part logs a line per request or per poll while a dependency is down.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Redis } from 'ioredis'
import { createAvailability, markDependency, outageOf, type Availability, type AvailabilityChange, type Dependency } from './outage.js'
import type { SqliteServiceStorage } from './store/contracts/service-storage.js'
import type { Store } from './store/contracts/store.js'

/** The dependencies of one server. */
export interface ServerDependencies {
  database: Availability
  redis: Availability | undefined
  /** Reports `err` when it is an outage of a dependency (true: the caller logs nothing more); false otherwise. */
  note(err: unknown): boolean
  /** `log` with its warn and error lines that carry an outage failure (`{ err }`) left to the outage's own lines. */
  quiet(log: FastifyBaseLogger): FastifyBaseLogger
  close(): void
}

const WHAT: Record<Dependency, string> = { database: 'the database', redis: 'Redis' }
const WHILE_DOWN: Record<Dependency, string> = {
  database: 'requests that need it are answered 503 UPSTREAM_UNAVAILABLE with Retry-After until it answers again',
  redis: 'rate limits are counted by each instance alone; bulk jobs and webhook deliveries wait for it',
}

/** The log lines of a dependency's changes: an error when the database goes down (a warning for Redis), a warning when it answers again. */
function changeLogger(log: () => FastifyBaseLogger | undefined): (c: AvailabilityChange) => void {
  return (c) => {
    const l = log()
    if (c.state === 'down') {
      const line = `${WHAT[c.dependency]} is unreachable (${c.cause}): ${WHILE_DOWN[c.dependency]}`
      if (c.dependency === 'database') l?.error({ dependency: c.dependency, cause: c.cause }, line)
      else l?.warn({ dependency: c.dependency, cause: c.cause }, line)
      return
    }
    const seconds = Math.round(c.downMs / 100) / 10
    const refused = c.dependency === 'database' ? ` (${c.refused} request${c.refused === 1 ? '' : 's'} answered 503 meanwhile)` : ''
    l?.warn({ dependency: c.dependency, down_ms: c.downMs, failures: c.failures, refused: c.refused }, `${WHAT[c.dependency]} answers again after ${seconds} s${refused}`)
  }
}

/** The database's availability when the store has none of its own. */
function probedDatabase(store: Store, sqlite: Pick<SqliteServiceStorage, 'probeWrite'> | undefined): Availability {
  const probe = sqlite ? async () => sqlite.probeWrite() : async () => (store.probe ? store.probe() : store.listPlans())
  return createAvailability({ dependency: 'database', probe })
}

/**
 * Watches the server's dependencies and logs their outages through `log()` (asked at each change: the server's
 * logger is created after this).
 *
 * @example
 * const deps = watchDependencies({ store, log: () => app.log })
 * somethingPeriodic().catch((err) => deps.note(err) || app.log.error({ err }, 'it failed'))
 */
export function watchDependencies(o: { store: Store; sqlite?: Pick<SqliteServiceStorage, 'probeWrite'> | undefined; redis?: Redis | undefined; log: () => FastifyBaseLogger | undefined }): ServerDependencies {
  const own = (o.store as { availability?: Availability }).availability
  const database = own ?? probedDatabase(o.store, o.sqlite)
  const { redis: client } = o
  const redis = client
    ? createAvailability({
        dependency: 'redis',
        probe: async () => {
          if (client.status !== 'ready') throw new Error(`Redis connection ${client.status}`)
          await client.ping()
        },
      })
    : undefined
  database.onChange(changeLogger(o.log))
  redis?.onChange(changeLogger(o.log))
  client?.on('error', (err: Error) => {
    // every reconnection attempt while Redis is down is an 'error' event: one line per outage instead
    markDependency(err, 'redis')
    if (!note(err)) o.log()?.warn({ err: { message: err.message } }, 'redis error')
  })

  const note = (err: unknown): boolean => {
    const dependency = outageOf(err)
    if (!dependency) return false
    ;(dependency === 'database' ? database : redis)?.failed(err)
    return true
  }
  const quiet = (log: FastifyBaseLogger): FastifyBaseLogger =>
    new Proxy(log, {
      get(target, prop) {
        if (prop === 'warn' || prop === 'error') {
          return (obj: unknown, ...rest: unknown[]) => {
            const err = obj !== null && typeof obj === 'object' ? (obj as { err?: unknown }).err : undefined
            if (err !== undefined && note(err)) return
            return (target[prop] as (...a: unknown[]) => void).call(target, obj, ...rest)
          }
        }
        const value = Reflect.get(target, prop, target) as unknown
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
      },
    })
  return {
    database,
    redis,
    note,
    quiet,
    close() {
      if (!own) database.close()
      redis?.close()
    },
  }
}

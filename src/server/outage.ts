/**
 * Outages of the server's dependencies — the database (PostgreSQL or SQLite) and Redis: which failures are one, the
 * 503 UPSTREAM_UNAVAILABLE a request gets during one, and the state each dependency is in (up, or down since when and
 * why), which the log reports once at the start of an outage and once at its end, and GET /readyz reports while it
 * lasts. docs/deployment.md "When PostgreSQL or Redis is down"; the reasoning in docs/decisions.md "Outages of the
 * database and Redis".
 */
import { RiskcheckError } from '../errors.js'
import type { CheckOutcome } from './health.js'

/** A dependency whose outage the server reports. */
export type Dependency = 'database' | 'redis'

/** Seconds a client is told to wait (`Retry-After`) when a dependency is down. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5

const MARK = Symbol.for('riskcheck.dependency')

/** Marks `err` as a failure of `dependency` (the PostgreSQL pool's errors, a Redis connection's); returns it. */
export function markDependency<E>(err: E, dependency: Dependency): E {
  if (err !== null && typeof err === 'object' && !(MARK in err)) {
    Object.defineProperty(err, MARK, { value: dependency, enumerable: false })
  }
  return err
}

const SENT_IN = Symbol.for('riskcheck.sentIn')

/**
 * Marks `err` with the availability generation its call was sent in (the PostgreSQL pool's failures), for
 * Availability.failed: every report of it, the pool's or a request's later, is judged by it; returns it.
 */
export function markSentIn<E>(err: E, generation: number): E {
  if (err !== null && typeof err === 'object' && !(SENT_IN in err)) {
    Object.defineProperty(err, SENT_IN, { value: generation, enumerable: false })
  }
  return err
}

/** Thrown instead of a round trip while a dependency is known to be down. */
export class DependencyDown extends Error {
  override readonly name = 'DependencyDown'
  readonly code = 'RISKCHECK_DEPENDENCY_DOWN'
  constructor(
    readonly dependency: Dependency,
    cause: string,
  ) {
    super(`${dependency === 'database' ? 'the database' : 'Redis'} is down (${cause}); not tried until it answers again`)
    markDependency(this, dependency)
  }
}

/** A socket that could not connect or was cut (whatever the peer). */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
])

/**
 * PostgreSQL SQLSTATEs of a database that cannot serve now: connection exceptions (08), insufficient resources (53:
 * disk full, out of memory, too many connections), shutting down or starting (57P01–57P03), a statement cancelled by
 * `statement_timeout` (57014), a lock not obtained within `lock_timeout` (55P03), the session ended by
 * `idle_in_transaction_session_timeout` (25P03), a read-only standby after a failover (25006), system or I/O errors (58).
 */
const PG_OUTAGE_STATE = /^(08|53|57P0[1-3]|57014|55P03|25P03|25006|58)/

/** What node-postgres and its pool say when a connection fails, times out or was cut. */
const PG_CONNECTION_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed and is not queryable|Connection is not open)/

/** SQLite result codes of a database that cannot be written now (extended codes start with these). */
const SQLITE_OUTAGE_CODE = /^SQLITE_(FULL|READONLY|BUSY|LOCKED|IOERR|CANTOPEN|PROTOCOL|NOLFS)/

interface ErrorShape {
  code?: unknown
  message?: unknown
  name?: unknown
  severity?: unknown
  cause?: unknown
  errors?: unknown
}

function outageOfOne(err: ErrorShape): Dependency | undefined {
  const shape = outageShape(err)
  const marked = (err as { [MARK]?: Dependency })[MARK]
  if (marked) return shape || SOCKET_CODES.has(String(err.code)) ? marked : undefined
  return shape === 'redis' ? 'redis' : shape ? 'database' : undefined
}

/** Whether an error has the shape of an outage: 'redis' for ioredis's, true for a database's, else false. */
function outageShape(err: ErrorShape): 'redis' | boolean {
  const code = typeof err.code === 'string' ? err.code : ''
  const message = typeof err.message === 'string' ? err.message : ''
  if (err.name === 'MaxRetriesPerRequestError' || message === 'Connection is closed.' || message.startsWith("Stream isn't writeable")) return 'redis'
  if (err instanceof DependencyDown) return true
  if (SQLITE_OUTAGE_CODE.test(code)) return true
  if (typeof err.severity === 'string' && /^[0-9A-Z]{5}$/.test(code)) return PG_OUTAGE_STATE.test(code)
  return PG_CONNECTION_MESSAGE.test(message)
}

/**
 * The dependency whose outage `err` is (looking through `cause` and an AggregateError's errors), or undefined when it
 * is not one. A refused or cut connection counts only when its dependency marked it (the PostgreSQL pool and the
 * Redis connections do), so a network failure of a lookup itself is never taken for the database's.
 *
 * @example
 * outageOf(sqliteFullError) // 'database'
 */
export function outageOf(err: unknown, depth = 0): Dependency | undefined {
  if (err === null || typeof err !== 'object' || depth > 4) return undefined
  const e = err as ErrorShape
  const own = outageOfOne(e)
  if (own) return own
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const found = outageOf(inner, depth + 1)
      if (found) return found
    }
  }
  return e.cause !== undefined ? outageOf(e.cause, depth + 1) : undefined
}

/** A short cause for the log and /readyz: the error's code, else its first line (never a URL's password). */
export function causeOf(err: unknown): string {
  const e = (err ?? {}) as ErrorShape
  if (err instanceof DependencyDown) return 'down'
  const text = typeof e.code === 'string' && e.code ? e.code : typeof e.message === 'string' ? e.message : String(err)
  return text.split('\n')[0]!.replace(/:\/\/[^@\s/]*@/g, '://***@').slice(0, 120)
}

/** The 503 a request gets during an outage of `dependency`. */
export function unavailableError(dependency: Dependency, cause?: unknown): RiskcheckError {
  const what = dependency === 'database' ? 'The database' : 'Redis'
  return new RiskcheckError('UPSTREAM_UNAVAILABLE', `${what} cannot be reached right now; retry after Retry-After.`, cause === undefined ? {} : { cause })
}

/** A change of a dependency's state, for the log. */
export type AvailabilityChange =
  | { dependency: Dependency; state: 'down'; cause: string }
  | { dependency: Dependency; state: 'up'; downMs: number; failures: number; refused: number }

/** Options of {@link createAvailability}. */
export interface AvailabilityOptions {
  dependency: Dependency
  /** One real round trip to the dependency (throws when it is down); asked while it is down. */
  probe: () => Promise<unknown>
  /** How often the probe runs while the dependency is down, in ms (default 1000). */
  intervalMs?: number
  /** Clock in ms (default `Date.now`). */
  now?: () => number
}

/** The state of one dependency. */
export interface Availability {
  readonly dependency: Dependency
  readonly down: boolean
  /** Counts the changes of state (down, up): a caller reads it as it sends a call, to say when its failure began. */
  readonly generation: number
  /**
   * A failure of the dependency seen by a caller: starts an outage (and the probe) when it is up — unless `err` carries
   * ({@link markSentIn}) a {@link generation} before the dependency last answered again: a call lost during an outage
   * that fails only after it ended says nothing of now.
   */
  failed(err: unknown): void
  /** A request answered 503 during this outage (counted for the recovery line). */
  refused(): void
  /** Throws {@link DependencyDown} while the dependency is down. */
  gate(): void
  /**
   * Runs `work` once the dependency answers again (in the order given; at most 10,000 wait). A `work` that fails
   * with an outage waits for the next recovery; any other failure drops it.
   */
  afterRecovery(work: () => Promise<unknown>): void
  /** The readiness outcome: ok when up; while down, a probe now (a success ends the outage). */
  check(): Promise<CheckOutcome>
  onChange(listener: (change: AvailabilityChange) => void): void
  /** Stops the probe. */
  close(): void
}

const MAX_WAITING_WORK = 10_000
const MAX_PROBES = 3

/**
 * The availability of one dependency: up until a caller reports a failure, then down — the probe runs every
 * `intervalMs` until it answers — then up again. Listeners hear each change once.
 *
 * @example
 * const db = createAvailability({ dependency: 'database', probe: () => pool.query('SELECT 1') })
 * db.onChange((c) => log.warn(c, `database ${c.state}`))
 */
export function createAvailability(options: AvailabilityOptions): Availability {
  const now = options.now ?? Date.now
  const every = options.intervalMs ?? 1000
  const listeners: Array<(change: AvailabilityChange) => void> = []
  const waiting: Array<() => Promise<unknown>> = []
  let outage: { since: number; cause: string; failures: number; refused: number } | undefined
  let timer: NodeJS.Timeout | undefined
  let generation = 0
  let probes = 0
  let closed = false

  const emit = (change: AvailabilityChange) => {
    for (const l of listeners) {
      try {
        l(change)
      } catch {
        // a listener's failure is not the dependency's
      }
    }
  }
  // A probe every `every` ms, each on its own: one still waiting on a hung dependency does not delay the next, so
  // the end of a partition is seen within `every` (at most MAX_PROBES wait at once).
  const schedule = () => {
    if (closed || timer || !outage) return
    timer = setTimeout(() => {
      timer = undefined
      void probeNow()
      schedule()
    }, every)
    timer.unref()
  }
  let draining = false
  /** Runs the work that waited for the dependency, in order, while it stays up. */
  const drain = async () => {
    if (draining) return
    draining = true
    try {
      while (waiting.length > 0 && !outage) {
        const work = waiting.shift()!
        try {
          await work()
        } catch (e) {
          if (outageOf(e) === options.dependency) {
            waiting.unshift(work)
            markDown(e)
          }
        }
      }
    } finally {
      draining = false
    }
  }
  const recovered = () => {
    const o = outage
    if (!o) return
    outage = undefined
    generation++
    emit({ dependency: options.dependency, state: 'up', downMs: now() - o.since, failures: o.failures, refused: o.refused })
    void drain()
  }
  /** Runs a probe (false at once when MAX_PROBES already wait); true when it answered (the outage is over). */
  const probeNow = async (): Promise<boolean> => {
    if (probes >= MAX_PROBES) return false
    probes++
    try {
      await options.probe()
      recovered()
      return true
    } catch {
      return false
    } finally {
      probes--
    }
  }
  const markDown = (err: unknown) => {
    if (outage) {
      outage.failures++
      return
    }
    const sent = err !== null && typeof err === 'object' ? (err as { [SENT_IN]?: number })[SENT_IN] : undefined
    if (sent !== undefined && sent !== generation) return // sent before the last recovery: stale
    outage = { since: now(), cause: causeOf(err), failures: 1, refused: 0 }
    generation++
    emit({ dependency: options.dependency, state: 'down', cause: outage.cause })
    schedule()
  }

  return {
    dependency: options.dependency,
    get down() {
      return outage !== undefined
    },
    get generation() {
      return generation
    },
    failed: markDown,
    refused() {
      if (outage) outage.refused++
    },
    gate() {
      if (outage) throw new DependencyDown(options.dependency, outage.cause)
    },
    afterRecovery(work) {
      if (waiting.length < MAX_WAITING_WORK) waiting.push(work)
      if (!outage) void drain()
    },
    async check() {
      if (!outage) return { ok: true }
      const cause = outage.cause
      if (await probeNow()) return { ok: true }
      return { ok: false, message: `unreachable since ${Math.round((now() - (outage?.since ?? now())) / 100) / 10} s (${cause})` }
    },
    onChange(listener) {
      listeners.push(listener)
    },
    close() {
      closed = true
      if (timer) clearTimeout(timer)
      timer = undefined
    },
  }
}

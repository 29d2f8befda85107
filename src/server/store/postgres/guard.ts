/**
 * The PostgreSQL pool as the server uses it during an outage: its failures are marked as the database's and reported
 * to the database's availability (../../outage.ts), which refuses further round trips at once while the database is
 * down (a probe of its own finds it back); a connection that failed or timed out inside a transaction is dropped,
 * never reused: its ROLLBACK fails at once instead of waiting behind a statement that will not answer; and a
 * connection cut while checked out does not end the process.
 */
import type pg from 'pg'
import { pgModule } from '../../lazy-packages.js'
import { createAvailability, markDependency, markSentIn, outageOf, type Availability } from '../../outage.js'

/** Default bound of every connection wait and statement of the server's pool, in ms (`serve --database-timeout`). */
export const DEFAULT_DATABASE_TIMEOUT_MS = 5000

/**
 * The pool settings that bound a hang (a partition: connections open, nothing answers): `connectionTimeoutMillis`
 * (a new connection, or a wait for a free one), `query_timeout` (the client gives up on a statement),
 * `statement_timeout` (the server stops one the client gave up on), `idle_in_transaction_session_timeout` (the server
 * ends a transaction whose client went silent, releasing its row locks) and TCP keep-alive.
 */
export function boundedPoolSettings(timeoutMs: number): pg.PoolConfig {
  return {
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    statement_timeout: timeoutMs,
    idle_in_transaction_session_timeout: 2 * timeoutMs,
    keepAlive: true,
  }
}

/** The probe of the database while it is down: one row of its own written (the store's `meta` table). */
const WRITE_PROBE = `INSERT INTO meta (key, value) VALUES ('write_probe', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`

const patched = new WeakSet<pg.PoolClient>()
const broken = new WeakMap<pg.PoolClient, Error>()

/** Whether a failure leaves the connection unusable (it timed out or was cut, as opposed to an SQL error). */
const breaksConnection = (err: unknown): boolean =>
  outageOf(err) === 'database' && typeof (err as { severity?: unknown }).severity !== 'string'

type Callback = (err: Error | null, res?: unknown) => void
/** Reports a failure; `sentIn` is the availability's generation when its call was sent (none: a cut connection). */
type Note = (err: unknown, sentIn?: number) => void

/** Makes a client of the pool report its failures and refuse work once its connection broke (once per client). */
function guardClient(client: pg.PoolClient, note: Note, availability: Availability): void {
  if (patched.has(client)) return
  patched.add(client)
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  const fail = (err: unknown, sentIn?: number) => {
    note(err, sentIn)
    if (breaksConnection(err)) broken.set(client, err as Error)
  }
  // A connection cut while the client is checked out (between two statements of a transaction) is an 'error' event
  // of the client; unheard, it would end the process. Its next statement fails and the client is dropped.
  client.on('error', fail)
  ;(client as { query: unknown }).query = (...args: unknown[]): unknown => {
    const last = args[args.length - 1]
    const already = broken.get(client)
    const sentIn = availability.generation
    if (typeof last === 'function') {
      const callback = last as Callback
      if (already) return void process.nextTick(callback, already)
      return query(...args.slice(0, -1), (err: Error | null, res?: unknown) => {
        if (err) fail(err, sentIn)
        callback(err, res)
      })
    }
    if (already) return Promise.reject(already)
    const result = query(...args)
    if (!result || typeof (result as Promise<unknown>).then !== 'function') return result // a submittable (cursor)
    return (result as Promise<unknown>).catch((err: unknown) => {
      fail(err, sentIn)
      throw err
    })
  }
}

/**
 * The availability of the database behind `pool` (probed with a one-row write on a connection of its own) and a view of the pool
 * that reports to it. The view is what the stores use; the pool itself is left as it is (a pool of the caller's may
 * serve others).
 *
 * @example
 * const { pool: guarded, availability } = guardPool(new (pgModule().Pool)({ connectionString, ...boundedPoolSettings(5000) }))
 */
export function guardPool(pool: pg.Pool): { pool: pg.Pool; availability: Availability } {
  // a write, not a read: a database that reads but cannot write (a full disk, a standby after a failover) is down
  // each probe on a connection of its own, so that a pool whose connections all wait on a hung database does not hold
  // it back; bounded as the pool's statements are
  const probe = async () => {
    const bound = DEFAULT_DATABASE_TIMEOUT_MS
    const o = pool.options
    const client = new (pgModule().Client)({ ...o, connectionTimeoutMillis: o.connectionTimeoutMillis || bound, query_timeout: o.query_timeout || bound })
    client.on('error', () => undefined)
    try {
      await client.connect()
      await client.query(WRITE_PROBE, [String(Date.now())])
    } finally {
      void client.end().catch(() => undefined)
    }
  }
  const availability = createAvailability({ dependency: 'database', probe })
  const noted = new WeakSet<object>()
  const note: Note = (err, sentIn) => {
    if (err === null || typeof err !== 'object' || noted.has(err)) return
    noted.add(err)
    markDependency(err, 'database')
    if (sentIn !== undefined) markSentIn(err, sentIn) // the server's later reports of it are judged alike
    if (outageOf(err) === 'database') availability.failed(err)
  }
  const query = (...args: unknown[]): unknown => {
    const last = args[args.length - 1]
    if (typeof last === 'function') {
      try {
        availability.gate()
      } catch (e) {
        return void process.nextTick(last as Callback, e)
      }
      const sentIn = availability.generation
      return (pool.query as (...a: unknown[]) => unknown)(...args.slice(0, -1), (err: Error | null, res?: unknown) => {
        if (err) note(err, sentIn)
        ;(last as Callback)(err, res)
      })
    }
    // refused as pg fails: with a rejected promise, never a throw (a caller in a timer would end the process)
    try {
      availability.gate()
    } catch (e) {
      return Promise.reject(e)
    }
    const sentIn = availability.generation
    const result = (pool.query as (...a: unknown[]) => unknown)(...args)
    if (!result || typeof (result as Promise<unknown>).then !== 'function') return result
    return (result as Promise<unknown>).catch((err: unknown) => {
      note(err, sentIn)
      throw err
    })
  }
  const connect = async (callback?: unknown): Promise<pg.PoolClient | void> => {
    if (typeof callback === 'function') throw new TypeError('riskcheck: connect the guarded pool with a promise')
    availability.gate()
    const sentIn = availability.generation
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (err) {
      note(err, sentIn)
      throw err
    }
    guardClient(client, note, availability)
    const release = client.release
    client.release = (err?: Error | boolean) => {
      const b = broken.get(client)
      broken.delete(client)
      return release(err ?? b)
    }
    return client
  }
  const view = new Proxy(pool, {
    get(target, prop) {
      if (prop === 'query') return query
      if (prop === 'connect') return connect
      const value = Reflect.get(target, prop, target) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    },
  })
  return { pool: view, availability }
}

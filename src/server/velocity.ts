/**
 * Velocity in the HTTP service: every org's checks are counted in a space of their own (its values hashed with a key
 * of the org, derived from the deployment's secret), test keys apart from live ones, in one store every instance
 * shares — Redis with `--redis-url`, else the SQLite file. Store choice and secret: docs/decisions.md, "Velocity in
 * the service".
 */
import { createHmac } from 'node:crypto'
import type Database from 'better-sqlite3'
import { LRUCache } from 'lru-cache'
import type { Awaitable } from '../accounts/types.js'
import type { Signals } from '../signals.js'
import { createVelocityCounter, type VelocityCounter, type VelocityValues } from '../velocity/counter.js'
import { createRedisVelocityStore, type RedisLike } from '../velocity/redis-store.js'
import { createMemoryVelocityStore, type VelocityStore } from '../velocity/store.js'
import type { ServerVelocityStore } from './store/contracts/velocity.js'
import { createSqliteVelocityStore } from './store/sqlite/velocity.js'

/** `createServer({ velocity })`: false switches velocity off; an object sets the secret, the store or the time limit. */
export interface ServerVelocityOptions {
  /**
   * Key of the hashes (at least 16 characters; `serve --velocity-secret`, RISKCHECK_VELOCITY_SECRET). Default: derived
   * from the random secret the database keeps for key hashes, so every instance on the database shares it.
   */
  secret?: string
  /** Where counts live. Default: Redis with `queue`, the SQLite file with a SQLite store, else this process's memory. */
  store?: VelocityStore
  /** Longest wait for the store in ms (default 1000); past it the answer has `velocity: null` and is partial. */
  timeoutMs?: number
}

/** Where the server's velocity counts live. */
export type VelocityStoreKind = 'redis' | 'sqlite' | 'memory' | 'custom'

/** The velocity of a server. */
export interface ServerVelocity {
  readonly storeKind: VelocityStoreKind
  /**
   * The signals of a request of `orgId`: the instance's lists and the org's velocity counter. `once` (a request's
   * Idempotency-Key: its scope and key): the request's check is counted once however often it runs — a retry after a
   * 503, or after its first instance died, is not counted again.
   */
  signals(base: Signals | undefined, orgId: string, once?: { scope: string; key: string }): Signals
  /**
   * Deletes the counts that left the day window from a store kept in the server's database (SQLite), a bounded number
   * a call; other stores forget on their own (Redis expires its keys, memory forgets idle keys). Run by the sweeps.
   */
  purge(nowMs: number): Promise<number>
}

/** Most rows one {@link ServerVelocity.purge} deletes (batches of the store's sweep), so a sweep stays short. */
const PURGE_MOST = 50_000

/** What the server has to offer the velocity store. */
export interface ServerVelocityDeps {
  /** The checked option ({@link serverVelocityOption}); null: off. */
  option: ServerVelocityOptions | null
  /** The server's Redis client and key prefix (with `queue`). */
  redis?: RedisLike | undefined
  redisPrefix: string
  /** The SQLite store's database. */
  sqlite?: Database.Database | undefined
  /** The SQLite store's group commit: the velocity hits of one event-loop turn share its transaction. */
  sqliteGroup?: (<T>(write: () => T) => Promise<T>) | undefined
  /** The store's key-hash secret (random, created with the database). */
  keyHashSecret: Awaitable<string>
}

/** Org counters kept; beyond, the oldest is made again when its org comes back (a counter is a key and closures). */
const MAX_COUNTERS = 10_000

/**
 * The server's velocity option, checked (null: off). A TypeError for a bad one, and for the library's `velocity` among
 * the server's riskcheck options (one counter for every org is not what a server wants).
 */
export function serverVelocityOption(option: boolean | ServerVelocityOptions | undefined, riskcheckOption: unknown): ServerVelocityOptions | null {
  if (riskcheckOption !== undefined && riskcheckOption !== false)
    throw new TypeError('riskcheck server: riskcheck.velocity is not used by the server; give the server option `velocity` (counted per org)')
  if (option === false) return null
  if (option === undefined || option === true) return {}
  if (option === null || typeof option !== 'object') throw new TypeError('riskcheck server: velocity must be true, false or an object (secret, store, timeoutMs)')
  for (const k of Object.keys(option))
    if (!['secret', 'store', 'timeoutMs'].includes(k)) throw new TypeError(`riskcheck server: velocity.${k} is not an option (known: secret, store, timeoutMs)`)
  if (option.secret !== undefined && !(typeof option.secret === 'string' && option.secret.length >= 16))
    throw new TypeError('riskcheck server: velocity.secret must be a string of at least 16 characters')
  if (option.store !== undefined && (option.store === null || typeof option.store.hit !== 'function'))
    throw new TypeError('riskcheck server: velocity.store must have a hit(keys, nowMs) method')
  const t = option.timeoutMs
  if (t !== undefined && (!Number.isSafeInteger(t) || t < 1 || t > 60_000)) throw new TypeError('riskcheck server: velocity.timeoutMs must be a whole number from 1 to 60000')
  return option
}

/** Creates the server's velocity, or null when it is off. */
export function createServerVelocity(deps: ServerVelocityDeps): ServerVelocity | null {
  const option = deps.option
  if (!option) return null
  let store: VelocityStore
  let storeKind: VelocityStoreKind
  if (option.store) [store, storeKind] = [option.store, 'custom']
  else if (deps.redis) [store, storeKind] = [createRedisVelocityStore({ redis: deps.redis, prefix: `${deps.redisPrefix}:vel:` }), 'redis']
  else if (deps.sqlite) [store, storeKind] = [createSqliteVelocityStore(deps.sqlite, deps.sqliteGroup), 'sqlite']
  else [store, storeKind] = [createMemoryVelocityStore(), 'memory']
  const timeoutMs = option.timeoutMs ?? 1000

  // The root key: the configured secret, else one derived from the database's key-hash secret (never that secret itself).
  let root: Buffer | null = null
  const rootReady = Promise.resolve(option.secret ?? deps.keyHashSecret).then((s) => {
    root = option.secret !== undefined ? Buffer.from(s, 'utf8') : createHmac('sha256', s).update('riskcheck velocity').digest()
    return root
  })
  rootReady.catch(() => undefined)

  // the least recently used goes first (lru-cache: O(1), where a Map's oldest key costs a scan of its deleted slots)
  const counters = new LRUCache<string, VelocityCounter>({ max: MAX_COUNTERS })
  const counterOf = (rootKey: Buffer, orgId: string): VelocityCounter => {
    let c = counters.get(orgId)
    if (c) return c
    // the org's key: another org's hashes of the same values differ, so its traffic never counts for this one
    const secret = createHmac('sha256', rootKey).update(`org\u0000${orgId}`).digest()
    c = createVelocityCounter({ secret: new Uint8Array(secret), store, timeoutMs })
    counters.set(orgId, c)
    return c
  }
  // Before the database gave its secret (the first requests of a PostgreSQL server): counted once it has.
  const waiting = (orgId: string): VelocityCounter => ({
    count: (values: VelocityValues, test: boolean, nowMs: number, checkId?: string) =>
      rootReady.then(
        (r) => counterOf(r, orgId).count(values, test, nowMs, checkId),
        () => null,
      ),
    close: async () => undefined,
  })
  // the check's id: a keyed hash of the request's key (the store never sees the key itself)
  // Not the library's withCheckId (src/lookup.ts): the id is a hash keyed by the database's secret, so it waits for that.
  const onceOf = (counter: VelocityCounter, once: { scope: string; key: string }): VelocityCounter => ({
    count: (values, test, nowMs) =>
      rootReady.then(
        (r) => counter.count(values, test, nowMs, createHmac('sha256', r).update(`check\u0000${once.scope}\u0000${once.key}`).digest('base64url').slice(0, 32)),
        () => null,
      ),
    close: () => counter.close(),
  })
  const purgeable = storeKind === 'sqlite' ? (store as ServerVelocityStore) : null
  return {
    storeKind,
    async purge(nowMs) {
      if (!purgeable) return 0
      let total = 0
      for (;;) {
        const n = await purgeable.purge(nowMs)
        total += n
        // the store answers 0 at once (an index seek) when no old row is left
        if (n === 0 || total >= PURGE_MOST) return total
      }
    },
    signals(base, orgId, once) {
      const counter = root ? counterOf(root, orgId) : waiting(orgId)
      return { lists: base?.lists ?? null, velocity: once ? onceOf(counter, once) : counter }
    },
  }
}

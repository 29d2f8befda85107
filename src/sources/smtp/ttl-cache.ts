/**
 * A small TTL cache with an injected clock, bounded in size (the least recently used entries go first, by lru-cache),
 * for the per-domain catch-all answers and the per-server failure memory of the SMTP source. Expired entries are dropped
 * when read.
 */

import { LRUCache } from 'lru-cache'

/** Options of {@link createTtlCache}. */
export interface TtlCacheOptions {
  /** Default time to live of an entry, in ms; 0 stores nothing. */
  ttlMs: number
  /** Clock in ms. */
  now: () => number
  /** Most entries kept (default 10,000); the least recently used is dropped to make room. */
  maxEntries?: number
}

/** A cache whose entries expire. */
export interface TtlCache<V> {
  /** The live value of `key`, or undefined (never stored, expired, or evicted). */
  get(key: string): V | undefined
  /** Stores `value` for `ttlMs` (default: the cache's TTL; 0 stores nothing). */
  set(key: string, value: V, ttlMs?: number): void
  /** Stores `value` only when `key` has no live entry. */
  setIfAbsent(key: string, value: V): void
  delete(key: string): void
  clear(): void
  /** Entries held (expired ones included until they are read or evicted). */
  readonly size: number
}

/**
 * Creates a TTL cache.
 *
 * @example
 * const cache = createTtlCache<boolean>({ ttlMs: 600_000, now: Date.now })
 * cache.set('example.com', true)
 * cache.get('example.com') // true, for ten minutes
 */
export function createTtlCache<V>(options: TtlCacheOptions): TtlCache<V> {
  const entries = new LRUCache<string, { value: V; expiresAt: number }>({ max: options.maxEntries ?? 10_000 })
  const { now } = options

  const cache: TtlCache<V> = {
    get(key) {
      const e = entries.get(key)
      if (!e) return undefined
      if (e.expiresAt <= now()) {
        entries.delete(key)
        return undefined
      }
      return e.value
    },
    set(key, value, ttlMs = options.ttlMs) {
      if (ttlMs <= 0) return
      entries.set(key, { value, expiresAt: now() + ttlMs })
    },
    setIfAbsent(key, value) {
      if (cache.get(key) === undefined) cache.set(key, value)
    },
    delete(key) {
      entries.delete(key)
    },
    clear() {
      entries.clear()
    },
    get size() {
      return entries.size
    },
  }
  return cache
}

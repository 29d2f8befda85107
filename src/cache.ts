/**
 * The result cache (7 days by default): a hit costs 0 credits and reports `cache_hit: true`. The key is
 * `type:[configuration:]normalized-input[:answer-changing options]`; the value the check's outcome, scored again on a
 * hit. What is kept: docs/decisions.md, "Billing and caching" → "cache hits" and "what the cache keeps".
 */
import { LRUCache } from 'lru-cache'
import type { CheckOutcome } from './checks/types.js'

/** A cached outcome and when it was stored. */
export interface CacheEntry {
  outcome: CheckOutcome<unknown>
  /** Unix ms when stored. */
  storedAt: number
}

/**
 * A result cache. Methods may be sync or async, so a Redis- or SQL-backed cache fits. `get` must not return entries
 * older than the TTL it was given at `set`. A lookup waits for `get` and `set` at most `cacheTimeoutMs` (an option of
 * `createRiskcheck`): a `get` answered later is a miss, a `set` finished later is not waited for; `rc.close()` waits for
 * `close` as long.
 */
export interface ResultCache {
  get(key: string, nowMs: number): CacheEntry | undefined | Promise<CacheEntry | undefined>
  set(key: string, entry: CacheEntry, ttlMs: number): void | Promise<void>
  /** Drops everything (optional). */
  clear?(): void | Promise<void>
  /** Releases resources (optional). */
  close?(): void | Promise<void>
}

/** Default TTL: 7 days. */
export const CACHE_TTL_MS = 7 * 24 * 60 * 60 * 1000

/**
 * An in-memory LRU cache with a per-entry expiry (by the lookup's clock), bounded by entry count.
 *
 * @example
 * const rc = createRiskcheck({ cache: createMemoryCache({ maxEntries: 50_000 }) })
 */
export function createMemoryCache(options: { maxEntries?: number } = {}): ResultCache & { readonly size: number } {
  // Entries are kept as private deep copies, and every hit gets its own copy: a caller changing a result it received
  // can never change what the next caller is served (the memory cache behaves like a persistent one). A structural
  // copy costs about a quarter of a JSON round trip, which matters when offline answers cost a few microseconds.
  const lru = new LRUCache<string, { outcome: CacheEntry['outcome']; storedAt: number; expiresAt: number }>({ max: options.maxEntries ?? 10_000 })
  return {
    get size() {
      return lru.size
    },
    get(key, nowMs) {
      const hit = lru.get(key)
      if (!hit) return undefined
      if (hit.expiresAt <= nowMs) {
        lru.delete(key)
        return undefined
      }
      return { outcome: copyJsonData(hit.outcome), storedAt: hit.storedAt }
    },
    set(key, entry, ttlMs) {
      lru.set(key, { outcome: copyJsonData(entry.outcome), storedAt: entry.storedAt, expiresAt: entry.storedAt + ttlMs })
    },
    clear() {
      lru.clear()
    },
  }
}

/**
 * A deep copy of JSON-shaped data (plain objects, arrays, strings, numbers, booleans, null), like a JSON round trip
 * for such data but without the text in between.
 */
export function copyJsonData<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) {
    const out = new Array(value.length)
    for (let i = 0; i < value.length; i++) out[i] = copyJsonData(value[i])
    return out as T
  }
  const out: Record<string, unknown> = {}
  for (const k in value) {
    const v = (value as Record<string, unknown>)[k]
    if (v !== undefined) out[k] = copyJsonData(v)
  }
  return out as T
}

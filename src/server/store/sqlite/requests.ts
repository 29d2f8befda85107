/**
 * Idempotency records and the persistent result cache of the SQLite store, and the purge of both. Starting an
 * idempotent request is one IMMEDIATE transaction (insert-or-read), so two requests — or two processes on one file —
 * given the same key at once never both run it. A record in progress whose owner's lease has ended is taken over
 * (./leases.ts).
 */
import type Database from 'better-sqlite3'
import type { CacheEntry, ResultCache } from '../../../cache.js'
import type { IdempotencyBegin, Store, Synchronous } from '../contracts/store.js'
import { IDEMPOTENCY_STALE_MS } from '../common/lease-times.js'

/** The request-level records of the store: idempotency, the result cache, their purge. */
export type SqliteRequests = Pick<
  Synchronous<Store>,
  'resultCache' | 'beginIdempotent' | 'completeIdempotent' | 'abandonIdempotent' | 'purgeExpired'
>

interface IdempotencyRow {
  fingerprint: string
  status: number | null
  body: string | null
  created_at: number
  owner: string | null
}

/** What the idempotency records ask of the instance leases (./leases.ts `leaseLeft`). */
export interface LeaseOwners {
  leaseLeft(instanceId: string, nowMs: number): number
}

function createResultCache(db: Database.Database): ResultCache {
  const get = db.prepare('SELECT value, stored_at FROM result_cache WHERE key = ? AND expires_at > ?')
  const set = db.prepare(
    `INSERT INTO result_cache (key, value, stored_at, expires_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET value = excluded.value, stored_at = excluded.stored_at, expires_at = excluded.expires_at`,
  )
  const clear = db.prepare('DELETE FROM result_cache')
  return {
    get(key, nowMs) {
      const row = get.get(key, nowMs) as { value: string; stored_at: number } | undefined
      if (!row) return undefined
      try {
        const outcome = JSON.parse(row.value) as CacheEntry['outcome']
        return { outcome, storedAt: row.stored_at }
      } catch {
        return undefined
      }
    },
    set(key, entry, ttlMs) {
      set.run(key, JSON.stringify(entry.outcome), entry.storedAt, entry.storedAt + ttlMs)
    },
    clear() {
      clear.run()
    },
    // The store owns the database; closing the riskcheck instance must not close it.
    close() {},
  }
}

export function createSqliteRequests(db: Database.Database, owners?: LeaseOwners): SqliteRequests {
  const deleteExpired = db.prepare('DELETE FROM idempotency WHERE scope = ? AND idem_key = ? AND expires_at <= ?')
  const insert = db.prepare(
    'INSERT OR IGNORE INTO idempotency (scope, idem_key, fingerprint, status, body, created_at, expires_at, owner) VALUES (?, ?, ?, NULL, NULL, ?, ?, ?)',
  )
  const read = db.prepare('SELECT fingerprint, status, body, created_at, owner FROM idempotency WHERE scope = ? AND idem_key = ?')
  const restart = db.prepare('UPDATE idempotency SET created_at = ?, expires_at = ?, owner = ? WHERE scope = ? AND idem_key = ? AND status IS NULL')
  const complete = db.prepare('UPDATE idempotency SET status = ?, body = ? WHERE scope = ? AND idem_key = ?')
  const abandon = db.prepare('DELETE FROM idempotency WHERE scope = ? AND idem_key = ? AND status IS NULL AND (? IS NULL OR owner = ?)')
  const purgeIdempotency = db.prepare('DELETE FROM idempotency WHERE expires_at <= ?')
  const purgeCache = db.prepare('DELETE FROM result_cache WHERE expires_at <= ?')

  type Begin = (scope: string, key: string, fingerprint: string, nowMs: number, ttlMs: number, owner: string | null) => IdempotencyBegin
  const beginTx = db.transaction<Begin>((scope, key, fingerprint, nowMs, ttlMs, owner) => {
    deleteExpired.run(scope, key, nowMs)
    if (insert.run(scope, key, fingerprint, nowMs, nowMs + ttlMs, owner).changes === 1) return { state: 'new' }
    const row = read.get(scope, key) as IdempotencyRow
    if (row.fingerprint !== fingerprint) return { state: 'mismatch' }
    if (row.status !== null && row.body !== null) return { state: 'replay', status: row.status, body: row.body }
    // Still in progress: while its owner's lease runs, it is; once it ended (the process died), the retry runs it.
    // A record without an owner is taken over when no request could still be running it.
    if (row.owner !== null && owners) {
      const left = owners.leaseLeft(row.owner, nowMs)
      if (left > 0) return { state: 'in_progress', retryAfterMs: left }
    } else if (nowMs - row.created_at < IDEMPOTENCY_STALE_MS) {
      return { state: 'in_progress' }
    }
    restart.run(nowMs, nowMs + ttlMs, owner, scope, key)
    return { state: 'new' }
  })

  return {
    resultCache: createResultCache(db),
    beginIdempotent: (scope, key, fingerprint, nowMs, ttlMs, owner) => beginTx.immediate(scope, key, fingerprint, nowMs, ttlMs, owner ?? null),
    completeIdempotent(scope, key, status, body) {
      complete.run(status, body, scope, key)
    },
    abandonIdempotent(scope, key, owner) {
      abandon.run(scope, key, owner ?? null, owner ?? null)
    },
    purgeExpired(nowMs) {
      return db.transaction(() => purgeCache.run(nowMs).changes + purgeIdempotency.run(nowMs).changes).immediate()
    },
  }
}

/**
 * Which outcome storage a server runs on, told by its store: the SQLite store's file or the PostgreSQL store's pool.
 * Other stores (the memory store, a store of your own) have none: POST and GET /v1/outcomes then answer 503
 * UPSTREAM_UNAVAILABLE and answers carry no outcome factors.
 */
import pg from 'pg'
import type { OutcomeStore } from './contracts/outcomes.js'
import { createPostgresOutcomeStore } from './postgres/outcomes.js'
import { createSqliteOutcomeStore } from './sqlite/outcomes.js'
import type { SqliteStore } from './sqlite.js'
import type { Store } from './types.js'

/** The outcome storage of `store`, or undefined when it has none. */
export function outcomeStoreOf(store: Store): OutcomeStore | undefined {
  const sqlite = store as Partial<SqliteStore>
  if (sqlite.db) {
    const s = store as SqliteStore
    return createSqliteOutcomeStore(s.db, (write) => s.groupWrite(write))
  }
  const pool = (store as { pool?: unknown }).pool
  if (pool instanceof pg.Pool) return createPostgresOutcomeStore(pool)
  return undefined
}

/**
 * Which outcome storage a server runs on, told by its store's engine tag: the SQLite database's (a file or
 * `:memory:`) or the PostgreSQL store's pool. A store of your own has none: POST and GET /v1/outcomes then answer 503
 * UPSTREAM_UNAVAILABLE and answers carry no outcome factors.
 */
import type { OutcomeStore } from './contracts/outcomes.js'
import type { Store } from './contracts/store.js'
import { createPostgresOutcomeStore } from './postgres/outcomes.js'
import type { PostgresStore } from './postgres/store.js'
import { createSqliteOutcomeStore } from './sqlite/outcomes.js'
import type { SqliteStore } from './sqlite/store.js'

/** The outcome storage of `store`, or undefined when it has none. */
export function outcomeStoreOf(store: Store): OutcomeStore | undefined {
  switch (store.engine) {
    case 'sqlite':
    case 'memory': {
      const s = store as SqliteStore
      return createSqliteOutcomeStore(s.db, (write) => s.groupWrite(write))
    }
    case 'postgres':
      return createPostgresOutcomeStore((store as PostgresStore).pool)
    default:
      return undefined
  }
}

/**
 * The one shape of a schema migration, for every engine (SQLite, PostgreSQL) and every owner of tables (the service,
 * the dashboard). Each engine has one runner that applies a list of these in `version` order.
 */

/** One migration: its version (1, 2, 3, … within its list), a name for messages and the ledger, and its SQL. */
export interface Migration {
  version: number
  name: string
  sql: string
}

/**
 * The database of `riskcheck serve`, `riskcheck worker` and `riskcheck admin`: a SQLite file (`--db`, the default
 * ./riskcheck.sqlite) or PostgreSQL (`--database-url postgres://…`). The two exclude each other; a flag given on the
 * command line wins over the other one's environment variable, so `RISKCHECK_DB` in a shell's environment does not
 * stop `--database-url` from working.
 *
 * A PostgreSQL URL may name the schema of the tables, the way operators already write it: `?schema=NAME`, or libpq's
 * `?options=-c%20search_path%3DNAME`. Without one the tables go to the connection's default (usually `public`).
 */
import { serveEnvironment, type Variable } from './serve-settings.js'
import { UsageError } from './shared.js'

/** Where the data is. */
export type DatabaseTarget = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }

/** The default SQLite file. */
export const DEFAULT_DB = './riskcheck.sqlite'

/** A plain lower-case identifier: what a schema may be (../server/store/postgres/migrations.ts checks the same). */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/** `-c search_path=NAME` inside libpq's `options` parameter (the first schema of the path is where tables go). */
const SEARCH_PATH = /(?:^|\s)-c\s*search_path\s*=\s*([^\s,]+)(?:,\S*)?/

/**
 * Splits a PostgreSQL URL into the connection string `pg` gets and the schema it names (`?schema=`, or the
 * search_path of `?options=`); a UsageError for a schema that is not a plain lower-case identifier.
 *
 * @example
 * postgresLocation('postgres://u@h/db?schema=tenant_a') // { connectionString: 'postgres://u@h/db', schema: 'tenant_a' }
 */
export function postgresLocation(url: string): { connectionString: string; schema?: string } {
  const parsed = new URL(url)
  let schema = parsed.searchParams.get('schema') ?? undefined
  parsed.searchParams.delete('schema')
  const options = parsed.searchParams.get('options')
  const inOptions = options === null ? null : SEARCH_PATH.exec(options)
  if (inOptions) {
    schema ??= inOptions[1]!
    // The schema option sets the search_path itself; the rest of `options` (other settings) stays.
    const rest = options!.replace(inOptions[0], '').trim()
    if (rest === '') parsed.searchParams.delete('options')
    else parsed.searchParams.set('options', rest)
  }
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new UsageError(`--database-url: the schema must be a plain lower-case identifier (got ${JSON.stringify(schema.slice(0, 70))})`)
  }
  return { connectionString: parsed.toString(), ...(schema !== undefined ? { schema } : {}) }
}

/** The URL as messages may show it: no password. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return url.replace(/:\/\/[^@\s/]*@/, '://***@')
  }
}

/**
 * The database settings of a command from its merged flag and environment values (`db`, `database-url`); `origin`
 * tells where each came from (`--db`, or the variable's name). When both are set and only one by a flag, the flag's
 * wins; when both come from flags (or both from variables) both are kept, for the caller to refuse.
 */
export function pickDatabase(values: Record<string, unknown>, origin: (flag: string) => string): { db?: string; databaseUrl?: string } {
  const db = values.db as string | undefined
  const url = values['database-url'] as string | undefined
  const byFlag = (flag: string) => origin(flag) === `--${flag}`
  if (db !== undefined && url !== undefined && byFlag('db') !== byFlag('database-url')) return byFlag('db') ? { db } : { databaseUrl: url }
  return { ...(db !== undefined ? { db } : {}), ...(url !== undefined ? { databaseUrl: url } : {}) }
}

/** The database of a command (see {@link pickDatabase}); null when none is set (the caller's default applies). */
export function databaseTarget(values: Record<string, unknown>, origin: (flag: string) => string): DatabaseTarget | null {
  const { db, databaseUrl } = pickDatabase(values, origin)
  if (db !== undefined && databaseUrl !== undefined) {
    throw new UsageError(`${origin('db')} and ${origin('database-url')} exclude each other: one database, SQLite or PostgreSQL`)
  }
  if (databaseUrl !== undefined) return { kind: 'postgres', url: databaseUrl }
  if (db !== undefined) return { kind: 'sqlite', path: db }
  return null
}

/** The variables of the database flags, the same as `serve` reads (./serve-settings.ts; flags win). */
export function databaseVariables(): Variable[] {
  return serveEnvironment().filter((v) => v.flag === 'db' || v.flag === 'database-url' || v.flag === 'no-migrate')
}

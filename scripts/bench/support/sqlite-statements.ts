/**
 * Every better-sqlite3 statement execution of the process (savepoints and the COMMIT of transaction functions
 * included), seen by the server benchmarks that count or time them: a hook around `run`, `get`, `all` and `iterate`.
 */
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const Database = require('better-sqlite3')

/** Calls `around(method, sql, execute)` for each execution from now on; `execute` runs the statement and answers its result. */
export function aroundStatements(around: (method: string, sql: string, execute: () => unknown) => unknown): void {
  const probe = new Database(':memory:')
  const Stmt = Object.getPrototypeOf(probe.prepare('SELECT 1'))
  probe.close()
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const o = Stmt[m]
    Stmt[m] = function (this: { source: string }, ...a: unknown[]) {
      return around(m, this.source, () => o.apply(this, a))
    }
  }
}

/**
 * What every PostgreSQL statement of riskcheck runs on ({@link Queryable}: a pool, or a client inside a transaction),
 * the one transaction helper, and BIGINT columns as numbers.
 */
import type pg from 'pg'

/** What a statement runs on: a `pg` Pool or Client, or a client inside {@link inTransaction}. */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(config: string | pg.QueryConfig<unknown[]>, values?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>
}

/** A BIGINT (string) or INTEGER column as `pg` hands it back. */
export type Num = string | number

/** A BIGINT column as a number: the values kept there (unix ms, credits, sequence numbers) stay below 2^53. */
export const num = (v: Num): number => Number(v)

/**
 * Runs `fn` in a transaction on one client of `pool`: committed when it resolves, rolled back when it throws. A
 * connection that cannot even roll back (it died, or timed out mid-statement) is dropped from the pool rather than
 * handed to the next caller.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (e) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError))
    throw e
  } finally {
    client.release(broken)
  }
}

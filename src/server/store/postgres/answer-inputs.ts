/**
 * The input hashes of answered requests (outcomes) on PostgreSQL, written with the turn's settlements: the rows kept
 * in one event-loop turn ride on the statement that closes that turn's requests (./leases.ts `CLOSE_MANY`); rows no
 * close takes (test keys, a server without holds) go out alone, one statement per turn. docs/decisions.md, "Outcomes".
 */
import type pg from 'pg'
import type { AnswerInputsRecord } from '../contracts/outcomes.js'

/** The rows as the seven arrays of `unnest` (request id, org, mode, time, email, phone and IP hashes). */
export function inputColumns(rows: readonly AnswerInputsRecord[]): unknown[] {
  return [rows.map((r) => r.requestId), rows.map((r) => r.orgId), rows.map((r) => r.mode), rows.map((r) => r.at), rows.map((r) => r.email), rows.map((r) => r.phone), rows.map((r) => r.ip)]
}

/** The insert of {@link inputColumns} from `$first` on (ignoring a request id already kept). */
export const insertInputs = (first: number): string => {
  const p = (i: number, type: string) => `$${first + i}::${type}[]`
  return `INSERT INTO answer_inputs (request_id, org_id, mode, at, email_hash, phone_hash, ip_hash)
  SELECT * FROM unnest(${p(0, 'text')}, ${p(1, 'text')}, ${p(2, 'text')}, ${p(3, 'bigint')}, ${p(4, 'text')}, ${p(5, 'text')}, ${p(6, 'text')})
  ON CONFLICT (request_id) DO NOTHING`
}

/** The rows of one turn, and the promise of their write. */
export interface InputsBatch {
  rows: AnswerInputsRecord[]
  /** Tells the rows' callers the write's end: null when committed, else its error. */
  written(error: unknown): void
}

/** Rows waiting for the turn's close statement. */
export interface TurnInputs {
  /** Queues rows; resolves once they are committed (with the turn's close, or alone). */
  keep(rows: readonly AnswerInputsRecord[]): Promise<void>
  /** The rows waiting (the close statement writes them and reports with `written`), or null. */
  take(): InputsBatch | null
  /**
   * Tells whether closes are queued for a statement not yet sent (one waiting for the close in flight): rows kept
   * meanwhile wait to ride on it rather than go out alone.
   */
  rideOn(closesQueued: () => boolean): void
}

/** The turn's rows over `pool`. */
export function createTurnInputs(pool: pg.Pool): TurnInputs {
  let waiting: (InputsBatch & { done: Promise<void> }) | null = null
  let closesQueued = () => false
  const take = (): InputsBatch | null => {
    const w = waiting
    waiting = null
    return w
  }
  return {
    keep(rows) {
      if (!waiting) {
        let written!: (error: unknown) => void
        const done = new Promise<void>((resolve, reject) => (written = (e) => (e === null ? resolve() : reject(e))))
        const mine = (waiting = { rows: [], written, done })
        // a request's close is queued in the turn its rows are (after them): its statement runs in this turn's check
        // phase — or, while the close before it is in flight, once that one answered — so rows still here one turn
        // later with no close queued have none to ride on
        setImmediate(() =>
          setImmediate(() => {
            if (waiting !== mine || closesQueued()) return
            waiting = null
            pool.query(insertInputs(1), inputColumns(mine.rows)).then(
              () => mine.written(null),
              (e: unknown) => mine.written(e),
            )
          }),
        )
      }
      waiting.rows.push(...rows)
      return waiting.done
    },
    take,
    rideOn(queued) {
      closesQueued = queued
    },
  }
}

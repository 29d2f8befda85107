/**
 * Opaque paging cursors of the bulk API. A results cursor names the job, the next row index and the action filter it
 * was made for, so a cursor used with another job or another filter is rejected instead of silently skipping rows.
 * A job-list cursor names the creation sequence number to continue below: the form of an engine of one owner (the
 * server's engines, one per org and key mode, take src/server/page-cursor.ts's instead, `BulkOptions.listCursor`). A
 * cursor is taken only in the very form this module writes it.
 */
import { cursorFiltersChanged, foreignCursor } from '../errors.js'
import { ACTIONS, type Action } from '../schema.js'

const MAX_CURSOR_LENGTH = 200

const encode = (s: string) => Buffer.from(s, 'utf8').toString('base64url')

function decode(cursor: unknown): string[] {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw foreignCursor()
  }
  return Buffer.from(cursor, 'base64url').toString('utf8').split('|')
}

/** Cursor of the results page starting at row `index` of job `jobId` with the filter `action`. */
export function encodeResultsCursor(jobId: string, index: number, action: Action | null): string {
  return encode(`r1|${jobId}|${index}|${action ?? ''}`)
}

/**
 * The row index a results cursor points to. Throws INVALID_REQUEST when the cursor is malformed or was made for
 * another job or another action filter.
 */
export function decodeResultsCursor(cursor: unknown, jobId: string, action: Action | null): number {
  const parts = decode(cursor)
  const [tag, id, index, act] = parts
  if (parts.length !== 4 || tag !== 'r1' || id !== jobId || index === undefined || !/^\d{1,7}$/.test(index)) throw foreignCursor()
  if (act !== '' && !ACTIONS.includes(act as Action)) throw foreignCursor()
  if ((act === '' ? null : act) !== action) throw cursorFiltersChanged(['action'])
  if (encodeResultsCursor(jobId, Number(index), action) !== cursor) throw foreignCursor()
  return Number(index)
}

/** Cursor of the job list continuing below creation sequence `seq`. */
export function encodeListCursor(seq: number): string {
  return encode(`j1|${seq}`)
}

/** The sequence number a job-list cursor continues below. Throws INVALID_REQUEST when malformed. */
export function decodeListCursor(cursor: unknown): number {
  const parts = decode(cursor)
  const [tag, seq] = parts
  if (parts.length !== 2 || tag !== 'j1' || seq === undefined || !/^\d{1,15}$/.test(seq) || encodeListCursor(Number(seq)) !== cursor) throw foreignCursor()
  return Number(seq)
}

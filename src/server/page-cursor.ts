/**
 * The page cursors of the review queue and the outcomes (docs/api.md "Conventions"): the `seq` to continue below,
 * then a digest of the listing, org and key mode, then one of the filters the page was read under. A cursor is taken
 * back only with both the same, as a bulk results cursor only with its job and `action`: else the page would be one
 * of the new query from the old position, rows skipped or mixed without an error.
 */
import { createHash } from 'node:crypto'
import { cursorFiltersChanged, foreignCursor } from '../errors.js'

/** What a page was read under: its filters by their query names, in the route's order (undefined: not given). */
export interface PageScope {
  listing: 'reviews' | 'outcomes'
  orgId: string
  mode: string
  filters: Readonly<Record<string, string | number | undefined>>
}

const digest = (parts: readonly unknown[]) => createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 11)
const ownerDigest = (s: PageScope) => digest([s.listing, s.orgId, s.mode])
const filterDigest = (s: PageScope) => digest(Object.entries(s.filters).map(([name, value]) => [name, value ?? null]))

/** The cursor of the page continuing below `seq` under `scope`. */
export function encodePageCursor(seq: number, scope: PageScope): string {
  return `${seq}.${ownerDigest(scope)}.${filterDigest(scope)}`
}

/**
 * The `seq` a cursor continues below. Throws INVALID_REQUEST: {@link foreignCursor} for one not in the form
 * {@link encodePageCursor} writes or of another listing, org or mode; {@link cursorFiltersChanged} for other filters.
 */
export function seqOfPageCursor(cursor: string, scope: PageScope): number {
  const m = /^([1-9][0-9]{0,15})\.([A-Za-z0-9_-]{11})\.([A-Za-z0-9_-]{11})$/.exec(cursor)
  const seq = Number(m?.[1])
  if (!m || !Number.isSafeInteger(seq) || m[2] !== ownerDigest(scope)) throw foreignCursor()
  if (m[3] !== filterDigest(scope)) throw cursorFiltersChanged(Object.keys(scope.filters))
  return seq
}

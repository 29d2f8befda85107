/**
 * The page cursors of the review queue, the outcomes, the bulk job list and a list's items (docs/api.md "Conventions"):
 * the place to continue from (a `seq`, or a list's value), then a digest of the listing, org and key mode, then one of
 * the filters the page was read under. A cursor is taken back only with both the same, as a bulk results cursor only
 * with its job and `action`: else the page would be one of the new query from the old place, rows skipped or mixed
 * without an error.
 */
import { createHash } from 'node:crypto'
import { cursorFiltersChanged, foreignCursor } from '../errors.js'

/** What a page was read under: its filters by their query names, in the route's order (undefined: not given). */
export interface PageScope {
  /** The listing; a list's items name their list, so a cursor of one list is not one of another. */
  listing: 'reviews' | 'outcomes' | 'bulk_jobs' | `list_items ${string}`
  orgId: string
  mode: string
  filters: Readonly<Record<string, string | number | undefined>>
}

const digest = (parts: readonly unknown[]) => createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 11)
const ownerDigest = (s: PageScope) => digest([s.listing, s.orgId, s.mode])
const filterDigest = (s: PageScope) => digest(Object.entries(s.filters).map(([name, value]) => [name, value ?? null]))
const valueText = (value: string) => Buffer.from(value, 'utf8').toString('base64url')

/** The cursor of the page continuing past `place` under `scope`: a seq in decimal, a value in base64url (UTF-8). */
export function encodePageCursor(place: number | string, scope: PageScope): string {
  return `${typeof place === 'number' ? place : valueText(place)}.${ownerDigest(scope)}.${filterDigest(scope)}`
}

/**
 * The place a cursor continues from, read by `placeOf` (null: not one {@link encodePageCursor} writes). Throws
 * INVALID_REQUEST: {@link foreignCursor} for one not in that form or of another listing, org or mode;
 * {@link cursorFiltersChanged} for other filters.
 */
function placeOfPageCursor<T>(cursor: string, scope: PageScope, placeOf: (text: string) => T | null): T {
  const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{11})\.([A-Za-z0-9_-]{11})$/.exec(cursor)
  const place = m ? placeOf(m[1]!) : null
  if (!m || place === null || m[2] !== ownerDigest(scope)) throw foreignCursor()
  if (m[3] !== filterDigest(scope)) throw cursorFiltersChanged(Object.keys(scope.filters))
  return place
}

/** The `seq` a cursor continues below (throws as {@link placeOfPageCursor} says). */
export const seqOfPageCursor = (cursor: string, scope: PageScope): number =>
  placeOfPageCursor(cursor, scope, (text) => (/^[1-9][0-9]{0,15}$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : null))

/** The value a cursor continues after (throws as {@link placeOfPageCursor} says). */
export const valueOfPageCursor = (cursor: string, scope: PageScope): string =>
  placeOfPageCursor(cursor, scope, (text) => {
    const value = Buffer.from(text, 'base64url').toString('utf8')
    return value !== '' && valueText(value) === text ? value : null
  })

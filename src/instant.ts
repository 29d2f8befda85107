/**
 * An instant written as text, read the same in every time zone: an ISO 8601 date (midnight UTC) or a date-time with
 * `Z` or an offset. A date-time without an offset is refused: `Date.parse` would read it in the machine's time zone.
 */

const DATE_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/i

/** Unix ms of `text` (`2026-12-31`, `2026-12-31T23:59:59Z`, `…+05:30`), or null for anything else. */
export function instantOfText(text: string): number | null {
  const ms = text.length <= 40 && DATE_TIME.test(text) ? Date.parse(text) : NaN
  return Number.isFinite(ms) ? ms : null
}

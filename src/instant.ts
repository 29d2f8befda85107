/**
 * An instant written as text, read the same in every time zone: an ISO 8601 date (midnight UTC) or a date-time with
 * `Z` or an offset. A date-time without an offset is refused: `Date.parse` would read it in the machine's time zone.
 */

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2})))?$/i

/**
 * Unix ms of `text` (`2026-12-31`, `2026-12-31T23:59:59Z`, `…+05:30`), or null for anything else — a day the month
 * does not have (`2026-02-30`, which `Date.parse` moves to March 2) or a time past 23:59:59 included.
 */
export function instantOfText(text: string): number | null {
  const m = text.length <= 40 ? DATE_TIME.exec(text) : null
  if (!m) return null
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return null
  if (Number(m[4] ?? 0) > 23 || Number(m[5] ?? 0) > 59 || Number(m[6] ?? 0) > 59 || Number(m[7] ?? 0) > 23 || Number(m[8] ?? 0) > 59) return null
  const ms = Date.parse(text)
  return Number.isFinite(ms) ? ms : null
}

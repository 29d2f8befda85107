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
  // day 0 of the next month is this month's last; 2000 + year % 400 has the same leap years as the year itself
  // (Date.UTC reads years 0–99 as 1900–1999, where 0000 is a leap year and 1900 is not)
  const daysInMonth = new Date(Date.UTC(2000 + (year % 400), month, 0)).getUTCDate()
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return null
  if (Number(m[4] ?? 0) > 23 || Number(m[5] ?? 0) > 59 || Number(m[6] ?? 0) > 59 || Number(m[7] ?? 0) > 23 || Number(m[8] ?? 0) > 59) return null
  const ms = Date.parse(text)
  return Number.isFinite(ms) ? ms : null
}

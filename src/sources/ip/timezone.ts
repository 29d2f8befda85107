/**
 * The time zone of an IP location when its database names none (DB-IP Lite, MaxMind's Country databases): from the
 * coordinates, checked against the country, else the country's principal zone. How and why:
 * docs/decisions.md, "IP checks" → "time zones".
 */
import tzLookup from '@photostructure/tz-lookup'
import data from '../../../data/ip/timezones.json' with { type: 'json' }

type ZoneRow = [string, number, number]
const COUNTRIES = data.countries as unknown as Readonly<Record<string, readonly ZoneRow[]>>
const ZONES = data.zones as unknown as Readonly<Record<string, readonly string[]>>

/** The tzdata release the country↔zone table comes from. */
export const TIMEZONE_DATA_VERSION: string = data.version

/** The zone from coordinates alone (null for coordinates out of range). */
function zoneAt(lat: number, lon: number): string | null {
  try {
    return tzLookup(lat, lon)
  } catch {
    return null
  }
}

/** Squared distance on the sphere's surface, good enough to rank a country's few zones (no trigonometry per row). */
function rank(lat: number, lon: number, row: ZoneRow): number {
  const dLat = row[1] - lat
  let dLon = Math.abs(row[2] - lon)
  if (dLon > 180) dLon = 360 - dLon
  const k = Math.cos(((row[1] + lat) / 2) * (Math.PI / 180))
  return dLat * dLat + dLon * k * (dLon * k)
}

/**
 * The IANA time zone of a location from its coordinates and/or country (see the module comment); null when both are
 * unknown. Never throws.
 *
 * @example deriveTimezone('GB', 51.5142, -0.0931) // 'Europe/London'
 * @example deriveTimezone('DE', null, null)         // 'Europe/Berlin'
 * @example deriveTimezone(null, null, null)         // null
 */
export function deriveTimezone(countryCode: string | null, lat: number | null, lon: number | null): string | null {
  const rows = countryCode === null ? undefined : COUNTRIES[countryCode]
  const hasPoint = lat !== null && lon !== null && Number.isFinite(lat) && Number.isFinite(lon)
  if (!hasPoint) return rows?.[0]?.[0] ?? null
  const zone = zoneAt(lat, lon)
  if (!rows || rows.length === 0) return zone
  if (zone !== null && ZONES[zone]?.includes(countryCode as string)) return zone
  if (rows.length === 1) return (rows[0] as ZoneRow)[0]
  let best = rows[0] as ZoneRow
  let bestRank = rank(lat, lon, best)
  for (let i = 1; i < rows.length; i++) {
    const r = rank(lat, lon, rows[i] as ZoneRow)
    if (r < bestRank) {
      bestRank = r
      best = rows[i] as ZoneRow
    }
  }
  return best[0]
}

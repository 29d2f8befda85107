/**
 * Compiles `data/ip/timezones.json` from the IANA time zone database's `zone.tab` and `zone1970.tab` (public domain):
 * for each country, its zones with the coordinates of their principal places (in `zone.tab` order, the most populous
 * zone first), and for each zone, the countries it covers. The IP lookup uses it to check a zone found from
 * coordinates against the address's country, and to name the zone of a country when there are no coordinates.
 *
 * Usage:
 *   npx tsx scripts/build-timezone-data.ts [--from /usr/share/zoneinfo] [--out data/ip/timezones.json]
 *
 * `--from` is a directory holding `zone.tab`, `zone1970.tab` and `tzdata.zi` (Debian's and Alpine's `tzdata`
 * packages install them in /usr/share/zoneinfo; the IANA tarball has the first two and `version`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

/** The compiled table. */
export interface TimezoneData {
  /** tzdata release the table was built from */
  version: string
  /** country (ISO 3166 alpha-2) → its zones: [zone, latitude, longitude], principal zone first */
  countries: Record<string, Array<[string, number, number]>>
  /** zone → the countries it covers */
  zones: Record<string, string[]>
}

/** ISO 6709 `±DDMM[SS]±DDDMM[SS]` → [latitude, longitude] in degrees (4 decimals). */
export function parseIso6709(text: string): [number, number] {
  const m = /^([+-])(\d{2})(\d{2})(\d{2})?([+-])(\d{3})(\d{2})(\d{2})?$/.exec(text)
  if (!m) throw new Error(`not an ISO 6709 coordinate: ${text}`)
  const deg = (sign: string, d: string, mi: string, s: string | undefined) =>
    (sign === '-' ? -1 : 1) * (Number(d) + Number(mi) / 60 + Number(s ?? 0) / 3600)
  const round = (x: number) => Math.round(x * 1e4) / 1e4
  return [round(deg(m[1]!, m[2]!, m[3]!, m[4])), round(deg(m[5]!, m[6]!, m[7]!, m[8]))]
}

function rows(text: string): string[][] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    .map((l) => l.split('\t'))
}

/** Builds the table from the texts of `zone.tab` and `zone1970.tab`. */
export function buildTimezoneData(zoneTab: string, zone1970Tab: string, version: string): TimezoneData {
  const countries: TimezoneData['countries'] = {}
  const zones: Record<string, Set<string>> = {}
  const cover = (zone: string, cc: string) => (zones[zone] ??= new Set()).add(cc)
  for (const [cc, coords, zone] of rows(zoneTab)) {
    if (!cc || !coords || !zone) continue
    const [lat, lon] = parseIso6709(coords)
    ;(countries[cc] ??= []).push([zone, lat, lon])
    cover(zone, cc)
  }
  for (const [ccs, , zone] of rows(zone1970Tab)) {
    if (!ccs || !zone) continue
    for (const cc of ccs.split(',')) cover(zone, cc)
  }
  const sortedZones: TimezoneData['zones'] = {}
  for (const z of Object.keys(zones).sort()) sortedZones[z] = [...(zones[z] as Set<string>)].sort()
  const sortedCountries: TimezoneData['countries'] = {}
  for (const cc of Object.keys(countries).sort()) sortedCountries[cc] = countries[cc] as Array<[string, number, number]>
  return { version, countries: sortedCountries, zones: sortedZones }
}

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? (process.argv[i + 1] as string) : def
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const from = arg('from', '/usr/share/zoneinfo')
  const out = arg('out', 'data/ip/timezones.json')
  const zi = join(from, 'tzdata.zi')
  const versionFile = join(from, 'version')
  const version = existsSync(zi)
    ? (/^# version (\S+)/m.exec(readFileSync(zi, 'utf8'))?.[1] ?? 'unknown')
    : existsSync(versionFile)
      ? readFileSync(versionFile, 'utf8').trim()
      : 'unknown'
  const data = buildTimezoneData(readFileSync(join(from, 'zone.tab'), 'utf8'), readFileSync(join(from, 'zone1970.tab'), 'utf8'), version)
  writeFileSync(out, JSON.stringify(data) + '\n')
  console.log(`${out}: tzdata ${version}, ${Object.keys(data.countries).length} countries, ${Object.keys(data.zones).length} zones`)
}

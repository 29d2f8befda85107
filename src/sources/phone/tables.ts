/**
 * In-memory longest-prefix tables over the compiled libphonenumber resources in `data/phone/` (carrier names,
 * region descriptions, time zones), built by `scripts/build-phone-data.ts`.
 *
 * Loading is lazy and happens once: a table's file is read and gunzipped the first time any number asks it
 * something, and a calling code's section is parsed into a `Map` the first time a number of that calling code
 * asks. No file is read per lookup. The file format is documented in the build script.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'

/** A parsed calling-code section: prefix (digits after the calling code) → value index (-1 = no data). */
interface Section {
  values: string[]
  map: Map<string, number>
  maxLen: number
  ccValue: number
}

/** A longest-prefix table over the sections of one compiled file. */
export interface PrefixTable {
  /**
   * The value of the longest prefix of `nationalNumber` under calling code `cc`, or null when the table has none.
   *
   * @example
   * tables.geocoding.lookup('1', '2015550123') // 'New Jersey'
   */
  lookup(cc: string, nationalNumber: string): string | null
  /** The source's value for the bare calling code (exact, not longest-prefix), or null. */
  countryLevel(cc: string): string | null
  /** The calling codes the table has a section for. */
  callingCodes(): string[]
  /** Number of entries in a calling code's section (0 when absent); parses the section. */
  size(cc: string): number
}

/**
 * Parses the compiled text format into a lazily-indexed {@link PrefixTable}. Sections are split on first use of
 * their calling code. Throws on a malformed section (the data ships with the package and is pinned by tests).
 */
export function parsePrefixTable(text: string): PrefixTable {
  // Index: calling code → [start, end) offsets of its body (after the "@cc n" line).
  const index = new Map<string, [number, number]>()
  // A trailing non-section block (e.g. "%zones") ends the last section.
  const trailer = text.indexOf('\n%')
  const limit = trailer < 0 ? text.length : trailer + 1
  let pos = text.startsWith('@') ? 0 : text.indexOf('\n@')
  if (pos > 0) pos += 1
  while (pos >= 0 && pos < limit && text.charCodeAt(pos) === 64 /* @ */) {
    const lineEnd = text.indexOf('\n', pos)
    const header = text.slice(pos + 1, lineEnd)
    const cc = header.slice(0, header.indexOf(' '))
    const next = text.indexOf('\n@', lineEnd)
    const end = next < 0 || next + 1 > limit ? limit : next + 1
    index.set(cc, [lineEnd + 1, end])
    pos = end === limit ? -1 : next + 1
  }

  const parsed = new Map<string, Section | null>()
  const section = (cc: string): Section | null => {
    let s = parsed.get(cc)
    if (s !== undefined) return s
    const range = index.get(cc)
    s = range ? parseSection(cc, text.slice(range[0], range[1])) : null
    parsed.set(cc, s)
    return s
  }

  return {
    lookup(cc, nationalNumber) {
      const s = section(cc)
      if (s === null) return null
      const map = s.map
      for (let len = Math.min(s.maxLen, nationalNumber.length); len >= 0; len--) {
        const v = map.get(len === nationalNumber.length ? nationalNumber : nationalNumber.slice(0, len))
        if (v !== undefined) return v < 0 ? null : (s.values[v] ?? null)
      }
      return null
    },
    countryLevel(cc) {
      const s = section(cc)
      return s === null || s.ccValue < 0 ? null : (s.values[s.ccValue] ?? null)
    },
    callingCodes: () => [...index.keys()],
    size: (cc) => section(cc)?.map.size ?? 0,
  }
}

function parseSection(cc: string, body: string): Section {
  let eol = body.indexOf('\n')
  if (eol < 0) eol = body.length
  const head = body.slice(0, eol)
  if (!head.startsWith('v\t') && head !== 'v') throw new Error(`phone data: section ${cc} has no value line`)
  const values = head.split('\t').slice(1)
  const map = new Map<string, number>()
  let maxLen = 0
  let ccValue = -1
  let prev = ''
  let pos = eol + 1
  while (pos < body.length) {
    let end = body.indexOf('\n', pos)
    if (end < 0) end = body.length
    if (end > pos) {
      const first = body.charCodeAt(pos)
      if (first === 99 /* c */ && body.charCodeAt(pos + 1) === 32) {
        ccValue = parseInt(body.slice(pos + 2, end), 36)
      } else {
        const sp = body.indexOf(' ', pos)
        // one base-36 digit: how many digits are shared with the previous prefix
        const shared = first <= 57 ? first - 48 : first - 87
        const digits = (shared === 0 ? '' : prev.slice(0, shared)) + body.slice(pos + 1, sp)
        const idx = body.charCodeAt(sp + 1) === 45 /* - */ ? -1 : parseInt(body.slice(sp + 1, end), 36)
        map.set(digits, idx)
        if (digits.length > maxLen) maxLen = digits.length
        prev = digits
      }
    }
    pos = end + 1
  }
  return { values, map, maxLen, ccValue }
}

/** Parses the `%zones` block of the time-zone file: IANA zone → ISO 3166 alpha-2 country (from tz's zone.tab). */
export function parseZoneCountries(text: string): Map<string, string> {
  const out = new Map<string, string>()
  const at = text.indexOf('\n%zones\n')
  if (at < 0) return out
  for (const line of text.slice(at + 8).split('\n')) {
    const tab = line.indexOf('\t')
    if (tab > 0) out.set(line.slice(0, tab), line.slice(tab + 1))
  }
  return out
}

/** The three compiled tables plus the zone → country map. Each file is read on first access only. */
export interface PhoneTables {
  readonly carrier: PrefixTable
  readonly geocoding: PrefixTable
  readonly timezones: PrefixTable
  readonly zoneCountries: ReadonlyMap<string, string>
  /** The folder the tables are read from. */
  readonly dir: string
}

/**
 * Finds `data/phone` (the folder holding `manifest.json`) by walking up from this module — works from `src/`
 * (tests, tsx) and from the bundled `dist/` of the installed package.
 */
export function findPhoneDataDir(from: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'data', 'phone')
    if (existsSync(join(candidate, 'manifest.json'))) return candidate
    const parent = dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  throw new Error(`riskcheck: phone data (data/phone/manifest.json) not found above ${from}`)
}

/**
 * Opens the compiled tables in `dir` (default: the package's `data/phone`) lazily: nothing is read until a table is
 * first used. Throws (on first use) if a file is missing or corrupt.
 *
 * @example
 * const t = loadPhoneTables()
 * t.carrier.lookup('44', '7400123456') // 'Three'
 */
export function loadPhoneTables(dir?: string): PhoneTables {
  let resolvedDir = dir
  const where = () => (resolvedDir ??= findPhoneDataDir())
  const read = (file: string) => gunzipSync(readFileSync(join(where(), file))).toString('utf8')
  let carrier: PrefixTable | undefined
  let geocoding: PrefixTable | undefined
  let timezones: PrefixTable | undefined
  let zoneCountries: Map<string, string> | undefined
  const loadTz = () => {
    const text = read('timezones.txt.gz')
    timezones = parsePrefixTable(text)
    zoneCountries = parseZoneCountries(text)
  }
  return {
    get carrier() {
      return (carrier ??= parsePrefixTable(read('carrier.txt.gz')))
    },
    get geocoding() {
      return (geocoding ??= parsePrefixTable(read('geocoding.txt.gz')))
    },
    get timezones() {
      if (!timezones) loadTz()
      return timezones!
    },
    get zoneCountries() {
      if (!zoneCountries) loadTz()
      return zoneCountries!
    },
    get dir() {
      return where()
    },
  }
}

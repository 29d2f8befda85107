/**
 * The phone source: numbering-plan parsing (libphonenumber-js/max), offline enrichment from Google's prefix data
 * (original carrier, region description, time zone) and, when configured, a live carrier source for US and Canadian
 * numbers. Checks (../../checks/phone.ts, phone-type.ts) get it as `ctx.sources.phone`. Which numbers get which
 * enrichment: docs/decisions.md, "Phone checks" → "offline enrichment".
 */
import type { CountryCode } from 'libphonenumber-js/max'
import { analyzePhone, type PhoneAnalysis } from './parse.js'
import { loadPhoneTables, type PhoneTables } from './tables.js'
import {
  isPhoneCarrierSource,
  lookupCarrierSafely,
  type CarrierLookupOutcome,
  type PhoneCarrierSource,
} from './carrier-source.js'

export * from './parse.js'
export * from './carrier-source.js'
export { createTwilioCarrierSource, TWILIO_LINE_TYPES, type TwilioCarrierSourceOptions } from './twilio.js'
export { loadPhoneTables, findPhoneDataDir, type PhoneTables, type PrefixTable } from './tables.js'

/** Options of {@link createPhoneSource} (the facade passes the resolved `phone` options). */
export interface PhoneSourceOptions {
  /** A live carrier source (see ./carrier-source.ts); null/undefined: numbering plan only. */
  carrierSource?: unknown
  /** Deadline of one live lookup in ms (default 5000). */
  carrierTimeoutMs?: number
  /** Folder of the compiled tables (default: the package's data/phone). */
  dataDir?: string
  /** Pre-opened tables (tests, benchmarks); takes precedence over `dataDir`. */
  tables?: PhoneTables
}

/** What the offline tables say about a valid number. */
export interface OfflinePhoneInfo {
  /** Original-assignment carrier (mobile ranges only); null when unknown. */
  carrierName: string | null
  /** Region description (`Jersey City, NJ`, `Zurich`); null when unknown or not geographic. */
  region: string | null
  /** One IANA time zone; null when unknown or ambiguous. */
  timezone: string | null
}

/** The phone source handed to checks. */
export interface PhoneSource {
  /** Parses and reads the numbering plan (sync, no I/O). See {@link analyzePhone}. */
  analyze(input: string, defaultCountry: CountryCode): PhoneAnalysis
  /** Offline enrichment of an analysed number (in-memory tables, loaded once on first use). */
  describe(analysis: PhoneAnalysis): OfflinePhoneInfo
  /** Name of the configured live carrier source (`twilio`), or null when none is configured. */
  readonly carrierSourceName: string | null
  /** True when the live source applies to a number of this region (US or CA) and one is configured. */
  wantsLiveCarrier(region: string | null): boolean
  /** Live carrier lookup with the configured deadline. Never rejects; without a source it answers `rejected`. */
  lookupCarrier(e164: string): Promise<CarrierLookupOutcome>
  close(): void
}

/** Regions the live carrier source is used for (docs/lookups.md "Phone and phone line type": US and Canadian numbers get a live carrier record). */
export const LIVE_CARRIER_REGIONS: ReadonlySet<string> = new Set(['US', 'CA'])

/** Calling codes whose mobile numbers are geographic (libphonenumber's GEO_MOBILE_COUNTRIES). */
const GEO_MOBILE_CALLING_CODES = new Set(['52', '54', '55', '62', '86'])

/** True when libphonenumber treats a number of this type and calling code as geographic. */
export function isGeographicNumber(planType: string | null, callingCode: string): boolean {
  return (
    planType === 'FIXED_LINE' ||
    planType === 'FIXED_LINE_OR_MOBILE' ||
    (planType === 'MOBILE' && GEO_MOBILE_CALLING_CODES.has(callingCode))
  )
}

/** One zone out of a `&`-joined list: the only one, or the only one of `region`; else null. */
export function pickTimezone(zones: string | null, region: string | null, zoneCountries: ReadonlyMap<string, string>): string | null {
  if (zones === null || zones === '') return null
  if (zones.indexOf('&') < 0) return zones
  if (region === null) return null
  let found: string | null = null
  for (const z of zones.split('&')) {
    if (zoneCountries.get(z) !== region) continue
    if (found !== null) return null
    found = z
  }
  return found
}

/**
 * Offline enrichment of an analysed number from the compiled tables (see the module comment for the rules).
 * Invalid numbers get nothing.
 */
export function describePhone(a: PhoneAnalysis, tables: PhoneTables): OfflinePhoneInfo {
  if (!a.valid || a.callingCode === null) return { carrierName: null, region: null, timezone: null }
  const cc = a.callingCode
  const nn = a.nationalNumber
  const type = a.planType
  const mobileLike = type === 'MOBILE' || type === 'FIXED_LINE_OR_MOBILE' || type === 'PAGER'
  const geographic = isGeographicNumber(type, cc)
  const carrierName = mobileLike ? tables.carrier.lookup(cc, nn) : null
  const region = geographic ? tables.geocoding.lookup(cc, nn) : null
  const zones = geographic ? tables.timezones.lookup(cc, nn) : tables.timezones.countryLevel(cc)
  return { carrierName, region, timezone: pickTimezone(zones, a.region, tables.zoneCountries) }
}

const opened = new Map<string, PhoneTables>()

/** The tables of a folder, opened once per process: they are immutable, so every phone source shares them. */
function sharedTables(dir: string | undefined): PhoneTables {
  const key = dir ?? ''
  let t = opened.get(key)
  if (t === undefined) {
    t = loadPhoneTables(dir)
    opened.set(key, t)
  }
  return t
}

/**
 * Creates the phone source. Nothing is read until first use; the tables load lazily, once per process (shared by
 * every instance: they are immutable). A `carrierSource` that
 * is not an object with `lookup()` throws a TypeError (the facade validates options first anyway).
 *
 * @example
 * const phone = createPhoneSource({})
 * const a = phone.analyze('+41 44 668 18 00', 'US')
 * phone.describe(a) // { carrierName: null, region: 'Zurich', timezone: 'Europe/Zurich' }
 */
export function createPhoneSource(options: PhoneSourceOptions = {}): PhoneSource {
  const cs = options.carrierSource ?? null
  if (cs !== null && !isPhoneCarrierSource(cs)) throw new TypeError('phone.carrierSource must be an object with a lookup(e164) method')
  const carrier: PhoneCarrierSource | null = cs
  const timeoutMs = options.carrierTimeoutMs ?? 5000
  let tables = options.tables
  const getTables = () => (tables ??= sharedTables(options.dataDir))
  const name = carrier ? (typeof carrier.name === 'string' && carrier.name !== '' ? carrier.name : 'carrier') : null

  return {
    analyze: analyzePhone,
    describe: (a) => describePhone(a, getTables()),
    carrierSourceName: name,
    wantsLiveCarrier: (region) => carrier !== null && region !== null && LIVE_CARRIER_REGIONS.has(region),
    lookupCarrier: async (e164) =>
      carrier
        ? lookupCarrierSafely(carrier, e164, timeoutMs)
        : { ok: false, source: 'carrier', failure: 'rejected', message: 'no live carrier source is configured' },
    close() {},
  }
}

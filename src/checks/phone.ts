/**
 * The phone lookup (`rc.phone(phone, { country })`, `POST /v1/phone`, `riskcheck phone`): numbering-plan validity,
 * formats, country, line type, original carrier, region and time zone offline; a live carrier record for US and
 * Canadian numbers when a live carrier source is configured. Field and factor choices: docs/decisions.md, "Phone
 * checks".
 */
import type { CountryCode } from 'libphonenumber-js/max'
import type { LineType, PhoneData } from '../schema.js'
import type { FactorCode } from '../scoring/factors.js'
import {
  analyzePhone,
  normalizePhoneCountry,
  regionName,
  validatePhoneInput,
  type PhoneAnalysis,
} from '../sources/phone/parse.js'
import { emptyCarrierRecord, type CarrierLookupOutcome, type LiveCarrierRecord } from '../sources/phone/carrier-source.js'
import type { OfflinePhoneInfo } from '../sources/phone/index.js'
import type { CheckContext, CheckDefinition, CheckOutcome, Prepared } from './types.js'
import type { CommonLookupOptions } from '../lookup.js'

/** Options of the phone and phone-type lookups. */
export interface PhoneLookupOptions extends CommonLookupOptions {
  /** ISO 3166 alpha-2 country for numbers written without `+` (default US). Passing it also enables the country-mismatch factor. */
  country?: string | null
}

/** A prepared phone input. Plain data (the parsed number rides along under a symbol, see {@link analysisOf}). */
export interface PhoneInput {
  /** The input as given (1–40 characters). */
  phone: string
  /** The country numbers without `+` are read with. */
  country: CountryCode
  /** The `country` option as given (normalized), or null when the default applied. */
  explicitCountry: CountryCode | null
}

/** Name of the numbering-plan data source in `metadata.data_sources`. */
export const NUMBERING_PLAN_SOURCE = 'libphonenumber'

/** Where `prepare` keeps the parsed number on the input object (a symbol: invisible to JSON and spreads of keys). */
const ANALYSIS = Symbol('phoneAnalysis')
type WithAnalysis = PhoneInput & { [ANALYSIS]?: PhoneAnalysis }

/** The analysis made by `prepare` for this input object, or a fresh one (with formats). */
export function analysisOf(input: PhoneInput): PhoneAnalysis {
  const holder = input as WithAnalysis
  return (holder[ANALYSIS] ??= analyzePhone(input.phone, input.country))
}

/**
 * Shared `prepare` of the phone and phone-type lookups: validates the input (1–40 characters) and the `country`
 * option (INVALID_INPUT / MISSING_FIELD as documented on `validatePhoneInput` / `normalizePhoneCountry`), parses the
 * number once, and keys the cache by the E.164 form (plus extension) so every spelling of one number shares an
 * entry; an unreadable input is keyed by its trimmed text and country. The explicit country is part of the key
 * because it changes the answer (country mismatch). `formats: false` skips the national/international formats
 * (the line-type lookup does not report them).
 */
export function preparePhone(raw: unknown, opts: PhoneLookupOptions | undefined, formats = true): Prepared<PhoneInput> {
  const phone = validatePhoneInput(raw)
  const given = opts?.country
  const explicitCountry = given === undefined || given === null ? null : normalizePhoneCountry(given)
  const country = explicitCountry ?? normalizePhoneCountry(undefined)
  const a = analyzePhone(phone, country, { formats })
  const input: WithAnalysis = { phone, country, explicitCountry, [ANALYSIS]: a }
  const number = a.e164 !== null ? a.e164 + (a.extension ? `;ext=${a.extension}` : '') : `${country}:${a.input}`
  return { input, cacheKey: `${number}|${explicitCountry ?? ''}` }
}

/** True when an explicitly given country differs from the region of a valid number (see the module comment). */
export function isCountryMismatch(a: PhoneAnalysis, explicitCountry: string | null): boolean {
  return explicitCountry !== null && a.valid && a.region !== null && a.region !== explicitCountry
}

/** The line-type factor of a valid number; null for mobile (no factor). */
export function lineTypeFactor(lineType: LineType): FactorCode | null {
  switch (lineType) {
    case 'mobile':
      return null
    case 'voip':
      return 'phone_voip'
    case 'premium':
      return 'phone_premium_rate'
    case 'toll_free':
      return 'phone_toll_free'
    case 'landline':
      return 'phone_landline'
    default:
      return 'phone_line_type_unknown'
  }
}

/** Factors of a number given its (possibly live) line type. */
export function phoneFactors(a: PhoneAnalysis, lineType: LineType, explicitCountry: string | null): FactorCode[] {
  if (!a.valid) return ['phone_invalid']
  const factors: FactorCode[] = []
  const typeFactor = lineTypeFactor(lineType)
  if (typeFactor !== null) factors.push(typeFactor)
  if (isCountryMismatch(a, explicitCountry)) factors.push('phone_country_mismatch')
  return factors
}

const LINE_WORDS: Record<LineType, string> = {
  mobile: 'mobile',
  landline: 'landline',
  voip: 'VoIP',
  toll_free: 'toll-free',
  premium: 'premium-rate',
  unknown: '',
}

/** The sentence for an invalid number. */
export function invalidReason(a: PhoneAnalysis): string {
  if (a.number === undefined) return 'The input is not a phone number.'
  const where = a.region ? ` (${regionName(a.region)})` : a.callingCode ? ` (calling code +${a.callingCode})` : ''
  return a.possible
    ? `The number has a possible length but is not a valid number${where}.`
    : `The number is not a valid number${where}: wrong length or unknown range.`
}

/** The sentence when no risk factor fired (the engine uses it unless a non-info factor fired). */
export function validPhoneReason(a: PhoneAnalysis, lineType: LineType): string {
  const where = a.region ? ` (${regionName(a.region)})` : ' (non-geographic)'
  return lineType === 'unknown'
    ? `The number is valid${where}; its line type cannot be told from the numbering plan (mobile or landline).`
    : `The number is a valid ${LINE_WORDS[lineType]} number${where}.`
}

/** Phone details from the numbering plan and the offline tables, before any live record. */
export function numberingPlanDetails(a: PhoneAnalysis, info: OfflinePhoneInfo): PhoneData {
  const region = a.region ?? ''
  return {
    e164: a.e164,
    national_format: a.nationalFormat,
    international_format: a.internationalFormat,
    country_code: a.callingCode,
    country: { code: region, name: regionName(region) },
    valid: a.valid,
    possible: a.possible,
    line_type: a.lineType,
    carrier: {
      name: info.carrierName ?? '',
      ocn: null,
      mcc: null,
      mnc: null,
      type: null,
      ported: null,
      original_carrier: null,
    },
    location: { region: info.region, rate_center: null, timezone: info.timezone },
    routing: { lrn: '', lata: null },
    coverage: 'numbering_plan',
  }
}

/** Details with a live record laid over the numbering-plan answer (see the module comment for precedence). */
export function applyLiveRecord(details: PhoneData, r: LiveCarrierRecord): PhoneData {
  const lineType = r.lineType !== null && r.lineType !== 'unknown' ? r.lineType : details.line_type
  return {
    ...details,
    line_type: lineType,
    carrier: {
      name: r.carrierName ?? details.carrier.name,
      ocn: r.ocn,
      mcc: r.mcc,
      mnc: r.mnc,
      type: r.carrierType,
      ported: r.ported,
      original_carrier: r.originalCarrier,
    },
    location: { ...details.location, rate_center: r.rateCenter ?? details.location.rate_center },
    routing: { lrn: r.lrn ?? '', lata: r.lata },
    coverage: 'live',
  }
}

/**
 * Builds the outcome from the analysis, the offline info and (when the live source applied) its outcome:
 * `live` undefined = not applicable; `'skipped'` = applicable but offline (not asked: answered like not applicable).
 */
export function phoneOutcome(
  input: PhoneInput,
  a: PhoneAnalysis,
  info: OfflinePhoneInfo,
  live: CarrierLookupOutcome | 'skipped' | undefined,
): CheckOutcome<PhoneData> {
  let details = numberingPlanDetails(a, info)
  const dataSources = [NUMBERING_PLAN_SOURCE]
  if (!a.valid) return { details, factors: ['phone_invalid'], reasons: { phone_invalid: invalidReason(a) }, partial: false, dataSources }
  let partial = false
  let unavailable: string | undefined
  // 'skipped' (offline): the live source was not asked, which is no failure — the numbering-plan answer is complete
  // for this configuration (coverage `numbering_plan`), as without a live source.
  if (live !== undefined && live !== 'skipped') {
    dataSources.push(live.source)
    if (live.ok) details = applyLiveRecord(details, live.record)
    else {
      partial = true
      unavailable =
        live.failure === 'timeout'
          ? 'The live carrier source did not answer in time; numbering-plan data only.'
          : 'The live carrier source failed; numbering-plan data only.'
    }
  }
  const factors = phoneFactors(a, details.line_type, input.explicitCountry)
  const outcome: CheckOutcome<PhoneData> = { details, factors, partial, dataSources }
  if (unavailable !== undefined) {
    factors.push('phone_carrier_unavailable')
    outcome.reasons = { phone_carrier_unavailable: unavailable } // the reason only when this factor decides
  }
  outcome.validReason = validPhoneReason(a, details.line_type)
  return outcome
}

// ─── test mode ─────────────────────────────────────────────────────────────────────────────────────────────────────

const TEST_CARRIER = 'Riskcheck Test Wireless'
const TEST_TELCO = 'Riskcheck Test Telephone'

const liveRecord = (r: Partial<LiveCarrierRecord>): LiveCarrierRecord => ({ ...emptyCarrierRecord(), ...r })

/**
 * Test-mode scenarios of the phone lookup, by E.164 (any spelling works: `(201) 555-0100`, `+1 201-555-0100`).
 * The +1 201 555 01xx numbers are in the range reserved for fiction; their test answers simulate a live carrier
 * source (whether or not one is configured). `assumeCountry` acts as if that `country` option had been passed when
 * none was.
 */
export const PHONE_TEST_SCENARIOS: Readonly<
  Record<string, { note: string; live?: CarrierLookupOutcome; assumeCountry?: CountryCode }>
> = {
  '+12015550100': {
    note: 'live record: mobile (coverage live, mcc 001/mnc 01 = the ITU test network) → valid, approve',
    live: { ok: true, source: 'test', record: liveRecord({ lineType: 'mobile', carrierType: 'mobile', carrierName: TEST_CARRIER, mcc: '001', mnc: '01' }) },
  },
  '+12015550101': {
    note: 'live record: landline (phone_landline, informational) → valid, approve',
    live: { ok: true, source: 'test', record: liveRecord({ lineType: 'landline', carrierType: 'landline', carrierName: TEST_TELCO }) },
  },
  '+12015550102': {
    note: 'live record: non-fixed VoIP (phone_voip) → risky, verify',
    live: { ok: true, source: 'test', record: liveRecord({ lineType: 'voip', carrierType: 'nonFixedVoip', carrierName: 'Riskcheck Test VoIP' }) },
  },
  '+12015550103': {
    note: 'live record with porting data: a mobile number ported from a landline carrier (ported, original carrier, OCN, LRN, LATA, rate center filled) → valid, approve',
    live: {
      ok: true,
      source: 'test',
      record: liveRecord({
        lineType: 'mobile',
        carrierType: 'wireless',
        carrierName: TEST_CARRIER,
        ocn: '9999',
        ported: true,
        originalCarrier: TEST_TELCO,
        lrn: '2015550199',
        lata: '224',
        rateCenter: 'JERSEY CITY',
      }),
    },
  },
  '+12015550104': {
    note: 'the live carrier source times out: partial, phone_carrier_unavailable → unknown, approve (low confidence)',
    live: { ok: false, source: 'test', failure: 'timeout', message: 'test: timeout' },
  },
  '+12015550105': {
    note: 'the live carrier source fails (HTTP 500): partial, phone_carrier_unavailable → unknown, approve (low confidence)',
    live: { ok: false, source: 'test', failure: 'http', message: 'test: HTTP 500' },
  },
  '+449012345678': {
    note: "a UK premium-rate number answered as if country: 'US' had been given: phone_premium_rate + phone_country_mismatch → risky, review",
    assumeCountry: 'US',
  },
}

/** Documented inputs that are not scenarios: their test answer is the real offline answer. */
export const PHONE_TEST_EXAMPLES: ReadonlyArray<{ input: string; note: string }> = [
  { input: '+44 7400 123456', note: 'UK mobile (original carrier from the offline data) → valid, approve' },
  { input: '+44 121 234 5678', note: 'UK landline (Birmingham) → valid, approve' },
  { input: '+1 201 555 0123', note: 'US number: the plan cannot tell mobile from landline → valid, approve, medium confidence' },
  { input: '+1 800 234 5678', note: 'US toll-free → risky (phone_toll_free), approve' },
  { input: '+44 56 1234 5678', note: 'UK VoIP range → risky (phone_voip), verify' },
  { input: '+1 900 234 5678', note: 'US premium rate → risky (phone_premium_rate), verify' },
  { input: '+1 999 555 0100', note: 'no such area code → invalid, block (free)' },
  { input: 'not a number', note: 'letters: valid false → invalid, block (free)' },
  { input: '', note: 'empty (or more than 40 characters): rejected with INVALID_INPUT' },
]

/** The test-mode outcome of the phone lookup: scenarios above, else the real offline answer. Never touches the network. */
export function phoneTestOutcome(ctx: CheckContext, input: PhoneInput): CheckOutcome<PhoneData> {
  const a = analysisOf(input)
  const scenario = a.e164 !== null ? PHONE_TEST_SCENARIOS[a.e164] : undefined
  const effective =
    scenario?.assumeCountry && input.explicitCountry === null ? { ...input, explicitCountry: scenario.assumeCountry } : input
  const info = ctx.sources.phone.describe(a)
  return phoneOutcome(effective, a, info, scenario?.live)
}

// ─── the check ─────────────────────────────────────────────────────────────────────────────────────────────────────

/** The phone lookup. See the module comment. */
export const phoneCheck: CheckDefinition<PhoneInput, PhoneLookupOptions, PhoneData> = {
  type: 'phone',
  options: ['country'],
  prepare: (raw, opts) => preparePhone(raw, opts),
  run(ctx, input) {
    const phone = ctx.sources.phone
    const a = analysisOf(input)
    const info = phone.describe(a)
    // only a live carrier lookup waits (online, for the regions that have one): anything else answers at once
    if (!(a.valid && a.e164 !== null && phone.wantsLiveCarrier(a.region))) return phoneOutcome(input, a, info, undefined)
    if (ctx.offline) return phoneOutcome(input, a, info, 'skipped')
    return phone.lookupCarrier(a.e164).then((live: CarrierLookupOutcome) => phoneOutcome(input, a, info, live))
  },
  test: (ctx, input) => phoneTestOutcome(ctx, input),
  testInputs: [
    ...Object.entries(PHONE_TEST_SCENARIOS).map(([input, s]) => ({ input, note: s.note })),
    ...PHONE_TEST_EXAMPLES,
  ],
  cli: {
    command: 'phone',
    summary: 'Phone number: validity, formats, country, line type, carrier, region, time zone (live carrier for US/CA when configured)',
    flags: [
      {
        name: 'country',
        type: 'string',
        option: 'country',
        description: 'ISO 3166 alpha-2 country for numbers without + (default US); also enables the country-mismatch factor',
      },
    ],
  },
}

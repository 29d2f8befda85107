/**
 * The phone line-type lookup (`rc.phoneType(phone, { country })`, `POST /v1/phone/type`, `riskcheck phone-type`): the
 * line type from the numbering plan only, so it answers offline and always costs 1 credit. Its details and factors (the
 * phone lookup's, with `phone_line_type_undetermined` for a type the plan cannot tell) are in docs/lookups.md; the
 * mapping is `LINE_TYPE_BY_PLAN_TYPE` (../sources/phone/parse.ts).
 */
import type { PhoneTypeData } from '../schema.js'
import type { PhoneAnalysis } from '../sources/phone/parse.js'
import {
  NUMBERING_PLAN_SOURCE,
  PHONE_TEST_EXAMPLES,
  PHONE_TEST_SCENARIOS,
  analysisOf,
  invalidReason,
  phoneFactors,
  preparePhone,
  validPhoneReason,
  type PhoneInput,
  type PhoneLookupOptions,
} from './phone.js'
import type { CheckDefinition, CheckOutcome } from './types.js'

/** The phone-type details of an analysed number. */
export function phoneTypeDetails(a: PhoneAnalysis): PhoneTypeData {
  return {
    e164: a.e164,
    country: a.region,
    valid: a.valid,
    line_type: a.lineType,
    numbering_plan_type: a.planType,
  }
}

/** The outcome of the phone-type lookup for an analysed number. */
export function phoneTypeOutcome(a: PhoneAnalysis, explicitCountry: string | null): CheckOutcome<PhoneTypeData> {
  const details = phoneTypeDetails(a)
  const dataSources = [NUMBERING_PLAN_SOURCE]
  if (!a.valid) return { details, factors: ['phone_invalid'], reasons: { phone_invalid: invalidReason(a) }, partial: false, dataSources }
  // This lookup's whole answer is the line type: when the plan cannot tell it, its verdict is `unknown`.
  const factors = phoneFactors(a, a.lineType, explicitCountry).map((f) =>
    f === 'phone_line_type_unknown' ? ('phone_line_type_undetermined' as const) : f,
  )
  return {
    details,
    factors,
    validReason: validPhoneReason(a, a.lineType),
    partial: false,
    dataSources,
  }
}

/** Test-mode scenarios of this lookup: those of the phone lookup without a live part (only `assumeCountry` matters). */
const TYPE_SCENARIOS = Object.entries(PHONE_TEST_SCENARIOS).filter(([, s]) => s.assumeCountry !== undefined)

/** The phone line-type lookup. See the module comment. */
export const phoneTypeCheck: CheckDefinition<PhoneInput, PhoneLookupOptions, PhoneTypeData> = {
  type: 'phone_type',
  options: ['country'],
  prepare: (raw, opts) => preparePhone(raw, opts, false),
  async run(_ctx, input) {
    return phoneTypeOutcome(analysisOf(input), input.explicitCountry)
  },
  test(_ctx, input) {
    const a = analysisOf(input)
    const scenario = a.e164 !== null ? PHONE_TEST_SCENARIOS[a.e164] : undefined
    const assumed = input.explicitCountry ?? scenario?.assumeCountry ?? null
    return phoneTypeOutcome(a, assumed)
  },
  testInputs: [
    ...TYPE_SCENARIOS.map(([input, s]) => ({ input, note: s.note })),
    { input: '+1 201 555 0100', note: 'US number (FIXED_LINE_OR_MOBILE, so line_type unknown; never live) → unknown, approve (medium confidence)' },
    // The phone-type lookup is billed even for an invalid number (docs/options.md, credits: "phone/type: 1, always").
    ...PHONE_TEST_EXAMPLES.filter((e) => e.input !== '+1 201 555 0123').map((e) => ({ input: e.input, note: e.note.replace(' (free)', ' (billed, as every phone-type lookup)') })),
  ],
  cli: {
    command: 'phone-type',
    summary: 'Phone line type from the numbering plan (mobile, landline, voip, toll_free, premium, unknown); never live',
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

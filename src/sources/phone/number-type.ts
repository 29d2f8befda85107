/**
 * A parsed number's numbering-plan type, decided as libphonenumber's `PhoneNumber.getType()` decides it, with each
 * plan's patterns compiled once: getType() builds a RegExp from a pattern's text for every test (up to a dozen per
 * number), which was 40 % of a phone lookup's time. test/phone-number-type.test.ts holds it to getType()'s answers.
 * The same compiled plans pick the region of a calling code several regions share ({@link parseNumber}).
 */
import * as core from 'libphonenumber-js/core'
import metadata from 'libphonenumber-js/metadata.max.json'
import type { PhoneNumber, PhoneNumberType } from 'libphonenumber-js/max'

/** The part of libphonenumber's `Metadata` class (exported by `libphonenumber-js/core`, not typed) read here. */
interface MetadataLike {
  selectNumberingPlan(countryOrCallingCode: string): void
  numberingPlan: {
    leadingDigits(): string | undefined
    nationalNumberPattern(): string
    type(type: PhoneNumberType): { pattern(): string; possibleLengths(): number[] | undefined } | undefined
  }
}

/** One type of a plan: its possible lengths (undefined: any) and its pattern, compiled. */
interface TypeRule {
  type: PhoneNumberType
  lengths: readonly number[] | undefined
  pattern: RegExp
}

/** A numbering plan, compiled: the valid numbers' pattern, then the types in the order getType() tries them. */
interface Plan {
  /** The plan's leading digits, at the start of a number (a region sharing its calling code owns such numbers). */
  leading: RegExp | undefined
  valid: RegExp
  fixedLine: TypeRule | undefined
  /** MOBILE's pattern is '' (the same as the fixed line's) or missing: a fixed-line match is FIXED_LINE_OR_MOBILE. */
  mobileAsFixed: boolean
  mobile: TypeRule | undefined
  others: TypeRule[]
}

/** The types getType() tries after the fixed line, in its order. */
const OTHER_TYPES: readonly PhoneNumberType[] = ['MOBILE', 'PREMIUM_RATE', 'TOLL_FREE', 'SHARED_COST', 'VOIP', 'PERSONAL_NUMBER', 'PAGER', 'UAN', 'VOICEMAIL']

const whole = (pattern: string) => new RegExp(`^(?:${pattern})$`)
const Metadata = (core as unknown as { Metadata: new (json: unknown) => MetadataLike }).Metadata
const plans = new Map<string, Plan>()

function planOf(key: string): Plan {
  let plan = plans.get(key)
  if (plan) return plan
  const m = new Metadata(metadata)
  m.selectNumberingPlan(key)
  const rule = (type: PhoneNumberType): TypeRule | undefined => {
    const t = m.numberingPlan.type(type)
    if (!t || !t.pattern()) return undefined
    return { type, lengths: t.possibleLengths(), pattern: whole(t.pattern()) }
  }
  const mobileDef = m.numberingPlan.type('MOBILE')
  const leading = m.numberingPlan.leadingDigits()
  plan = {
    leading: leading ? new RegExp(`^(?:${leading})`) : undefined,
    valid: whole(m.numberingPlan.nationalNumberPattern()),
    fixedLine: rule('FIXED_LINE'),
    mobileAsFixed: !mobileDef || mobileDef.pattern() === '',
    mobile: rule('MOBILE'),
    others: OTHER_TYPES.map(rule).filter((r): r is TypeRule => r !== undefined),
  }
  plans.set(key, plan)
  return plan
}

const matches = (rule: TypeRule | undefined, digits: string): boolean =>
  rule !== undefined && (rule.lengths === undefined || rule.lengths.includes(digits.length)) && rule.pattern.test(digits)

/** The type of national number `digits` under `plan` (undefined when not valid). */
function typeOf(plan: Plan, digits: string): PhoneNumberType | undefined {
  if (!plan.valid.test(digits)) return undefined
  if (matches(plan.fixedLine, digits)) return plan.mobileAsFixed || matches(plan.mobile, digits) ? 'FIXED_LINE_OR_MOBILE' : 'FIXED_LINE'
  for (const rule of plan.others) if (matches(rule, digits)) return rule.type
  return undefined
}

/** The type of `number` (undefined when the number is not valid), as `number.getType()` answers it. */
export function numberTypeOf(number: PhoneNumber): PhoneNumberType | undefined {
  const key = number.country ?? number.countryCallingCode
  if (!key) return undefined
  return typeOf(planOf(key), number.nationalNumber)
}

/**
 * The region of national number `digits` among `regions` (those sharing a calling code, the main one first), as
 * libphonenumber's parse decides it: the first whose leading digits start the number or, for a region without
 * them, whose plan gives the number a type; undefined when none.
 */
function regionAmong(regions: readonly string[], digits: string): string | undefined {
  for (const region of regions) {
    const plan = planOf(region)
    if (plan.leading !== undefined) {
      if (digits !== '' && plan.leading.test(digits)) return region
    } else if (typeOf(plan, digits) !== undefined) return region
  }
  return undefined
}

type Regions = Record<string, string[]>
const REGIONS = (metadata as unknown as { country_calling_codes: Regions }).country_calling_codes
/** The metadata with each calling code given to its main region alone: a parse with it never searches the regions. */
const MAIN_REGIONS = { ...metadata, country_calling_codes: Object.fromEntries(Object.entries(REGIONS).map(([code, regions]) => [code, regions.slice(0, 1)])) }
const parseWith = core.parsePhoneNumberFromString as unknown as (text: string, options: object, metadata: unknown) => PhoneNumber | undefined

/**
 * `parsePhoneNumberFromString` of `libphonenumber-js/max`, the same answer: the parse runs with each calling code
 * given to its main region alone, and the region of a code several regions share (+1, +44, +7 …) is then set by
 * {@link regionAmong}, as the parse itself sets it — where the parse's own search builds a RegExp per pattern it tries
 * (half of a +44 lookup's time). test/phone-number-type.test.ts holds it to the full parse.
 */
export function parseNumber(text: string, options: { defaultCountry?: string; extract?: boolean }): PhoneNumber | undefined {
  const number = parseWith(text, options, MAIN_REGIONS)
  if (number === undefined) return undefined
  const regions = REGIONS[number.countryCallingCode]
  if (regions !== undefined && regions.length > 1) {
    // no region of the code holds the number: the parse keeps the default region of a number written without a
    // calling code (no calling-code source), and none otherwise
    const source = (number as unknown as { __countryCallingCodeSource?: string }).__countryCallingCodeSource
    const region = regionAmong(regions, number.nationalNumber) ?? (source === undefined ? options.defaultCountry : undefined)
    if (region !== regions[0]) (number as { country: string | undefined }).country = region
  }
  return number
}

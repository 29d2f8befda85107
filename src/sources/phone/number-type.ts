/**
 * A parsed number's numbering-plan type, decided as libphonenumber's `PhoneNumber.getType()` decides it, with each
 * plan's patterns compiled once: getType() builds a RegExp from a pattern's text for every test (up to a dozen per
 * number), which was 40 % of a phone lookup's time. test/phone-number-type.test.ts holds it to getType()'s answers.
 */
import * as core from 'libphonenumber-js/core'
import metadata from 'libphonenumber-js/metadata.max.json'
import type { PhoneNumber, PhoneNumberType } from 'libphonenumber-js/max'

/** The part of libphonenumber's `Metadata` class (exported by `libphonenumber-js/core`, not typed) read here. */
interface MetadataLike {
  selectNumberingPlan(countryOrCallingCode: string): void
  numberingPlan: {
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
  plan = {
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

/** The type of `number` (undefined when the number is not valid), as `number.getType()` answers it. */
export function numberTypeOf(number: PhoneNumber): PhoneNumberType | undefined {
  const key = number.country ?? number.countryCallingCode
  if (!key) return undefined
  const plan = planOf(key)
  const digits = number.nationalNumber
  if (!plan.valid.test(digits)) return undefined
  if (matches(plan.fixedLine, digits)) return plan.mobileAsFixed || matches(plan.mobile, digits) ? 'FIXED_LINE_OR_MOBILE' : 'FIXED_LINE'
  for (const rule of plan.others) if (matches(rule, digits)) return rule.type
  return undefined
}

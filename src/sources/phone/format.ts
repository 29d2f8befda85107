/**
 * National and international formats of a parsed number in one pass, with the same output as libphonenumber-js's
 * `formatNational()` / `formatInternational()` (test/phone-format.test.ts holds them equal). Why it is not the
 * library's calls: docs/decisions.md, "Phone checks" → "formats in one pass".
 */
import { Metadata, type PhoneNumber } from 'libphonenumber-js/max'

/** The parts of libphonenumber-js's runtime `Format` object used here (present since 1.x; not in its typings). */
interface LibFormat {
  pattern(): string
  format(): string
  leadingDigitsPatterns(): string[]
  nationalPrefixFormattingRule(): string | 0 | undefined
  internationalFormat(): string
}

interface CompiledFormat {
  /** last leading-digits pattern, anchored at the start; null when the format has none */
  leading: RegExp | null
  /** the format pattern, anchored at both ends (the library's `matchesEntirely`) */
  whole: RegExp
  /** the format pattern, unanchored (the library's `replace`) */
  replace: RegExp
  national: string
  international: string
}

interface CompiledPlan {
  formats: CompiledFormat[]
  ext: string
}

/** libphonenumber-js `VALID_PUNCTUATION` (constants.js): dashes, slashes, dots, white space, brackets, tildes. */
const PUNCTUATION = /[-\u2010-\u2015\u2212\u30FC\uFF0D\uFF0F/\uFF0E. \u00A0\u00AD\u200B\u2060\u3000()\uFF08\uFF09\uFF3B\uFF3D[\]~\u2053\u223C\uFF5E]+/g
/** The first `$n` group reference of a template (libphonenumber-js FIRST_GROUP_PATTERN). */
const FIRST_GROUP = /(\$\d)/
const DEFAULT_EXT_PREFIX = ' ext. '

const plans = new Map<string, CompiledPlan | null>()
let metadata: Metadata | undefined

/** Compiles the format list of a numbering plan (a country code, or a calling code for non-geographic numbers). */
function compilePlan(key: string): CompiledPlan | null {
  try {
    metadata ??= new Metadata()
    ;(metadata.selectNumberingPlan as (k: string) => void)(key)
    const plan = metadata.numberingPlan as unknown as { formats?: () => LibFormat[]; ext?: () => string } | undefined
    if (!plan || typeof plan.formats !== 'function') return null
    const formats = plan.formats().map((f): CompiledFormat => {
      const leading = f.leadingDigitsPatterns()
      const last = leading.length > 0 ? leading[leading.length - 1]! : null
      const rule = f.nationalPrefixFormattingRule()
      return {
        leading: last === null ? null : new RegExp(`^(?:${last})`),
        whole: new RegExp(`^(?:${f.pattern()})$`),
        replace: new RegExp(f.pattern()),
        national: rule ? f.format().replace(FIRST_GROUP, rule) : f.format(),
        international: f.internationalFormat(),
      }
    })
    const ext = typeof plan.ext === 'function' ? plan.ext() || DEFAULT_EXT_PREFIX : DEFAULT_EXT_PREFIX
    return { formats, ext }
  } catch {
    return null
  }
}

function planFor(key: string): CompiledPlan | null {
  let p = plans.get(key)
  if (p === undefined) {
    p = compilePlan(key)
    plans.set(key, p)
  }
  return p
}

/**
 * The national and international formats of a parsed number (extension included, as libphonenumber-js writes it).
 *
 * @example
 * formatPhone(parsePhoneNumberFromString('+442079460958')!)
 * // { national: '020 7946 0958', international: '+44 20 7946 0958' }
 */
export function formatPhone(number: PhoneNumber): { national: string; international: string } {
  const key = number.country && number.country !== ('001' as string) ? number.country : number.countryCallingCode
  const plan = planFor(key)
  if (plan === null) return { national: number.formatNational(), international: number.formatInternational() }
  const nn = number.nationalNumber
  if (nn === '') return { national: '', international: `+${number.countryCallingCode}` }
  let national: string = nn
  let international = `+${number.countryCallingCode} ${nn}`
  for (const f of plan.formats) {
    if (f.leading !== null && !f.leading.test(nn)) continue
    if (!f.whole.test(nn)) continue
    national = nn.replace(f.replace, f.national)
    international = `+${number.countryCallingCode} ${nn.replace(f.replace, f.international).replace(PUNCTUATION, ' ').trim()}`
    break
  }
  if (number.ext) {
    national += plan.ext + number.ext
    international += plan.ext + number.ext
  }
  return { national, international }
}

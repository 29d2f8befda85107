/**
 * Country and continent names for location data that carries only an ISO 3166-1 alpha-2 country code (the DB-IP
 * Lite schema). Country names come from the ICU data built into Node (`Intl.DisplayNames`, English); the
 * country → continent assignment follows GeoNames' countryInfo (the convention MaxMind's `continent` also uses),
 * with continent names as MaxMind writes them in English.
 */

/** Continent code → English name (MaxMind/GeoNames codes). */
export const CONTINENT_NAMES: Readonly<Record<string, string>> = {
  AF: 'Africa',
  AN: 'Antarctica',
  AS: 'Asia',
  EU: 'Europe',
  NA: 'North America',
  OC: 'Oceania',
  SA: 'South America',
}

const BY_CONTINENT: Readonly<Record<string, string>> = {
  AF: 'AO BF BI BJ BW CD CF CG CI CM CV DJ DZ EG EH ER ET GA GH GM GN GQ GW KE KM LR LS LY MA MG ML MR MU MW MZ NA NE NG RE RW SC SD SH SL SN SO SS ST SZ TD TG TN TZ UG YT ZA ZM ZW',
  AN: 'AQ BV GS HM TF',
  AS: 'AE AF AM AZ BD BH BN BT CC CN CX GE HK ID IL IN IO IQ IR JO JP KG KH KP KR KW KZ LA LB LK MM MN MO MV MY NP OM PH PK PS QA SA SG SY TH TJ TM TR TW UZ VN YE',
  EU: 'AD AL AT AX BA BE BG BY CH CY CZ DE DK EE ES FI FO FR GB GG GI GR HR HU IE IM IS IT JE LI LT LU LV MC MD ME MK MT NL NO PL PT RO RS RU SE SI SJ SK SM UA VA XK EU',
  NA: 'AG AI AW BB BL BM BQ BS BZ CA CR CU CW DM DO GD GL GP GT HN HT JM KN KY LC MF MQ MS MX NI PA PM PR SV SX TC TT US VC VG VI',
  OC: 'AS AU CK FJ FM GU KI MH MP NC NF NR NU NZ PF PG PN PW SB TK TL TO TV UM VU WF WS',
  SA: 'AR BO BR CL CO EC FK GF GY PE PY SR UY VE',
}

const CONTINENT_OF = new Map<string, string>()
for (const [continent, codes] of Object.entries(BY_CONTINENT)) for (const c of codes.split(' ')) CONTINENT_OF.set(c, continent)

/** The continent code (`EU`, `NA`, …) of a country code, or null when unknown. */
export function getContinentCode(countryCode: string): string | null {
  return CONTINENT_OF.get(countryCode.toUpperCase()) ?? null
}

let displayNames: Intl.DisplayNames | null | undefined
const nameCache = new Map<string, string | null>()

/**
 * The English name of an ISO 3166-1 alpha-2 country code (`DE` → `Germany`), or null when the code is not a
 * country Node's ICU data knows.
 */
export function getCountryName(countryCode: string): string | null {
  const code = countryCode.toUpperCase()
  const cached = nameCache.get(code)
  if (cached !== undefined) return cached
  let name: string | null = null
  if (/^[A-Z]{2}$/.test(code)) {
    if (displayNames === undefined) {
      try {
        displayNames = new Intl.DisplayNames(['en'], { type: 'region' })
      } catch {
        displayNames = null
      }
    }
    try {
      const n = displayNames?.of(code)
      name = n && n !== code ? n : null
    } catch {
      name = null
    }
  }
  if (nameCache.size < 1000) nameCache.set(code, name)
  return name
}

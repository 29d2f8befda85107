/**
 * Countries the combined check's cross-signals count as one: a territory and the state its phone numbers and networks
 * belong to. A Guernsey mobile (+44 7781, GG) on a British IP address, or a Puerto Rico number (+1 787, PR) on an
 * address located in the US, is the ordinary case there, not a mismatch (docs/scoring.md, under the factor vocabulary).
 */

/** Territory → the state whose numbering plan (or networks) it shares. */
export const COUNTRY_AREAS: Readonly<Record<string, string>> = {
  // the Crown Dependencies: +44 numbers, British networks
  GG: 'GB', JE: 'GB', IM: 'GB',
  // US territories in the North American Numbering Plan
  PR: 'US', VI: 'US', GU: 'US', AS: 'US', MP: 'US', UM: 'US',
  // Åland (+358 18), Svalbard and Jan Mayen (+47 79), Christmas and Cocos Islands (+61 8)
  AX: 'FI', SJ: 'NO', CX: 'AU', CC: 'AU',
  // French overseas departments and collectivities served by French operators
  GP: 'FR', MQ: 'FR', GF: 'FR', RE: 'FR', YT: 'FR', PM: 'FR', BL: 'FR', MF: 'FR',
}

/** Whether two ISO 3166 alpha-2 codes (upper case) are one country for the cross-signals. */
export function sameCountryArea(a: string, b: string): boolean {
  return a === b || (COUNTRY_AREAS[a] ?? a) === (COUNTRY_AREAS[b] ?? b)
}

/**
 * The country an email address points to, for the combined check's `email_ip_country_match` signal.
 *
 * Rules, in order:
 * 1. A domain in {@link COUNTRY_PROVIDERS} (national webmail providers on generic TLDs, e.g. qq.com → CN) gives its
 *    country.
 * 2. Otherwise the country-code TLD of the domain (`.de` → DE, `.co.uk` → GB via `uk` → GB), unless the ccTLD is one
 *    of {@link GENERIC_CCTLDS}, which are marketed worldwide (.io, .co, .me, .tv, .ai …) and say nothing about the
 *    owner's country.
 * 3. Otherwise (generic TLDs such as .com, .org, .net) null: the email does not point to a country.
 */

/** National providers on generic TLDs. */
export const COUNTRY_PROVIDERS: Readonly<Record<string, string>> = {
  'qq.com': 'CN', 'foxmail.com': 'CN', '163.com': 'CN', '126.com': 'CN', 'yeah.net': 'CN', 'sina.com': 'CN', 'sohu.com': 'CN', 'aliyun.com': 'CN',
  'naver.com': 'KR', 'daum.net': 'KR', 'hanmail.net': 'KR', 'nate.com': 'KR',
  'rediffmail.com': 'IN',
  'seznam.cz': 'CZ',
  'mail.ru': 'RU', 'bk.ru': 'RU', 'inbox.ru': 'RU', 'list.ru': 'RU', 'rambler.ru': 'RU',
  'gmx.net': 'DE', 't-online.de': 'DE',
  'libero.it': 'IT', 'virgilio.it': 'IT',
  'orange.fr': 'FR', 'laposte.net': 'FR', 'free.fr': 'FR', 'sfr.fr': 'FR',
  'wp.pl': 'PL', 'o2.pl': 'PL', 'interia.pl': 'PL', 'onet.pl': 'PL',
  'bol.com.br': 'BR', 'uol.com.br': 'BR',
}

/** ccTLDs used as generic TLDs: no country signal. */
export const GENERIC_CCTLDS: ReadonlySet<string> = new Set([
  'io', 'co', 'me', 'tv', 'ai', 'ly', 'fm', 'am', 'gg', 'to', 'ws', 'cc', 'sh', 'ac', 'la', 'nu', 'tk', 'ml', 'ga', 'cf', 'gq', 'so', 'vc', 'sx', 'is', 'im', 'xyz', 'app', 'dev', 'id',
])

/** ccTLDs whose ISO 3166 code differs. */
const CCTLD_TO_ISO: Readonly<Record<string, string>> = { uk: 'GB', su: 'RU', eu: '' }

/** The ISO 3166 alpha-2 country the email domain points to, or null. */
export function emailCountry(domain: string): string | null {
  const d = domain.toLowerCase().replace(/\.$/, '')
  const provider = COUNTRY_PROVIDERS[d]
  if (provider) return provider
  const dot = d.lastIndexOf('.')
  if (dot < 0) return null
  const tld = d.slice(dot + 1)
  if (tld.length !== 2 || !/^[a-z]{2}$/.test(tld) || GENERIC_CCTLDS.has(tld)) return null
  const mapped = CCTLD_TO_ISO[tld]
  if (mapped !== undefined) return mapped === '' ? null : mapped
  return tld.toUpperCase()
}

/**
 * Mailbox provider detection for the email check's `provider` field, by label-suffix lookups in two tables:
 * {@link PROVIDER_MX_SUFFIXES} (hosted mail services by MX host; the MX receives the mail, so it wins) and
 * {@link PROVIDER_DOMAINS} (the providers' consumer domains, used when no MX matches). Ids are stable lower-case
 * machine names (`google`, `microsoft`, …), not display names.
 */

/** One provider: its id, its own mailbox domains, and the MX host suffixes of its mail service. */
export interface ProviderEntry {
  /** stable machine id reported in `provider` */
  id: string
  /** the provider's own mailbox domains (exact match, lower-case ASCII) */
  domains: readonly string[]
  /** MX host suffixes: a host equal to one, or ending in `.` + one, matches (lower-case, no trailing dot) */
  mxSuffixes: readonly string[]
}

const YAHOO_TLDS = [
  'com', 'co.uk', 'fr', 'de', 'it', 'es', 'ca', 'in', 'co.in', 'co.id', 'co.jp', 'co.nz', 'co.za', 'co.th',
  'com.br', 'com.au', 'com.mx', 'com.ar', 'com.sg', 'com.ph', 'com.hk', 'com.tw', 'com.vn', 'com.my',
  'com.co', 'com.tr', 'ie', 'gr', 'se', 'dk', 'no', 'fi', 'nl', 'be', 'at', 'ch', 'pl', 'ro', 'cz', 'hu', 'cl',
]
const HOTMAIL_TLDS = [
  'com', 'co.uk', 'fr', 'de', 'it', 'es', 'nl', 'be', 'ca', 'com.br', 'com.ar', 'com.au', 'co.jp', 'ch',
  'at', 'se', 'dk', 'no', 'fi', 'gr', 'co.in', 'co.za', 'cl', 'com.tr', 'my', 'rs', 'sg',
]
const LIVE_TLDS = ['com', 'co.uk', 'fr', 'de', 'it', 'nl', 'be', 'ca', 'com.au', 'com.ar', 'com.mx', 'cl', 'dk', 'se', 'no', 'at', 'ch', 'ie', 'jp', 'in']
const OUTLOOK_TLDS = ['com', 'fr', 'de', 'es', 'it', 'jp', 'co.uk', 'com.br', 'com.ar', 'com.au', 'be', 'cl', 'dk', 'ie', 'in', 'sa', 'sk', 'co.id', 'co.il', 'co.th', 'com.tr', 'com.vn', 'cz', 'hu', 'kr', 'lv', 'my', 'ph', 'pt', 'sg', 'at']

const withTlds = (sld: string, tlds: readonly string[]): string[] => tlds.map((t) => `${sld}.${t}`)

/**
 * The provider table. Order matters only for MX suffixes that nest (the longest matching suffix wins,
 * e.g. AOL's `mx-aol.mail.gm0.yahoodns.net` before Yahoo's `yahoodns.net`).
 */
export const PROVIDERS: readonly ProviderEntry[] = [
  {
    id: 'google',
    domains: ['gmail.com', 'googlemail.com', 'google.com'],
    mxSuffixes: ['google.com', 'googlemail.com', 'smtp.google.com'],
  },
  {
    id: 'microsoft',
    domains: [
      ...withTlds('hotmail', HOTMAIL_TLDS),
      ...withTlds('live', LIVE_TLDS),
      ...withTlds('outlook', OUTLOOK_TLDS),
      'msn.com', 'passport.com', 'windowslive.com', 'livemail.tw',
    ],
    mxSuffixes: ['protection.outlook.com', 'mail.eo.outlook.com', 'outlook.com', 'hotmail.com', 'olc.protection.outlook.com'],
  },
  {
    id: 'aol',
    domains: ['aol.com', 'aol.co.uk', 'aol.de', 'aol.fr', 'aol.it', 'aim.com', 'aol.in'],
    mxSuffixes: ['mx-aol.mail.gm0.yahoodns.net', 'aol.mail.gm0.yahoodns.net', 'mx.aol.com'],
  },
  {
    id: 'yahoo',
    domains: [...withTlds('yahoo', YAHOO_TLDS), 'ymail.com', 'rocketmail.com', 'yahoo.co.kr'],
    mxSuffixes: ['yahoodns.net', 'yahoo.com', 'mail.yahoo.co.jp'],
  },
  {
    id: 'icloud',
    domains: ['icloud.com', 'me.com', 'mac.com'],
    mxSuffixes: ['mail.icloud.com', 'icloud.com'],
  },
  {
    id: 'proton',
    domains: ['protonmail.com', 'protonmail.ch', 'proton.me', 'pm.me'],
    mxSuffixes: ['protonmail.ch', 'protonmail.com', 'proton.me'],
  },
  {
    id: 'zoho',
    domains: ['zoho.com', 'zohomail.com', 'zohomail.eu', 'zoho.eu', 'zoho.in'],
    mxSuffixes: ['zoho.com', 'zoho.eu', 'zoho.in', 'zoho.com.au', 'zoho.jp', 'zoho.com.cn', 'zohomail.com', 'zohomail.eu'],
  },
  {
    id: 'yandex',
    domains: ['yandex.ru', 'yandex.com', 'yandex.ua', 'yandex.by', 'yandex.kz', 'yandex.com.tr', 'ya.ru', 'narod.ru'],
    mxSuffixes: ['yandex.net', 'yandex.ru', 'yandex.com'],
  },
  {
    id: 'fastmail',
    domains: ['fastmail.com', 'fastmail.fm', 'fastmail.net', 'fastmail.org', 'fastmail.us', 'fastmail.co.uk', 'fastmail.de', 'fastmail.in', 'fastmail.jp', 'sent.com', 'messagingengine.com'],
    mxSuffixes: ['messagingengine.com', 'fastmail.com'],
  },
  {
    id: 'gmx',
    domains: ['gmx.com', 'gmx.de', 'gmx.net', 'gmx.at', 'gmx.ch', 'gmx.us', 'gmx.co.uk', 'gmx.fr', 'gmx.es', 'gmx.it'],
    mxSuffixes: ['gmx.net', 'gmx.com', 'gmx.de'],
  },
  {
    id: 'webde',
    domains: ['web.de'],
    mxSuffixes: ['web.de'],
  },
  {
    id: 'mailcom',
    domains: ['mail.com', 'email.com', 'usa.com', 'post.com', 'europe.com', 'consultant.com', 'myself.com', 'dr.com', 'engineer.com', 'asia.com'],
    mxSuffixes: ['mail.com'],
  },
  {
    id: 'ionos',
    domains: [],
    mxSuffixes: ['ionos.com', 'ionos.de', 'ionos.co.uk', 'ionos.fr', 'ionos.es', 'kundenserver.de', 'perfora.net'],
  },
  {
    id: 'mailru',
    domains: ['mail.ru', 'inbox.ru', 'list.ru', 'bk.ru', 'internet.ru', 'mail.ua'],
    mxSuffixes: ['mail.ru'],
  },
  {
    id: 'tuta',
    domains: ['tutanota.com', 'tutanota.de', 'tutamail.com', 'tuta.io', 'tuta.com', 'keemail.me'],
    mxSuffixes: ['tutanota.de', 'tutanota.com', 'tuta.com'],
  },
  {
    id: 'tencent',
    domains: ['qq.com', 'foxmail.com', 'vip.qq.com'],
    mxSuffixes: ['qq.com', 'exmail.qq.com', 'foxmail.com'],
  },
  {
    id: 'netease',
    domains: ['163.com', '126.com', 'yeah.net', 'vip.163.com', '188.com'],
    mxSuffixes: ['netease.com', '163.com', '126.com', 'ym.163.com', 'qiye.163.com'],
  },
  {
    id: 'naver',
    domains: ['naver.com'],
    mxSuffixes: ['naver.com'],
  },
  {
    id: 'kakao',
    domains: ['daum.net', 'hanmail.net', 'kakao.com'],
    mxSuffixes: ['daum.net', 'hanmail.net', 'kakao.com'],
  },
  {
    id: 'hey',
    domains: ['hey.com'],
    mxSuffixes: ['hey.com'],
  },
  {
    id: 'rackspace',
    domains: [],
    mxSuffixes: ['emailsrvr.com'],
  },
  {
    id: 'godaddy',
    domains: [],
    mxSuffixes: ['secureserver.net'],
  },
  {
    id: 'ovh',
    domains: [],
    mxSuffixes: ['mail.ovh.net', 'ovh.net'],
  },
  {
    id: 'titan',
    domains: [],
    mxSuffixes: ['titan.email'],
  },
  {
    id: 'amazon',
    domains: [],
    mxSuffixes: ['amazonaws.com', 'awsapps.com'],
  },
  {
    id: 'mimecast',
    domains: [],
    mxSuffixes: ['mimecast.com', 'mimecast.co.za', 'mimecast-offshore.com'],
  },
  {
    id: 'proofpoint',
    domains: [],
    mxSuffixes: ['pphosted.com', 'ppe-hosted.com'],
  },
  {
    id: 'barracuda',
    domains: [],
    mxSuffixes: ['barracudanetworks.com'],
  },
  {
    id: 'cloudflare',
    domains: [],
    mxSuffixes: ['mx.cloudflare.net'],
  },
  {
    id: 'migadu',
    domains: [],
    mxSuffixes: ['migadu.com'],
  },
]

/** MX suffix → provider id (built from {@link PROVIDERS}). */
export const PROVIDER_MX_SUFFIXES: ReadonlyMap<string, string> = buildMap((p) => p.mxSuffixes)
/** Mailbox domain → provider id (built from {@link PROVIDERS}). */
export const PROVIDER_DOMAINS: ReadonlyMap<string, string> = buildMap((p) => p.domains)

function buildMap(pick: (p: ProviderEntry) => readonly string[]): Map<string, string> {
  const map = new Map<string, string>()
  for (const p of PROVIDERS) {
    for (const key of pick(p)) {
      const existing = map.get(key)
      if (existing !== undefined && existing !== p.id) throw new Error(`provider table: ${key} is listed for ${existing} and ${p.id}`)
      map.set(key, p.id)
    }
  }
  return map
}

const MAX_HOST = 255

function cleanHost(host: unknown): string {
  if (typeof host !== 'string' || host.length === 0 || host.length > MAX_HOST) return ''
  let h = host.trim().toLowerCase()
  while (h.endsWith('.')) h = h.slice(0, -1)
  return h
}

/** Longest suffix of `host` (whole labels) that is a key of `map`, walking from the full name up. */
function matchSuffix(host: string, map: ReadonlyMap<string, string>): string | null {
  let candidate = host
  for (;;) {
    const hit = map.get(candidate)
    if (hit !== undefined) return hit
    const dot = candidate.indexOf('.')
    if (dot === -1) return null
    candidate = candidate.slice(dot + 1)
  }
}

/**
 * The mailbox provider of a domain: first from its MX hosts (in the order given — pass them by
 * preference, best first; the first host that matches a known service decides), then from the domain
 * itself. Returns null when neither is recognised. Pure: it does not resolve anything.
 *
 * @example
 * detectProvider('gmail.com', [])                          // 'google'
 * detectProvider('acme.com', ['aspmx.l.google.com.'])       // 'google'  (Google Workspace)
 * detectProvider('acme.com', ['acme-com.mail.protection.outlook.com']) // 'microsoft'
 * detectProvider('acme.com', ['mx.acme.com'])               // null
 */
export function detectProvider(domain: string, mxHosts: string[]): string | null {
  if (Array.isArray(mxHosts)) {
    for (const raw of mxHosts) {
      const host = cleanHost(raw)
      if (host === '') continue
      const hit = matchSuffix(host, PROVIDER_MX_SUFFIXES)
      if (hit !== null) return hit
    }
  }
  const d = cleanHost(domain)
  if (d === '') return null
  return PROVIDER_DOMAINS.get(d) ?? null
}

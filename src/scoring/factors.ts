/**
 * The factor vocabulary: every fact a check can report, as a stable snake_case code with a one-line description,
 * a default weight (risk points, 0–100) and its effect on the verdict.
 *
 * Machine codes are stable; descriptions may change. Checks only report which factors fired; the scoring engine
 * (./engine.ts) turns them into a score, a level, a confidence, a verdict status and an action under a policy.
 */

/**
 * What a fired factor does to the verdict status. Precedence: `invalid` > `risky` > `unknown` > `valid`.
 * - `invalid`: the input cannot be used (bad syntax, no such mailbox, bogon address …)
 * - `risky`: usable but suspicious
 * - `unknown`: evidence is missing (a source did not answer): the status becomes `unknown` unless something
 *   worse fired, and confidence drops
 * - `info`: recorded for explanation only (e.g. a landline, a free provider)
 */
export type FactorEffect = 'invalid' | 'risky' | 'unknown' | 'info'

/** Which lookup reports a factor (for documentation and grouping). */
export type FactorGroup = 'email' | 'domain' | 'phone' | 'ip' | 'email_auth' | 'combined' | 'lists' | 'velocity' | 'outcomes'

/** Definition of one factor in the vocabulary. */
export interface FactorDefinition {
  group: FactorGroup
  /** Default risk points added when the factor fires. */
  weight: number
  effect: FactorEffect
  /** Lowers confidence: the factor means evidence is inconclusive or missing (e.g. a catch-all domain). */
  uncertain?: boolean
  /** One line for people. */
  description: string
}

const f = (
  group: FactorGroup,
  weight: number,
  effect: FactorEffect,
  description: string,
  uncertain = false,
): FactorDefinition => (uncertain ? { group, weight, effect, description, uncertain } : { group, weight, effect, description })

/** The vocabulary, in documentation order. */
export const FACTORS = {
  // email
  email_invalid_syntax: f('email', 100, 'invalid', 'The address is not one a real mailbox can have (syntax).'),
  email_domain_not_found: f('email', 100, 'invalid', 'The email domain does not exist (NXDOMAIN).'),
  email_no_mx: f('email', 90, 'invalid', 'The email domain has no MX record and no address to fall back to.'),
  email_null_mx: f('email', 90, 'invalid', 'The email domain declares it accepts no mail (RFC 7505 null MX).'),
  email_undeliverable: f('email', 90, 'invalid', 'The mail server says the mailbox does not exist.'),
  email_disposable: f('email', 70, 'risky', 'The domain belongs to a disposable (throwaway) email service.'),
  email_catch_all: f('email', 15, 'risky', 'The domain accepts mail for any address, so the mailbox cannot be confirmed.', true),
  email_role_account: f('email', 15, 'risky', 'The local part is a role (info@, admin@, support@ …), not a person.'),
  email_typo_suspected: f('email', 40, 'risky', 'The domain looks like a typo of a popular domain (see did_you_mean).'),
  email_free_provider: f('email', 0, 'info', 'The address is at a free webmail provider.'),
  email_smtp_unknown: f('email', 0, 'unknown', 'The mail server answered but not definitely (greylisting, a block, a 421).', true),
  email_smtp_unavailable: f('email', 0, 'unknown', 'No mail server answered about the mailbox (none reachable, or none replied in time).', true),
  email_dns_unavailable: f('email', 0, 'unknown', 'DNS did not answer for the email domain (timeout or server failure).', true),

  // domain age
  domain_newly_registered: f('domain', 40, 'risky', 'The domain was registered less than 30 days ago.'),
  domain_brand_new: f('domain', 30, 'risky', 'The domain was registered less than 7 days ago (adds to domain_newly_registered).'),
  domain_recently_registered: f('domain', 15, 'risky', 'The domain was registered 30 to 89 days ago.'),
  domain_not_registered: f('domain', 90, 'invalid', 'The domain is not registered.'),
  domain_expiring_soon: f('domain', 10, 'info', 'The domain registration expires within 30 days.'),
  domain_age_unknown: f('domain', 0, 'unknown', 'The registry (RDAP) did not answer, so the domain age is unknown.', true),

  // phone
  phone_invalid: f('phone', 100, 'invalid', 'The number is not a valid number of its numbering plan.'),
  phone_voip: f('phone', 40, 'risky', 'The number is a VoIP (virtual) number.'),
  phone_premium_rate: f('phone', 50, 'risky', 'The number is a premium-rate number.'),
  phone_toll_free: f('phone', 25, 'risky', 'The number is a toll-free number, not a personal line.'),
  phone_landline: f('phone', 0, 'info', 'The number is a landline (cannot receive SMS).'),
  phone_line_type_unknown: f('phone', 0, 'info', 'The line type cannot be told from the numbering plan.', true),
  phone_line_type_undetermined: f('phone', 0, 'unknown', 'The line-type lookup cannot tell the line type (fixed line or mobile) from the numbering plan.', true),
  phone_country_mismatch: f('phone', 20, 'risky', "The number's country differs from the country given with it."),
  phone_carrier_unavailable: f('phone', 0, 'unknown', 'The live carrier source did not answer; numbering-plan data only.', true),

  // ip
  ip_bogon: f('ip', 70, 'invalid', 'The address is private, reserved or otherwise not routable on the internet.'),
  ip_tor: f('ip', 80, 'risky', 'The address is a Tor exit node.'),
  ip_public_proxy: f('ip', 60, 'risky', 'The address is a known public proxy.'),
  ip_residential_proxy: f('ip', 50, 'risky', 'The address is a known residential proxy.'),
  ip_vpn: f('ip', 35, 'risky', 'The address belongs to a VPN service.'),
  ip_datacenter: f('ip', 30, 'risky', 'The address belongs to a hosting or datacenter network, not an eyeball network.'),
  ip_cloud: f('ip', 10, 'risky', 'The address belongs to a public cloud provider.'),
  ip_blocklisted: f('ip', 50, 'risky', 'The address is on a configured blocklist.'),
  ip_source_unavailable: f('ip', 0, 'unknown', 'An IP data source failed or did not answer.', true),

  // email authentication
  auth_domain_not_found: f('email_auth', 90, 'invalid', 'The domain does not exist (NXDOMAIN): no mail can come from it.'),
  auth_no_mx: f('email_auth', 20, 'risky', 'The domain has no MX record.'),
  auth_no_spf: f('email_auth', 20, 'risky', 'The domain publishes no SPF record.'),
  auth_spf_pass_all: f('email_auth', 60, 'risky', 'The SPF record ends in +all: anyone may send as the domain.'),
  auth_spf_too_many_lookups: f('email_auth', 25, 'risky', 'The SPF record needs more than 10 DNS lookups (permerror).'),
  auth_spf_permerror: f('email_auth', 25, 'risky', 'The SPF record is broken (several records or a syntax error).'),
  auth_spf_softfail_or_neutral: f('email_auth', 5, 'info', 'The SPF record ends in ~all or ?all rather than -all.'),
  auth_no_dmarc: f('email_auth', 25, 'risky', 'The domain publishes no DMARC record.'),
  auth_dmarc_none: f('email_auth', 10, 'risky', 'The DMARC policy is p=none (monitoring only).'),
  auth_dmarc_weak: f('email_auth', 5, 'info', 'The DMARC policy is quarantine or applies to less than 100 % of mail.'),
  auth_no_dkim: f('email_auth', 10, 'info', 'No DKIM key was found at the common selectors.'),
  auth_dns_unavailable: f('email_auth', 0, 'unknown', 'DNS did not answer for part of the domain.', true),

  // combined cross-signals
  email_ip_country_mismatch: f('combined', 20, 'risky', "The email's country differs from the IP address's country."),
  phone_ip_country_mismatch: f('combined', 20, 'risky', "The phone number's country differs from the IP address's country."),
  disposable_and_vpn: f('combined', 30, 'risky', 'A disposable email address used from a VPN, proxy or Tor address.'),

  // your allow/block lists (every lookup)
  list_blocked: f('lists', 100, 'risky', 'The input is on one of your block lists (details.lists).'),
  list_allowed: f('lists', 0, 'info', 'The input is on one of your allow lists (details.lists).'),

  // velocity: how often the same input was checked lately (details.velocity; thresholds per context in the policy)
  velocity_ip_high: f('velocity', 35, 'risky', 'Many checks from this IP address in the last hour or day.'),
  velocity_network_high: f('velocity', 25, 'risky', 'Many checks from this network (/24 for IPv4, /48 for IPv6) in the last hour or day.'),
  velocity_email_domain_high: f('velocity', 20, 'risky', 'Many checks with this email domain (free providers not counted) in the last hour or day.'),
  velocity_email_high: f('velocity', 35, 'risky', 'Many checks with this email address in the last hour or day.'),
  velocity_phone_high: f('velocity', 35, 'risky', 'Many checks with this phone number in the last hour or day.'),

  // your outcomes: what you reported happened after earlier answers (POST /v1/outcomes; private to your org)
  email_bounced_before: f('outcomes', 90, 'invalid', 'You reported a hard bounce of mail to this address (and no delivery since).'),
  reported_fraud_before: f('outcomes', 70, 'risky', 'You reported fraud, a chargeback or an account takeover for this input, or for a request with it.'),
} as const satisfies Record<string, FactorDefinition>

/** A factor code of the vocabulary. */
export type FactorCode = keyof typeof FACTORS

/** All factor codes, in documentation order. */
export const FACTOR_CODES = Object.keys(FACTORS) as FactorCode[]

/** True when `code` is a factor of the vocabulary. */
export function isFactorCode(code: unknown): code is FactorCode {
  return typeof code === 'string' && Object.prototype.hasOwnProperty.call(FACTORS, code)
}

/** The one-line description of a factor. */
export function describeFactor(code: FactorCode): string {
  return FACTORS[code].description
}

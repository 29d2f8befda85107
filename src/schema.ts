/**
 * The documented shapes of the service (docs/api.md), as TypeBox schemas — one source for the TypeScript
 * types, the runtime validation in tests, the HTTP server's validation/serialization and its OpenAPI document.
 *
 * Field names are exactly the documented ones (snake_case). Objects are closed (`additionalProperties: false`) so a stray
 * field is caught by validation.
 */
import { Type, type Static, type TSchema, type TObject, type TProperties } from '@sinclair/typebox'

const closed = <T extends TProperties>(properties: T, description?: string): TObject<T> =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) })
const Nullable = <T extends TSchema>(schema: T, description?: string) => Type.Union([schema, Type.Null()], description ? { description } : {})
const literals = <const T extends readonly string[]>(values: T, description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  ) as unknown as TSchema & { static: T[number] }

// ─── closed vocabularies ──────────────────────────────────────────────────────────────────────────────────────────

export const LOOKUP_TYPES = ['email', 'phone', 'phone_type', 'ip', 'domain_age', 'email_auth', 'check'] as const
/** The lookups; also `request.type` of a result. */
export type LookupType = (typeof LOOKUP_TYPES)[number]

export const VERDICT_STATUSES = ['valid', 'invalid', 'risky', 'unknown'] as const
/** One verdict vocabulary for every lookup; `unknown` = we could not tell (never reported as `invalid`). */
export type VerdictStatus = (typeof VERDICT_STATUSES)[number]

export const RISK_LEVELS = ['low', 'medium', 'high', 'critical'] as const
export type RiskLevel = (typeof RISK_LEVELS)[number]

export const CONFIDENCES = ['low', 'medium', 'high'] as const
export type Confidence = (typeof CONFIDENCES)[number]

export const ACTIONS = ['approve', 'verify', 'review', 'block'] as const
export type Action = (typeof ACTIONS)[number]

export const SMTP_CHECKS = ['deliverable', 'undeliverable', 'catch_all', 'unknown', 'skipped', 'unavailable'] as const
export type SmtpCheck = (typeof SMTP_CHECKS)[number]

export const LINE_TYPES = ['mobile', 'landline', 'voip', 'toll_free', 'premium', 'unknown'] as const
export type LineType = (typeof LINE_TYPES)[number]

export const CONNECTION_TYPES = ['residential', 'mobile', 'business', 'datacenter'] as const
export type ConnectionType = (typeof CONNECTION_TYPES)[number]

export const COVERAGES = ['live', 'numbering_plan'] as const
export type Coverage = (typeof COVERAGES)[number]

export const AGE_BANDS = ['under_7_days', 'under_30_days', 'under_90_days', 'under_1_year', 'under_3_years', '3_years_plus'] as const
export type AgeBand = (typeof AGE_BANDS)[number]

export const GRADES = ['A+', 'A', 'B', 'C', 'D', 'F'] as const
export type Grade = (typeof GRADES)[number]

export const CONTEXTS = ['signup', 'lead', 'checkout'] as const
/** The situation a combined check is judged for. */
export type CheckContextName = (typeof CONTEXTS)[number]

export const LIST_KINDS = ['block', 'allow'] as const
export const LIST_ITEM_TYPES = ['email', 'email_domain', 'ip', 'phone', 'country', 'asn'] as const

/** The outcomes (labels of what happened after an answer) a caller can record or give the library. */
export const OUTCOME_KINDS = ['fraud', 'legitimate', 'chargeback', 'account_takeover', 'bounced', 'delivered', 'spam_complaint'] as const
export type OutcomeKind = (typeof OUTCOME_KINDS)[number]
/** The input types a label can be given for. */
export const OUTCOME_INPUT_TYPES = ['email', 'phone', 'ip'] as const
export type OutcomeInputType = (typeof OUTCOME_INPUT_TYPES)[number]

export const VELOCITY_KINDS = ['ip', 'network', 'email_domain', 'email', 'phone'] as const
/** What velocity counts: the same IP, network (/24, /48), email domain, normalised email, phone number. */
export type VelocityKind = (typeof VELOCITY_KINDS)[number]

export const BULK_TYPES = ['email', 'phone', 'phone_type', 'ip', 'domain_age', 'email_auth'] as const
export type BulkType = (typeof BULK_TYPES)[number]

export const BULK_STATUSES = ['queued', 'running', 'rechecking', 'completed', 'cancelled', 'failed'] as const
export type BulkStatus = (typeof BULK_STATUSES)[number]
/** The statuses a bulk job ends in: nothing changes a job once it has one. */
export const FINAL_BULK_STATUSES: ReadonlySet<string> = new Set<BulkStatus>(['completed', 'cancelled', 'failed'])

export const SCOPES = ['lookup', 'bulk', 'account:read', 'webhooks', 'lists'] as const
export type Scope = (typeof SCOPES)[number]

export const EVENT_TYPES = ['credits.low', 'credits.depleted', 'credits.added', 'bulk.completed', 'review.decided', 'email.rechecked', 'ping'] as const
export type EventType = (typeof EVENT_TYPES)[number]

export const PLAN_STATUSES = ['active', 'trialing', 'past_due', 'canceled', 'suspended'] as const
export type PlanStatus = (typeof PLAN_STATUSES)[number]

// ─── details of each lookup ───────────────────────────────────────────────────────────────────────────────────────

export const EmailDataSchema = closed({
  normalized: Type.String(),
  local_part: Type.String(),
  domain: Type.String(),
  syntax_valid: Type.Boolean(),
  mx_found: Type.Boolean(),
  mx_records: Type.Array(Type.String()),
  smtp_check: literals(SMTP_CHECKS),
  is_disposable: Type.Boolean(),
  is_role: Type.Boolean(),
  is_free_provider: Type.Boolean(),
  provider: Nullable(Type.String()),
  is_catch_all: Type.Boolean(),
  did_you_mean: Nullable(Type.String()),
  domain_age_days: Nullable(Type.Integer()),
  has_spf: Nullable(Type.Boolean()),
  has_dmarc: Nullable(Type.Boolean()),
})
/** What the Email check finds (its details without the answer-time fields `lists` and `velocity`). */
export type EmailData = Static<typeof EmailDataSchema>

export const IpDataSchema = closed({
  ip: Type.String(),
  version: Type.Union([Type.Literal(4), Type.Literal(6)]),
  location: closed({
    country: Nullable(Type.String()),
    country_code: Nullable(Type.String()),
    region: Nullable(Type.String()),
    city: Nullable(Type.String()),
    postal: Nullable(Type.String()),
    lat: Nullable(Type.Number()),
    lon: Nullable(Type.Number()),
    timezone: Nullable(Type.String()),
    continent: Nullable(Type.String()),
  }),
  network: closed({
    asn: Nullable(Type.Integer()),
    as_name: Nullable(Type.String()),
    isp: Nullable(Type.String()),
    org: Nullable(Type.String()),
    connection_type: Nullable(literals(CONNECTION_TYPES)),
  }),
  flags: closed({
    is_vpn: Type.Boolean(),
    is_proxy: Type.Boolean(),
    is_tor: Type.Boolean(),
    is_datacenter: Type.Boolean(),
    is_cloud: Type.Boolean(),
    is_bogon: Type.Boolean(),
    vpn_provider: Nullable(Type.String()),
    cloud_provider: Nullable(Type.String()),
    on_blocklists: Type.Array(Type.String()),
  }),
  reverse_dns: Nullable(Type.String()),
})
/** What the Ip check finds (its details without the answer-time fields `lists` and `velocity`). */
export type IpData = Static<typeof IpDataSchema>

export const PhoneDataSchema = closed({
  e164: Nullable(Type.String()),
  national_format: Nullable(Type.String()),
  international_format: Nullable(Type.String()),
  country_code: Nullable(Type.String()),
  country: closed({ code: Type.String(), name: Type.String() }),
  valid: Type.Boolean(),
  possible: Type.Boolean(),
  line_type: literals(LINE_TYPES),
  carrier: closed({
    name: Type.String(),
    ocn: Nullable(Type.String()),
    mcc: Nullable(Type.String()),
    mnc: Nullable(Type.String()),
    type: Nullable(Type.String()),
    ported: Nullable(Type.Boolean()),
    original_carrier: Nullable(Type.String()),
  }),
  location: closed({
    region: Nullable(Type.String()),
    rate_center: Nullable(Type.String()),
    timezone: Nullable(Type.String()),
  }),
  routing: closed({ lrn: Type.String(), lata: Nullable(Type.String()) }),
  coverage: literals(COVERAGES),
})
/** What the Phone check finds (its details without the answer-time fields `lists` and `velocity`). */
export type PhoneData = Static<typeof PhoneDataSchema>

export const PhoneTypeDataSchema = closed({
  e164: Nullable(Type.String()),
  country: Nullable(Type.String()),
  valid: Type.Boolean(),
  line_type: literals(LINE_TYPES),
  numbering_plan_type: Nullable(Type.String()),
})
/** What the PhoneType check finds (its details without the answer-time fields `lists` and `velocity`). */
export type PhoneTypeData = Static<typeof PhoneTypeDataSchema>

export const DomainAgeDataSchema = closed({
  domain: Type.String(),
  found: Type.Boolean({ description: 'The registry returned a record for the domain. False also when the lookup failed (then `partial` is true).' }),
  registered: Type.Boolean({
    description:
      'The domain is registered. False when the registry says it is not (factor `domain_not_registered`) — and, as no null is allowed here, when the lookup failed: then `partial` is true, the verdict `unknown` and the reason names the cause.',
  }),
  is_newly_registered: Type.Boolean(),
  created_date: Nullable(Type.String()),
  updated_date: Nullable(Type.String()),
  expires_date: Nullable(Type.String()),
  age_days: Nullable(Type.Integer()),
  days_until_expiry: Nullable(Type.Integer()),
  age_years: Nullable(Type.Number()),
  age_band: Nullable(literals(AGE_BANDS)),
  registrar: Nullable(Type.String()),
  statuses: Type.Array(Type.String()),
  nameservers: Type.Array(Type.String()),
  dnssec: Nullable(Type.Boolean()),
})
/** What the DomainAge check finds (its details without the answer-time fields `lists` and `velocity`). */
export type DomainAgeData = Static<typeof DomainAgeDataSchema>

export const EmailAuthDataSchema = closed({
  domain: Type.String(),
  grade: literals(GRADES),
  mx: closed({ found: Type.Boolean(), records: Type.Array(Type.String()) }),
  spf: closed({
    found: Type.Boolean(),
    record: Nullable(Type.String()),
    policy: Nullable(Type.String()),
    dns_lookups: Type.Integer({ minimum: 0 }),
    too_many_lookups: Type.Boolean(),
  }),
  dmarc: closed({
    found: Type.Boolean(),
    record: Nullable(Type.String()),
    policy: Nullable(Type.String()),
    subdomain_policy: Nullable(Type.String()),
    rua: Nullable(Type.String()),
    pct: Nullable(Type.Number()),
  }),
  dkim: closed({
    found: Type.Boolean(),
    selectors_found: Type.Array(Type.String()),
    selectors_checked: Type.Integer({ minimum: 0 }),
  }),
  bimi: closed({ found: Type.Boolean(), record: Nullable(Type.String()) }),
})
/** What the EmailAuth check finds (its details without the answer-time fields `lists` and `velocity`). */
export type EmailAuthData = Static<typeof EmailAuthDataSchema>

// ─── answer-time fields: list matches and velocity ───────────────────────────────────────────────────────────────

export const ListMatchSchema = closed(
  {
    list_id: Type.String(),
    name: Type.String(),
    kind: literals(LIST_KINDS),
    item_type: literals(LIST_ITEM_TYPES),
    value: Type.String({ description: 'The list item that matched, normalised (`example.com`, `203.0.113.0/24`, `+14155550100`, `AS64500`).' }),
  },
  'One allow/block list the answer matched.',
)

const ListMatchesSchema = Type.Array(ListMatchSchema, {
  description:
    'The allow/block lists the input is on, one entry per list, applied when the answer is given (a cached answer is matched against the lists in force). Empty when none matched. See docs/lists-and-velocity.md.',
})

export const VelocityCountSchema = closed({
  hour: Type.Integer({ minimum: 0, description: 'Checks in the last hour, this one included.' }),
  day: Type.Integer({ minimum: 0, description: 'Checks in the last 24 hours, this one included.' }),
})

export const VelocitySchema = closed({
  ip: Nullable(VelocityCountSchema),
  network: Nullable(VelocityCountSchema),
  email_domain: Nullable(VelocityCountSchema),
  email: Nullable(VelocityCountSchema),
  phone: Nullable(VelocityCountSchema),
})
/** How many checks in the last hour and day had the same IP, network, email domain, email and phone. */
export type Velocity = Static<typeof VelocitySchema>

const VELOCITY_DESCRIPTION =
  'How many checks had the same input lately: per kind (ip, network /24 or /48, email_domain, email, phone) the counts of the last hour and 24 hours, this check included; null for a kind the check has no value of (a free email provider\'s domain is not counted). null when velocity is off. See docs/lists-and-velocity.md.'

/** Details plus the answer-time field `lists`. */
const listed = <T extends TObject>(data: T) => Type.Composite([data, Type.Object({ lists: ListMatchesSchema })], { additionalProperties: false })

/** Details plus the answer-time fields `lists` and `velocity`. */
const answered = <T extends TObject>(data: T) =>
  Type.Composite([data, Type.Object({ lists: ListMatchesSchema, velocity: Nullable(VelocitySchema, VELOCITY_DESCRIPTION) })], {
    additionalProperties: false,
  })

export const EmailDetailsSchema = answered(EmailDataSchema)
export type EmailDetails = Static<typeof EmailDetailsSchema>
export const IpDetailsSchema = answered(IpDataSchema)
export type IpDetails = Static<typeof IpDetailsSchema>
export const PhoneDetailsSchema = answered(PhoneDataSchema)
export type PhoneDetails = Static<typeof PhoneDetailsSchema>
export const PhoneTypeDetailsSchema = answered(PhoneTypeDataSchema)
export type PhoneTypeDetails = Static<typeof PhoneTypeDetailsSchema>
export const DomainAgeDetailsSchema = listed(DomainAgeDataSchema)
export type DomainAgeDetails = Static<typeof DomainAgeDetailsSchema>
export const EmailAuthDetailsSchema = listed(EmailAuthDataSchema)
export type EmailAuthDetails = Static<typeof EmailAuthDetailsSchema>

// ─── the lookup result ────────────────────────────────────────────────────────────────────────────────────────────

export const VerdictSchema = closed({ status: literals(VERDICT_STATUSES), reason: Type.String() })
export type Verdict = Static<typeof VerdictSchema>

export const RiskSchema = closed({
  score: Type.Integer({ minimum: 0, maximum: 100 }),
  level: literals(RISK_LEVELS),
  factors: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_]*$' })),
  confidence: literals(CONFIDENCES),
})
export type Risk = Static<typeof RiskSchema>

export const RecommendationSchema = closed({ action: literals(ACTIONS), message: Type.String() })
export type Recommendation = Static<typeof RecommendationSchema>

/**
 * A part of the combined check: that lookup's details (its list matches included; velocity is counted once, for the
 * whole check) plus its own verdict and risk.
 */
const part = <T extends TObject>(data: T) =>
  Nullable(
    Type.Composite([data, Type.Object({ lists: ListMatchesSchema, verdict: VerdictSchema, risk: RiskSchema })], { additionalProperties: false }),
  )

export const CheckDetailsSchema = closed({
  email: part(EmailDataSchema),
  ip: part(IpDataSchema),
  phone: part(PhoneDataSchema),
  signals: closed({
    email_ip_country_match: Nullable(Type.Boolean()),
    phone_ip_country_match: Nullable(Type.Boolean()),
    disposable_and_vpn: Type.Boolean(),
  }),
  lists: Type.Array(ListMatchSchema, { description: 'The list matches of every part together (one entry per list and part).' }),
  velocity: Nullable(VelocitySchema, VELOCITY_DESCRIPTION),
  context: Nullable(literals(CONTEXTS)),
})
export type CheckDetails = Static<typeof CheckDetailsSchema>

/** Details schema of each lookup type. */
export const DETAILS_SCHEMAS = {
  email: EmailDetailsSchema,
  phone: PhoneDetailsSchema,
  phone_type: PhoneTypeDetailsSchema,
  ip: IpDetailsSchema,
  domain_age: DomainAgeDetailsSchema,
  email_auth: EmailAuthDetailsSchema,
  check: CheckDetailsSchema,
} as const

/** What each single lookup's check finds (its details without the answer-time fields). */
export interface DataByType {
  email: EmailData
  phone: PhoneData
  phone_type: PhoneTypeData
  ip: IpData
  domain_age: DomainAgeData
  email_auth: EmailAuthData
}

/**
 * Details of a bulk row of each type: what the check found and the list matches (no `velocity`: a list being cleaned
 * is not traffic). The columns of results.csv and the compact form of stored rows follow it.
 */
export const BULK_DETAILS_SCHEMAS = {
  email: listed(EmailDataSchema),
  phone: listed(PhoneDataSchema),
  phone_type: listed(PhoneTypeDataSchema),
  ip: listed(IpDataSchema),
  domain_age: DomainAgeDetailsSchema,
  email_auth: EmailAuthDetailsSchema,
} as const

/** Details type of each lookup type. */
export interface DetailsByType {
  email: EmailDetails
  phone: PhoneDetails
  phone_type: PhoneTypeDetails
  ip: IpDetails
  domain_age: DomainAgeDetails
  email_auth: EmailAuthDetails
  check: CheckDetails
}

/** The lookup result schema for one details schema (the `data` of a single lookup in docs/api.md). */
export const lookupResultSchema = <T extends TSchema>(details: T, type?: LookupType) =>
  closed({
    request: closed({
      id: Type.String({ pattern: '^req_[A-Za-z0-9]+$' }),
      type: type ? Type.Literal(type) : literals(LOOKUP_TYPES),
      input: Type.Unknown(),
      timestamp: Type.String({ format: 'date-time' }),
      processing_time_ms: Type.Integer({ minimum: 0 }),
    }),
    metadata: closed({
      api_version: Type.Literal('1'),
      credits_used: Type.Integer({ minimum: 0 }),
      credits_remaining: Nullable(Type.Integer({ minimum: 0 })),
      cache_hit: Type.Boolean(),
      test_mode: Type.Boolean(),
      data_sources: Type.Array(Type.String(), {
        description:
          'The data sources consulted. Updatable open data carries its version (`tor-exits@2026-11-23T06:12Z`, `dbip-city-lite@2026-11`), so two answers can be compared.',
      }),
    }),
    verdict: VerdictSchema,
    risk: RiskSchema,
    details,
    recommendation: RecommendationSchema,
    partial: Type.Boolean(),
  })

/** Result schemas per lookup type, with the matching details schema. */
export const RESULT_SCHEMAS = Object.fromEntries(
  Object.entries(DETAILS_SCHEMAS).map(([t, d]) => [t, lookupResultSchema(d, t as LookupType)]),
) as { [K in LookupType]: ReturnType<typeof lookupResultSchema<(typeof DETAILS_SCHEMAS)[K]>> }

/** A lookup result (the `data` of every single lookup in docs/api.md). */
export interface LookupResult<D = unknown> {
  request: { id: string; type: LookupType; input: unknown; timestamp: string; processing_time_ms: number }
  metadata: {
    api_version: '1'
    credits_used: number
    credits_remaining: number | null
    cache_hit: boolean
    test_mode: boolean
    /** the data sources consulted; updatable open data carries its version (`tor-exits@2026-11-23T06:12Z`) */
    data_sources: string[]
  }
  verdict: Verdict
  risk: Risk
  details: D
  recommendation: Recommendation
  partial: boolean
}

export type EmailResult = LookupResult<EmailDetails>
export type PhoneResult = LookupResult<PhoneDetails>
export type PhoneTypeResult = LookupResult<PhoneTypeDetails>
export type IpResult = LookupResult<IpDetails>
export type DomainAgeResult = LookupResult<DomainAgeDetails>
export type EmailAuthResult = LookupResult<EmailAuthDetails>
export type CheckResult = LookupResult<CheckDetails>

// ─── bulk, account, pricing, webhooks, events, errors ─────────────────────────────────────────────────────────────

export const BulkJobSchema = closed({
  id: Type.String(),
  name: Type.String(),
  type: literals(BULK_TYPES),
  status: literals(BULK_STATUSES),
  total_rows: Type.Integer({ minimum: 0 }),
  unique_inputs: Type.Integer({ minimum: 0 }),
  processed: Type.Integer({ minimum: 0 }),
  credits_used: Type.Integer({ minimum: 0 }),
  results: closed({
    approve: Type.Integer({ minimum: 0 }),
    verify: Type.Integer({ minimum: 0 }),
    review: Type.Integer({ minimum: 0 }),
    block: Type.Integer({ minimum: 0 }),
    errors: Type.Integer({ minimum: 0 }),
    skipped: Type.Integer({ minimum: 0 }),
    cache_hits: Type.Integer({ minimum: 0 }),
  }),
  created_at: Type.String({ format: 'date-time' }),
  completed_at: Nullable(Type.String({ format: 'date-time' })),
  expires_at: Type.String({ format: 'date-time' }),
})
export type BulkJob = Static<typeof BulkJobSchema>

export const BulkResultRowSchema = closed({
  input: Type.String(),
  action: Nullable(literals(ACTIONS)),
  status: Nullable(Type.String()),
  reason: Nullable(Type.String()),
  risk_score: Nullable(Type.Number()),
  credits_used: Type.Integer({ minimum: 0 }),
  cache_hit: Type.Boolean(),
  error: Nullable(Type.String()),
  /** The fired factor codes (as `risk.factors` of a lookup); null for an error row. What a backtest re-scores. */
  factors: Nullable(Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_]*$' }))),
  details: Type.Record(Type.String(), Type.Unknown()),
})
export type BulkResultRow = Static<typeof BulkResultRowSchema>

export const BulkResultsPageSchema = closed({
  data: Type.Array(BulkResultRowSchema),
  next_cursor: Nullable(Type.String()),
})
export type BulkResultsPage = Static<typeof BulkResultsPageSchema>

export const AccountSchema = closed({
  org: closed({ id: Type.String(), name: Type.String() }),
  plan: closed({
    id: Type.String(),
    name: Type.String(),
    credits_per_period: Type.Integer({ minimum: 0 }),
    period_start: Nullable(Type.String({ format: 'date-time' })),
    period_end: Nullable(Type.String({ format: 'date-time' })),
    status: literals(PLAN_STATUSES),
  }),
  credits: closed({
    subscription: Type.Integer({ minimum: 0 }),
    purchased: Type.Integer({ minimum: 0 }),
    total_available: Type.Integer({ minimum: 0 }),
  }),
  usage: closed({
    period: closed({ lookups: Type.Integer({ minimum: 0 }), credits: Type.Integer({ minimum: 0 }) }),
    all_time: closed({ lookups: Type.Integer({ minimum: 0 }), credits: Type.Integer({ minimum: 0 }) }),
  }),
  key: closed({
    id: Type.String(),
    name: Type.String(),
    mode: literals(['live', 'test'] as const),
    scopes: Type.Array(literals(SCOPES)),
  }),
  policy_version: Nullable(
    Type.String({
      pattern: '^pol_[0-9a-f]{16}$',
      description:
        "Version id of the org's own scoring policy (set by `riskcheck admin policy set`; a content hash of the policy), in force from the next request. null: the org uses the service's policy (`riskcheck serve --policy`, else the built-in default).",
    }),
  ),
})
export type Account = Static<typeof AccountSchema>

export const PricingSchema = closed({
  plans: Type.Array(
    closed({
      id: Type.String(),
      name: Type.String(),
      monthly_price: Type.Number({ minimum: 0 }),
      monthly_credits: Type.Integer({ minimum: 0 }),
    }),
  ),
  products: Type.Array(
    closed({ id: Type.String(), name: Type.String(), endpoint: Type.String(), credits: Type.Integer({ minimum: 0 }) }),
  ),
})
export type Pricing = Static<typeof PricingSchema>

export const WebhookEndpointSchema = closed({
  id: Type.String(),
  url: Type.String({ format: 'uri' }),
  description: Nullable(Type.String()),
  events: Type.Array(Type.String()),
  format: literals(['json', 'slack', 'discord'] as const),
  status: literals(['enabled', 'disabled'] as const),
  disabled_reason: Nullable(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  secret: Type.Optional(Type.String({ pattern: '^whsec_' })),
})
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>

export const EventPayloadSchema = closed({
  id: Type.String(),
  type: literals(EVENT_TYPES),
  created: Type.Integer(),
  api_version: Type.Literal('1'),
  org_id: Type.String(),
  test_mode: Type.Boolean({
    description: 'True when a test key’s activity caused the event (its bulk job or review decision); credits, recheck and ping events are false.',
  }),
  data: Type.Record(Type.String(), Type.Unknown()),
})
export type EventPayload = Static<typeof EventPayloadSchema>

/**
 * `data` of an `email.rechecked` event: an email answer that was `unknown` because the mail server deferred (4xx,
 * greylisting), checked again (docs/rechecks.md). Either `request_id` (a single lookup or combined check) or
 * `bulk_job_id` with `row_index` (a bulk row, updated in place) is set.
 */
export const EmailRecheckedDataSchema = closed({
  request_id: Nullable(Type.String(), 'The `request.id` of the single lookup or combined check rechecked; null for a bulk row.'),
  bulk_job_id: Nullable(Type.String(), 'The bulk job whose row was rechecked (and updated in place); null for a request.'),
  row_index: Nullable(Type.Integer({ minimum: 0 }), 'The row (0-based, input order) of that bulk job; null for a request.'),
  email: Type.String({ description: 'The address rechecked (normalised).' }),
  verdict: literals(VERDICT_STATUSES),
  score: Type.Number(),
  action: literals(ACTIONS),
  reason: Type.String(),
  factors: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_]*$' }), {
    description: "The fired factor codes of the new answer (as `risk.factors`), the org's list matches (`list_blocked`, `list_allowed`) and outcome labels included.",
  }),
  smtp_check: Type.String({ description: 'The mailbox check of the last attempt (deliverable, undeliverable, catch_all, unknown, unavailable).' }),
  attempts: Type.Integer({ minimum: 1, description: 'Rechecks made (the original answer not counted).' }),
  definite: Type.Boolean({ description: 'false when the last attempt was still deferred (the verdict stays unknown).' }),
})
export type EmailRecheckedData = Static<typeof EmailRecheckedDataSchema>

export const ErrorObjectSchema = closed({
  code: Type.String(),
  message: Type.String(),
  docs_url: Type.String({ format: 'uri' }),
  request_id: Type.String(),
})
export type ErrorObject = Static<typeof ErrorObjectSchema>

/** The failure envelope: `{ success: false, error }`. */
export const ErrorEnvelopeSchema = closed({ success: Type.Literal(false), error: ErrorObjectSchema })
export type ErrorEnvelope = Static<typeof ErrorEnvelopeSchema>

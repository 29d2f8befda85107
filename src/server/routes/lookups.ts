/**
 * The single lookups (scope `lookup`): POST /v1/email, /v1/phone, /v1/phone/type, /v1/ip, /v1/domain/age,
 * /v1/domain/email-auth and /v1/check. Each validates its documented body, then runs the library's lookup with the
 * caller's environment (test mode for test keys, the org's ledger for live keys) — the answer is the library's.
 */
import { Type, type TSchema } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { CHECK_LIMITS, runCombinedCheck, type CheckInput } from '../../checks/combined.js'
import { CHECKS, type SingleLookupType } from '../../checks/registry.js'
import type { CheckDefinition } from '../../checks/types.js'
import type { ErrorCode } from '../../errors.js'
import { isDeferredEmailOutcome } from '../../checks/email/index.js'
import { runLookup, type LookupEnv } from '../../lookup.js'
import type { RecheckService } from '../recheck-service.js'
import { CONTEXTS, RESULT_SCHEMAS, type LookupResult } from '../../schema.js'
import type { OrgLedger } from '../../accounts/ledger.js'
import type { RequestAuth } from '../auth.js'
import { defineRoute, type RouteDef, type ServerContext } from './types.js'

const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()])
const BypassCache = Type.Optional(
  Nullable(Type.Boolean({ description: 'Skip the 7-day result cache and run a fresh, billed lookup.' })),
)
/** The combined check's country: its validation is the library's (the same code and message either way). */
const Country = (description: string) =>
  Type.Optional(Nullable(Type.String({ minLength: 2, maxLength: 2, pattern: '^[A-Za-z]{2}$', description })))
/**
 * A single lookup's input string (and its country): the schema checks the type only and the library judges the value,
 * so an HTTP request gets the answer the library and the CLI give for the same value (`{"email": ""}` is a result
 * with verdict `invalid`; a 41-character phone number is a 422 INVALID_INPUT). The body limit bounds the size.
 */
const Input = (description: string) => Type.String({ description })
const LookupCountry = (description: string) =>
  Type.Optional(Nullable(Type.String({ description: `${description} ISO 3166 alpha-2; anything else is a 422 INVALID_INPUT.` })))

/** Request bodies of the lookups (closed: an unknown field is a 400 INVALID_REQUEST). */
export const LOOKUP_BODIES = {
  email: Type.Object(
    {
      email: Input('The email address. Anything that is not a usable address is a result with verdict `invalid`.'),
      smtp: Type.Optional(Nullable(Type.Boolean({ description: 'false skips the mailbox check; only the free checks run.' }))),
      bypass_cache: BypassCache,
    },
    { additionalProperties: false },
  ),
  phone: Type.Object(
    {
      phone: Input('The phone number, E.164 or national; 1 to 40 characters (else 422 INVALID_INPUT).'),
      country: LookupCountry('Country for numbers without a + prefix (default US).'),
      bypass_cache: BypassCache,
    },
    { additionalProperties: false },
  ),
  phone_type: Type.Object(
    {
      phone: Input('The phone number, E.164 or national; 1 to 40 characters (else 422 INVALID_INPUT).'),
      country: LookupCountry('Country for numbers without a + prefix.'),
      bypass_cache: BypassCache,
    },
    { additionalProperties: false },
  ),
  ip: Type.Object(
    {
      ip: Input('An IPv4 or IPv6 address, 1 to 64 characters; anything else is a 422 INVALID_INPUT.'),
      bypass_cache: BypassCache,
    },
    { additionalProperties: false },
  ),
  domain_age: Type.Object(
    {
      domain: Input('A domain, URL or email address; one without a parsable host is a 422 INVALID_INPUT.'),
      bypass_cache: BypassCache,
    },
    { additionalProperties: false },
  ),
  email_auth: Type.Object(
    {
      domain: Input('A domain, URL or email address; one without a parsable host is a 422 INVALID_INPUT.'),
      bypass_cache: BypassCache,
    },
    { additionalProperties: false },
  ),
  check: Type.Object(
    {
      email: Type.Optional(Nullable(Type.String({ maxLength: CHECK_LIMITS.email }))),
      ip: Type.Optional(Nullable(Type.String({ maxLength: CHECK_LIMITS.ip }))),
      phone: Type.Optional(Nullable(Type.String({ maxLength: CHECK_LIMITS.phone }))),
      country: Country('ISO 3166 alpha-2 default country of the phone number.'),
      context: Type.Optional(Nullable(Type.Union(CONTEXTS.map((c) => Type.Literal(c))))),
      bypass_cache: BypassCache,
    },
    { additionalProperties: false, description: 'At least one of email, ip, phone.' },
  ),
} as const

/**
 * Runs one lookup for a caller and ends its request on the ledger (usage, credit alerts); the org's outcomes label
 * the answer and its input hashes are kept (../outcomes.ts), written with the settlement. Once the settlement is
 * written, a live key's answer goes into its org's answer log (../org-policies.ts) and an answer whose action is
 * review is queued for the org's reviewers (../reviews.ts); a refused settlement (the answer is not given) takes its
 * input hashes and its email rechecks back and records neither. The result's request id is the HTTP request's, so an
 * answer and a log line match.
 */
export async function serveLookup<D>(
  ctx: ServerContext,
  auth: RequestAuth,
  request: FastifyRequest,
  run: (env: LookupEnv) => Promise<LookupResult<D>>,
): Promise<LookupResult<D>> {
  const { env, ledger } = ctx.lookupEnv(auth, request)
  const owner = { orgId: auth.orgId, mode: auth.mode }
  let served: LookupResult<D> | undefined
  const deferred: string[] = []
  /** What a refused settlement takes back: the input hashes kept and the rechecks scheduled. */
  const takeBack = () => {
    ctx.outcomes.forgetInputs(owner, request.id)
    if (ctx.rechecks && deferred.length > 0) void cancelRechecks(ctx, ctx.rechecks, owner, request)
  }
  try {
    const labels = await ctx.outcomes.prepare(owner, auth.outcomesVersion)
    const onOutcome = ctx.rechecks && auth.mode === 'live' ? deferredEmails(deferred) : undefined
    const result = await run({ ...env, answerLabels: labels.hook, ...(onOutcome ? { onOutcome } : {}) })
    served = result
    result.request.id = request.id
    if (ctx.rechecks && deferred.length > 0) await scheduleRechecks(ctx, ctx.rechecks, owner, request, deferred)
    ctx.outcomes.keepInputs(owner, request.id, labels.inputs)
    return result
  } finally {
    if (ledger) {
      try {
        await settleOrKeep(ctx, ledger, served !== undefined)
      } catch (e) {
        if (served) takeBack()
        throw e
      }
    }
    if (served) {
      const answered = served
      ctx.afterSettlement(
        request,
        () => {
          ctx.recordAnswer(auth, answered)
          ctx.reviews.enqueue(owner, answered, env.policy)
        },
        takeBack,
      )
      ctx.observeLookup(auth, served, ledger?.charged ?? 0)
    }
  }
}

/** An `onOutcome` that collects the addresses of fresh email answers a mail server deferred. */
function deferredEmails(into: string[]): NonNullable<LookupEnv['onOutcome']> {
  return (type, outcome, cacheHit) => {
    if (type !== 'email' || cacheHit || !isDeferredEmailOutcome(outcome)) return
    const address = (outcome.details as { normalized?: unknown }).normalized
    if (typeof address === 'string') into.push(address)
  }
}

/**
 * Schedules the rechecks of a request's deferred email answer (docs/rechecks.md); a failure to store it is logged,
 * never the request's failure (the answer itself is good).
 */
async function scheduleRechecks(ctx: ServerContext, rechecks: RecheckService, owner: { orgId: string; mode: 'live' | 'test' }, request: FastifyRequest, addresses: string[]): Promise<void> {
  try {
    for (const address of addresses) await rechecks.schedule(owner, { kind: 'request', requestId: request.id }, address, ctx.nowMs())
  } catch (err) {
    if (!ctx.noteOutage(err)) request.log.warn({ err }, 'scheduling an email recheck failed')
  }
}

/** Cancels the rechecks a refused request scheduled; a failure is logged (the recheck then runs, announced once). */
async function cancelRechecks(ctx: ServerContext, rechecks: RecheckService, owner: { orgId: string; mode: 'live' | 'test' }, request: FastifyRequest): Promise<void> {
  try {
    await rechecks.cancelForRequest(owner, request.id)
  } catch (err) {
    if (!ctx.noteOutage(err)) request.log.warn({ err }, 'cancelling the email rechecks of a refused request failed')
  }
}

/**
 * Ends a request on its ledger. When the settlement cannot be written because the database went down since: on held
 * credits the request is refused (its hold is refunded, so it is not charged); otherwise its credits were taken when
 * they were reserved and the answer goes out all the same, as refusing it would leave the client charged for nothing
 * (docs/decisions.md "Outages of the database and Redis").
 */
async function settleOrKeep(ctx: ServerContext, ledger: OrgLedger, served: boolean): Promise<void> {
  try {
    await ledger.settle(served ? 1 : 0)
  } catch (e) {
    if (!served || ledger.holdsCredits || !ctx.noteOutage(e)) throw e
  }
}

/**
 * Lookup-specific error codes. INVALID_INPUT only where the library rejects a string it cannot look up at all (an IP
 * field that is no IP address, a domain field without a host); a bad email address or phone number is a result.
 */
const CREDIT_ERRORS: ErrorCode[] = ['INSUFFICIENT_CREDITS']
const INPUT_ERRORS: ErrorCode[] = ['INVALID_INPUT', 'INSUFFICIENT_CREDITS']

const RESULT_NAMES: Record<SingleLookupType | 'check', string> = {
  email: 'EmailResult',
  phone: 'PhoneResult',
  phone_type: 'PhoneTypeResult',
  ip: 'IpResult',
  domain_age: 'DomainAgeResult',
  email_auth: 'EmailAuthResult',
  check: 'CheckResult',
}

function single<K extends SingleLookupType>(
  type: K,
  url: string,
  summary: string,
  description: string,
  errors: ErrorCode[],
  input: (body: Record<string, unknown>) => { value: unknown; opts: Record<string, unknown> },
): RouteDef {
  return defineRoute({
    method: 'POST',
    url,
    operationId: `lookup_${type}`,
    summary,
    description,
    tags: ['Lookups'],
    scope: 'lookup',
    status: 200,
    body: LOOKUP_BODIES[type],
    response: { name: RESULT_NAMES[type], schema: RESULT_SCHEMAS[type] },
    errors,
    handler: ({ body, auth, ctx, request }) => {
      const { value, opts } = input(body as Record<string, unknown>)
      const def = CHECKS[type] as unknown as CheckDefinition<unknown, object, unknown>
      return serveLookup(ctx, auth!, request, (env) => runLookup(env, def, value, opts))
    },
  })
}

const bypass = (b: Record<string, unknown>) => (b.bypass_cache === true ? { bypassCache: true } : {})
const country = (b: Record<string, unknown>) => (typeof b.country === 'string' ? { country: b.country.toUpperCase() } : {})

/** The lookup routes. */
export const lookupRoutes: RouteDef[] = [
  single('email', '/v1/email', 'Validate an email address', 'Syntax, MX, SMTP mailbox, disposable/role/free provider, typo suggestion. 1 credit; free if smtp_check is unavailable.', CREDIT_ERRORS, (b) => ({
    value: b.email,
    opts: { ...(typeof b.smtp === 'boolean' ? { smtp: b.smtp } : {}), ...bypass(b) },
  })),
  single('phone', '/v1/phone', 'Validate a phone number', 'Numbering plan, line type, carrier, region and time zone. 1 credit; invalid numbers are free.', INPUT_ERRORS, (b) => ({
    value: b.phone,
    opts: { ...country(b), ...bypass(b) },
  })),
  single('phone_type', '/v1/phone/type', 'Phone line type', 'Line type from the numbering plan, never live. 1 credit, always billed.', INPUT_ERRORS, (b) => ({
    value: b.phone,
    opts: { ...country(b), ...bypass(b) },
  })),
  single('ip', '/v1/ip', 'IP address intelligence', 'Location, network, VPN/proxy/Tor/datacenter/cloud/bogon flags, blocklists, reverse DNS. 1 credit.', INPUT_ERRORS, (b) => ({
    value: b.ip,
    opts: bypass(b),
  })),
  single('domain_age', '/v1/domain/age', 'Domain registration age', 'Registration dates, age band, registrar and statuses from the registry (RDAP). 1 credit; unregistered domains are free.', INPUT_ERRORS, (b) => ({
    value: b.domain,
    opts: bypass(b),
  })),
  single('email_auth', '/v1/domain/email-auth', 'Domain email authentication', 'MX, SPF, DMARC, DKIM and BIMI records and a letter grade. 1 credit.', INPUT_ERRORS, (b) => ({
    value: b.domain,
    opts: bypass(b),
  })),
  defineRoute({
    method: 'POST',
    url: '/v1/check',
    operationId: 'lookup_check',
    summary: 'Combined risk check',
    description: 'Email, IP and phone together with cross-signals and one recommendation. Costs the sum of the billed parts.',
    tags: ['Lookups'],
    scope: 'lookup',
    status: 200,
    body: LOOKUP_BODIES.check,
    response: { name: RESULT_NAMES.check, schema: RESULT_SCHEMAS.check },
    errors: INPUT_ERRORS,
    handler: ({ body, auth, ctx, request }) => {
      // The validated body goes to the library as is (it accepts bypass_cache), so request.input is what was sent.
      const input = body as CheckInput
      return serveLookup(ctx, auth!, request, (env) => runCombinedCheck(env, input))
    },
  }),
]

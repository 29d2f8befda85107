/**
 * The OpenAPI 3.1 document, generated from the route declarations (the same TypeBox schemas Fastify validates and
 * serializes with), so the document always matches the routes. Served at GET /v1/openapi.json.
 */
import type { TSchema } from '@sinclair/typebox'
import { ERROR_STATUS, type ErrorCode } from '../errors.js'
import type { HttpRejection } from './envelope.js'
import { EmailRecheckedDataSchema, ErrorEnvelopeSchema, EventPayloadSchema } from '../schema.js'
import { VERSION } from '../version.js'
import { EmptyBody, type NamedSchema, type RouteDef } from './routes/types.js'

/** Codes every route can answer with. */
const COMMON: ErrorCode[] = ['RATE_LIMITED', 'INTERNAL_ERROR', 'MAINTENANCE']
/** Codes of routes that need a key. */
const AUTHED: ErrorCode[] = ['UNAUTHORIZED', 'ACCOUNT_SUSPENDED', 'FORBIDDEN_SCOPE']
/** Codes of routes with a JSON body. */
const WITH_BODY: ErrorCode[] = ['INVALID_REQUEST', 'MISSING_FIELD', 'INPUT_LIMIT_EXCEEDED']

/** Every error code a route can answer with, in the order of docs/api.md "Errors". */
export function routeErrorCodes(route: RouteDef): ErrorCode[] {
  // probes (GET /healthz, /readyz) are never rate limited nor refused while draining
  const codes = new Set<ErrorCode>([...(route.probe ? [] : COMMON), ...route.errors])
  if (route.scope !== null) AUTHED.forEach((c) => codes.add(c))
  if (route.body) WITH_BODY.forEach((c) => codes.add(c))
  if (route.method === 'POST') {
    codes.add('IDEMPOTENCY_CONFLICT')
    codes.add('INVALID_REQUEST') // a malformed Idempotency-Key
  }
  if (route.query || route.params) codes.add('INVALID_REQUEST')
  return (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((c) => codes.has(c))
}

/**
 * Answers of a route with a status other than its code's own (see {@link HttpRejection}): 415 for a body that is not
 * JSON in UTF-8 or is compressed. (405, 408 and 431 can answer any path; docs/api.md lists them once.)
 */
export function routeRejections(route: RouteDef): Array<{ status: number; code: ErrorCode; description: string }> {
  return route.body
    ? [{ status: 415, code: 'INVALID_REQUEST', description: 'INVALID_REQUEST: the body is not `application/json` in UTF-8, or has a Content-Encoding other than identity.' }]
    : []
}

/** The OpenAPI path of a Fastify path (`/a/:id` → `/a/{id}`). */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

/** A plain JSON copy of a TypeBox schema (drops TypeBox's symbol keys). */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
}

const isNamed = (r: NamedSchema | TSchema): r is NamedSchema =>
  typeof (r as NamedSchema).name === 'string' && typeof (r as NamedSchema).schema === 'object'

const RATE_HEADERS = {
  'RateLimit-Policy': { description: 'IETF draft rate-limit policy, e.g. `"key";q=20;w=1`.', schema: { type: 'string' } },
  RateLimit: { description: 'IETF draft rate-limit state, e.g. `"key";r=19;t=1`.', schema: { type: 'string' } },
  'X-RateLimit-Limit': { description: 'Requests allowed in any one-second span (the window slides).', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests accepted now: the limit less those accepted in the last second.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': {
    description: 'Seconds (rounded up) until the oldest request counted leaves the window, freeing one more.',
    schema: { type: 'integer' },
  },
}

/** Options of {@link buildOpenApi}. */
export interface OpenApiOptions {
  /** `servers[0].url` (default: relative, `/`). */
  serverUrl?: string
  title?: string
}

/**
 * Builds the OpenAPI 3.1 document of `routes`.
 *
 * @example const doc = buildOpenApi(ROUTES); doc.paths['/v1/email'].post.operationId // 'lookup_email'
 */
export function buildOpenApi(routes: readonly RouteDef[], options: OpenApiOptions = {}): Record<string, unknown> {
  const schemas: Record<string, unknown> = { ErrorEnvelope: plain(ErrorEnvelopeSchema) }
  const paths: Record<string, Record<string, unknown>> = {}
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })

  for (const route of routes) {
    let payload: Record<string, unknown>
    if (isNamed(route.response)) {
      schemas[route.response.name] = plain(route.response.schema)
      payload = ref(route.response.name)
    } else {
      payload = plain(route.response)
    }
    const success =
      route.envelope === false
        ? payload
        : {
            type: 'object',
            required: ['success', 'data'],
            additionalProperties: false,
            properties: { success: { type: 'boolean', const: true }, data: payload },
          }

    const parameters: Array<Record<string, unknown>> = []
    for (const [where, schema] of [
      ['path', route.params],
      ['query', route.query],
    ] as const) {
      if (!schema) continue
      const s = plain(schema) as { properties?: Record<string, unknown>; required?: string[] }
      for (const [name, prop] of Object.entries(s.properties ?? {})) {
        parameters.push({ name, in: where, required: where === 'path' || (s.required ?? []).includes(name), schema: prop })
      }
    }
    if (route.method === 'POST') {
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: 'Makes a retry safe for 24 hours: the same key and body replay the stored answer; another body is a 409 IDEMPOTENCY_CONFLICT.',
        schema: { type: 'string', minLength: 1, maxLength: 257 },
      })
    }

    const rateHeaders = route.probe ? {} : RATE_HEADERS
    const responses: Record<string, unknown> = {
      [String(route.status)]: {
        description: route.summary,
        ...(route.probe ? {} : { headers: RATE_HEADERS }),
        content: { [route.contentType ?? 'application/json']: { schema: success } },
      },
      // a probe answers 503 with the same body when it is not ready (GET /readyz)
      ...(route.probe ? { 503: { description: 'Not ready, or draining: the body says which check failed.', content: { 'application/json': { schema: success } } } } : {}),
    }
    const byStatus = new Map<number, ErrorCode[]>()
    for (const code of routeErrorCodes(route)) {
      const status = ERROR_STATUS[code]
      byStatus.set(status, [...(byStatus.get(status) ?? []), code])
    }
    for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      const headers: Record<string, unknown> = { ...rateHeaders }
      if (status === 429 || codes.includes('MAINTENANCE')) {
        headers['Retry-After'] = { description: 'Seconds to wait before retrying (on a 429: until a request is accepted again).', schema: { type: 'integer' } }
      }
      responses[String(status)] = {
        description: codes.join(', '),
        headers,
        content: { 'application/json': { schema: ref('ErrorEnvelope') } },
      }
    }

    for (const r of routeRejections(route)) {
      responses[String(r.status)] = {
        description: r.description,
        headers: RATE_HEADERS,
        content: { 'application/json': { schema: ref('ErrorEnvelope') } },
      }
    }

    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security: route.scope === null ? [] : [{ bearerAuth: [] }],
      ...(route.scope !== null ? { 'x-required-scope': route.scope } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(route.body
        ? { requestBody: { required: route.body !== EmptyBody, content: { 'application/json': { schema: plain(route.body) } } } }
        : {}),
      responses,
    }
    const path = openApiPath(route.url)
    paths[path] = { ...(paths[path] ?? {}), [route.method.toLowerCase()]: operation }
  }

  return {
    openapi: '3.1.0',
    info: {
      title: options.title ?? 'riskcheck API',
      version: VERSION,
      description:
        'Validation and risk checks for emails, phone numbers, IP addresses and domains: a verdict, a risk score and a recommended action for each input. Every response except GET /v1/pricing and this document is wrapped in `{ success, data }` or `{ success: false, error }`.',
    },
    servers: [{ url: options.serverUrl ?? '/' }],
    tags: [
      { name: 'Lookups', description: 'Single lookups (scope `lookup`), billed in credits; test keys are free.' },
      { name: 'Bulk', description: 'Bulk jobs (scope `bulk`): up to 100,000 inputs of one type, paged results and a CSV file.' },
      { name: 'Outcomes', description: 'Outcomes (scope `lookup`, free): what happened after answers; later answers of the org carry them as factors (docs/outcomes.md).' },
      { name: 'Reviews', description: 'The review queue (scope `lookup`, free): answers whose action was `review`, and the decisions taken on them (docs/reviews.md).' },
      { name: 'Webhooks', description: 'Webhook endpoints (scope `webhooks`): signed event deliveries with retries.' },
      { name: 'Lists', description: 'Allow/block lists of the org (scope `lists`), separate for test and live keys; a change applies from the next lookup.' },
      { name: 'Account', description: 'Account and pricing.' },
      { name: 'Meta', description: 'This document.' },
    ],
    paths,
    components: {
      // the webhook payload and the data of the events it documents field by field (no route answers them)
      schemas: { ...schemas, EventPayload: plain(EventPayloadSchema), EmailRecheckedData: plain(EmailRecheckedDataSchema) },
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key: `svc_live_…` (live, billed) or `svc_test_…` (test answers, free, 10 requests a second).',
        },
      },
    },
  }
}

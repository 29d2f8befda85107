/**
 * Errors of the service contract. A lookup rejects only with a {@link RiskcheckError}, and only where docs/api.md "Errors" has an
 * error for the situation (an input that cannot be looked up at all, a missing field, a limit). An address, number
 * or domain that fails validation is not an error: it is a result with verdict `invalid`.
 */

/** Every error code of docs/api.md "Errors", in its order. */
export const ERROR_CODES = [
  'INVALID_REQUEST',
  'INVALID_INPUT',
  'MISSING_FIELD',
  'UNAUTHORIZED',
  'INSUFFICIENT_CREDITS',
  'FORBIDDEN_SCOPE',
  'ACCOUNT_SUSPENDED',
  'NOT_FOUND',
  'IDEMPOTENCY_CONFLICT',
  'CONFLICT',
  'INPUT_LIMIT_EXCEEDED',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
  'UPSTREAM_UNAVAILABLE',
  'MAINTENANCE',
] as const

/** A machine-readable error code (docs/api.md "Errors"). */
export type ErrorCode = (typeof ERROR_CODES)[number]

/** HTTP status of each error code (docs/api.md "Errors"). */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  INVALID_REQUEST: 400,
  MISSING_FIELD: 400,
  INVALID_INPUT: 422,
  UNAUTHORIZED: 401,
  INSUFFICIENT_CREDITS: 402,
  FORBIDDEN_SCOPE: 403,
  ACCOUNT_SUSPENDED: 403,
  NOT_FOUND: 404,
  IDEMPOTENCY_CONFLICT: 409,
  CONFLICT: 409,
  INPUT_LIMIT_EXCEEDED: 413,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  UPSTREAM_UNAVAILABLE: 503,
  MAINTENANCE: 503,
}

/**
 * What each error code means, one line each: the table of docs/api.md "Errors" and the page the server serves at
 * `GET /docs/errors` are both written from it.
 */
export const ERROR_DESCRIPTIONS: Readonly<Record<ErrorCode, string>> = {
  INVALID_REQUEST: 'malformed request: bad JSON, a wrong type, an unknown field, a value outside an enum (the message names the allowed values), control characters in text, a malformed Idempotency-Key, a `cursor` that is no `next_cursor` of the API or is sent with other filters than its page',
  INVALID_INPUT: 'a value that cannot be looked up at all (an IP field that is no IP address, a domain with no host, an empty bulk job)',
  MISSING_FIELD: 'a required field is missing',
  UNAUTHORIZED: 'no key, a malformed, unknown or revoked key, or more than one Authorization header',
  INSUFFICIENT_CREDITS: 'the balance cannot cover the request; nothing ran',
  FORBIDDEN_SCOPE: 'the key lacks the route’s scope',
  ACCOUNT_SUSPENDED: 'the org is suspended',
  NOT_FOUND: 'unknown path, job or endpoint (another org’s included)',
  IDEMPOTENCY_CONFLICT: 'an Idempotency-Key reused with another body, or while its first request still runs',
  CONFLICT: 'the resource was already changed otherwise (a review decided the other way)',
  INPUT_LIMIT_EXCEEDED: 'a body over the route’s limit (64 KiB; 12 MiB for outcomes; 32 MiB for bulk jobs), more than 100,000 bulk inputs',
  RATE_LIMITED: 'the limit’s worth of requests was accepted in the last second',
  INTERNAL_ERROR: 'a fault of ours; logged, never with internals in the message',
  UPSTREAM_UNAVAILABLE: 'a part the server needs is missing or down (its database unreachable, say); retry after `Retry-After`',
  MAINTENANCE: 'maintenance or shutting down; retry after `Retry-After`',
}

/**
 * The anchor of an error code in its documentation (`RATE_LIMITED` → `rate_limited`): `docs_url` ends in `#` and
 * this, and docs/api.md and the server's `GET /docs/errors` page carry it on the code's row.
 */
export function errorAnchor(code: ErrorCode): string {
  return code.toLowerCase()
}

/**
 * The one error type lookups reject with. `code` is the documented error code, `status` its HTTP status; the HTTP
 * server maps it straight into the error envelope.
 *
 * @example
 * try { await rc.ip('010.0.0.1') } catch (e) { if (e instanceof RiskcheckError && e.code === 'INVALID_INPUT') … }
 */
export class RiskcheckError extends Error {
  override readonly name = 'RiskcheckError'
  readonly code: ErrorCode
  readonly status: number
  /** The request field the error is about, when there is one (e.g. `ip`). */
  readonly field: string | undefined

  constructor(code: ErrorCode, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = ERROR_STATUS[code]
    this.field = options.field
  }
}

/** An input that cannot be looked up at all (422 INVALID_INPUT). */
export function invalidInput(message: string, field?: string): RiskcheckError {
  return new RiskcheckError('INVALID_INPUT', message, field === undefined ? {} : { field })
}

/** A required field is missing (400 MISSING_FIELD). */
export function missingField(message: string, field?: string): RiskcheckError {
  return new RiskcheckError('MISSING_FIELD', message, field === undefined ? {} : { field })
}

/**
 * A page's `cursor` that is not a `next_cursor` this API gave, in the form it gave it, or one it gave for another
 * org, key mode, job or listing (400 INVALID_REQUEST): every paginated route refuses it with this one message.
 */
export function foreignCursor(): RiskcheckError {
  return new RiskcheckError('INVALID_REQUEST', '`cursor` is not one this API gave.', { field: 'cursor' })
}

/**
 * A page's `cursor` sent with other filters than the page that gave it (400 INVALID_REQUEST): followed, it would be a
 * page of the new filters from the old position, rows skipped or mixed. Every paginated route with filters refuses it
 * with this message, naming the route's filters.
 */
export function cursorFiltersChanged(filters: readonly string[]): RiskcheckError {
  const names = filters.map((f) => `\`${f}\``)
  const listed = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names.join('')
  return new RiskcheckError('INVALID_REQUEST', `\`cursor\` was made for other filters: send the same ${listed} as the page it came from, or start again without \`cursor\`.`, {
    field: 'cursor',
  })
}

/** True when `e` is a {@link RiskcheckError}, optionally of the given code. */
export function isRiskcheckError(e: unknown, code?: ErrorCode): e is RiskcheckError {
  return e instanceof RiskcheckError && (code === undefined || e.code === code)
}

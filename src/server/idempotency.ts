/**
 * `Idempotency-Key` on POST requests (as Stripe, and draft-ietf-httpapi-idempotency-key-header):
 *
 * - scope: the API key + method + path; kept 24 hours after the first request;
 * - same key, same body (a canonical JSON fingerprint) → the stored status and body are replayed
 *   (`Idempotent-Replayed: true`), nothing is run or charged again;
 * - same key, another body → 409 IDEMPOTENCY_CONFLICT; a repeat while the first is still running → 409 too;
 * - only answers of the handler are stored: requests rejected before it (auth, rate limit, validation) are not, and
 *   neither are answers worth retrying (402, 409, 429, 5xx), so a retry after a top-up or an outage runs again.
 *
 * The header value may be a bare token or an RFC 8941 sf-string (`"…"`); 1–255 printable ASCII characters.
 */
import { createHash } from 'node:crypto'
import { RiskcheckError } from '../errors.js'

/** How long a key is kept: 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/**
 * The key of an `Idempotency-Key` header value; undefined when absent; throws INVALID_REQUEST when malformed.
 *
 * @example parseIdempotencyKey('"8e03978e-40d5"') // '8e03978e-40d5'
 */
export function parseIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined
  if (Array.isArray(value)) throw new RiskcheckError('INVALID_REQUEST', 'Send one Idempotency-Key header.')
  let v = value.trim()
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1)
  if (v.length < 1 || v.length > 255 || !/^[\x21-\x7e]+$/.test(v)) {
    throw new RiskcheckError('INVALID_REQUEST', 'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces.')
  }
  return v
}

function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  const keys = Object.keys(value).sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`
}

/** SHA-256 of the canonical JSON of a body (key order does not matter). */
export function bodyFingerprint(body: unknown): string {
  return createHash('sha256').update(canonical(body ?? null), 'utf8').digest('hex')
}

/** Whether an answer with `status` is stored for replay. */
export function isReplayable(status: number): boolean {
  return status < 500 && status !== 402 && status !== 409 && status !== 429
}

/**
 * `Idempotency-Key` on POST requests (as Stripe, and draft-ietf-httpapi-idempotency-key-header): scoped to API key,
 * method and path for 24 hours; a repeat with the same body replays the stored answer, with another body it is a 409.
 * The value is a bare token or an RFC 8941 sf-string, 1–255 printable ASCII characters. What is stored:
 * docs/decisions.md, "HTTP API" → "idempotency"; when a repeat takes over: docs/decisions.md, "Instance leases" →
 * "takeover".
 */
import { createHash } from 'node:crypto'
import { RiskcheckError } from '../errors.js'
import { HttpRejection } from './envelope.js'

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

/** Deepest nesting of arrays and objects a request body may have (the API's bodies have 2 levels). */
export const MAX_BODY_DEPTH = 32

const tooDeep = () =>
  new RiskcheckError('INVALID_REQUEST', `The request body is nested more than ${MAX_BODY_DEPTH} levels deep.`)

/**
 * Writes the canonical JSON of `value` (object keys sorted, no whitespace) to `emit`, with an explicit stack instead
 * of recursion, so no body can overflow the call stack; nesting deeper than {@link MAX_BODY_DEPTH} is an
 * INVALID_REQUEST. Linear in the size of the value (plus the key sorting).
 */
function writeCanonical(value: unknown, emit: (chunk: string) => void): void {
  const stack: Array<string | { v: unknown; depth: number }> = [{ v: value, depth: 0 }]
  while (stack.length > 0) {
    const task = stack.pop()!
    if (typeof task === 'string') {
      emit(task)
      continue
    }
    const { v, depth } = task
    if (v === null || typeof v !== 'object') {
      emit(JSON.stringify(v) ?? 'null')
      continue
    }
    if (depth >= MAX_BODY_DEPTH) throw tooDeep()
    // Pushed in reverse, so they pop in order: `[` v0 `,` v1 … `]` and `{` "k0": v0 `,` "k1": v1 … `}`.
    if (Array.isArray(v)) {
      stack.push(']')
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ v: v[i], depth: depth + 1 })
        if (i > 0) stack.push(',')
      }
      emit('[')
    } else {
      const keys = Object.keys(v).sort()
      stack.push('}')
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ v: (v as Record<string, unknown>)[keys[i]!], depth: depth + 1 })
        stack.push(`${JSON.stringify(keys[i])}:`)
        if (i > 0) stack.push(',')
      }
      emit('{')
    }
  }
}

/** The canonical JSON text of a body (what {@link bodyFingerprint} hashes). Throws INVALID_REQUEST when too deep. */
export function canonicalJson(body: unknown): string {
  const parts: string[] = []
  writeCanonical(body ?? null, (c) => parts.push(c))
  return parts.join('')
}

/** SHA-256 of the canonical JSON of a body (key order does not matter). Throws INVALID_REQUEST when too deep. */
export function bodyFingerprint(body: unknown): string {
  const hash = createHash('sha256')
  let buffered = ''
  writeCanonical(body ?? null, (c) => {
    buffered += c
    if (buffered.length >= 65_536) {
      hash.update(buffered, 'utf8')
      buffered = ''
    }
  })
  return hash.update(buffered, 'utf8').digest('hex')
}

/** Whether an answer with `status` is stored for replay. */
export function isReplayable(status: number): boolean {
  return status < 500 && status !== 402 && status !== 409 && status !== 429
}

/**
 * The 409 of a repeat while the first request still runs: `Retry-After` is what is left of its instance's lease in
 * whole seconds (at least 1), the earliest moment a retry can take the key over if that instance has died.
 */
export function inProgressConflict(retryAfterMs: number | undefined): HttpRejection {
  const seconds = Math.max(1, Math.ceil((retryAfterMs ?? 0) / 1000))
  return new HttpRejection(409, 'IDEMPOTENCY_CONFLICT', `A request with this Idempotency-Key is still in progress; retry after ${seconds} s.`, {
    'Retry-After': String(seconds),
  })
}

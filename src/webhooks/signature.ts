/**
 * Webhook signatures (`SVC-Signature`), the scheme of docs/service.md "Webhook signatures" — the same as Stripe's, so receivers may also use
 * `stripe.webhooks.constructEvent`:
 *
 *   SVC-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the whole whsec_ secret>
 *
 * During a secret rotation a header may carry several `v1=` entries; any match is accepted.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

/** Default tolerance: 5 minutes, both into the past and into the future. */
export const DEFAULT_TOLERANCE_SECONDS = 300

/** Why a verification failed. */
export type WebhookVerifyError = 'malformed_header' | 'no_signature' | 'signature_mismatch' | 'timestamp_too_old' | 'timestamp_in_future'

/** Result of {@link verifyWebhook}. */
export type WebhookVerifyResult = { ok: true; timestamp: number } | { ok: false; error: WebhookVerifyError }

function hmacHex(rawBody: string | Uint8Array, secret: string, t: number): string {
  const body = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8')
  return createHmac('sha256', secret).update(`${t}.${body}`, 'utf8').digest('hex')
}

/**
 * The `SVC-Signature` header value for a raw body.
 *
 * @param rawBody the exact bytes or text that will be sent
 * @param secret the endpoint's whole `whsec_…` secret (used as the HMAC key as-is, not base64-decoded)
 * @param t unix seconds (default: now)
 * @example signWebhook('{"id":"evt_1"}', 'whsec_abc', 1700000000) // 't=1700000000,v1=…'
 */
export function signWebhook(rawBody: string | Uint8Array, secret: string, t: number = Math.floor(Date.now() / 1000)): string {
  if (typeof secret !== 'string' || secret.length === 0) throw new TypeError('signWebhook: secret must be a non-empty string')
  if (!Number.isSafeInteger(t) || t < 0 || t > 999_999_999_999) throw new TypeError('signWebhook: t must be unix seconds')
  return `t=${t},v1=${hmacHex(rawBody, secret, t)}`
}

/**
 * Verifies an `SVC-Signature` header against the raw body as received (do not re-serialize parsed JSON).
 * Rejects a signature mismatch, a timestamp older than `toleranceSeconds` and one more than `toleranceSeconds` in the
 * future; compares in constant time; accepts any of several `v1` entries, under any of up to 10 secrets.
 *
 * @example
 * const r = verifyWebhook(rawBody, req.headers['svc-signature'], process.env.WHSEC!)
 * if (!r.ok) return res.status(400).end()
 * // while switching to a rotated secret: verifyWebhook(rawBody, header, [newSecret, oldSecret])
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  secret: string | readonly string[],
  options: { toleranceSeconds?: number; now?: () => number } = {},
): WebhookVerifyResult {
  // several secrets: the new and the old one while a receiver switches after a rotation (the service signs with the
  // current one only, so a delivery signed just before the rotation may still arrive, or be retried, signed with the old)
  const secrets = typeof secret === 'string' ? [secret] : [...secret]
  if (secrets.length === 0 || secrets.length > 10 || secrets.some((s) => typeof s !== 'string' || s.length === 0))
    throw new TypeError('verifyWebhook: secret must be a non-empty string or an array of 1 to 10 of them')
  if (typeof header !== 'string' || header.length === 0 || header.length > 4096) return { ok: false, error: 'malformed_header' }
  let t: number | null = null
  const candidates: string[] = []
  for (const part of header.split(',')) {
    const eq = part.indexOf('=')
    if (eq <= 0) return { ok: false, error: 'malformed_header' }
    const key = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    if (key === 't') {
      if (!/^\d{1,12}$/.test(value) || t !== null) return { ok: false, error: 'malformed_header' }
      t = Number(value)
    } else if (key === 'v1') {
      candidates.push(value)
    }
  }
  if (t === null) return { ok: false, error: 'malformed_header' }
  if (candidates.length === 0) return { ok: false, error: 'no_signature' }
  let match = false
  for (const key of secrets) {
    const expected = Buffer.from(hmacHex(rawBody, key, t), 'utf8')
    for (const c of candidates) {
      const got = Buffer.from(c, 'utf8')
      // Compare every candidate with every secret (no early exit) in constant time for equal lengths.
      if (got.length === expected.length && timingSafeEqual(got, expected)) match = true
    }
  }
  if (!match) return { ok: false, error: 'signature_mismatch' }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  const now = Math.floor((options.now ? options.now() : Date.now()) / 1000)
  if (now - t > tolerance) return { ok: false, error: 'timestamp_too_old' }
  if (t - now > tolerance) return { ok: false, error: 'timestamp_in_future' }
  return { ok: true, timestamp: t }
}

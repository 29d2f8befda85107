/**
 * Authentication and authorisation of a request: the bearer key is parsed, its record read from the store (no
 * cache, so a revocation holds from the next request), its hash compared in constant time, then the org's state and
 * the route's scope are checked.
 *
 * Order of the answers: 401 UNAUTHORIZED (no, malformed, unknown, revoked key, a key of the wrong mode, or two keys) before
 * 403 ACCOUNT_SUSPENDED before 403 FORBIDDEN_SCOPE.
 */
import { RiskcheckError } from '../errors.js'
import type { Scope } from '../schema.js'
import type { ListIndex } from '../lists/compile.js'
import type { Policy } from '../scoring/rules.js'
import { bearerToken, parseApiKey, verifyApiKey } from '../accounts/keys.js'
import type { ApiKeyRecord, AuthRecord } from '../accounts/types.js'
import type { Store } from './store/contracts/store.js'

/** The authenticated caller of a request. */
export interface RequestAuth {
  key: ApiKeyRecord
  orgId: string
  mode: 'live' | 'test'
  /** Requests a second of this key: 10 for test keys, the org's plan rate (or override) for live keys. */
  ratePerSecond: number
  suspended: boolean
  /**
   * The org's own scoring policy version as the auth read returned it (undefined when the store does not read it
   * with the key); after the server resolved it, the version in force (null: the service's policy).
   */
  policyVersion?: string | null
  /** The scoring policy of this request (set by the server after authentication; ./org-policies.ts). */
  policy?: Policy
  /** The org's balance and period end as the auth read found them (when the store reads them with the key). */
  credits?: { balance?: number; periodEnd?: number }
  /** The version of the org's lists in the key's mode as the auth read returned it (undefined: not read with the key). */
  listsVersion?: number | null
  /** The version of the org's outcomes in the key's mode as the auth read returned it (undefined: not read with the key). */
  outcomesVersion?: number | null
  /** The org's compiled lists of this request (set by the server for lookups; null: none, the instance's apply). */
  lists?: ListIndex | null
}

/**
 * Finds and verifies the key of an Authorization header (every value, when the request sent it more than once).
 * Returns the caller, or throws UNAUTHORIZED. Does not check suspension or scopes ({@link authorize} does, after rate
 * limiting).
 */
export async function authenticate(
  store: Store,
  header: string | string[] | undefined,
  hashSecret: string,
  testRatePerSecond: number,
): Promise<RequestAuth> {
  // two keys would leave which one pays to chance (Node keeps the first): none of them is used
  if (Array.isArray(header)) throw new RiskcheckError('UNAUTHORIZED', 'Send one Authorization header.')
  const token = bearerToken(header)
  if (token === undefined) {
    // a header sent but not of that form (too long, another scheme) is not a missing one
    if (typeof header === 'string' && header.trim() !== '') throw new RiskcheckError('UNAUTHORIZED', 'Invalid Authorization header: send `Authorization: Bearer <key>` with an API key.')
    throw new RiskcheckError('UNAUTHORIZED', 'Missing API key: send `Authorization: Bearer <key>`.')
  }
  const parsed = parseApiKey(token)
  const record: AuthRecord | null = parsed ? await store.getAuth(parsed.id) : null
  if (!parsed || !record || record.key.mode !== parsed.mode || !verifyApiKey(token, record.key.hash, hashSecret)) {
    throw new RiskcheckError('UNAUTHORIZED', 'Invalid API key.')
  }
  if (record.key.revokedAt !== null) throw new RiskcheckError('UNAUTHORIZED', 'This API key has been revoked.')
  return {
    key: record.key,
    orgId: record.org.id,
    mode: record.key.mode,
    ratePerSecond: record.key.mode === 'test' ? testRatePerSecond : record.org.ratePerSecond,
    suspended: record.org.suspended,
    ...(record.org.policyVersion !== undefined ? { policyVersion: record.org.policyVersion } : {}),
    ...(record.org.listsVersion !== undefined ? { listsVersion: record.org.listsVersion } : {}),
    ...(record.org.outcomesVersion !== undefined ? { outcomesVersion: record.org.outcomesVersion } : {}),
    ...(record.org.balance !== undefined ? { credits: { balance: record.org.balance, periodEnd: record.org.periodEnd } } : {}),
  }
}

/** Throws ACCOUNT_SUSPENDED or FORBIDDEN_SCOPE when the caller may not use a route needing `scope`. */
export function authorize(auth: RequestAuth, scope: Scope): void {
  if (auth.suspended) throw new RiskcheckError('ACCOUNT_SUSPENDED', 'This account is suspended; contact support.')
  if (!auth.key.scopes.includes(scope)) {
    throw new RiskcheckError('FORBIDDEN_SCOPE', `This API key lacks the \`${scope}\` scope.`)
  }
}

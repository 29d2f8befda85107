/**
 * API keys: `svc_live_…` / `svc_test_…` followed by a 12-character key id and a 40-character secret (base62).
 *
 *   svc_live_ 7hQ2mZ0aK1pB 4Xr…(40)
 *             └ key id ──┘ └ secret ┘
 *
 * The key id is not secret: it finds the stored record (`key_7hQ2mZ0aK1pB`) without scanning. Only a keyed hash
 * (HMAC-SHA256 with the store's key-hash secret) of the whole key is stored, compared in constant time. A lost key
 * cannot be recovered, only replaced.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { SCOPES, type Scope } from '../schema.js'
import type { AccountStore, ApiKeyRecord } from './types.js'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const ID_LENGTH = 12
const SECRET_LENGTH = 40
/** Longest Authorization header value looked at (anything longer is rejected before parsing). */
const MAX_HEADER = 200
const KEY_PATTERN = /^svc_(live|test)_([0-9A-Za-z]{12})[0-9A-Za-z]{40}$/

/** Scopes a new key gets unless told otherwise (docs/service.md, keys: lookup, bulk, account:read). */
export const DEFAULT_SCOPES: readonly Scope[] = ['lookup', 'bulk', 'account:read']

/** Random base62 text (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = ''
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62]
    }
  }
  return out
}

/** A newly generated key: the secret (shown once) and its record id. */
export interface GeneratedKey {
  /** `key_` + the key id part. */
  id: string
  /** The whole key, e.g. `svc_live_…`. Never stored. */
  secret: string
  mode: 'live' | 'test'
}

/** Generates a new key of `mode`. */
export function generateApiKey(mode: 'live' | 'test'): GeneratedKey {
  const idPart = randomBase62(ID_LENGTH)
  return { id: `key_${idPart}`, secret: `svc_${mode}_${idPart}${randomBase62(SECRET_LENGTH)}`, mode }
}

/**
 * Parses a bearer key into its mode and record id; undefined when it is not one of ours (no hashing is done for
 * strings that cannot be a key).
 */
export function parseApiKey(key: string): { mode: 'live' | 'test'; id: string } | undefined {
  if (key.length !== 9 + ID_LENGTH + SECRET_LENGTH) return undefined
  const m = KEY_PATTERN.exec(key)
  if (!m) return undefined
  return { mode: m[1] as 'live' | 'test', id: `key_${m[2]}` }
}

/** The token of an `Authorization: Bearer <key>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (typeof header !== 'string' || header.length > MAX_HEADER) return undefined
  const space = header.indexOf(' ')
  if (space < 0 || header.slice(0, space).toLowerCase() !== 'bearer') return undefined
  const token = header.slice(space + 1).trim()
  return token === '' ? undefined : token
}

/** The stored hash of a key: hex HMAC-SHA256 keyed with `hashSecret`. */
export function hashApiKey(key: string, hashSecret: string): string {
  return createHmac('sha256', hashSecret).update(key, 'utf8').digest('hex')
}

/** Whether `key` matches `storedHash`, compared in constant time. */
export function verifyApiKey(key: string, storedHash: string, hashSecret: string): boolean {
  const a = Buffer.from(hashApiKey(key, hashSecret), 'hex')
  const b = Buffer.from(storedHash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * Parses a comma-separated scope list (`lookup,bulk`); throws a RangeError naming an unknown scope.
 *
 * @example parseScopes('lookup, account:read') // ['lookup', 'account:read']
 */
export function parseScopes(list: string): Scope[] {
  const out: Scope[] = []
  for (const raw of list.split(',')) {
    const s = raw.trim()
    if (s === '') continue
    if (!(SCOPES as readonly string[]).includes(s)) throw new RangeError(`unknown scope "${s}" (known: ${SCOPES.join(', ')})`)
    if (!out.includes(s as Scope)) out.push(s as Scope)
  }
  return out
}

/** Options of {@link issueApiKey}. */
export interface IssueKeyOptions {
  orgId: string
  mode?: 'live' | 'test'
  scopes?: readonly Scope[]
  name?: string
}

/**
 * Creates a key for an org and stores its hash. Returns the record and the secret key — the only time the secret
 * exists outside the caller's hands. Throws a RangeError when the org does not exist.
 *
 * @example
 * const { secret } = await issueApiKey(store, { orgId: org.id, mode: 'test' }, Date.now())
 */
export async function issueApiKey(
  store: AccountStore,
  options: IssueKeyOptions,
  nowMs: number,
): Promise<{ key: ApiKeyRecord; secret: string }> {
  const org = await store.getOrg(options.orgId, nowMs)
  if (!org) throw new RangeError(`no org ${options.orgId}`)
  const mode = options.mode ?? 'live'
  const generated = generateApiKey(mode)
  const key: ApiKeyRecord = {
    id: generated.id,
    orgId: org.id,
    name: options.name ?? `${mode} key`,
    mode,
    scopes: [...(options.scopes ?? DEFAULT_SCOPES)],
    hash: hashApiKey(generated.secret, await store.keyHashSecret()),
    last4: generated.secret.slice(-4),
    createdAt: nowMs,
    revokedAt: null,
    lastUsedAt: null,
  }
  await store.insertKey(key)
  return { key, secret: generated.secret }
}

/**
 * Velocity for embedded use: each answer records its IP, network, email domain, normalised email and phone in a
 * counter store, as keyed hashes only, and reports the checks of the last hour and day that had each
 * (`details.velocity`); test mode counts apart. The hashing: docs/decisions.md, "Lists and velocity" (velocity keys).
 */
import { createHmac, randomBytes } from 'node:crypto'
import { asciiDomain, canonicalEmailOf } from '../checks/email/canonical.js'
import { VELOCITY_KINDS, type Velocity, type VelocityKind } from '../schema.js'
import { formatIpv4, formatIpv6Words, parseIp, type ParsedIp } from '../sources/ip/parse.js'
import { sipHash128Words, sipHash64Utf16, sipKey, type SipKey } from './siphash.js'
import { DAY_MS, type VelocityStore, type WindowCount } from './store.js'
import { TagStore } from './tag-store.js'

/** Options of velocity (`createRiskcheck({ velocity })`). */
export interface VelocityOptions {
  /**
   * The key of the hashes (at least 16 characters, or bytes). Every instance sharing a store must use the same one;
   * required with a `store`, a random one per instance otherwise.
   */
  secret?: string | Uint8Array
  /** Where counts live (default: in memory, this process only). `createRedisVelocityStore` shares them. */
  store?: VelocityStore
  /** Longest wait for the store, in ms (default 1000); past it the answer has `velocity: null` and is partial. */
  timeoutMs?: number
}

/** The value of each kind found in one answer (null: none). */
export type VelocityValues = Partial<Record<VelocityKind, string>>

/** Counts velocity for answers. */
export interface VelocityCounter {
  /**
   * Records `values` at `nowMs` and answers the counts (null when the store failed or did not answer in time); at once
   * when the store answers synchronously, else a promise. `checkId`: the store's (a retry of one check counts once).
   */
  count(values: VelocityValues, test: boolean, nowMs: number, checkId?: string): Velocity | null | Promise<Velocity | null>
  close(): Promise<void>
}

/** The network of an address: its /24 (IPv4) or /48 (IPv6), as CIDR text. */
export function networkOf(address: string): string | null {
  const ip = parseIp(address)
  return ip ? networkOfParsed(ip) : null
}

function networkOfParsed(ip: ParsedIp): string {
  if (ip.version === 4) return `${formatIpv4(ip.value - (ip.value % 256))}/24`
  const w = ip.words
  return `${formatIpv6Words([w[0], (w[1] & 0xffff0000) >>> 0, 0, 0])}/48`
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)

/** The IP lookup's prepared input when it is the address of `details` (saves parsing it again), else a parse. */
function addressOf(details: Record<string, any>, input: unknown): ParsedIp | null {
  const p = input as ParsedIp | null | undefined
  if (p && typeof p === 'object' && (p.version === 4 || p.version === 6) && p.address === details.ip) return p
  return parseIp(details.ip)
}

/**
 * Adds the values of one lookup's details (lookup `type`) to `out`. `input` may be the check's prepared input (used
 * only when it is the parsed address of an IP answer).
 */
export function velocityValuesOf(type: string, details: unknown, out: VelocityValues = {}, input?: unknown): VelocityValues {
  if (details === null || typeof details !== 'object') return out
  const d = details as Record<string, any>
  if (type === 'ip') {
    const ip = addressOf(d, input)
    if (ip) {
      out.ip = ip.address
      out.network = networkOfParsed(ip)
    }
  } else if (type === 'email') {
    const domain = d.syntax_valid === true ? asciiDomain(d.domain) : null
    if (domain !== null && typeof d.local_part === 'string') {
      out.email = canonicalEmailOf(d.local_part, domain)
      if (d.is_free_provider !== true) out.email_domain = domain
    }
  } else if (type === 'phone' || type === 'phone_type') {
    const e164 = str(d.e164)
    if (e164 !== null) out.phone = e164
  }
  return out
}

const KIND_TAG: Record<VelocityKind, string> = { ip: 'i', network: 'n', email_domain: 'd', email: 'e', phone: 'p' }

/** The SipHash key of a secret: the first 16 bytes of HMAC-SHA-256(secret, a fixed label). */
export function velocityKeyOf(secret: Uint8Array): SipKey {
  return sipKey(createHmac('sha256', secret).update('riskcheck velocity key').digest().subarray(0, 16))
}

const B64URL = Array.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_', (c) => c.charCodeAt(0))

/** Code units of the base64url form (no padding) of the 16 bytes of `tag`, appended to `into` from `at`. */
function base64url16(tag: Uint8Array, into: number[], at: number): void {
  for (let i = 0; i < 15; i += 3) {
    const n = (tag[i]! << 16) | (tag[i + 1]! << 8) | tag[i + 2]!
    into[at++] = B64URL[n >>> 18]!
    into[at++] = B64URL[(n >>> 12) & 63]!
    into[at++] = B64URL[(n >>> 6) & 63]!
    into[at++] = B64URL[n & 63]!
  }
  into[at++] = B64URL[tag[15]! >>> 2]!
  into[at] = B64URL[(tag[15]! & 3) << 4]!
}

/** Writes `value` in UTF-8 to `buf` from `at` (room for 3 bytes a code unit); the bytes written. ASCII is copied by hand. */
function utf8Into(value: string, buf: Uint8Array, at: number, encoder: InstanceType<typeof TextEncoder>): number {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c > 0x7f) return encoder.encodeInto(value, buf.subarray(at)).written
    buf[at + i] = c
  }
  return value.length
}

/**
 * The tag of one value for a store's key: SipHash-2-4-128(key, `<mode> NUL <kind> NUL <value>` in UTF-8) as four
 * 32-bit words, written to `out`. One buffer serves every call.
 */
function createTagger(key: SipKey): (space: 'l' | 't', kind: VelocityKind, value: string, out: Int32Array) => void {
  let buf = new Uint8Array(256)
  const encoder = new TextEncoder()
  // the message's head, `<mode> NUL <kind> NUL`, as bytes, made once per mode and kind
  const headsOf = (space: string) => new Map(VELOCITY_KINDS.map((k) => [k, Uint8Array.from(`${space}\u0000${k}\u0000`, (c) => c.charCodeAt(0))]))
  const live = headsOf('l')
  const test = headsOf('t')
  return (space, kind, value, out) => {
    const head = (space === 'l' ? live : test).get(kind) as Uint8Array
    const most = head.length + value.length * 3
    if (most > buf.length) buf = new Uint8Array(Math.max(most, buf.length * 2))
    for (let i = 0; i < head.length; i++) buf[i] = head[i]!
    sipHash128Words(key, buf, head.length + utf8Into(value, buf, head.length, encoder), out)
  }
}

/**
 * The in-process tag of one value: SipHash-1-3-64(the key of its mode and kind, `<value>` in UTF-16LE, read from its
 * code units: nothing to encode first) as two 32-bit words in `out[at]`, `out[at + 1]`. Mode and kind are in the key (one per
 * pair, derived from the secret once), not in the message: fewer words to absorb. These tags never leave the process
 * (docs/decisions.md, "Lists and velocity", velocity keys).
 */
function createOwnTagger(secret: Uint8Array): (space: 'l' | 't', kind: VelocityKind, value: string, out: Int32Array, at: number) => void {
  const keyOf = (space: string, kind: string) => sipKey(createHmac('sha256', secret).update(`riskcheck velocity tag\u0000${space}\u0000${kind}`).digest().subarray(0, 16))
  const keysOf = (space: string) => new Map(VELOCITY_KINDS.map((k) => [k, keyOf(space, k)]))
  const live = keysOf('l')
  const test = keysOf('t')
  return (space, kind, value, out, at) => sipHash64Utf16((space === 'l' ? live : test).get(kind) as SipKey, value, out, 1, 3, at)
}

/**
 * The store key of one value: the mode (`l` live, `t` test), the kind's tag, `:` and the base64url of its tag
 * (SipHash-2-4-128(key, `<mode> NUL <kind> NUL <value>` in UTF-8)).
 */
export function createVelocityHasher(key: SipKey): (space: 'l' | 't', kind: VelocityKind, value: string) => string {
  const tagOf = createTagger(key)
  const words = new Int32Array(4)
  const tag = new Uint8Array(16)
  const codes: number[] = new Array(25).fill(0)
  return (space, kind, value) => {
    tagOf(space, kind, value, words)
    for (let i = 0; i < 16; i++) tag[i] = (words[i >>> 2]! >>> (8 * (i & 3))) & 0xff
    codes[0] = space.charCodeAt(0)
    codes[1] = KIND_TAG[kind].charCodeAt(0)
    codes[2] = 0x3a // ':'
    base64url16(tag, codes, 3)
    return String.fromCharCode.apply(null, codes)
  }
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0

/** Checks `options` and creates the counter. Throws a TypeError naming the bad option. */
export function createVelocityCounter(options: VelocityOptions): VelocityCounter {
  if (options === null || typeof options !== 'object') throw new TypeError('riskcheck: option `velocity` must be an object or true')
  for (const k of Object.keys(options))
    if (!['secret', 'store', 'timeoutMs'].includes(k)) throw new TypeError(`riskcheck: option \`velocity.${k}\` is not an option (known: secret, store, timeoutMs)`)
  const { secret, store: given, timeoutMs = 1000 } = options
  if (given !== undefined && (given === null || typeof given.hit !== 'function')) throw new TypeError('riskcheck: option `velocity.store` must have a hit(keys, nowMs) method')
  if (secret === undefined && given !== undefined)
    throw new TypeError('riskcheck: option `velocity.secret` is required with `velocity.store` (every instance sharing the store needs the same one)')
  if (secret !== undefined && !((typeof secret === 'string' || secret instanceof Uint8Array) && secret.length >= 16))
    throw new TypeError('riskcheck: option `velocity.secret` must be a string of at least 16 characters, or as many bytes')
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 60_000) throw new TypeError('riskcheck: option `velocity.timeoutMs` must be a whole number from 1 to 60000')
  const secretBytes = secret === undefined ? randomBytes(32) : typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret
  // without a store of the caller's, counts live in this process, by tag (no store key string is made); the tags
  // never leave it (docs/decisions.md, "Lists and velocity", velocity keys)
  if (given === undefined) return ownCounter(createOwnTagger(secretBytes))
  const key = velocityKeyOf(secretBytes)
  const hash = createVelocityHasher(key)
  const store = given
  /** The counts of `kinds`; null (a failed store) when the store's answer is not a count for each key. */
  const fill = (kinds: readonly VelocityKind[], counts: unknown): Velocity | null => {
    if (!Array.isArray(counts) || counts.length !== kinds.length) return null
    const velocity: Velocity = { ip: null, network: null, email_domain: null, email: null, phone: null }
    for (let i = 0; i < kinds.length; i++) {
      const c = counts[i] as WindowCount | null | undefined
      if (!c || !isCount(c.hour) || !isCount(c.day)) return null
      // a store's counts are copied (it may reuse its objects)
      velocity[kinds[i] as VelocityKind] = { hour: c.hour, day: c.day }
    }
    return velocity
  }
  const waitFor = async (kinds: readonly VelocityKind[], got: Promise<WindowCount[]>): Promise<Velocity | null> => {
    let timer: NodeJS.Timeout | undefined
    try {
      const counts = await Promise.race([
        got,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('velocity store timed out')), timeoutMs)
          timer.unref?.()
        }),
      ])
      return fill(kinds, counts)
    } catch {
      return null
    } finally {
      if (timer) clearTimeout(timer)
    }
  }

  return {
    count(values, test, nowMs, checkId) {
      const space = test ? 't' : 'l'
      const kinds: VelocityKind[] = []
      const keys: string[] = []
      for (const k of VELOCITY_KINDS) {
        const v = values[k]
        if (v === undefined) continue
        kinds.push(k)
        keys.push(hash(space, k, v))
      }
      if (kinds.length === 0) return { ip: null, network: null, email_domain: null, email: null, phone: null }
      let got: WindowCount[] | Promise<WindowCount[]>
      try {
        got = checkId === undefined ? store.hit(keys, nowMs) : store.hit(keys, nowMs, checkId)
      } catch {
        return null
      }
      // a store answering synchronously (the memory store) is answered without a promise
      return Array.isArray(got) ? fill(kinds, got) : waitFor(kinds, got)
    },
    async close() {
      await store.close?.()
    },
  }
}

/** Check ids remembered per tag (a retried check counts once) at most; the oldest are forgotten first. */
const MAX_CHECK_IDS = 1_000_000

/** The counter over its own in-memory store ({@link TagStore}): answers at once, never fails. */
function ownCounter(tagOf: ReturnType<typeof createOwnTagger>): VelocityCounter {
  const tags = new TagStore()
  // the tags of one check's values, two words each, in kind order
  const words = new Int32Array(2 * VELOCITY_KINDS.length)
  // (check id NUL tag) → when it was recorded, oldest first: a tag recorded again under its id is counted, not recorded
  const ids = new Map<string, number>()
  const once = (values: VelocityValues, test: boolean, nowMs: number, checkId: string): Velocity => {
    const space = test ? 't' : 'l'
    const velocity: Velocity = { ip: null, network: null, email_domain: null, email: null, phone: null }
    for (const kind of VELOCITY_KINDS) {
      const value = values[kind]
      if (value === undefined) continue
      tagOf(space, kind, value, words, 0)
      const w0 = words[0] as number
      const w1 = words[1] as number
      const id = `${checkId}\u0000${w0}:${w1}`
      const at = ids.get(id)
      if (at !== undefined && at > nowMs - DAY_MS) velocity[kind] = tags.peek(w0, w1, nowMs)
      else {
        ids.delete(id)
        ids.set(id, nowMs)
        velocity[kind] = tags.hit(w0, w1, nowMs)
      }
    }
    tags.evict(nowMs)
    for (const [id, at] of ids) {
      if (at > nowMs - DAY_MS && ids.size <= MAX_CHECK_IDS) break
      ids.delete(id)
    }
    return velocity
  }
  return {
    count(values, test, nowMs, checkId) {
      if (checkId !== undefined) return once(values, test, nowMs, checkId)
      const space = test ? 't' : 'l'
      // each kind by name (one property access site each, where a loop over the kinds makes every access a keyed one);
      // every tag first, then the store's reads of all of them at once (their cache misses overlap), then the hits
      const { ip, network, email_domain, email, phone } = values
      let n = 0
      if (ip !== undefined) tagOf(space, 'ip', ip, words, 2 * n++)
      if (network !== undefined) tagOf(space, 'network', network, words, 2 * n++)
      if (email_domain !== undefined) tagOf(space, 'email_domain', email_domain, words, 2 * n++)
      if (email !== undefined) tagOf(space, 'email', email, words, 2 * n++)
      if (phone !== undefined) tagOf(space, 'phone', phone, words, 2 * n++)
      tags.readAhead(words, n)
      let k = 0
      const velocity: Velocity = { ip: null, network: null, email_domain: null, email: null, phone: null }
      if (ip !== undefined) velocity.ip = tags.hitAt(words, k++, nowMs)
      if (network !== undefined) velocity.network = tags.hitAt(words, k++, nowMs)
      if (email_domain !== undefined) velocity.email_domain = tags.hitAt(words, k++, nowMs)
      if (email !== undefined) velocity.email = tags.hitAt(words, k++, nowMs)
      if (phone !== undefined) velocity.phone = tags.hitAt(words, k++, nowMs)
      tags.evict(nowMs)
      return velocity
    },
    async close() {},
  }
}

/**
 * SipHash-2-4 (or -1-3) with a 128-bit or 64-bit tag (Aumasson and Bernstein's keyed pseudo-random function for short inputs),
 * in 32-bit halves: no BigInt, nothing allocated per call (the tag goes to a buffer the caller gives). Velocity hashes its values with it
 * (docs/decisions.md, "Lists and velocity", velocity keys).
 */

/** A 128-bit SipHash key as four little-endian 32-bit words (k0 low, k0 high, k1 low, k1 high), as signed int32. */
export type SipKey = readonly [number, number, number, number]

/** The key of 16 bytes (bytes 0–7 are k0, 8–15 k1, little-endian, as in the reference implementation). */
export function sipKey(bytes: Uint8Array): SipKey {
  if (bytes.length !== 16) throw new RangeError('a SipHash key has 16 bytes')
  const w = (i: number) => bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)
  return [w(0), w(4), w(8), w(12)]
}

// The state v0..v3 as (high, low) 32-bit halves: v0h v0l v1h v1l v2h v2l v3h v3l. A typed array, so that no
// intermediate value is ever boxed.
const V = new Int32Array(8)

/** `n` SipRounds on V. Unsigned comparisons give the carries of the 64-bit additions. */
function rounds(n: number): void {
  let v0h = V[0]!, v0l = V[1]!, v1h = V[2]!, v1l = V[3]!, v2h = V[4]!, v2l = V[5]!, v3h = V[6]!, v3l = V[7]!
  for (let r = 0; r < n; r++) {
    let lo: number, hi: number
    // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
    lo = (v0l + v1l) | 0
    v0h = (v0h + v1h + (lo >>> 0 < v0l >>> 0 ? 1 : 0)) | 0
    v0l = lo
    hi = (v1h << 13) | (v1l >>> 19)
    v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l
    v1h = hi ^ v0h
    hi = v0h
    v0h = v0l
    v0l = hi
    // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
    lo = (v2l + v3l) | 0
    v2h = (v2h + v3h + (lo >>> 0 < v2l >>> 0 ? 1 : 0)) | 0
    v2l = lo
    hi = (v3h << 16) | (v3l >>> 16)
    v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l
    v3h = hi ^ v2h
    // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
    lo = (v0l + v3l) | 0
    v0h = (v0h + v3h + (lo >>> 0 < v0l >>> 0 ? 1 : 0)) | 0
    v0l = lo
    hi = (v3h << 21) | (v3l >>> 11)
    v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l
    v3h = hi ^ v0h
    // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    lo = (v2l + v1l) | 0
    v2h = (v2h + v1h + (lo >>> 0 < v2l >>> 0 ? 1 : 0)) | 0
    v2l = lo
    hi = (v1h << 17) | (v1l >>> 15)
    v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l
    v1h = hi ^ v2h
    hi = v2h
    v2h = v2l
    v2l = hi
  }
  V[0] = v0h
  V[1] = v0l
  V[2] = v1h
  V[3] = v1l
  V[4] = v2h
  V[5] = v2l
  V[6] = v3h
  V[7] = v3l
}

/** Absorbs one 64-bit message word (low and high halves) in `c` rounds. */
function compress(ml: number, mh: number, c: number): void {
  V[7] = V[7]! ^ ml
  V[6] = V[6]! ^ mh
  rounds(c)
  V[1] = V[1]! ^ ml
  V[0] = V[0]! ^ mh
}

const word = (b: Uint8Array, i: number): number => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)

/**
 * SipHash-2-4-128 of `bytes[0..length)` under `key`, written to `out` (16 bytes, the reference implementation's
 * byte order). `bytes` may be longer than `length` (a reused buffer). `c`, `d`: as in {@link sipHash128Words}.
 */
export function sipHash128(key: SipKey, bytes: Uint8Array, length: number, out: Uint8Array, c = 2, d = 4): void {
  sipHash128Words(key, bytes, length, WORDS, c, d)
  for (let k = 0; k < 4; k++) put(out, 4 * k, WORDS[k]!)
}

const WORDS = new Int32Array(4)

/**
 * {@link sipHash128} as four 32-bit words (`out[k]` holds bytes 4k … 4k+3 of the tag, little-endian), as signed
 * int32. `c` and `d`: the rounds per message word and at the end (SipHash-c-d; 2 and 4 unless told).
 */
export function sipHash128Words(key: SipKey, bytes: Uint8Array, length: number, out: Int32Array, c = 2, d = 4): void {
  absorb(key, bytes, length, c, 0xee)
  squeeze(5, 0xee, d, out, 0) // v2 ^= 0xee
  squeeze(3, 0xdd, d, out, 2) // v1 ^= 0xdd
}

/**
 * SipHash-c-d with a 64-bit tag (the original SipHash) of `bytes[0..length)` under `key`, as two 32-bit words
 * (`out[0]` bytes 0–3, `out[1]` bytes 4–7, little-endian), as signed int32. Half the finalisation of the 128-bit
 * form: for tags compared only among the keys of one process (collisions among a million keys: about 3 in 10^8).
 */
export function sipHash64Words(key: SipKey, bytes: Uint8Array, length: number, out: Int32Array, c = 2, d = 4): void {
  absorb(key, bytes, length, c, 0)
  squeeze(5, 0xff, d, out, 0) // v2 ^= 0xff
}

/** One finalisation: the low half `V[i]` xored with `x`, `d` rounds, then v0 ^ v1 ^ v2 ^ v3 to `out[at]` (low), `out[at + 1]`. */
function squeeze(i: number, x: number, d: number, out: Int32Array, at: number): void {
  V[i] = V[i]! ^ x
  rounds(d)
  out[at] = V[1]! ^ V[3]! ^ V[5]! ^ V[7]!
  out[at + 1] = V[0]! ^ V[2]! ^ V[4]! ^ V[6]!
}

/**
 * SipHash-c-d-64 ({@link sipHash64Words}) of the UTF-16LE bytes of `text`, read from its code units: no byte buffer to
 * fill first. Equal to `sipHash64Words` over `Buffer.from(text, 'utf16le')`.
 */
export function sipHash64Utf16(key: SipKey, text: string, out: Int32Array, c = 2, d = 4): void {
  init(key, 0)
  const n = text.length
  const whole = n - (n % 4)
  for (let i = 0; i < whole; i += 4) {
    compress(text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16), text.charCodeAt(i + 2) | (text.charCodeAt(i + 3) << 16), c)
  }
  // the last word: the remaining code units (at most 3), and the length in bytes (mod 256) in the top byte
  const rest = n - whole
  const ml = rest === 0 ? 0 : text.charCodeAt(whole) | (rest > 1 ? text.charCodeAt(whole + 1) << 16 : 0)
  const mh = (rest > 2 ? text.charCodeAt(whole + 2) : 0) | (((2 * n) & 0xff) << 24)
  compress(ml, mh, c)
  squeeze(5, 0xff, d, out, 0) // v2 ^= 0xff
}

/** Sets the state from `key` (`wide`: 0xee for a 128-bit tag, 0 for 64). */
function init(key: SipKey, wide: number): void {
  const [k0l, k0h, k1l, k1h] = key
  V[0] = k0h ^ 0x736f6d65
  V[1] = k0l ^ 0x70736575
  V[2] = k1h ^ 0x646f7261
  V[3] = k1l ^ 0x6e646f6d ^ wide
  V[4] = k0h ^ 0x6c796765
  V[5] = k0l ^ 0x6e657261
  V[6] = k1h ^ 0x74656462
  V[7] = k1l ^ 0x79746573
}

/** Sets the state from `key` (`wide`: as in {@link init}) and absorbs the message in `c` rounds a word. */
function absorb(key: SipKey, bytes: Uint8Array, length: number, c: number, wide: number): void {
  init(key, wide)
  const whole = length - (length % 8)
  for (let i = 0; i < whole; i += 8) compress(word(bytes, i), word(bytes, i + 4), c)
  // the last word: the remaining bytes, and the length (mod 256) in the top byte
  let ml = 0
  let mh = (length & 0xff) << 24
  for (let i = whole; i < length; i++) {
    const b = bytes[i]!
    const at = i - whole
    if (at < 4) ml |= b << (8 * at)
    else mh |= b << (8 * (at - 4))
  }
  compress(ml, mh, c)
}

function put(out: Uint8Array, at: number, w: number): void {
  out[at] = w & 0xff
  out[at + 1] = (w >>> 8) & 0xff
  out[at + 2] = (w >>> 16) & 0xff
  out[at + 3] = (w >>> 24) & 0xff
}

/**
 * {@link sipHash64Utf16} with c = 1, d = 3 (SipHash-1-3-64), its state in local variables rather than a typed array
 * between rounds: the same tag, written to `out[at]`, `out[at + 1]`, in about half the time (the velocity counter
 * hashes five values a check with it).
 */
export function sipHash13Utf16(key: SipKey, text: string, out: Int32Array, at: number): void {
  const [k0l, k0h, k1l, k1h] = key
  let v0h = k0h ^ 0x736f6d65, v0l = k0l ^ 0x70736575, v1h = k1h ^ 0x646f7261, v1l = k1l ^ 0x6e646f6d
  let v2h = k0h ^ 0x6c796765, v2l = k0l ^ 0x6e657261, v3h = k1h ^ 0x74656462, v3l = k1l ^ 0x79746573
  const n = text.length
  const whole = n - (n % 4)
  // the message words (4 code units each, then the last with the length), one round each; then 3 rounds to finish
  const words = whole / 4 + 1
  for (let i = 0; i < words + 3; i++) {
    let ml = 0
    let mh = 0
    if (i < words) {
      const c = 4 * i
      if (c < whole) {
        ml = text.charCodeAt(c) | (text.charCodeAt(c + 1) << 16)
        mh = text.charCodeAt(c + 2) | (text.charCodeAt(c + 3) << 16)
      } else {
        const rest = n - whole
        ml = rest === 0 ? 0 : text.charCodeAt(whole) | (rest > 1 ? text.charCodeAt(whole + 1) << 16 : 0)
        mh = (rest > 2 ? text.charCodeAt(whole + 2) : 0) | (((2 * n) & 0xff) << 24)
      }
      v3l ^= ml
      v3h ^= mh
    } else if (i === words) v2l ^= 0xff
    let lo: number, hi: number
    lo = (v0l + v1l) | 0
    v0h = (v0h + v1h + (lo >>> 0 < v0l >>> 0 ? 1 : 0)) | 0
    v0l = lo
    hi = (v1h << 13) | (v1l >>> 19)
    v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l
    v1h = hi ^ v0h
    hi = v0h
    v0h = v0l
    v0l = hi
    lo = (v2l + v3l) | 0
    v2h = (v2h + v3h + (lo >>> 0 < v2l >>> 0 ? 1 : 0)) | 0
    v2l = lo
    hi = (v3h << 16) | (v3l >>> 16)
    v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l
    v3h = hi ^ v2h
    lo = (v0l + v3l) | 0
    v0h = (v0h + v3h + (lo >>> 0 < v0l >>> 0 ? 1 : 0)) | 0
    v0l = lo
    hi = (v3h << 21) | (v3l >>> 11)
    v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l
    v3h = hi ^ v0h
    lo = (v2l + v1l) | 0
    v2h = (v2h + v1h + (lo >>> 0 < v2l >>> 0 ? 1 : 0)) | 0
    v2l = lo
    hi = (v1h << 17) | (v1l >>> 15)
    v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l
    v1h = hi ^ v2h
    hi = v2h
    v2h = v2l
    v2l = hi
    if (i < words) {
      v0l ^= ml
      v0h ^= mh
    }
  }
  out[at] = v0l ^ v1l ^ v2l ^ v3l
  out[at + 1] = v0h ^ v1h ^ v2h ^ v3h
}

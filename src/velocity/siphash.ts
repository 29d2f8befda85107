/**
 * SipHash-c-d with a 128-bit or 64-bit tag (Aumasson and Bernstein's keyed pseudo-random function for short inputs) in
 * 32-bit halves, its state in local variables: no BigInt, nothing allocated per call (the tag goes to a buffer the
 * caller gives). Velocity hashes its values with it (docs/decisions.md, "Lists and velocity", velocity keys).
 */

/** A 128-bit SipHash key as four little-endian 32-bit words (k0 low, k0 high, k1 low, k1 high), as signed int32. */
export type SipKey = readonly [number, number, number, number]

/** The key of 16 bytes (bytes 0–7 are k0, 8–15 k1, little-endian, as in the reference implementation). */
export function sipKey(bytes: Uint8Array): SipKey {
  if (bytes.length !== 16) throw new RangeError('a SipHash key has 16 bytes')
  const w = (i: number) => bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)
  return [w(0), w(4), w(8), w(12)]
}

const NO_BYTES = new Uint8Array(0)

/**
 * SipHash-c-d of a message — the UTF-16LE bytes of `text` (read from its code units) or, with `text` null,
 * `bytes[0..length)` — under `key`; `wide`: the 128-bit tag (four words) else the 64-bit one (two), written from
 * `out[at]`, each word four bytes of the tag, little-endian, as signed int32. The rounds run in one loop: c per
 * message word, then d (and d more for the second half of a 128-bit tag). Unsigned comparisons give the carries of the
 * 64-bit additions.
 */
function sip(key: SipKey, text: string | null, bytes: Uint8Array, length: number, c: number, d: number, wide: boolean, out: Int32Array, at: number): void {
  const [k0l, k0h, k1l, k1h] = key
  let v0h = k0h ^ 0x736f6d65, v0l = k0l ^ 0x70736575, v1h = k1h ^ 0x646f7261, v1l = k1l ^ 0x6e646f6d ^ (wide ? 0xee : 0)
  let v2h = k0h ^ 0x6c796765, v2l = k0l ^ 0x6e657261, v3h = k1h ^ 0x74656462, v3l = k1l ^ 0x79746573
  const n = text === null ? length : 2 * text.length
  // message words of 8 bytes; the last holds the bytes left and, in its top byte, the length mod 256
  const words = (n >>> 3) + 1
  const absorbing = words * c
  const end = absorbing + (wide ? 2 * d : d)
  let ml = 0
  let mh = 0
  for (let i = 0, w = 0, r = 0; i < end; i++) {
    if (i < absorbing) {
      if (r === 0) {
        if (text !== null) {
          const u = 4 * w
          if (w < words - 1) {
            ml = text.charCodeAt(u) | (text.charCodeAt(u + 1) << 16)
            mh = text.charCodeAt(u + 2) | (text.charCodeAt(u + 3) << 16)
          } else {
            const rest = text.length - u
            ml = rest === 0 ? 0 : text.charCodeAt(u) | (rest > 1 ? text.charCodeAt(u + 1) << 16 : 0)
            mh = (rest > 2 ? text.charCodeAt(u + 2) : 0) | ((n & 0xff) << 24)
          }
        } else {
          const b = 8 * w
          if (w < words - 1) {
            ml = bytes[b]! | (bytes[b + 1]! << 8) | (bytes[b + 2]! << 16) | (bytes[b + 3]! << 24)
            mh = bytes[b + 4]! | (bytes[b + 5]! << 8) | (bytes[b + 6]! << 16) | (bytes[b + 7]! << 24)
          } else {
            ml = 0
            mh = (n & 0xff) << 24
            for (let k = b; k < n; k++) {
              if (k - b < 4) ml |= bytes[k]! << (8 * (k - b))
              else mh |= bytes[k]! << (8 * (k - b - 4))
            }
          }
        }
        v3l ^= ml
        v3h ^= mh
      }
    } else if (i === absorbing) v2l ^= wide ? 0xee : 0xff
    else if (i === absorbing + d) {
      // the first half of a 128-bit tag, then the second's d rounds
      out[at] = v0l ^ v1l ^ v2l ^ v3l
      out[at + 1] = v0h ^ v1h ^ v2h ^ v3h
      v1l ^= 0xdd
    }
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
    if (i < absorbing && ++r === c) {
      v0l ^= ml
      v0h ^= mh
      r = 0
      w++
    }
  }
  const o = wide ? at + 2 : at
  out[o] = v0l ^ v1l ^ v2l ^ v3l
  out[o + 1] = v0h ^ v1h ^ v2h ^ v3h
}

/**
 * SipHash-2-4-128 of `bytes[0..length)` under `key`, written to `out` (16 bytes, the reference implementation's
 * byte order). `bytes` may be longer than `length` (a reused buffer). `c`, `d`: as in {@link sipHash128Words}.
 */
export function sipHash128(key: SipKey, bytes: Uint8Array, length: number, out: Uint8Array, c = 2, d = 4): void {
  sip(key, null, bytes, length, c, d, true, WORDS, 0)
  for (let k = 0; k < 4; k++) put(out, 4 * k, WORDS[k]!)
}

const WORDS = new Int32Array(4)

/**
 * {@link sipHash128} as four 32-bit words (`out[k]` holds bytes 4k … 4k+3 of the tag, little-endian), as signed
 * int32. `c` and `d`: the rounds per message word and at the end (SipHash-c-d; 2 and 4 unless told).
 */
export function sipHash128Words(key: SipKey, bytes: Uint8Array, length: number, out: Int32Array, c = 2, d = 4): void {
  sip(key, null, bytes, length, c, d, true, out, 0)
}

/**
 * SipHash-c-d with a 64-bit tag (the original SipHash) of `bytes[0..length)` under `key`, as two 32-bit words
 * (`out[0]` bytes 0–3, `out[1]` bytes 4–7, little-endian), as signed int32. Half the finalisation of the 128-bit
 * form: for tags compared only among the keys of one process (collisions among a million keys: about 3 in 10^8).
 */
export function sipHash64Words(key: SipKey, bytes: Uint8Array, length: number, out: Int32Array, c = 2, d = 4): void {
  sip(key, null, bytes, length, c, d, false, out, 0)
}

/**
 * SipHash-c-d-64 ({@link sipHash64Words}) of the UTF-16LE bytes of `text`, read from its code units: no byte buffer to
 * fill first. Equal to `sipHash64Words` over `Buffer.from(text, 'utf16le')`. The tag goes to `out[at]`, `out[at + 1]`.
 */
export function sipHash64Utf16(key: SipKey, text: string, out: Int32Array, c = 2, d = 4, at = 0): void {
  sip(key, text, NO_BYTES, 0, c, d, false, out, at)
}

function put(out: Uint8Array, at: number, w: number): void {
  out[at] = w & 0xff
  out[at + 1] = (w >>> 8) & 0xff
  out[at + 2] = (w >>> 16) & 0xff
  out[at + 3] = (w >>> 24) & 0xff
}

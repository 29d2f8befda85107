import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { sipHash128, sipHash64Utf16, sipHash64Words, sipKey } from './siphash.js'

// The reference implementation's vectors (vectors_sip128): key 00 01 … 0f, message 00 01 … (length − 1).
const VECTORS: Record<number, string> = {
  0: 'a3817f04ba25a8e66df67214c7550293',
  1: 'da87c1d86b99af44347659119b22fc45',
  3: '9c70b60c5267a94e5f33b6b02985ed51',
  4: 'f88164c12d9c8faf7d0f6e7c7bcd5579',
  7: 'a1f1ebbed8dbc153c0b84aa61ff08239',
  8: '3b62a9ba6258f5610f83e264f31497b4',
  9: '264499060ad9baabc47f8b02bb6d71ed',
  15: '5493e99933b0a8117e08ec0f97cfc3d9',
  16: '6ee2a4ca67b054bbfd3315bf85230577',
  17: '473d06e8738db89854c066c47ae47740',
  31: '2939b0183223fafc1723de4f52c43d35',
  63: '5150d1772f50834a503e069a973fbd7c',
}

const seq = (n: number) => Uint8Array.from({ length: n }, (_, i) => i)

describe('sipHash128', () => {
  it('gives the reference vectors', () => {
    const key = sipKey(seq(16))
    const out = new Uint8Array(16)
    for (const [len, hex] of Object.entries(VECTORS)) {
      const n = Number(len)
      sipHash128(key, seq(n), n, out)
      expect(Buffer.from(out).toString('hex'), `length ${n}`).toBe(hex)
    }
  })

  it('reads only `length` bytes of a longer buffer', () => {
    const key = sipKey(seq(16))
    const a = new Uint8Array(16)
    const b = new Uint8Array(16)
    const long = seq(40)
    long.fill(0xff, 9)
    sipHash128(key, long, 9, a)
    sipHash128(key, seq(9), 9, b)
    expect(a).toEqual(b)
  })

  it('depends on the key', () => {
    const other = seq(16)
    other[15] = 0
    const a = new Uint8Array(16)
    const b = new Uint8Array(16)
    sipHash128(sipKey(seq(16)), seq(8), 8, a)
    sipHash128(sipKey(other), seq(8), 8, b)
    expect(a).not.toEqual(b)
  })

  it('refuses a key of another length', () => {
    expect(() => sipKey(seq(15))).toThrow(RangeError)
  })
})

/** SipHash-c-d-128 (or -64) in BigInt, written from the paper: the reference the 32-bit halves are held to for other rounds. */
function reference(key: Uint8Array, msg: Uint8Array, c: number, d: number, bits: 64 | 128 = 128): string {
  const M = (1n << 64n) - 1n
  const rotl = (x: bigint, b: bigint) => ((x << b) | (x >> (64n - b))) & M
  const le = (b: Uint8Array, at: number) => b.subarray(at, at + 8).reduceRight((x, v) => (x << 8n) | BigInt(v), 0n)
  const k0 = le(key, 0)
  const k1 = le(key, 8)
  let v0 = k0 ^ 0x736f6d6570736575n
  let v1 = k1 ^ 0x646f72616e646f6dn ^ (bits === 128 ? 0xeen : 0n)
  let v2 = k0 ^ 0x6c7967656e657261n
  let v3 = k1 ^ 0x7465646279746573n
  const round = () => {
    v0 = (v0 + v1) & M
    v1 = rotl(v1, 13n) ^ v0
    v0 = rotl(v0, 32n)
    v2 = (v2 + v3) & M
    v3 = rotl(v3, 16n) ^ v2
    v0 = (v0 + v3) & M
    v3 = rotl(v3, 21n) ^ v0
    v2 = (v2 + v1) & M
    v1 = rotl(v1, 17n) ^ v2
    v2 = rotl(v2, 32n)
  }
  const padded = new Uint8Array(Math.floor(msg.length / 8) * 8 + 8)
  padded.set(msg)
  padded[padded.length - 1] = msg.length & 0xff
  for (let i = 0; i < padded.length; i += 8) {
    const m = le(padded, i)
    v3 ^= m
    for (let r = 0; r < c; r++) round()
    v0 ^= m
  }
  const out: bigint[] = []
  v2 ^= bits === 128 ? 0xeen : 0xffn
  for (let r = 0; r < d; r++) round()
  out.push(v0 ^ v1 ^ v2 ^ v3)
  if (bits === 64) return hex64(out[0]!)
  v1 ^= 0xddn
  for (let r = 0; r < d; r++) round()
  out.push(v0 ^ v1 ^ v2 ^ v3)
  return out.map(hex64).join('')
}

/** A 64-bit word as its 8 bytes, little-endian, in hex. */
const hex64 = (x: bigint) => Buffer.from(Array.from({ length: 8 }, (_, i) => Number((x >> BigInt(8 * i)) & 0xffn))).toString('hex')

/** The reference implementation's vectors (vectors_sip64) for the first lengths: key 00 01 … 0f, message 00 01 …. */
const VECTORS64 = ['310e0edd47db6f72', 'fd67dc93c539f874', '5a4fa9d909806c0d', '2d7efbd796666785']

/** sipHash64Words's two words as the tag's 8 bytes in hex. */
function words64(key: Uint8Array, msg: Uint8Array, c: number, d: number): string {
  const out = new Int32Array(2)
  sipHash64Words(sipKey(key), msg, msg.length, out, c, d)
  return Buffer.from(new Uint8Array(out.buffer)).toString('hex')
}

describe('sipHash64Words', () => {
  it('gives the reference vectors at 2-4, as the BigInt reference does', () => {
    VECTORS64.forEach((hex, n) => {
      expect(reference(seq(16), seq(n), 2, 4, 64), `length ${n}`).toBe(hex)
      expect(words64(seq(16), seq(n), 2, 4), `length ${n}`).toBe(hex)
    })
  })

  it('SipHash-1-3-64 agrees with the reference at every length from 0 to 40', () => {
    const key = seq(16).map((b) => b * 11 + 1)
    for (let n = 0; n <= 40; n++) {
      const msg = seq(n).map((b) => b * 29 + 7)
      expect(words64(key, msg, 1, 3), `length ${n}`).toBe(reference(key, msg, 1, 3, 64))
    }
  })
})

describe('sipHash64Utf16', () => {
  /** The tag of `text` read from its code units (written at offset 2 of a larger buffer), and the tag of its UTF-16LE bytes, in hex. */
  const both = (key: Uint8Array, text: string): [string, string] => {
    const out = new Int32Array(5)
    sipHash64Utf16(sipKey(key), text, out, 1, 3, 2)
    return [Buffer.from(new Uint8Array(out.buffer, 8, 8)).toString('hex'), reference(key, new Uint8Array(Buffer.from(text, 'utf16le')), 1, 3, 64)]
  }

  it('is SipHash-1-3-64 of the UTF-16LE bytes at every length from 0 to 20 code units, written where it is told', () => {
    const key = seq(16).map((b) => b * 13 + 5)
    for (let n = 0; n <= 20; n++) {
      const [got, want] = both(key, Array.from({ length: n }, (_, i) => String.fromCharCode(0x41 + i * 977)).join(''))
      expect(got, `length ${n}`).toBe(want)
    }
  })

  it('agrees with the reference on any string, lone surrogates included (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.string({ unit: 'binary', maxLength: 80 }), fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)), maxLength: 5 }), (key, text, lone) => {
        const [got, want] = both(key, text + lone)
        expect(got).toBe(want)
      }),
      { numRuns: 300 },
    )
  })
})

describe('sipHash128 with other round counts', () => {
  it('the BigInt reference gives the reference vectors at 2-4', () => {
    for (const [len, hex] of Object.entries(VECTORS)) expect(reference(seq(16), seq(Number(len)), 2, 4)).toBe(hex)
  })

  it('SipHash-1-3 agrees with the reference at every length from 0 to 40, and differs from 2-4', () => {
    const key = seq(16).map((b) => b * 7 + 3)
    const out = new Uint8Array(16)
    const full = new Uint8Array(16)
    for (let n = 0; n <= 40; n++) {
      const msg = seq(n).map((b) => b * 31 + 5)
      sipHash128(sipKey(key), msg, n, out, 1, 3)
      expect(Buffer.from(out).toString('hex'), `length ${n}`).toBe(reference(key, msg, 1, 3))
      sipHash128(sipKey(key), msg, n, full)
      expect(out).not.toEqual(full)
    }
  })
})

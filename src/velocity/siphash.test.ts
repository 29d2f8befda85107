import { describe, expect, it } from 'vitest'
import { sipHash128, sipKey } from './siphash.js'

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
